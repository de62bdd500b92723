//! What the live suite exercised on this host, for the summary `make test` prints at its end
//! (`scripts/test-summary`). A test that exercises a host feature calls `record_feature` with
//! what it found: `openat2`, `fallback`, `filter mode 2`, ... The line goes to the file named by
//! `SPEAR_TEST_FEATURES_FILE` (set by the Makefile; unset, nothing is written) as
//! `USER<TAB>name=value`, so the root run and the unprivileged run stay apart in the table.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Mutex;

/// The variable naming the file the records are appended to.
pub const FEATURES_FILE_ENV: &str = "SPEAR_TEST_FEATURES_FILE";

/// Record that this run exercised `name` as `value`. The names `scripts/test-summary` expects
/// (and lists as "not recorded" when no test gave them): `kernel`, `user`, `pid1`, `cgroup`,
/// `apparmor_userns`, `openat2` (from `record_host_facts`); `systemd_scopes` (a command ran in
/// a systemd scope, or why not), `process_cap` (pid_max per namespace, or the older kernels'
/// path); `workspace_open_default`, `workspace_open_forced`, `seccomp`, `i386_abi`, `network`,
/// `host_services`, `keyring`. Any other name is listed after them. Each distinct pair is written once per
/// test process; the summary collapses the rest.
pub fn record_feature(name: &str, value: &str) {
    static WRITTEN: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());
    // Tabs and newlines would break the line format; the summary shows what was meant.
    let clean = |s: &str| s.replace(['\t', '\n', '='], " ");
    let (name, value) = (clean(name), clean(value));
    eprintln!("host feature exercised: {name}={value}");
    let Some(path) = std::env::var_os(FEATURES_FILE_ENV) else {
        return;
    };
    let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    if !written.insert((name.clone(), value.clone())) {
        return;
    }
    let line = format!("{}\t{name}={value}\n", run_user());
    // One write to an O_APPEND file: lines from parallel tests and processes never interleave.
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = appended {
        panic!(
            "cannot append to {FEATURES_FILE_ENV}={}: {e}; unset it or make it writable",
            std::path::Path::new(&path).display()
        );
    }
}

/// Who runs the suite: `root`, or the user name (uid when it has none).
pub fn run_user() -> String {
    let uid = rustix::process::geteuid();
    if uid.is_root() {
        return "root".into();
    }
    std::env::var("USER").unwrap_or_else(|_| format!("uid {}", uid.as_raw()))
}

/// Facts of the host every live run records once: the kernel, who runs the suite, PID 1, the
/// cgroup hierarchy, and whether AppArmor restricts unprivileged user namespaces.
pub fn record_host_facts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        record_feature("kernel", &kernel_release());
        record_feature("user", &run_user());
        record_feature("pid1", &pid1_name());
        record_feature("cgroup", cgroup_version());
        record_feature("apparmor_userns", &apparmor_userns());
        let openat2 = if host_has_openat2() {
            "available"
        } else {
            "absent"
        };
        record_feature("openat2", openat2);
    });
}

/// `uname -r`.
pub fn kernel_release() -> String {
    rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned()
}

/// The name of PID 1 as this process sees it (`systemd`, `tini`, a shell, ...).
pub fn pid1_name() -> String {
    std::fs::read_to_string("/proc/1/comm")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|e| format!("unreadable ({e})"))
}

/// Whether systemd is PID 1 here.
pub fn systemd_is_pid1() -> bool {
    pid1_name() == "systemd"
}

/// `v2` when /sys/fs/cgroup is the unified hierarchy, `v1` (possibly hybrid) otherwise.
pub fn cgroup_version() -> &'static str {
    if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        "v2"
    } else if std::path::Path::new("/sys/fs/cgroup").is_dir() {
        "v1"
    } else {
        "none mounted"
    }
}

/// Ubuntu 23.10+ restricts unprivileged user namespaces through AppArmor; other kernels have
/// no such setting.
pub fn apparmor_userns() -> String {
    match std::fs::read_to_string("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") {
        Ok(v) if v.trim() == "1" => "restricted".into(),
        Ok(_) => "not restricted".into(),
        Err(_) => "no such restriction on this kernel".into(),
    }
}

/// Whether this kernel lets this process use `openat2` beneath a directory, asked with a raw
/// system call apart from Spear's own probe (ENOSYS before 5.6; EPERM from some container
/// filters).
pub fn host_has_openat2() -> bool {
    // The kernel's `struct open_how` (libc's is non-exhaustive).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH,
    };
    let dot = c".";
    // SAFETY: openat2 reads a NUL-terminated path and `size_of::<OpenHow>()` bytes of `how`,
    // both alive for the call; the descriptor it returns is closed below.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            dot.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd >= 0 {
        // SAFETY: `fd` was just returned by openat2 and is owned by nothing else.
        unsafe { libc::close(fd as i32) };
        return true;
    }
    let e = std::io::Error::last_os_error().raw_os_error();
    assert!(
        matches!(e, Some(libc::ENOSYS) | Some(libc::EPERM)),
        "openat2 failed on `.` for another reason: {e:?}"
    );
    false
}
