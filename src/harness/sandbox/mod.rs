//! `BubblewrapSandbox`: where a command runs. It turns a `SandboxSpec` into a bwrap process held
//! by pidfds, preflights once (cached, terminal failures remembered) and runs the closed-network
//! path; `netns` runs the network path on top of it. Invariant: the execution layer never knows
//! why a command was allowed; it sees a `SandboxSpec` and nothing else.

pub(crate) mod argv;
pub mod env;
pub(crate) mod error;
mod launch;
pub(crate) mod ledger;
mod long_lived;
pub mod netns;
pub(crate) mod placeholders;
pub mod preflight;
mod preflight_cache;
pub mod procfs;
pub mod proxy;
pub mod root_uid;
pub mod seccomp;
pub mod sockets;
pub mod spec;
pub(crate) mod tmpfs;

pub use argv::build_argv;
pub use error::{HelperMissing, NamespacePrepError, SandboxError, SpecError};
pub use launch::{CAPTURE_HEAD, CAPTURE_TAIL, End, SandboxOutcome};
pub use ledger::{LedgerEntry, SandboxLedger, SweepReport};
pub use long_lived::{LongLived, LongLivedNetwork, StderrLog};
pub use preflight::PreflightFailure;
pub use spec::{BindSources, Masked, Protection, SandboxNetwork, SandboxSpec, SystemEntry};
pub use tmpfs::TmpfsSizes;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::process::{Resource, Rlimit};

use crate::harness::process::{
    ForeignProcess, NetnsPlan, NullSink, OutputSink, PrivateStage, ProcessError, StagedTree,
    configure_namespaces,
};
use crate::harness::resource_control::process_cap::ProcessCap;
use crate::harness::resource_control::{CgroupLimits, SystemdScopeRunner, find_in_path};
pub(crate) use launch::Running;
use launch::StatusPipe;
use root_uid::SandboxUser;

/// How long a preflight may take before it is declared failed (a hung mount cannot hang Spear).
pub const PREFLIGHT_LIMIT: Duration = Duration::from_secs(10);
/// How long bwrap may take to report its namespace init.
const STATUS_LIMIT: Duration = Duration::from_secs(10);

/// Host facts probed once per sandbox instance.
#[derive(Debug, Clone)]
pub struct HostLayout {
    pub system: Vec<SystemEntry>,
    pub masked: Vec<Masked>,
    pub resolv_conf_dest: PathBuf,
    pub proc_read_only: Vec<PathBuf>,
    pub proc_masked: Vec<Masked>,
}

impl HostLayout {
    pub fn probe() -> Self {
        let root = Path::new("/");
        let (proc_read_only, proc_masked) = procfs::probe_proc(root);
        HostLayout {
            system: spec::probe_system(root),
            masked: spec::probe_secrets(root),
            resolv_conf_dest: spec::resolv_conf_dest(root),
            proc_read_only,
            proc_masked,
        }
    }
}

/// The limits a launch applies: rlimits in the child, a cap on the sandbox's processes, and
/// optionally a systemd scope around it.
#[derive(Debug, Clone, Default)]
pub struct LaunchLimits {
    pub rlimits: Vec<(Resource, Rlimit)>,
    /// How the sandbox's processes are capped (`process_cap`), applied before the command
    /// starts.
    pub process_cap: Option<ProcessCap>,
    /// A systemd scope around bwrap with these cgroup limits (the `TasksMax` of a
    /// `SystemdScope` process cap among them).
    pub cgroup: Option<(SystemdScopeRunner, CgroupLimits)>,
    /// The network path's settings for the sandbox's network namespace (refusal routes).
    pub netns: Option<NetnsPlan>,
    /// Cancelling it stops the command as a timeout does: the whole sandbox is killed through
    /// its pidfds and its death confirmed.
    pub cancel: Option<crate::harness::process::CancelToken>,
}

pub struct BubblewrapSandbox {
    bwrap: Option<PathBuf>,
    slirp: Option<PathBuf>,
    layout: HostLayout,
    preflight: tokio::sync::Mutex<Option<Result<(), PreflightFailure>>>,
    /// Network preflight results, per workspace (the sandbox is the other half of the key).
    pub(crate) net_preflight:
        tokio::sync::Mutex<HashMap<PathBuf, Result<(), netns::NetworkPreflightError>>>,
    /// Set when a sandbox on the network path was told to die and its death could not be
    /// confirmed: every later network request is refused for the life of this instance.
    network_containment_failed: Arc<AtomicBool>,
    /// Where launches are recorded until their death is confirmed (none: launches are still
    /// marked and ended on drop, but a Spear killed mid-launch leaves nothing to sweep).
    ledger: Option<SandboxLedger>,
    /// Who the sandbox's processes are on the host.
    user: SandboxUser,
    #[cfg(test)]
    pub(crate) faults: Faults,
}

/// Failures a unit test injects into a launch to prove how each is handled; they do not exist
/// in the shipped binary.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// The namespace settings fail after bwrap created the namespaces.
    pub namespace_setup: AtomicBool,
    /// A kill of the sandbox is reported unconfirmed (the processes are still killed).
    pub unconfirmed_kill: AtomicBool,
}

impl BubblewrapSandbox {
    /// A sandbox whose helpers are looked up on `search_path` (a `PATH` value).
    pub fn new(search_path: &OsStr) -> Self {
        BubblewrapSandbox {
            bwrap: find_in_path("bwrap", search_path),
            slirp: find_in_path("slirp4netns", search_path),
            layout: HostLayout::probe(),
            preflight: tokio::sync::Mutex::new(None),
            net_preflight: tokio::sync::Mutex::new(HashMap::new()),
            network_containment_failed: Arc::new(AtomicBool::new(false)),
            ledger: None,
            user: SandboxUser::for_this_process(false),
            #[cfg(test)]
            faults: Faults::default(),
        }
    }

    /// Run the sandbox's processes as `user` (before `with_ledger`, whose sweep must know it).
    pub fn with_user(mut self, user: SandboxUser) -> Self {
        self.user = user;
        self
    }

    pub fn user(&self) -> &SandboxUser {
        &self.user
    }

    /// Record launches in `ledger`, after ending what dead Spears left in it.
    pub fn with_ledger(mut self, ledger: SandboxLedger) -> (Self, SweepReport) {
        let ledger = ledger.with_sandbox_uid(self.user.host_uid());
        let report = ledger.sweep();
        self.ledger = Some(ledger);
        (self, report)
    }

    pub fn layout(&self) -> &HostLayout {
        &self.layout
    }

    /// The bwrap binary, or why there is none.
    pub fn bwrap(&self) -> Result<&Path, HelperMissing> {
        self.bwrap.as_deref().ok_or(HelperMissing::Bwrap)
    }

    /// The slirp4netns binary, or why there is none.
    pub fn slirp(&self) -> Result<&Path, HelperMissing> {
        self.slirp.as_deref().ok_or(HelperMissing::Slirp)
    }

    pub fn network_containment_failed(&self) -> bool {
        self.network_containment_failed.load(Ordering::SeqCst)
    }

    /// Test-only: mark the network as poisoned, as a failed death confirmation would.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn poison_network_for_tests(&self) {
        self.poison_network();
    }

    pub(crate) fn poison_network(&self) {
        self.network_containment_failed
            .store(true, Ordering::SeqCst);
    }

    /// Run the preflight once (the spec's command is replaced by the preflight script) and
    /// remember the result; terminal failures are never probed again.
    pub async fn ensure(&self, mut spec: SandboxSpec) -> Result<(), PreflightFailure> {
        let mut cached = self.preflight.lock().await;
        if let Err(e) = self.place(&mut spec) {
            let refused = Err(PreflightFailure::Absent(e.to_string()));
            *cached = Some(refused.clone());
            return refused;
        }
        if let Some(r) = cached.as_ref()
            && (r.is_ok() || r.as_ref().err().is_some_and(|f| f.is_terminal()))
        {
            return r.clone();
        }
        // Another Spear process may already have seen this exact sandbox work.
        let entry = self.bwrap.as_deref().and_then(|b| {
            let mut probe = spec.clone();
            probe.command = Vec::new();
            preflight_cache::entry(b, &build_argv(&probe))
        });
        if entry.as_deref().is_some_and(preflight_cache::is_fresh) {
            *cached = Some(Ok(()));
            return Ok(());
        }
        let result = self.preflight_once(spec).await;
        if let (Ok(()), Some(e)) = (&result, &entry) {
            preflight_cache::record(e);
        }
        *cached = Some(result.clone());
        result
    }

    async fn preflight_once(&self, mut spec: SandboxSpec) -> Result<(), PreflightFailure> {
        let mode = if spec.workspace_write { "rw" } else { "ro" };
        spec.command = vec![
            "/bin/sh".into(),
            "-c".into(),
            preflight::PREFLIGHT_SCRIPT.into(),
            "spear-preflight".into(),
            spec.workspace.clone().into(),
            spec.home.clone().into(),
            mode.into(),
        ];
        spec.network = SandboxNetwork::Closed;
        let outcome = self
            .run(
                spec,
                &LaunchLimits::default(),
                &mut NullSink,
                PREFLIGHT_LIMIT,
            )
            .await
            .map_err(|e| match e {
                // What the sandbox lacks here is terminal: probing again would find it lacking.
                e @ (SandboxError::HelperMissing(_)
                | SandboxError::ScopeUnavailable(_)
                | SandboxError::CgroupCreate(_)
                | SandboxError::Ledger(_)
                | SandboxError::RootUser(_)
                | SandboxError::NoSeccompFilter { .. }) => PreflightFailure::Absent(e.to_string()),
                SandboxError::Process(ProcessError::Spawn { program, source }) => {
                    if source.kind() == std::io::ErrorKind::NotFound {
                        PreflightFailure::Absent(format!(
                            "{program} not found; {}",
                            preflight::INSTALL_BWRAP
                        ))
                    } else {
                        PreflightFailure::Inexecutable(format!(
                            "{program} cannot be executed: {source}; reinstall bubblewrap"
                        ))
                    }
                }
                other => PreflightFailure::Failed(other.to_string()),
            })?;
        match outcome.end {
            End::Exited(0) => Ok(()),
            End::TimedOut => Err(PreflightFailure::Failed(format!(
                "the preflight sandbox did not finish within {} s (a hung mount?)",
                PREFLIGHT_LIMIT.as_secs()
            ))),
            End::Exited(c) => Err(preflight::classify_failure(
                c,
                &outcome.stderr.render(),
                self.bwrap.as_deref().unwrap_or(Path::new("/usr/bin/bwrap")),
            )),
            End::Cancelled => Err(PreflightFailure::Failed(
                "the preflight sandbox was cancelled".into(),
            )),
            End::Signaled(s) => Err(PreflightFailure::Failed(format!(
                "the preflight sandbox was killed by signal {s}"
            ))),
        }
    }

    /// Launch `spec` on the closed-network path and wait for it.
    pub async fn run(
        &self,
        spec: SandboxSpec,
        limits: &LaunchLimits,
        sink: &mut dyn OutputSink,
        timeout: Duration,
    ) -> Result<SandboxOutcome, SandboxError> {
        let mut running = self.start(spec, limits, Vec::new(), None, timeout).await?;
        running.release();
        Ok(running.finish(sink, timeout).await)
    }

    /// Spawn bwrap blocked right after it created the namespaces, hold its namespace init by a
    /// checked pidfd, write the id maps, forbid nested user namespaces and apply the process
    /// cap. The caller finishes the setup (network) and calls `release`. When bwrap ends (or
    /// hangs) before reporting its init, it is killed and `finish` reports what it said.
    pub(crate) async fn start(
        &self,
        mut spec: SandboxSpec,
        limits: &LaunchLimits,
        mut child_fds: Vec<OwnedFd>,
        stdin: Option<std::fs::File>,
        timeout: Duration,
    ) -> Result<Running, SandboxError> {
        self.place(&mut spec)?;
        let info = StatusPipe::new()?;
        let gate = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
        // One pipe, two gates (see `SandboxSpec::gate_fd`): the first byte lets bwrap go on
        // once the id maps are written; the second holds the command itself until the caller
        // releases it, so the namespace settings (and, on the network path, slirp) are made
        // while bwrap mounts.
        let (gate_read, gate_write) = gate().map_err(std::io::Error::from)?;
        spec.info_fd = info.write.as_raw_fd();
        spec.gate_fd = gate_read.as_raw_fd();
        child_fds.push(info.write);
        child_fds.push(gate_read);
        let filter = seccomp::program_fd()?;
        spec.seccomp_fd = filter.as_raw_fd();
        child_fds.push(filter);
        let mut running = self.spawn(&spec, limits, info.read, child_fds, stdin)?;
        running.cancel_on(limits.cancel.clone());
        running.hold_gates(gate_write, 2);
        let mapped = match running.inner(STATUS_LIMIT.min(timeout)).await {
            None => Err(None),
            Some(inner) => write_id_maps(inner, self.user_ids()).map_err(Some),
        };
        let setup = mapped.and_then(|()| {
            // bwrap may go on with its mounts; the command still waits on --block-fd.
            running.open_gate();
            match running.held_inner() {
                // bwrap now mounts meanwhile; if it died of that, its own words explain the
                // failure better than the helper's step number, and `finish` reports them.
                Some(inner) => configure(inner, limits)
                    .and_then(|l| self.injected_setup_failure().map(|()| l))
                    .map_err(|e| inner.is_alive().then_some(e)),
                None => Err(None),
            }
        });
        let failure = match setup {
            Ok(listener) => {
                running.keep_listener(listener);
                return Ok(running);
            }
            Err(f) => f,
        };
        // Nothing ran; the blocked sandbox is taken down, and whether it died is checked: a
        // network sandbox whose death is unconfirmed may still hold a namespace a helper could
        // be attached to, so every later network request is refused (containment poisoning).
        let unconfirmed = self.kill_confirmed(&running).await.err().inspect(|_| {
            if limits.netns.is_some() {
                self.poison_network();
            }
        });
        match (failure, unconfirmed) {
            // bwrap ended or hung before its command: finish reports bwrap's words.
            (None, None) => Ok(running),
            (None, Some(e)) => Err(SandboxError::EndedUnconfirmed(e)),
            (Some(source), unconfirmed) => Err(SandboxError::NamespaceSetup {
                source,
                unconfirmed,
            }),
        }
    }

    /// Kill every process of a launch and confirm it through the pidfds.
    pub(crate) async fn kill_confirmed(&self, running: &Running) -> Result<(), ProcessError> {
        let killed = running.kill_all().await;
        #[cfg(test)]
        if self.faults.unconfirmed_kill.load(Ordering::SeqCst) {
            return Err(ProcessError::DeathUnconfirmed);
        }
        killed
    }

    /// Where the spec's binds come from for this sandbox's user, or why a root Spear cannot
    /// run commands here.
    fn place(&self, spec: &mut SandboxSpec) -> Result<(), SandboxError> {
        match &self.user {
            SandboxUser::Own | SandboxUser::HostRoot => Ok(()),
            SandboxUser::Refused(why) => Err(SandboxError::RootUser(why.clone())),
            SandboxUser::Mapped(_) => {
                spec.sources = BindSources::Staged(PathBuf::from(STAGE_DIR));
                Ok(())
            }
        }
    }

    /// The uid and gid the sandbox's processes have on the host (and inside: the id maps are
    /// the identity on them).
    fn user_ids(&self) -> (u32, u32) {
        match &self.user {
            SandboxUser::Mapped(m) => (m.ids.uid, m.ids.gid),
            _ => (
                rustix::process::geteuid().as_raw(),
                rustix::process::getegid().as_raw(),
            ),
        }
    }

    /// A mapped user's stage: the workspace idmapped to the sandbox's uid and the vetted host
    /// paths, as detached trees the launch attaches under [`STAGE_DIR`] in its own mount
    /// namespace. `become_later`: a program the launch executes first (systemd-run) still needs
    /// root, so the uid is changed after it (by `setpriv`), not in the child.
    fn stage_for(
        &self,
        spec: &SandboxSpec,
        become_later: bool,
    ) -> Result<Option<PrivateStage>, SandboxError> {
        let (SandboxUser::Mapped(user), BindSources::Staged(dir)) = (&self.user, &spec.sources)
        else {
            return Ok(None);
        };
        let refused = |e: root_uid::IdmapUnsupported| SandboxError::RootUser(e.to_string());
        stage_dir_ready(dir)?;
        let c = |p: &Path| {
            std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
                .map_err(|_| SandboxError::RootUser(format!("{} has a NUL byte", p.display())))
        };
        let mut trees = vec![StagedTree {
            at: c(&dir.join(BindSources::WORKSPACE))?,
            tree: user.workspace_tree(&spec.workspace).map_err(refused)?,
            dir: true,
        }];
        for (i, p) in spec.host_read_paths.iter().enumerate() {
            trees.push(StagedTree {
                at: c(&dir.join(BindSources::host_read_name(i)))?,
                tree: root_uid::clone_tree(p, None).map_err(refused)?,
                dir: p.is_dir(),
            });
        }
        Ok(Some(PrivateStage {
            dir: c(dir)?,
            options: c(Path::new(STAGE_TMPFS))?,
            trees,
            ids: (user.ids.uid, user.ids.gid),
            become_now: !become_later,
        }))
    }

    fn injected_setup_failure(&self) -> Result<(), NamespacePrepError> {
        #[cfg(test)]
        if self.faults.namespace_setup.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("injected namespace setup failure").into());
        }
        Ok(())
    }

    /// Spawn bwrap for `spec` (its fds already assigned), wrapped in a systemd scope when cgroup
    /// limits are requested.
    pub(crate) fn spawn(
        &self,
        spec: &SandboxSpec,
        limits: &LaunchLimits,
        status_read: OwnedFd,
        child_fds: Vec<OwnedFd>,
        stdin: Option<std::fs::File>,
    ) -> Result<Running, SandboxError> {
        let bwrap = self.bwrap()?;
        let argv = build_argv(spec);
        let stage = self.stage_for(spec, limits.cgroup.is_some())?;
        let (program, argv): (PathBuf, Vec<OsString>) = match &limits.cgroup {
            None => (bwrap.to_path_buf(), argv),
            Some((scope, cg)) => {
                scope.available()?;
                let mut full = match stage.as_ref().map(|_| self.user_ids()) {
                    Some(ids) => become_with_setpriv(ids)?,
                    None => Vec::new(),
                };
                full.push(bwrap.as_os_str().to_os_string());
                full.extend(argv);
                let wrapped = scope.wrap(&full, cg, &scope.unit_name());
                let mut it = wrapped.into_iter();
                let program = it.next().map(PathBuf::from).unwrap_or_default();
                (program, it.collect())
            }
        };
        // The entry is written before anything is spawned, so no launch goes unrecorded.
        let entry = match &self.ledger {
            Some(l) => l.record(),
            None => LedgerEntry::unrecorded(self.user.host_uid()),
        }
        .map_err(SandboxError::Ledger)?;
        let cgroup = match &limits.process_cap {
            Some(ProcessCap::PidsCgroup { parent, limit }) => Some(parent.create(*limit)?),
            _ => None,
        };
        Ok(Running::spawn(
            &program,
            &argv,
            spec.secret_env.pairs(),
            status_read,
            child_fds,
            &limits.rlimits,
            entry,
            cgroup,
            stage,
            stdin,
        )?)
    }
}

/// Where a root Spear's launch attaches its stage: an empty directory of Spear's own that the
/// launch covers with a tmpfs in its private mount namespace; the host never sees the mounts.
pub const STAGE_DIR: &str = "/run/spear-stage";
/// The stage's tmpfs holds mount points only.
const STAGE_TMPFS: &str = "mode=0755,size=65536,nr_inodes=256";

/// Make sure [`STAGE_DIR`] is a real directory only root can change (made if missing).
fn stage_dir_ready(dir: &Path) -> Result<(), SandboxError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o755).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(SandboxError::RootUser(format!(
                "the stage directory {} cannot be made: {e}",
                dir.display()
            )));
        }
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        return Err(SandboxError::RootUser(format!(
            "{} must be a directory owned by root and writable by root alone; remove it and \
             Spear makes it again",
            dir.display()
        )));
    }
    Ok(())
}

/// The programs a launch wrapped in systemd-run puts before bwrap to leave root: util-linux's
/// `setpriv`, by absolute path (a root Spear's PATH is not trusted to name it).
fn become_with_setpriv((uid, gid): (u32, u32)) -> Result<Vec<OsString>, SandboxError> {
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .ok_or_else(|| {
            SandboxError::RootUser(
                "cgroup limits run the sandbox through systemd-run, and leaving root after it \
                 needs setpriv, which is not installed (apt-get install util-linux)"
                    .into(),
            )
        })?;
    Ok([
        setpriv.to_string(),
        format!("--reuid={uid}"),
        format!("--regid={gid}"),
        "--clear-groups".into(),
        "--pdeathsig=KILL".into(),
        "--".into(),
    ]
    .into_iter()
    .map(OsString::from)
    .collect())
}

/// What bwrap leaves to the parent with `--userns-block-fd`: the id maps (the sandbox keeps
/// Spear's own uid and gid, nothing else is mapped, `setgroups` is denied). The pidfd is
/// checked alive afterwards, so the numeric `/proc` paths named the held process throughout.
fn write_id_maps(inner: &ForeignProcess, (uid, gid): (u32, u32)) -> Result<(), NamespacePrepError> {
    let pid = inner.pid()?;
    std::fs::write(format!("/proc/{pid}/setgroups"), "deny")?;
    std::fs::write(format!("/proc/{pid}/uid_map"), format!("{uid} {uid} 1\n"))?;
    std::fs::write(format!("/proc/{pid}/gid_map"), format!("{gid} {gid} 1\n"))?;
    alive(inner)
}

/// The settings only a process inside the namespaces can write (no nested user namespaces,
/// the process cap, the network path's refusal routes), made before the command is let
/// through `--block-fd`.
fn configure(
    inner: &ForeignProcess,
    limits: &LaunchLimits,
) -> Result<Option<OwnedFd>, NamespacePrepError> {
    let (pid_max, nproc) = match &limits.process_cap {
        Some(ProcessCap::PidNamespace { pid_max }) => (Some(*pid_max), None),
        Some(ProcessCap::UserNamespaceNproc { limit }) => (None, Some(*limit)),
        _ => (None, None),
    };
    let listener = configure_namespaces(inner.fd(), pid_max, nproc, limits.netns.as_ref())?;
    alive(inner)?;
    Ok(listener)
}

fn alive(inner: &ForeignProcess) -> Result<(), NamespacePrepError> {
    if inner.is_alive() {
        Ok(())
    } else {
        Err(NamespacePrepError::InitDied)
    }
}
