//! The seccomp filter from inside the sandbox (issue 8, item 2): each refused call fails with
//! EPERM while ordinary calls work, a call through another ABI kills the process, ordinary
//! tools still work, the preflight runs filtered too, and doctor says so.
//! Every refused call is made with arguments that fail or do nothing even where no filter
//! stands.

use std::path::Path;

use crate::features::record_feature;
use crate::support::*;
use spear::harness::primitives::ToolStatus;
use spear::harness::sandbox::seccomp::refused_calls;

pub(crate) const PYTHON: &str = "/usr/bin/python3";

pub(crate) fn require_python() {
    assert!(
        Path::new(PYTHON).is_file(),
        "{PYTHON} is missing: these tests call system calls from inside the sandbox through \
         python3's ctypes; run `apt-get install python3`"
    );
}

/// Each refused call with arguments that fail or do nothing even without the filter (a bad
/// pointer 1, fd -1, invalid flags), so that the probe itself can never change the host.
fn probes() -> Vec<(&'static str, libc::c_long, Vec<i64>)> {
    let mut p: Vec<(&'static str, libc::c_long, Vec<i64>)> = vec![
        ("keyctl", libc::SYS_keyctl, vec![0, -3, 0]),
        ("add_key", libc::SYS_add_key, vec![0, 0, 0, 0, 0]),
        ("request_key", libc::SYS_request_key, vec![0, 0, 0, 0]),
        ("bpf", libc::SYS_bpf, vec![-1, 0, 0]),
        (
            "perf_event_open",
            libc::SYS_perf_event_open,
            vec![0, 0, -1, -1, 0],
        ),
        ("userfaultfd", libc::SYS_userfaultfd, vec![0xffff]),
        ("io_uring_setup", libc::SYS_io_uring_setup, vec![0, 0]),
        (
            "io_uring_enter",
            libc::SYS_io_uring_enter,
            vec![-1, 0, 0, 0, 0, 0],
        ),
        (
            "io_uring_register",
            libc::SYS_io_uring_register,
            vec![-1, 0, 0, 0],
        ),
        (
            "kexec_load",
            libc::SYS_kexec_load,
            vec![0, 0, 0, 0xffff_0000],
        ),
        (
            "kexec_file_load",
            libc::SYS_kexec_file_load,
            vec![-1, -1, 0, 0, 0xffff_ffff],
        ),
        ("init_module", libc::SYS_init_module, vec![0, 0, 0]),
        ("finit_module", libc::SYS_finit_module, vec![-1, 0, 0]),
        ("delete_module", libc::SYS_delete_module, vec![0, 0]),
        (
            "open_by_handle_at",
            libc::SYS_open_by_handle_at,
            vec![-1, 0, 0],
        ),
        (
            "name_to_handle_at",
            libc::SYS_name_to_handle_at,
            vec![-100, 0, 0, 0, 0xffff],
        ),
        ("mount", libc::SYS_mount, vec![0, 0, 0, 0, 0]),
        ("umount2", libc::SYS_umount2, vec![0, 0xffff_ffff]),
        ("pivot_root", libc::SYS_pivot_root, vec![0, 0]),
        ("fsopen", libc::SYS_fsopen, vec![0, 0xffff]),
        ("fsconfig", libc::SYS_fsconfig, vec![-1, 0xffff, 0, 0, 0]),
        ("fsmount", libc::SYS_fsmount, vec![-1, 0xffff, 0]),
        ("fspick", libc::SYS_fspick, vec![-1, 0, 0xffff]),
        (
            "move_mount",
            libc::SYS_move_mount,
            vec![-1, 0, -1, 0, 0xffff_ffff],
        ),
        ("open_tree", libc::SYS_open_tree, vec![-1, 0, 0xffff_ffff]),
        (
            "mount_setattr",
            libc::SYS_mount_setattr,
            vec![-1, 0, 0xffff_ffff, 0, 0],
        ),
        ("unshare", libc::SYS_unshare, vec![0]),
        ("setns", libc::SYS_setns, vec![-1, 0]),
        ("swapon", libc::SYS_swapon, vec![1, 0]),
        ("swapoff", libc::SYS_swapoff, vec![1]),
        ("acct", libc::SYS_acct, vec![1]),
        ("reboot", libc::SYS_reboot, vec![0, 0, 0, 0]),
        ("settimeofday", libc::SYS_settimeofday, vec![1, 0]),
        ("clock_settime", libc::SYS_clock_settime, vec![-1, 1]),
        ("clock_adjtime", libc::SYS_clock_adjtime, vec![-1, 1]),
        ("quotactl", libc::SYS_quotactl, vec![0xffff_ffff, 0, 0, 0]),
        ("quotactl_fd", libc::SYS_quotactl_fd, vec![-1, 0, 0, 0]),
        ("lookup_dcookie", libc::SYS_lookup_dcookie, vec![0, 0, 0]),
        ("syslog", libc::SYS_syslog, vec![10, 0, 0]),
        ("vhangup", libc::SYS_vhangup, vec![]),
    ];
    #[cfg(target_arch = "x86_64")]
    p.extend([
        ("iopl", libc::SYS_iopl, vec![4]),
        ("ioperm", libc::SYS_ioperm, vec![0x10000, 1, 0]),
        ("uselib", libc::SYS_uselib, vec![0]),
    ]);
    p
}

/// argv[1]: getpid's number; then `name:nr:arg...` per call. Prints `name result errno`.
const SYSCALLS_PY: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return r, ctypes.get_errno()
print("getpid", call(int(sys.argv[1]), [])[0], os.getpid())
for spec in sys.argv[2:]:
    name, nr, *args = spec.split(":")
    r, e = call(int(nr), [int(a) for a in args])
    print(name, r, e)
"#;

#[tokio::test]
async fn every_refused_call_fails_with_eperm_inside_while_others_work() {
    require_python();
    let probes = probes();
    let mut table: Vec<&str> = refused_calls().iter().map(|c| c.name).collect();
    let mut probed: Vec<&str> = probes.iter().map(|p| p.0).collect();
    table.sort_unstable();
    probed.sort_unstable();
    assert_eq!(
        table, probed,
        "every refused call needs a harmless probe here"
    );

    let (_d, ws) = workspace();
    let r = runner(&ws);
    let mut cmd = format!(
        "grep '^Seccomp:' /proc/self/status; {PYTHON} -c '{SYSCALLS_PY}' {}",
        libc::SYS_getpid
    );
    for (name, nr, args) in &probes {
        let args: Vec<String> = args.iter().map(i64::to_string).collect();
        cmd.push_str(format!(" {name}:{nr}:{}", args.join(":")).trim_end_matches(':'));
    }
    let res = run(&r, writable(), &cmd).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(
        res.stdout.starts_with("Seccomp:\t2\n"),
        "no filter: {res:?}"
    );
    // Positive control: an allowed call works in the same process.
    let getpid = res
        .stdout
        .lines()
        .find(|l| l.starts_with("getpid "))
        .unwrap();
    let f: Vec<&str> = getpid.split(' ').collect();
    assert!(
        f[1] == f[2] && f[1] != "-1",
        "getpid did not work: {getpid}"
    );
    for (name, ..) in &probes {
        let want = format!("{name} -1 {}", libc::EPERM);
        assert!(
            res.stdout.lines().any(|l| l == want),
            "{name} was not refused with EPERM: {res:?}"
        );
    }
    record_feature(
        "seccomp",
        &format!(
            "filter on (Seccomp: 2); {} calls refused with EPERM",
            probes.len()
        ),
    );
}

/// argv[1]: hex machine code of a function taking nothing and returning a long; runs it.
#[cfg(target_arch = "x86_64")]
const MACHINE_CODE_PY: &str = r#"
import ctypes, mmap, sys
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(bytes.fromhex(sys.argv[1]))
f = ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("returned", f())
"#;

/// argv[1]: a raw system call number, made through libc's `syscall`.
#[cfg(target_arch = "x86_64")]
const RAW_CALL_PY: &str = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print("returned", libc.syscall(ctypes.c_long(int(sys.argv[1]))), ctypes.get_errno())
"#;

/// `mov eax, 39; syscall; ret`: getpid through the native 64-bit entry.
#[cfg(target_arch = "x86_64")]
const NATIVE_GETPID: &str = "b8270000000f05c3";
/// `mov eax, 20; int 0x80; ret`: getpid through the i386 entry a 64-bit process can still use.
#[cfg(target_arch = "x86_64")]
const I386_GETPID: &str = "b814000000cd80c3";

#[cfg(target_arch = "x86_64")]
#[tokio::test]
async fn a_call_through_another_abi_kills_the_process() {
    require_python();
    let x32_getpid = 0x4000_0000 | libc::SYS_getpid;
    // What the host kernel does with the i386 entry, unfiltered (ia32 emulation may be off).
    let host = std::process::Command::new(PYTHON)
        .args(["-c", MACHINE_CODE_PY, I386_GETPID])
        .output()
        .unwrap();
    let i386_on_host = host.status.success();

    let (_d, ws) = workspace();
    let r = runner(&ws);
    let cmd = format!(
        "{PYTHON} -c '{MACHINE_CODE_PY}' {NATIVE_GETPID}; echo \"native=$?\"\n\
         {PYTHON} -c '{MACHINE_CODE_PY}' {I386_GETPID}; echo \"i386=$?\"\n\
         {PYTHON} -c '{RAW_CALL_PY}' {x32_getpid}; echo \"x32=$?\""
    );
    let res = run(&r, read_only(), &cmd).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    // Positive control: the same machine code through the native entry works.
    assert!(
        res.stdout.contains("native=0") && res.stdout.contains("returned "),
        "{res:?}"
    );
    let sigsys = 128 + libc::SIGSYS;
    assert!(
        res.stdout.contains(&format!("x32={sigsys}")),
        "an x32 call was not killed: {res:?}"
    );
    if i386_on_host {
        assert!(
            res.stdout.contains(&format!("i386={sigsys}")),
            "an i386 call was not killed: {res:?}"
        );
        record_feature(
            "i386_abi",
            "i386 and x32 entries killed by the filter (SIGSYS)",
        );
    } else {
        assert!(!res.stdout.contains("i386=0"), "{res:?}");
        record_feature(
            "i386_abi",
            "x32 killed by the filter; i386 emulation is off on this host (not exercised)",
        );
    }
}

/// Ordinary work under the filter: python (processes, semaphores in /dev/shm, asyncio
/// subprocesses, threads), git, a C compiler, node (libuv falls back from io_uring), make.
const TOOLS_SH: &str = r#"
cd "$TMPDIR" || exit 9
cat > t.py <<'PY'
import asyncio, multiprocessing as mp, sqlite3, subprocess, threading
def square(x):
    return x * x
async def child():
    p = await asyncio.create_subprocess_exec("true")
    return await p.wait()
if __name__ == "__main__":
    with mp.Pool(2) as pool:
        assert pool.map(square, range(5)) == [0, 1, 4, 9, 16]
    lock = mp.Lock()
    with lock:
        pass
    assert asyncio.run(child()) == 0
    t = threading.Thread(target=lambda: None); t.start(); t.join()
    assert subprocess.run(["true"]).returncode == 0
    assert sqlite3.connect(":memory:").execute("select 2").fetchone() == (2,)
    print("python ok")
PY
/usr/bin/python3 t.py
if command -v git >/dev/null; then
    (git init -q repo && cd repo && echo a > f && git add f \
     && git -c user.name=t -c user.email=t@example.invalid commit -qm m \
     && [ "$(git log --oneline | wc -l)" = 1 ] && echo "git ok")
else echo "git absent"; fi
if command -v cc >/dev/null; then
    printf '#include <stdio.h>\nint main(void) { puts("cc ok"); return 0; }\n' > h.c
    cc -O1 -o h h.c && ./h
else echo "cc absent"; fi
if command -v node >/dev/null; then
    node -e 'const fs = require("fs"); const p = process.env.TMPDIR + "/n.txt";
      fs.promises.writeFile(p, "ok").then(() => fs.promises.readFile(p, "utf8"))
        .then(s => { require("child_process").execSync("true"); console.log("node " + s); })'
else echo "node absent"; fi
if command -v make >/dev/null; then
    printf 'all:\n\t@echo make ok\n' > Makefile && make -s
else echo "make absent"; fi
"#;

#[tokio::test]
async fn ordinary_tools_work_under_the_filter() {
    require_python();
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let res = run(&r, writable(), TOOLS_SH).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(res.stdout.contains("python ok"), "{res:?}");
    let on_host = |tool: &str| {
        spear::harness::sandbox::env::SYSTEM_PATH
            .split(':')
            .any(|d| Path::new(d).join(tool).is_file())
    };
    for tool in ["git", "cc", "node", "make"] {
        let want = if on_host(tool) {
            format!("{tool} ok")
        } else {
            format!("{tool} absent")
        };
        assert!(res.stdout.contains(&want), "expected {want:?}: {res:?}");
    }
}

#[tokio::test]
async fn the_preflight_and_every_command_run_under_the_filter() {
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
        .expect("bwrap is not installed: run `apt-get install bubblewrap`");
    let fake = tempfile::tempdir().unwrap();
    let log = fake.path().join("argv.log");
    let bwrap = fake.path().join("bwrap");
    std::fs::write(
        &bwrap,
        format!(
            "#!/bin/sh\nprintf 'CALL %s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&bwrap, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // A root Spear runs bwrap as the sandbox's own uid: the wrapper and its log must be
    // reachable by it.
    std::fs::set_permissions(
        fake.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let (_d, ws) = workspace();
    let mut cfg = config(&ws);
    let mut path = fake.path().as_os_str().to_owned();
    path.push(":");
    path.push(&cfg.search_path);
    cfg.search_path = path;
    let r = spear::harness::command_runner::CommandRunner::new(cfg).unwrap();
    let res = run(&r, read_only(), "grep '^Seccomp:' /proc/self/status").await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert_eq!(res.stdout, "Seccomp:\t2\n");
    let calls: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .split("CALL ")
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect();
    // Positive control: the wrapper saw both launches, the preflight's and the command's.
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].contains("spear-preflight"), "{calls:?}");
    for c in &calls {
        assert!(
            c.contains(" --seccomp "),
            "a launch without the filter: {c}"
        );
    }
}

#[test]
fn doctor_says_the_filter_is_on_and_what_it_refuses() {
    let (_d, ws) = workspace();
    let out = crate::cli::spear(&ws)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_name = |n: &str| crate::cli::doctor_check(&v, n);
    let filter = by_name("seccomp");
    assert_eq!(filter["status"], "works", "{v}");
    assert_eq!(filter["required"], true, "{v}");
    let refused = filter["refused_calls"].as_array().unwrap();
    assert_eq!(refused.len(), refused_calls().len(), "{v}");
    let keyctl = refused.iter().find(|c| c["name"] == "keyctl").unwrap();
    assert!(keyctl["why"].as_str().unwrap().contains("not namespaced"));
    assert_eq!(by_name("kernel_view")["status"], "works", "{v}");
    let tmpfs = by_name("tmpfs")["detail"].as_str().unwrap().to_string();
    assert!(
        tmpfs.contains("/dev/shm 256 MiB") && tmpfs.contains("MemoryMax"),
        "{tmpfs}"
    );
    let text = crate::cli::spear(&ws).arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("seccomp") && l.contains("works") && l.contains("keyctl")),
        "{text}"
    );
}
