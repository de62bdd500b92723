//! The wall between a sandboxed command and the host's kernel settings (issue 8, item 1):
//! `/proc/sys` and the other parts of `/proc` that change the host are read-only, the parts
//! that reveal it are hidden. Probes only write back the value just read, or open a setting
//! for writing without writing.

use std::path::Path;

use crate::support::*;
use spear::harness::primitives::ToolStatus;
use spear::harness::sandbox::procfs::{PROC_HIDDEN, PROC_READ_ONLY};

/// The mount options of the mount at `target` in a `/proc/self/mountinfo` dump.
fn mount_options<'a>(mountinfo: &'a str, target: &str) -> Option<&'a str> {
    mountinfo.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(4) == Some(&target)).then(|| f[5])
    })
}

#[tokio::test]
async fn kernel_settings_cannot_be_written_from_the_sandbox() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let host_burst = std::fs::read_to_string("/proc/sys/kernel/printk_ratelimit_burst").unwrap();
    let cmd = r#"
        v=$(cat /proc/sys/kernel/printk_ratelimit_burst) || exit 9
        echo "read=$v"
        if e=$( (printf '%s\n' "$v" > /proc/sys/kernel/printk_ratelimit_burst) 2>&1 ); then
            echo "burst=written"; else echo "burst=refused: $e"; fi
        if e=$( (exec 3>>/proc/sys/kernel/core_pattern) 2>&1 ); then
            echo "core=opened"; else echo "core=refused: $e"; fi
        echo "hostname=$(cat /proc/sys/kernel/hostname)"
        echo "userns=$(cat /proc/sys/user/max_user_namespaces)"
        echo "--mountinfo"; cat /proc/self/mountinfo"#;
    let res = run(&r, writable(), cmd).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    // Positive control: the command ran and read the host's real value.
    assert!(
        res.stdout.contains(&format!("read={}", host_burst.trim())),
        "{res:?}"
    );
    // The sandbox is never the host's root (a root Spear's runs as a uid of its own, issue
    // 20): it is stopped by the file's owner and mode, or first by the mount when the open
    // truncates (`>`: the kernel asks the mount for write access before the permission check).
    // The mounts' read-only flags are checked on their own below.
    let refusals: &[&str] = &["Read-only file system", "Permission denied"];
    for probe in ["burst=refused", "core=refused"] {
        let line = res.stdout.lines().find(|l| l.starts_with(probe));
        assert!(
            line.is_some_and(|l| refusals.iter().any(|why| l.contains(why))),
            "{probe} with one of {refusals:?} expected: {res:?}"
        );
    }
    let mountinfo = res.stdout.split("--mountinfo").nth(1).unwrap();
    let opts = mount_options(mountinfo, "/proc/sys");
    assert!(
        opts.is_some_and(|o| o.split(',').any(|x| x == "ro")),
        "/proc/sys is not a read-only mount: {opts:?}"
    );
    // The host's procfs bound over the sandbox's shows the sandbox's own namespaces, and the
    // namespace helper's setting (no nested user namespaces) is still made and seen.
    assert!(res.stdout.contains("hostname=spear-sandbox"), "{res:?}");
    assert!(res.stdout.contains("userns=0\n"), "{res:?}");
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/printk_ratelimit_burst").unwrap(),
        host_burst
    );
}

#[tokio::test]
async fn proc_entries_that_change_or_reveal_the_host_are_covered() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let ro: Vec<&str> = PROC_READ_ONLY
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| Path::new(p).exists())
        .collect();
    let hidden: Vec<&str> = PROC_HIDDEN
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| Path::new(p).exists())
        .collect();
    assert!(ro.contains(&"/proc/sys") && hidden.contains(&"/proc/key-users"));
    let mut cmd = String::from("grep -c '^Name:' /proc/self/status; cat /proc/sys/kernel/ostype\n");
    for p in &hidden {
        cmd.push_str(&format!(
            "if [ -d {p} ]; then n=$(ls -A {p} | wc -l); else n=$(cat {p} 2>/dev/null | wc -c); fi; \
             echo \"hidden {p} $n\"\n"
        ));
    }
    cmd.push_str("echo --mountinfo; cat /proc/self/mountinfo");
    let res = run(&r, read_only(), &cmd).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    // Positive control: the sandbox's own /proc works.
    assert!(res.stdout.starts_with("1\nLinux\n"), "{res:?}");
    for p in &hidden {
        assert!(
            res.stdout.contains(&format!("hidden {p} 0\n")),
            "{p} shows content: {res:?}"
        );
    }
    let mountinfo = res.stdout.split("--mountinfo").nth(1).unwrap();
    for p in &ro {
        let opts = mount_options(mountinfo, p);
        assert!(
            opts.is_some_and(|o| o.split(',').any(|x| x == "ro")),
            "{p} is not read-only: {opts:?}"
        );
    }
}
