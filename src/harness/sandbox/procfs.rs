//! What the sandbox's `/proc` keeps from the host kernel. The sandbox's uid 0 is the host's
//! uid 0, and a sysctl file checks the writer's uid, not its capabilities: left writable,
//! `/proc/sys/kernel/core_pattern` would run a program as host root. So the parts of `/proc`
//! that change the host are bound read-only and the parts that reveal it are hidden, as
//! container runtimes do. Invariant: every entry the host's `/proc` has is covered, and an
//! entry the host lacks is not named (bwrap cannot mount over what does not exist).
//!
//! bwrap takes a bind's source from the host, so `/proc/sys` is the host's procfs bound over
//! the sandbox's own. That is the same view: a sysctl file shows and checks the namespaces of
//! the process that opens it (`kernel.hostname` reads the sandbox's, `user.*` the sandbox's user
//! namespace, `net.*` its network namespace), whichever procfs it was reached through. What the
//! host bind adds is the host's own mounts below those directories (`binfmt_misc` under
//! `/proc/sys/fs`, `nfsd` under `/proc/fs`), read-only like the rest.

use std::path::{Path, PathBuf};

use super::spec::Masked;

/// Bound read-only over the sandbox's `/proc`: writing them changes the host.
pub const PROC_READ_ONLY: &[(&str, &str)] = &[
    (
        "/proc/sys",
        "kernel settings (sysctl); kernel.core_pattern runs a program as root on the host",
    ),
    (
        "/proc/sysrq-trigger",
        "SysRq: reboot, crash or kill every process",
    ),
    ("/proc/irq", "interrupt routing of the host's devices"),
    (
        "/proc/bus",
        "configuration space of the host's PCI and USB devices",
    ),
    (
        "/proc/fs",
        "filesystem driver settings (cifs, nfsd, ext4, xfs)",
    ),
];

/// Hidden from the sandbox: they reveal the host kernel or state it does not namespace.
pub const PROC_HIDDEN: &[(&str, &str)] = &[
    ("/proc/kcore", "the host's physical memory"),
    ("/proc/kmsg", "the host's kernel log"),
    (
        "/proc/keys",
        "kernel keyrings, which are not namespaced: the host's keys and their ids",
    ),
    ("/proc/key-users", "keyring use of every host user"),
    ("/proc/timer_list", "timers of every host process"),
    ("/proc/timer_stats", "timers of every host process"),
    ("/proc/sched_debug", "scheduler state of every host process"),
    (
        "/proc/latency_stats",
        "latency records of every host process",
    ),
    (
        "/proc/slabinfo",
        "the kernel heap's layout (root only; aids kernel exploits)",
    ),
    (
        "/proc/vmallocinfo",
        "kernel virtual memory layout (root only; aids kernel exploits)",
    ),
    (
        "/proc/pagetypeinfo",
        "page allocator state (root only: reading it holds a zone lock and stalls the host)",
    ),
    ("/proc/kpagecount", "physical page state"),
    ("/proc/kpageflags", "physical page state"),
    ("/proc/kpagecgroup", "physical page state"),
    (
        "/proc/acpi",
        "the host's ACPI settings, some writable by root",
    ),
    ("/proc/asound", "the host's sound devices"),
    (
        "/proc/scsi",
        "the host's SCSI devices; root may add or remove them",
    ),
];

/// What of `/proc` (under `root`, normally `/`) the sandbox covers: the read-only binds and
/// the hidden entries (a file behind `/dev/null`, a directory behind an empty read-only tmpfs).
pub fn probe_proc(root: &Path) -> (Vec<PathBuf>, Vec<Masked>) {
    let host = |p: &str| std::fs::symlink_metadata(root.join(p.trim_start_matches('/'))).ok();
    let read_only = PROC_READ_ONLY
        .iter()
        .filter(|(p, _)| host(p).is_some_and(|m| !m.file_type().is_symlink()))
        .map(|(p, _)| PathBuf::from(p))
        .collect();
    let hidden = PROC_HIDDEN
        .iter()
        .filter_map(|(p, _)| match host(p) {
            Some(m) if m.is_dir() => Some(Masked::Dir(PathBuf::from(p))),
            // A file, or what a container runtime left there (its own /dev/null bind).
            Some(m) if !m.file_type().is_symlink() => Some(Masked::File(PathBuf::from(p))),
            _ => None,
        })
        .collect();
    (read_only, hidden)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_host_has_is_covered() {
        let d = tempfile::tempdir().unwrap();
        let proc = d.path().join("proc");
        std::fs::create_dir_all(proc.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(proc.join("acpi")).unwrap();
        std::fs::write(proc.join("keys"), "").unwrap();
        std::fs::write(proc.join("sysrq-trigger"), "").unwrap();
        let (ro, hidden) = probe_proc(d.path());
        assert_eq!(
            ro,
            vec![
                PathBuf::from("/proc/sys"),
                PathBuf::from("/proc/sysrq-trigger")
            ]
        );
        assert_eq!(
            hidden,
            vec![
                Masked::File("/proc/keys".into()),
                Masked::Dir("/proc/acpi".into())
            ]
        );
    }

    #[test]
    fn this_host_has_its_sysctls_covered() {
        let (ro, hidden) = probe_proc(Path::new("/"));
        assert!(ro.contains(&PathBuf::from("/proc/sys")), "{ro:?}");
        if Path::new("/proc/keys").exists() {
            assert!(hidden.contains(&Masked::File("/proc/keys".into())));
        }
    }
}
