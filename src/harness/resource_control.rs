//! Resource contracts. `ResourceLimits` are rlimits set in the child before exec; `CgroupLimits`
//! are applied by `SystemdScopeRunner`, which knows systemd and nothing else. Invariant: a
//! requested limit is either applied or the request fails naming why; never silently dropped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::process::{Resource, Rlimit};
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub(crate) mod pids_cgroup;
pub mod process_cap;

const GIB: u64 = 1 << 30;

/// Per-process limits, applied with `setrlimit` in the child before bwrap execs (inherited by
/// everything in the sandbox). `None` leaves a limit as the host has it.
///
/// Memory is bounded with `RLIMIT_DATA` (private writable memory), not `RLIMIT_AS`: V8 and the
/// JVM reserve large address ranges they never touch, which `RLIMIT_AS` counts and breaks.
/// `processes` caps the sandbox's processes and threads together, through whichever
/// mechanism binds here (`process_cap`); it never counts the user's other processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceLimits {
    pub data_bytes: Option<u64>,
    pub address_space_bytes: Option<u64>,
    pub processes: Option<u64>,
    pub cpu_seconds: Option<u64>,
    pub file_size_bytes: Option<u64>,
    pub open_files: Option<u64>,
}

impl Default for ResourceLimits {
    /// Generous but finite.
    fn default() -> Self {
        ResourceLimits {
            data_bytes: Some(8 * GIB),
            address_space_bytes: None,
            processes: Some(4096),
            cpu_seconds: Some(600),
            file_size_bytes: Some(16 * GIB),
            open_files: Some(4096),
        }
    }
}

impl ResourceLimits {
    /// No limit at all (core dumps stay off regardless).
    pub fn none() -> Self {
        ResourceLimits {
            data_bytes: None,
            address_space_bytes: None,
            processes: None,
            cpu_seconds: None,
            file_size_bytes: None,
            open_files: None,
        }
    }

    pub fn is_active(&self) -> bool {
        self != &Self::none()
    }

    /// The rlimits to set, each clamped to the current hard limit (lowering is always allowed,
    /// raising is not). Core dumps are always disabled. CPU gets a soft limit (SIGXCPU) one
    /// second before the hard one (SIGKILL). The process limit is never among them: set on
    /// bwrap, `RLIMIT_NPROC` would count every process of the user and bound the user
    /// namespace bwrap creates; it is the process cap's job (`process_cap`).
    pub fn to_rlimits(&self) -> Vec<(Resource, Rlimit)> {
        let mut out = vec![(Resource::Core, fixed(0))];
        let mut add = |r: Resource, v: Option<u64>| {
            if let Some(v) = v {
                out.push((r, clamp(r, v, v)));
            }
        };
        add(Resource::Data, self.data_bytes);
        add(Resource::As, self.address_space_bytes);
        add(Resource::Fsize, self.file_size_bytes);
        add(Resource::Nofile, self.open_files);
        if let Some(cpu) = self.cpu_seconds {
            out.push((
                Resource::Cpu,
                clamp(Resource::Cpu, cpu, cpu.saturating_add(1)),
            ));
        }
        out
    }
}

fn fixed(v: u64) -> Rlimit {
    Rlimit {
        current: Some(v),
        maximum: Some(v),
    }
}

fn clamp(r: Resource, soft: u64, hard: u64) -> Rlimit {
    let host = rustix::process::getrlimit(r).maximum;
    let hard = host.map_or(hard, |h| h.min(hard));
    Rlimit {
        current: Some(soft.min(hard)),
        maximum: Some(hard),
    }
}

/// Why rlimits cannot be set here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("prlimit({resource:?}) is refused here: {source}")]
pub struct RlimitRefused {
    pub resource: Resource,
    #[source]
    pub source: rustix::io::Errno,
}

/// Check that rlimits can be set here: read each and set it to its own value on this process.
pub fn rlimit_mechanism() -> Result<(), RlimitRefused> {
    for r in [
        Resource::Data,
        Resource::Nproc,
        Resource::Cpu,
        Resource::Fsize,
        Resource::Nofile,
    ] {
        let cur = rustix::process::getrlimit(r);
        rustix::process::prlimit(None, r, cur).map_err(|source| RlimitRefused {
            resource: r,
            source,
        })?;
    }
    Ok(())
}

/// Which limit ended a command, when one did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitHit {
    Cpu,
    Memory,
    Processes,
    FileSize,
}

impl LimitHit {
    pub fn describe(self) -> &'static str {
        match self {
            LimitHit::Cpu => "killed by the CPU time limit",
            LimitHit::Memory => "out of memory: the memory limit refused an allocation",
            LimitHit::Processes => "too many processes: the process limit refused a fork",
            LimitHit::FileSize => "file too large: the file size limit stopped a write",
        }
    }
}

/// Attribute the end of a command to a limit, from its exit (bwrap reports a signal as
/// 128 + signal) and what it said on stderr.
pub fn limit_hit(limits: &ResourceLimits, exit_code: i32, stderr_tail: &str) -> Option<LimitHit> {
    let signal = exit_code - 128;
    if limits.cpu_seconds.is_some() && (signal == libc::SIGXCPU || signal == libc::SIGKILL) {
        // SIGKILL alone is ambiguous; the hard CPU limit is one second after SIGXCPU.
        if signal == libc::SIGXCPU {
            return Some(LimitHit::Cpu);
        }
    }
    if limits.file_size_bytes.is_some() && signal == libc::SIGXFSZ {
        return Some(LimitHit::FileSize);
    }
    if exit_code == 0 {
        return None;
    }
    // `fork: Cannot allocate memory` is what a dying PID namespace answers a fork with; it is
    // not a memory limit.
    let s: String = stderr_tail
        .to_ascii_lowercase()
        .lines()
        .filter(|l| !l.contains("fork: cannot allocate memory"))
        .collect::<Vec<_>>()
        .join("\n");
    if limits.processes.is_some()
        && (s.contains("fork: retry")
            || s.contains("fork: resource temporarily unavailable")
            || s.contains("cannot fork")
            || s.contains("can't fork"))
    {
        return Some(LimitHit::Processes);
    }
    if (limits.data_bytes.is_some() || limits.address_space_bytes.is_some())
        && (s.contains("cannot allocate memory")
            || s.contains("memory exhausted")
            || s.contains("out of memory")
            || s.contains("memoryerror")
            || s.contains("failed to allocate"))
    {
        return Some(LimitHit::Memory);
    }
    if limits.file_size_bytes.is_some() && s.contains("file too large") {
        return Some(LimitHit::FileSize);
    }
    None
}

/// Limits enforced by a cgroup: they cover the whole sandbox together, not process by process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CgroupLimits {
    pub memory_max_bytes: Option<u64>,
    pub tasks_max: Option<u64>,
    /// Percent of one CPU (200 = two CPUs).
    pub cpu_quota_percent: Option<u32>,
}

impl CgroupLimits {
    pub fn is_active(&self) -> bool {
        self != &Self::default()
    }

    fn properties(&self) -> Vec<String> {
        let mut p = Vec::new();
        if let Some(m) = self.memory_max_bytes {
            p.push(format!("MemoryMax={m}"));
        }
        if let Some(t) = self.tasks_max {
            p.push(format!("TasksMax={t}"));
        }
        if let Some(c) = self.cpu_quota_percent {
            p.push(format!("CPUQuota={c}%"));
        }
        p
    }
}

/// Why no systemd scope can be made here.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScopeError {
    /// A system scope (root) needs systemd as PID 1.
    #[error("a systemd scope needs systemd as PID 1, but PID 1 here is `{comm}`")]
    NotPid1 { comm: String },
    /// A user scope needs a reachable user manager; `runtime` is where it was looked for.
    #[error(
        "a systemd scope needs a systemd user manager, and none is reachable here \
         (PID 1 is `{comm}`, no {}/systemd/private); log in through logind or \
         enable lingering with `loginctl enable-linger`",
        runtime.display()
    )]
    NoUserManager { comm: String, runtime: PathBuf },
    #[error("systemd-run is not installed (apt-get install systemd)")]
    SystemdRunMissing,
}

/// Runs an argv inside a transient systemd scope with cgroup properties. Knows systemd only.
#[derive(Debug, Clone)]
pub struct SystemdScopeRunner {
    /// Where `/proc/1/comm` and `/run/systemd` are looked for (`/` on a real host).
    root: PathBuf,
    /// The `systemd-run` binary.
    systemd_run: PathBuf,
    /// Run in the system manager (as root) or the user manager.
    system_scope: bool,
}

static UNIT_SEQ: AtomicU64 = AtomicU64::new(0);

impl SystemdScopeRunner {
    /// The runner for this host: the system scope as root, the user scope otherwise.
    pub fn for_host(search_path: &std::ffi::OsStr) -> Self {
        SystemdScopeRunner {
            root: PathBuf::from("/"),
            systemd_run: find_in_path("systemd-run", search_path)
                .unwrap_or_else(|| PathBuf::from("systemd-run")),
            system_scope: rustix::process::geteuid().is_root(),
        }
    }

    /// A runner that reads host facts under `root` (tests).
    pub fn with_root(root: &Path, systemd_run: PathBuf, system_scope: bool) -> Self {
        SystemdScopeRunner {
            root: root.to_path_buf(),
            systemd_run,
            system_scope,
        }
    }

    /// Whether a scope can be made here, and if not, why: the system manager (as root) needs
    /// systemd as PID 1; the user manager needs only to be reachable (a desktop session, or
    /// lingering), whatever PID 1 is.
    pub fn available(&self) -> Result<(), ScopeError> {
        let comm = std::fs::read_to_string(self.root.join("proc/1/comm"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        if self.system_scope {
            if comm != "systemd" || !self.root.join("run/systemd/system").is_dir() {
                return Err(ScopeError::NotPid1 { comm });
            }
        } else {
            let uid = rustix::process::getuid().as_raw();
            let runtime = std::env::var_os("XDG_RUNTIME_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(format!("/run/user/{uid}")));
            let runtime = self
                .root
                .join(runtime.strip_prefix("/").unwrap_or(&runtime));
            if !runtime.join("systemd/private").exists() && !runtime.join("bus").exists() {
                return Err(ScopeError::NoUserManager { comm, runtime });
            }
        }
        if !self.systemd_run.is_file() {
            return Err(ScopeError::SystemdRunMissing);
        }
        Ok(())
    }

    /// A unit name no other scope has: pid, a sequence number and the time.
    pub fn unit_name(&self) -> String {
        let seq = UNIT_SEQ.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("spear-{}-{seq}-{nanos:x}.scope", std::process::id())
    }

    /// The argv that runs `argv` in a new scope with `limits`. `systemd-run --scope` execs the
    /// command itself, so a pidfd held on it stays on the command.
    pub fn wrap(&self, argv: &[OsString], limits: &CgroupLimits, unit: &str) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec![self.systemd_run.clone().into()];
        if !self.system_scope {
            out.push("--user".into());
        }
        // A fixed description: by default systemd describes a scope by its whole command
        // line, which would put every command's arguments in the journal.
        for a in [
            "--scope",
            "--quiet",
            "--collect",
            "--description=Spear sandbox",
        ] {
            out.push(a.into());
        }
        out.push(format!("--unit={unit}").into());
        for p in limits.properties() {
            out.push("-p".into());
            out.push(p.into());
        }
        out.push("--".into());
        out.extend(argv.iter().cloned());
        out
    }
}

/// Find an executable named `name` on a `PATH`-style list.
pub fn find_in_path(name: &str, search_path: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(search_path)
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rlimits_always_disable_core_dumps_and_stay_under_the_hard_limit() {
        let r = ResourceLimits {
            cpu_seconds: Some(5),
            ..ResourceLimits::none()
        }
        .to_rlimits();
        assert_eq!(r[0].0, Resource::Core);
        assert_eq!(r[0].1.maximum, Some(0));
        let cpu = &r[1].1;
        assert_eq!(cpu.current, Some(5));
        assert!(cpu.maximum <= Some(6));
        assert!(!ResourceLimits::none().is_active() && ResourceLimits::default().is_active());
    }

    #[test]
    fn limits_are_named_from_signals_and_messages() {
        let l = ResourceLimits::default();
        assert_eq!(limit_hit(&l, 128 + libc::SIGXCPU, ""), Some(LimitHit::Cpu));
        assert_eq!(
            limit_hit(&l, 128 + libc::SIGXFSZ, ""),
            Some(LimitHit::FileSize)
        );
        assert_eq!(
            limit_hit(
                &l,
                254,
                "bash: fork: retry: Resource temporarily unavailable"
            ),
            Some(LimitHit::Processes)
        );
        assert_eq!(
            limit_hit(&l, 1, "head: memory exhausted"),
            Some(LimitHit::Memory)
        );
        assert_eq!(limit_hit(&l, 1, "grep: no match"), None);
        assert_eq!(limit_hit(&l, 1, "bash: fork: Cannot allocate memory"), None);
        assert_eq!(
            limit_hit(&ResourceLimits::none(), 128 + libc::SIGXCPU, ""),
            None
        );
    }

    #[test]
    fn systemd_scope_wraps_with_unique_units_and_properties() {
        let s = SystemdScopeRunner::with_root(Path::new("/"), "/usr/bin/systemd-run".into(), false);
        let limits = CgroupLimits {
            memory_max_bytes: Some(1 << 30),
            tasks_max: Some(256),
            cpu_quota_percent: Some(150),
        };
        let (a, b) = (s.unit_name(), s.unit_name());
        assert_ne!(a, b);
        let got = s.wrap(&["bwrap".into(), "true".into()], &limits, "spear-1.scope");
        let want: Vec<OsString> = [
            "/usr/bin/systemd-run",
            "--user",
            "--scope",
            "--quiet",
            "--collect",
            "--description=Spear sandbox",
            "--unit=spear-1.scope",
            "-p",
            "MemoryMax=1073741824",
            "-p",
            "TasksMax=256",
            "-p",
            "CPUQuota=150%",
            "--",
            "bwrap",
            "true",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        assert_eq!(got, want);
        let root = SystemdScopeRunner::with_root(Path::new("/"), "/x".into(), true);
        assert!(!root.wrap(&[], &limits, "u").iter().any(|a| a == "--user"));
    }

    #[test]
    fn without_systemd_as_pid_1_cgroup_limits_are_unavailable_and_say_why() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/1")).unwrap();
        std::fs::write(d.path().join("proc/1/comm"), "process_api\n").unwrap();
        let s = SystemdScopeRunner::with_root(d.path(), "/bin/true".into(), true);
        let err = s.available().unwrap_err();
        assert_eq!(
            err,
            ScopeError::NotPid1 {
                comm: "process_api".into()
            }
        );
        assert!(
            err.to_string().contains("PID 1 here is `process_api`"),
            "{err}"
        );
    }

    #[test]
    fn a_user_manager_makes_user_scopes_available_whatever_pid_1_is() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/1")).unwrap();
        std::fs::write(d.path().join("proc/1/comm"), "init\n").unwrap();
        let run = d.path().join("systemd-run");
        std::fs::write(&run, "").unwrap();
        let user = SystemdScopeRunner::with_root(d.path(), run.clone(), false);
        let err = user.available().unwrap_err();
        assert!(matches!(err, ScopeError::NoUserManager { ref comm, .. } if comm == "init"));
        let text = err.to_string();
        assert!(
            text.contains("user manager") && text.contains("enable-linger"),
            "{err}"
        );
        let uid = rustix::process::getuid().as_raw();
        let runtime = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(format!("/run/user/{uid}")));
        let private = d
            .path()
            .join(runtime.strip_prefix("/").unwrap_or(&runtime))
            .join("systemd/private");
        std::fs::create_dir_all(private.parent().unwrap()).unwrap();
        std::fs::write(&private, "").unwrap();
        assert_eq!(user.available(), Ok(()));
        assert!(
            user.wrap(&[], &CgroupLimits::default(), "u")
                .iter()
                .any(|a| a == "--user")
        );
        // The system manager still needs systemd as PID 1.
        let system = SystemdScopeRunner::with_root(d.path(), run, true);
        assert!(
            system
                .available()
                .unwrap_err()
                .to_string()
                .contains("PID 1 here is `init`")
        );
    }
}
