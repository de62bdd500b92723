//! Every tmpfs the sandbox gets is bounded (issue 8, item 7): `/tmp`, `$HOME`, `/run` and
//! `/dev/shm` have the sizes of the runner's configuration, and `/dev` itself takes no files,
//! while the devices, pipes and shared memory a command needs keep working.

use crate::support::*;
use spear::harness::command_runner::CommandRunner;
use spear::harness::primitives::ToolStatus;
use spear::harness::sandbox::TmpfsSizes;

const KIB: u64 = 1024;

/// Small sizes, so that filling each is quick.
const SMALL: TmpfsSizes = TmpfsSizes {
    tmp: 2048 * KIB,
    home: 3072 * KIB,
    run: 1024 * KIB,
    dev_shm: 512 * KIB,
};

const FILL_SH: &str = r#"
for pair in "tmp:/tmp" "home:$HOME" "run:/run" "shm:/dev/shm"; do
    name=${pair%%:*}; d=${pair#*:}
    if head -c 65536 /dev/zero > "$d/small"; then small=ok; else small=failed; fi
    err=$(head -c 8388608 /dev/zero 2>&1 > "$d/big")
    rm -f "$d/big" "$d/small"
    echo "fill $name small=$small big=${err:-written}"
    echo "size $name $(df -k --output=size "$d" | tail -1 | tr -d ' ')"
done
if e=$(touch /dev/spear-new 2>&1); then echo "dev new=created"; else echo "dev new=$e"; fi
if e=$(mkdir /dev/spear-dir 2>&1); then echo "dev dir=created"; else echo "dev dir=$e"; fi
echo discarded > /dev/null && echo "null ok"
echo "zero $(head -c 8 /dev/zero | wc -c)"
echo "urandom $(head -c 16 /dev/urandom | wc -c)"
echo "stdin $(echo piped | cat /dev/stdin)"
echo "stdout ok" > /dev/stdout
/usr/bin/python3 -c 'import multiprocessing as m; m.Lock(); print("semaphore ok")'
"#;

#[tokio::test]
async fn every_writable_tmpfs_is_bounded_and_dev_takes_no_files() {
    let (_d, ws) = workspace();
    let mut cfg = config(&ws);
    cfg.tmpfs = SMALL;
    let r = CommandRunner::new(cfg).unwrap();
    let res = run(&r, writable(), FILL_SH).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    let line = |prefix: String| {
        res.stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_default()
            .to_string()
    };
    for (name, bytes) in [
        ("tmp", SMALL.tmp),
        ("home", SMALL.home),
        ("run", SMALL.run),
        ("shm", SMALL.dev_shm),
    ] {
        // Positive control: a small file fits; the big one runs out of space.
        let fill = line(format!("fill {name} "));
        assert!(
            fill.contains("small=ok") && fill.contains("No space left on device"),
            "{name}: {fill:?} in {res:?}"
        );
        assert_eq!(
            line(format!("size {name} ")),
            format!("size {name} {}", bytes / KIB),
            "{res:?}"
        );
    }
    for probe in ["dev new=", "dev dir="] {
        let l = res.stdout.lines().find(|l| l.starts_with(probe)).unwrap();
        assert!(l.contains("Read-only file system"), "{l}: {res:?}");
    }
    for works in [
        "null ok",
        "zero 8",
        "urandom 16",
        "stdin piped",
        "stdout ok",
        "semaphore ok",
    ] {
        assert!(res.stdout.contains(works), "{works:?} missing: {res:?}");
    }
}

#[tokio::test]
async fn a_tmpfs_size_of_zero_is_refused_not_unlimited() {
    let (_d, ws) = workspace();
    let mut cfg = config(&ws);
    cfg.tmpfs.run = 0;
    let r = CommandRunner::new(cfg).unwrap();
    let res = run(&r, read_only(), "echo ran").await;
    assert_failed_saying(&res, "tmpfs size for /run is 0 bytes");
    assert!(!res.stdout.contains("ran"));
    // Positive control: the same runner with a real size runs the command.
    let mut cfg = config(&ws);
    cfg.tmpfs.run = 4096;
    let r = CommandRunner::new(cfg).unwrap();
    let res = run(&r, read_only(), "echo ran").await;
    assert_eq!(res.stdout, "ran\n", "{res:?}");
}
