//! The process cap: which kernel mechanism bounds how many processes one sandbox may have on
//! this host, chosen from facts about the kernel and the user. Every choice counts the
//! sandbox's processes only, never the user's others, and binds the user Spear runs as:
//!
//! | host                                   | mechanism                                     |
//! |----------------------------------------|-----------------------------------------------|
//! | Linux >= 6.14, anyone                  | `pid_max` of the sandbox's own PID namespace  |
//! | older, any uid but the host's root     | `RLIMIT_NPROC` set inside the sandbox's user namespace |
//! | older, host root, systemd              | a systemd scope's `TasksMax`                  |
//! | older, host root, writable cgroupfs    | `pids.max` of a cgroup made for the launch    |
//! | older, host root, neither              | refused, saying what would work               |
//!
//! `RLIMIT_NPROC` is counted per user namespace since Linux 5.14 (ucounts): set on the
//! sandbox's namespace init from inside its user namespace, it counts the processes of that
//! namespace alone, while the namespace itself was created under the host's own limit, so a
//! user with hundreds of processes elsewhere still gets a working sandbox. The kernel exempts
//! the host's uid 0 from it, hence the cgroup mechanisms for root.

use thiserror::Error;

#[cfg(test)]
use crate::harness::process::kernel_at_least;
use crate::harness::process::{PID_MAX_MIN, pid_max_is_namespaced};
use crate::harness::resource_control::pids_cgroup::{PidsCgroupError, PidsCgroupParent};
use crate::harness::resource_control::{ScopeError, SystemdScopeRunner};

/// What the choice depends on, probed once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFacts {
    /// The kernel keeps `pid_max` per PID namespace (Linux >= 6.14).
    pub pid_max_namespaced: bool,
    /// Spear runs as the host's own root: its uid is 0 and maps to uid 0 of the initial user
    /// namespace (root inside a rootless container is not).
    pub host_root: bool,
}

/// The environment variable that, in a build with the `test-hooks` feature only, makes Spear
/// believe `pid_max` is not namespaced, so the older-kernel path is tested on a new kernel.
pub const PRETEND_OLD_KERNEL_ENV: &str = "SPEAR_TEST_PID_MAX_NOT_NAMESPACED";

impl HostFacts {
    pub fn probe() -> HostFacts {
        let euid = rustix::process::geteuid().as_raw();
        let uid_map = std::fs::read_to_string("/proc/self/uid_map").ok();
        HostFacts {
            pid_max_namespaced: pid_max_is_namespaced() && !pretending_old_kernel(),
            host_root: is_host_root(euid, uid_map.as_deref()),
        }
    }
}

/// Whether the test-only switch asks for the older kernels' path (never in a shipped build).
fn pretending_old_kernel() -> bool {
    cfg!(feature = "test-hooks")
        && std::env::var_os(PRETEND_OLD_KERNEL_ENV).is_some_and(|v| v == "1")
}

/// Whether `euid` is uid 0 of the initial user namespace, from this process's `uid_map`
/// (`INSIDE OUTSIDE COUNT` lines). Unreadable: uid 0 is taken to be the host's root, the case
/// that needs the stronger mechanism.
pub fn is_host_root(euid: u32, uid_map: Option<&str>) -> bool {
    let Some(map) = uid_map else {
        return euid == 0;
    };
    map.lines().any(|line| {
        let v: Vec<u64> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        let (inside, outside, count) = match v.as_slice() {
            [i, o, c] => (*i, *o, *c),
            _ => return false,
        };
        let euid = u64::from(euid);
        euid >= inside && euid < inside.saturating_add(count) && outside + (euid - inside) == 0
    })
}

/// A process limit is configured and no mechanism here can enforce it (the host's root on a
/// kernel before 6.14, with neither a systemd scope nor a pids cgroup available).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "a process limit is configured, but nothing here can cap root's processes: \
     this kernel (before Linux 6.14) keeps one pid_max for the whole machine, \
     RLIMIT_NPROC does not bind root, no systemd scope can be made ({systemd}), \
     and no pids cgroup can be made ({cgroup}). Fix: run Spear as an ordinary \
     user, or on a host with systemd, or give it a writable cgroup filesystem, or \
     run on Linux 6.14 or later"
)]
pub struct ProcessCapUnavailable {
    pub systemd: ScopeError,
    pub cgroup: PidsCgroupError,
}

/// How a sandbox's processes are capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessCap {
    /// `kernel.pid_max` of the sandbox's PID namespace (this value: the cap plus its init).
    PidNamespace { pid_max: u32 },
    /// `RLIMIT_NPROC` set on the namespace init from inside the sandbox's user namespace.
    UserNamespaceNproc { limit: u64 },
    /// `TasksMax` of the systemd scope the launch runs in.
    SystemdScope { tasks_max: u64 },
    /// `pids.max` of a cgroup made for each launch under this parent.
    PidsCgroup {
        parent: PidsCgroupParent,
        limit: u64,
    },
}

impl ProcessCap {
    /// The mechanism for a cap of `limit` processes on a host with `facts`. `scope` is asked
    /// only for the host's root on an older kernel, `cgroups` only when it has no systemd.
    pub fn choose(
        limit: u64,
        facts: &HostFacts,
        scope: &SystemdScopeRunner,
        cgroups: &dyn Fn() -> Result<PidsCgroupParent, PidsCgroupError>,
    ) -> Result<ProcessCap, ProcessCapUnavailable> {
        if facts.pid_max_namespaced {
            let pid_max = u32::try_from(limit.saturating_add(1))
                .unwrap_or(u32::MAX)
                .max(PID_MAX_MIN);
            return Ok(ProcessCap::PidNamespace { pid_max });
        }
        if !facts.host_root {
            return Ok(ProcessCap::UserNamespaceNproc { limit });
        }
        let systemd = match scope.available() {
            Ok(()) => return Ok(ProcessCap::SystemdScope { tasks_max: limit }),
            Err(why) => why,
        };
        match cgroups() {
            Ok(parent) => Ok(ProcessCap::PidsCgroup { parent, limit }),
            Err(cgroup) => Err(ProcessCapUnavailable { systemd, cgroup }),
        }
    }

    /// What `spear doctor` says of it: the mechanism and why it was chosen.
    pub fn describe(&self) -> String {
        match self {
            ProcessCap::PidNamespace { pid_max } => format!(
                "pid_max {pid_max} of the sandbox's own PID namespace (Linux >= 6.14 keeps it \
                 per namespace): counts the sandbox's processes only and binds root"
            ),
            ProcessCap::UserNamespaceNproc { limit } => format!(
                "RLIMIT_NPROC {limit} set inside the sandbox's user namespace (this kernel keeps \
                 one pid_max for the machine; since Linux 5.14 the rlimit is counted per user \
                 namespace): counts the sandbox's processes only, not this user's others"
            ),
            ProcessCap::SystemdScope { tasks_max } => format!(
                "TasksMax={tasks_max} of a systemd scope per launch (root on a kernel before \
                 6.14: RLIMIT_NPROC does not bind root and pid_max is machine-wide)"
            ),
            ProcessCap::PidsCgroup { parent, limit } => format!(
                "{} capped at {limit} (root on a kernel before 6.14 without systemd: \
                 RLIMIT_NPROC does not bind root and pid_max is machine-wide)",
                parent.describe()
            ),
        }
    }

    /// A short name for tests and the suite's summary.
    pub fn name(&self) -> &'static str {
        match self {
            ProcessCap::PidNamespace { .. } => "pid_namespace",
            ProcessCap::UserNamespaceNproc { .. } => "user_namespace_nproc",
            ProcessCap::SystemdScope { .. } => "systemd_scope",
            ProcessCap::PidsCgroup { .. } => "pids_cgroup",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[test]
    fn kernel_releases_compare_by_major_and_minor() {
        assert!(kernel_at_least("6.18.44-fc-v669", (6, 14)));
        assert!(kernel_at_least("6.14.0", (6, 14)));
        assert!(!kernel_at_least("6.8.0-49-generic", (6, 14)));
        assert!(!kernel_at_least("5.15.0-126-generic", (6, 14)));
        assert!(!kernel_at_least("6.1.0-28-amd64", (6, 14)));
        assert!(!kernel_at_least("garbage", (6, 14)));
    }

    #[test]
    fn host_root_is_uid_zero_of_the_initial_namespace_only() {
        let init = "         0          0 4294967295\n";
        assert!(is_host_root(0, Some(init)));
        assert!(!is_host_root(1000, Some(init)));
        // Rootless podman: root inside is 1000 outside.
        assert!(!is_host_root(0, Some("0 1000 1\n1 100000 65536\n")));
        // A user namespace that maps its uid 0 to the host's root.
        assert!(is_host_root(0, Some("0 0 1\n")));
        assert!(is_host_root(0, None));
        assert!(!is_host_root(1000, None));
        assert!(!is_host_root(0, Some("garbage\n")));
    }

    fn no_systemd() -> SystemdScopeRunner {
        let d = tempfile::tempdir().unwrap();
        SystemdScopeRunner::with_root(d.path(), PathBuf::from("/nonexistent"), true)
    }

    fn fake_cgroups() -> Result<PidsCgroupParent, PidsCgroupError> {
        PidsCgroupParent::find_from(
            "8:pids:/\n",
            "38 30 0:34 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids",
            Path::new("/"),
            &|_| true,
        )
    }

    fn no_cgroups() -> Result<PidsCgroupParent, PidsCgroupError> {
        Err(PidsCgroupError::NoController)
    }

    #[test]
    fn the_mechanism_follows_the_table() {
        let s = no_systemd();
        let new = HostFacts {
            pid_max_namespaced: true,
            host_root: true,
        };
        assert_eq!(
            ProcessCap::choose(128, &new, &s, &no_cgroups),
            Ok(ProcessCap::PidNamespace { pid_max: 301 })
        );
        assert_eq!(
            ProcessCap::choose(4096, &new, &s, &no_cgroups),
            Ok(ProcessCap::PidNamespace { pid_max: 4097 })
        );
        let user = HostFacts {
            pid_max_namespaced: false,
            host_root: false,
        };
        assert_eq!(
            ProcessCap::choose(100, &user, &s, &no_cgroups),
            Ok(ProcessCap::UserNamespaceNproc { limit: 100 })
        );
        let root = HostFacts {
            pid_max_namespaced: false,
            host_root: true,
        };
        let cap = ProcessCap::choose(100, &root, &s, &fake_cgroups).unwrap();
        assert_eq!(cap.name(), "pids_cgroup");
        assert!(
            cap.describe().contains("/sys/fs/cgroup/pids"),
            "{}",
            cap.describe()
        );
        let refused = ProcessCap::choose(100, &root, &s, &no_cgroups).unwrap_err();
        // The parts that say why are kept, typed, for whoever reports them.
        assert_eq!(
            refused.systemd,
            ScopeError::NotPid1 {
                comm: "unknown".into()
            }
        );
        assert_eq!(refused.cgroup, PidsCgroupError::NoController);
        let refused = refused.to_string();
        for part in [
            "RLIMIT_NPROC does not bind root",
            "systemd",
            "pids cgroup",
            "ordinary user",
        ] {
            assert!(refused.contains(part), "{part}: {refused}");
        }
    }

    #[test]
    fn root_on_a_systemd_host_gets_a_scope() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/1")).unwrap();
        std::fs::write(d.path().join("proc/1/comm"), "systemd\n").unwrap();
        std::fs::create_dir_all(d.path().join("run/systemd/system")).unwrap();
        let run = d.path().join("systemd-run");
        std::fs::write(&run, "").unwrap();
        let s = SystemdScopeRunner::with_root(d.path(), run, true);
        let root = HostFacts {
            pid_max_namespaced: false,
            host_root: true,
        };
        assert_eq!(
            ProcessCap::choose(64, &root, &s, &fake_cgroups),
            Ok(ProcessCap::SystemdScope { tasks_max: 64 })
        );
    }
}
