//! `CommandRunner`: the ownership boundary between "a command was allowed" and "a command runs
//! confined". It owns the sandbox instance and the resource contracts, turns an
//! `ExecutionProfile` into a `SandboxSpec`, checks every mechanism the contract needs before
//! anything is spawned, and returns one `ToolResult`: a death by signal is `failed` and named
//! (`exit.rs`), and a writable run says what it changed in the workspace (a snapshot
//! before and after, `workspace::snapshot`). Invariant: there is no path from
//! "mechanism unavailable" to "run it anyway": each missing piece is a `failed` result.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::harness::command_policy::ExecutionProfile;
use crate::harness::egress::NetworkPath;
use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::harness::process::{CancelToken, OutputSink};
use crate::harness::resource_control::pids_cgroup::PidsCgroupParent;
use crate::harness::resource_control::process_cap::{HostFacts, ProcessCap, ProcessCapUnavailable};
use crate::harness::resource_control::{
    CgroupLimits, ResourceLimits, SystemdScopeRunner, limit_hit, rlimit_mechanism,
};
use crate::harness::sandbox::netns::{self, IpPrefix, NetworkPreflightError};
use crate::harness::sandbox::placeholders::WorkspaceHold;
use crate::harness::sandbox::proxy;
use crate::harness::sandbox::root_uid::SandboxUser;
use crate::harness::sandbox::sockets::SocketSurvey;
use crate::harness::sandbox::{
    BindSources, BubblewrapSandbox, End, LaunchLimits, LongLivedNetwork, PreflightFailure,
    Protection, SandboxError, SandboxLedger, SandboxNetwork, SandboxOutcome, SandboxSpec,
    SpecError, SweepReport, TmpfsSizes, env, ledger, spec,
};
pub use crate::harness::sandbox::{LongLived, StderrLog};
use crate::harness::workspace::modes;
use crate::harness::workspace::snapshot::{self, WorkspaceSnapshot};
pub use error::{LongLivedError, MechanismError};
pub use held_files::{HeldFile, HeldFileCheck};

/// More workspace-relative paths to protect, found by a walk of the tree the first time a
/// writable run needs them: a read-only run binds nothing writable, so it never pays for the
/// walk. The runner does not know what the paths are or why (the target policy does).
#[derive(Clone)]
pub struct ProtectedScan(std::sync::Arc<dyn Fn() -> Vec<PathBuf> + Send + Sync>);

impl ProtectedScan {
    pub fn new(scan: impl Fn() -> Vec<PathBuf> + Send + Sync + 'static) -> Self {
        ProtectedScan(std::sync::Arc::new(scan))
    }
}

impl std::fmt::Debug for ProtectedScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProtectedScan(..)")
    }
}

/// The sandbox's own default time limit for one command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(45);

/// Everything a runner is built from. Built once per session.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub workspace: PathBuf,
    /// Workspace-relative paths no command may write (the target policy's generated and
    /// snapshot paths). `.git/config` and `.git/hooks` are always added.
    pub protected_paths: Vec<PathBuf>,
    /// More paths to protect, looked for once, on the first writable run.
    pub protected_scan: Option<ProtectedScan>,
    /// Workspace-relative paths no command may change or create: bound read-only when they
    /// exist, and removed again after the run (which then fails saying so) when a command
    /// created one.
    pub uncreatable_paths: Vec<PathBuf>,
    /// Asked about every regular file a writable run's before-snapshot sees (answers cached by
    /// inode, size and times): a file it names is bound read-only for the run.
    pub held_files: Option<HeldFileCheck>,
    pub resource_limits: ResourceLimits,
    pub cgroup_limits: CgroupLimits,
    pub default_timeout: Duration,
    /// The host environment the allow-list is applied to.
    pub host_env: Vec<(String, String)>,
    /// Where bwrap, slirp4netns and systemd-run are looked up (a `PATH` value).
    pub search_path: OsString,
    /// The size of every writable tmpfs in the sandbox (`/tmp`, `$HOME`, `/run`, `/dev/shm`).
    pub tmpfs: TmpfsSizes,
    /// Addresses and prefixes the network path may reach although they are refused by default
    /// (the host's own, private, link-local, multicast and other special ranges). Parse each
    /// from text such as `192.168.1.10` or `10.1.0.0/16` with `str::parse::<IpPrefix>()`.
    pub network_allow: Vec<IpPrefix>,
    /// Secret values the egress proxy refuses to see in a plain-HTTP request line or header.
    pub known_secrets: crate::harness::secrets::KnownSecrets,
    /// `[sandbox] root_uid = "host"`: a root Spear's sandbox runs as the host's root.
    pub root_uid_host: bool,
    /// Entries the before/after snapshot of a writable run records at most (`changed_paths`).
    pub snapshot_max_entries: usize,
    /// Where launches are recorded until their processes are confirmed dead, so the next
    /// runner ends what a killed Spear left (`$XDG_STATE_HOME/spear/sandboxes`); outside every
    /// mount the sandbox gets.
    pub ledger_dir: Option<PathBuf>,
}

impl RunnerConfig {
    /// Defaults for `workspace`, with this process's environment and `PATH`.
    pub fn for_workspace(workspace: impl Into<PathBuf>) -> Self {
        let host_env: Vec<(String, String)> = std::env::vars().collect();
        RunnerConfig {
            workspace: workspace.into(),
            protected_paths: Vec::new(),
            protected_scan: None,
            uncreatable_paths: Vec::new(),
            held_files: None,
            resource_limits: ResourceLimits::default(),
            cgroup_limits: CgroupLimits::default(),
            default_timeout: DEFAULT_TIMEOUT,
            ledger_dir: ledger::default_dir(&host_env),
            host_env,
            search_path: std::env::var_os("PATH").unwrap_or_else(|| env::SYSTEM_PATH.into()),
            tmpfs: TmpfsSizes::DEFAULT,
            network_allow: Vec::new(),
            known_secrets: Default::default(),
            root_uid_host: false,
            snapshot_max_entries: snapshot::DEFAULT_MAX_ENTRIES,
        }
    }
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Bash source, run as `/bin/bash -c COMMAND` (what was classified is what runs), or as
    /// the profile's literal argv when the classifier read one from exactly this source.
    pub command: String,
    pub profile: ExecutionProfile,
    /// Replaces the runner's default for this call only.
    pub timeout: Option<Duration>,
}

impl RunRequest {
    /// The argv to start without a shell: the profile's literal argv, when it was read from
    /// this request's own command (a profile carried over to another command is not trusted
    /// for it, and that command runs under bash).
    pub fn literal_argv(&self) -> Option<&[String]> {
        self.profile
            .literal_argv
            .as_ref()
            .filter(|a| a.source() == self.command)
            .map(|a| a.argv())
    }
}

/// Each of `paths` (absent before the command ran) that exists now, removed again; the flag
/// says whether the removal worked.
fn remove_created(paths: &[PathBuf]) -> Vec<(PathBuf, bool)> {
    paths
        .iter()
        .filter_map(|p| {
            let removed = match p.symlink_metadata().ok()? {
                m if m.is_dir() => std::fs::remove_dir_all(p).is_ok(),
                _ => std::fs::remove_file(p).is_ok(),
            };
            Some((p.clone(), removed))
        })
        .collect()
}

/// The run failed for `why`, after whatever reason it already had.
fn fail_with(result: &mut ToolResult, why: String) {
    result.status = ToolStatus::Failed;
    result.reason = Some(match result.reason.take() {
        Some(r) => format!("{r}; {why}"),
        None => why,
    });
}

/// Whether the command's output carries an error a write to a read-only bind meets: the bind
/// itself refuses writes, and its mount point (and the pinned directories above it) cannot be
/// renamed, replaced or removed.
fn mentions_read_only_fs(result: &ToolResult) -> bool {
    ["Read-only file system", "Device or resource busy"]
        .iter()
        .any(|e| result.stderr.contains(e) || result.stdout.contains(e))
}

fn cancelled_before_start() -> ToolResult {
    ToolResult::cancelled("the task was cancelled before the command started; nothing ran")
}

/// A mechanism a test may declare unavailable, to prove nothing is spawned without it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Rlimits,
}

pub struct CommandRunner {
    config: RunnerConfig,
    workspace: PathBuf,
    protected: Vec<PathBuf>,
    /// What `config.protected_scan` found, once a writable run asked.
    scanned: std::sync::OnceLock<Vec<PathBuf>>,
    /// Where the workspace's socket files are, cached by directory between runs.
    sockets: std::sync::Mutex<SocketSurvey>,
    /// `config.held_files`'s answers so far.
    held: std::sync::Mutex<held_files::HeldFileCache>,
    home: PathBuf,
    sandbox: BubblewrapSandbox,
    /// What the sandbox ledger's sweep at creation found (none: no ledger could be opened).
    swept: Option<SweepReport>,
    scope: SystemdScopeRunner,
    /// The kernel and user facts the process cap is chosen from.
    facts: HostFacts,
    /// The process cap's mechanism, chosen on first use (none: no process limit configured).
    process_cap: std::sync::OnceLock<Result<Option<ProcessCap>, ProcessCapUnavailable>>,
    simulated_missing: Vec<Mechanism>,
    host_loopback_for_tests: bool,
    /// How the egress proxy looks names up.
    egress_resolver: Arc<dyn proxy::Resolve>,
    /// Tests only: exact addresses the egress proxy may reach although refused.
    #[cfg(any(test, feature = "test-hooks"))]
    egress_exempt: Vec<std::net::SocketAddr>,
}

impl CommandRunner {
    /// What ending dead Spears' sandboxes found when this runner was made; `None` when no
    /// ledger could be kept (then a Spear killed mid-launch leaves nothing to sweep).
    pub fn ledger_sweep(&self) -> Option<&SweepReport> {
        self.swept.as_ref()
    }

    pub fn new(config: RunnerConfig) -> Result<Self, SandboxError> {
        let workspace = std::fs::canonicalize(&config.workspace).map_err(|source| {
            SpecError::WorkspaceUnresolvable {
                path: config.workspace.clone(),
                source,
            }
        })?;
        if spec::SYSTEM_PATHS
            .iter()
            .any(|s| Path::new(s).starts_with(&workspace) || workspace.starts_with(s))
            || workspace == Path::new("/")
        {
            return Err(SpecError::WorkspaceOverlapsSystem(workspace).into());
        }
        let mut protected: Vec<PathBuf> =
            spec::ALWAYS_PROTECTED.iter().map(PathBuf::from).collect();
        protected.extend(config.protected_paths.iter().cloned());
        let host_home = config
            .host_env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| PathBuf::from(v));
        let home = sandbox_home(host_home.as_deref(), &workspace);
        let mut sandbox = BubblewrapSandbox::new(&config.search_path)
            .with_user(SandboxUser::for_this_process(config.root_uid_host));
        let mut swept = None;
        // A ledger inside the workspace could be rewritten by the commands it guards.
        if let Some(dir) = config
            .ledger_dir
            .as_deref()
            .filter(|d| !d.starts_with(&workspace))
            && let Ok(ledger) = SandboxLedger::open(dir)
        {
            let (with, report) = sandbox.with_ledger(ledger);
            sandbox = with;
            swept = Some(report);
        }
        Ok(CommandRunner {
            sandbox,
            swept,
            scope: SystemdScopeRunner::for_host(&config.search_path),
            facts: HostFacts::probe(),
            process_cap: std::sync::OnceLock::new(),
            config,
            workspace,
            protected,
            scanned: std::sync::OnceLock::new(),
            sockets: std::sync::Mutex::new(SocketSurvey::new()),
            held: std::sync::Mutex::new(held_files::HeldFileCache::default()),
            home,
            simulated_missing: Vec::new(),
            host_loopback_for_tests: false,
            egress_resolver: Arc::new(proxy::SystemResolver),
            #[cfg(any(test, feature = "test-hooks"))]
            egress_exempt: Vec::new(),
        })
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn sandbox(&self) -> &BubblewrapSandbox {
        &self.sandbox
    }

    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn simulate_missing_for_tests(&mut self, m: Mechanism) {
        self.simulated_missing.push(m);
    }

    /// Test-only: believe the kernel keeps one `pid_max` for the whole machine (before Linux
    /// 6.14), so the older kernels' process cap is exercised on a newer one.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn pretend_pid_max_not_namespaced_for_tests(&mut self) {
        self.facts.pid_max_namespaced = false;
        self.process_cap = std::sync::OnceLock::new();
    }

    /// The facts the process cap was chosen from.
    pub fn host_facts(&self) -> HostFacts {
        self.facts
    }

    /// How the configured process limit is enforced here (`Ok(None)`: no limit configured), or
    /// why it cannot be.
    pub fn process_cap(&self) -> Result<Option<&ProcessCap>, ProcessCapUnavailable> {
        self.process_cap
            .get_or_init(|| {
                self.config
                    .resource_limits
                    .processes
                    .map(|limit| {
                        let cap = ProcessCap::choose(
                            limit,
                            &self.facts,
                            &self.scope,
                            &PidsCgroupParent::find,
                        );
                        // Launch cgroups a Spear that has exited could not remove yet.
                        if let Ok(ProcessCap::PidsCgroup { parent, .. }) = &cap {
                            parent.sweep_leftovers();
                        }
                        cap
                    })
                    .transpose()
            })
            .as_ref()
            .map(Option::as_ref)
            .map_err(Clone::clone)
    }

    /// Test-only: let the network path reach the host's loopback (slirp without
    /// `--disable-host-loopback`), so a test can prove the default really blocks it.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn allow_host_loopback_for_tests(&mut self) {
        self.host_loopback_for_tests = true;
    }

    /// Test-only: the egress proxy looks names up in `resolver` instead of the system's.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn resolve_egress_for_tests(&mut self, resolver: proxy::resolve::TableResolver) {
        self.egress_resolver = Arc::new(resolver);
    }

    /// Test-only: the egress proxy may reach exactly `at` although its range is refused (a
    /// loopback server the test started). No release build has this.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn exempt_egress_for_tests(&mut self, at: std::net::SocketAddr) {
        self.egress_exempt.push(at);
    }

    /// Test-only: the resolver table and exemptions a `test-hooks` binary is given through
    /// the variables of `proxy::resolve` (`SPEAR_TEST_EGRESS_*`).
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn egress_hooks_from_env_for_tests(&mut self) {
        use proxy::resolve::{EXEMPT_VAR, LOOKUPS_VAR, RESOLVE_VAR, TableResolver};
        if let Ok(spec) = std::env::var(RESOLVE_VAR) {
            let log = std::env::var_os(LOOKUPS_VAR).map(PathBuf::from);
            self.resolve_egress_for_tests(TableResolver::from_spec(&spec, log));
        }
        if let Ok(list) = std::env::var(EXEMPT_VAR) {
            for at in list.split(',').filter_map(|a| a.trim().parse().ok()) {
                self.exempt_egress_for_tests(at);
            }
        }
    }

    /// What the egress proxy of one run decides with.
    fn proxy_context(
        &self,
        egress: &crate::harness::egress::Egress,
        command: String,
    ) -> proxy::ProxyContext {
        proxy::ProxyContext {
            egress: egress.clone(),
            command,
            network_allow: self.config.network_allow.clone(),
            secrets: self.config.known_secrets.clone(),
            resolver: self.egress_resolver.clone(),
            #[cfg(any(test, feature = "test-hooks"))]
            exempt: self.egress_exempt.clone(),
        }
    }

    /// The spec for `profile` running `command`. Protections are probed now, as the workspace is.
    pub fn build_spec(
        &self,
        profile: &ExecutionProfile,
        command: Vec<OsString>,
    ) -> Result<SandboxSpec, SandboxError> {
        let host_read_paths = profile
            .host_read_paths
            .iter()
            .map(|p| spec::vet_host_read_path(p, &self.workspace))
            .collect::<Result<Vec<_>, _>>()?;
        let protections = if profile.workspace_write {
            spec::plan_protections(&self.workspace, &self.protected_now())?
        } else {
            Vec::new()
        };
        self.config.tmpfs.check()?;
        let tmpdir = PathBuf::from("/tmp");
        let layout = self.sandbox.layout();
        Ok(SandboxSpec {
            workspace: self.workspace.clone(),
            workspace_write: profile.workspace_write,
            workspace_hidden: false,
            system: layout.system.clone(),
            masked: layout.masked.clone(),
            env: env::sandbox_env(&self.config.host_env, &self.home, &tmpdir, &host_read_paths),
            secret_env: Default::default(),
            home: self.home.clone(),
            tmpdir,
            tmpfs: self.config.tmpfs,
            proc_read_only: layout.proc_read_only.clone(),
            proc_masked: layout.proc_masked.clone(),
            protections,
            covered_sockets: self.workspace_sockets(),
            host_read_paths,
            network: SandboxNetwork::Closed,
            info_fd: -1,
            gate_fd: -1,
            seccomp_fd: -1,
            // The sandbox stages them if its user needs it (see `BubblewrapSandbox::start`).
            sources: BindSources::InPlace,
            command,
        })
    }

    /// Every workspace-relative path a writable run keeps read-only, as the workspace is now.
    /// What a run created that it must not have, as the person is told: each path and whether
    /// it was removed again.
    fn created_names(&self, created: &[(PathBuf, bool)]) -> Vec<String> {
        created
            .iter()
            .map(|(p, removed)| {
                let rel = p.strip_prefix(&self.workspace).unwrap_or(p).display();
                match removed {
                    true => format!("`{rel}` (removed again)"),
                    false => format!("`{rel}` (which could not be removed: remove it yourself)"),
                }
            })
            .collect()
    }

    fn protected_now(&self) -> Vec<PathBuf> {
        let mut protected = self.protected.clone();
        if let Some(scan) = &self.config.protected_scan {
            protected.extend(self.scanned.get_or_init(|| (scan.0)()).iter().cloned());
        }
        protected.extend(spec::existing_git_controls(&self.workspace));
        protected.extend(
            self.config
                .uncreatable_paths
                .iter()
                .filter(|p| self.workspace.join(p).symlink_metadata().is_ok())
                .cloned(),
        );
        protected
    }

    /// The files `config.held_files` holds among those `before` saw.
    fn held_files(&self, before: &WorkspaceSnapshot) -> Vec<HeldFile> {
        let Some(check) = &self.config.held_files else {
            return Vec::new();
        };
        fresh_if_poisoned(&self.held, held_files::HeldFileCache::default).held(before, check)
    }

    /// The workspace's socket files now.
    fn workspace_sockets(&self) -> Vec<PathBuf> {
        fresh_if_poisoned(&self.sockets, SocketSurvey::new).survey(&self.workspace)
    }

    /// Preflight the sandbox once (cached on the sandbox instance).
    pub async fn ensure_sandbox(&self) -> Result<(), PreflightFailure> {
        self.sandbox
            .bwrap()
            .map_err(|m| PreflightFailure::Absent(m.to_string()))?;
        let profile = ExecutionProfile::read_only();
        let mut spec = self
            .build_spec(&profile, Vec::new())
            .map_err(|e| PreflightFailure::Failed(e.to_string()))?;
        spec.workspace_write = true;
        self.sandbox.ensure(spec).await
    }

    /// Every mechanism `profile` needs, checked before anything is spawned.
    pub fn check_mechanisms(&self, profile: &ExecutionProfile) -> Result<(), MechanismError> {
        self.sandbox.bwrap()?;
        if self.config.resource_limits.is_active() {
            if self.simulated_missing.contains(&Mechanism::Rlimits) {
                return Err(MechanismError::RlimitsSimulated);
            }
            rlimit_mechanism().map_err(MechanismError::RlimitRefused)?;
            self.process_cap()?;
        }
        if self.config.cgroup_limits.is_active() {
            self.scope.available()?;
        }
        // Only the full path needs slirp4netns; the proxy needs nothing bwrap does not have.
        if profile.network && profile.egress.path == NetworkPath::Full {
            if self.sandbox.network_containment_failed() {
                return Err(MechanismError::NetworkPoisoned);
            }
            netns::check_support(&self.sandbox)?;
        }
        Ok(())
    }

    fn launch_limits(&self) -> LaunchLimits {
        let process_cap = self.process_cap().ok().flatten().cloned();
        let mut cgroup = self
            .config
            .cgroup_limits
            .is_active()
            .then(|| self.config.cgroup_limits.clone());
        // A scope's TasksMax is the process cap here: added to the configured cgroup limits, or
        // a scope of its own.
        if let Some(ProcessCap::SystemdScope { tasks_max }) = &process_cap {
            let cg = cgroup.get_or_insert_with(CgroupLimits::default);
            cg.tasks_max = Some(cg.tasks_max.map_or(*tasks_max, |t| t.min(*tasks_max)));
        }
        LaunchLimits {
            rlimits: self.config.resource_limits.to_rlimits(),
            process_cap,
            cgroup: cgroup.map(|cg| (self.scope.clone(), cg)),
            netns: None,
            cancel: None,
        }
    }

    /// Run one command confined, streaming its output to `sink`.
    pub async fn run(&self, req: &RunRequest, sink: &mut dyn OutputSink) -> ToolResult {
        self.run_cancellable(req, sink, None).await
    }

    /// `run`, stopped when `cancel` is cancelled: nothing starts after the cancel, and a command
    /// already running is ended as a timeout ends it (the whole sandbox killed through its
    /// pidfds, its death confirmed), reported `cancelled`.
    pub async fn run_cancellable(
        &self,
        req: &RunRequest,
        sink: &mut dyn OutputSink,
        cancel: Option<&CancelToken>,
    ) -> ToolResult {
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return cancelled_before_start();
        }
        if req.profile.secrets_allowed.enabled() {
            return ToolResult::failed(
                "a command is never handed secrets: only an MCP server the person gave them to \
                 holds any",
            );
        }
        if let Err(why) = self.check_mechanisms(&req.profile) {
            return ToolResult::failed(why.to_string());
        }
        if let Err(f) = self.ensure_sandbox().await {
            return ToolResult::failed(format!("the sandbox cannot run here: {}", f.reason()));
        }
        if req.profile.network
            && req.profile.egress.path == NetworkPath::Full
            && let Err(why) = self.ensure_network().await
        {
            return ToolResult::failed(why.to_string());
        }
        let direct = req.literal_argv();
        let command: Vec<OsString> = match direct {
            Some(argv) => argv.iter().map(OsString::from).collect(),
            None => vec!["/bin/bash".into(), "-c".into(), (&req.command).into()],
        };
        let hold = match req.profile.workspace_write {
            true => match WorkspaceHold::acquire(&self.workspace) {
                Ok(h) => Some(h),
                Err(e) => return ToolResult::failed(format!("cannot hold the workspace: {e}")),
            },
            false => None,
        };
        let mut spec = match self.build_spec(&req.profile, command) {
            Ok(s) => s,
            Err(e) => return ToolResult::failed(e.to_string()),
        };
        if direct.is_some() {
            env::add_shell_exports(&mut spec.env, &self.workspace);
        }
        // A socket removed between the survey and the mount leaves bwrap's empty mount point
        // in a writable workspace: it is cleaned up as a placeholder is.
        let placeholders: Vec<PathBuf> = spec
            .protections
            .iter()
            .filter_map(|p| match p {
                Protection::Placeholder(p) => Some(p.clone()),
                _ => None,
            })
            .chain(spec.covered_sockets.iter().cloned())
            .collect();
        // What a writable run changes is found by comparing the tree before and after; a
        // read-only run cannot change it and pays nothing.
        let max_entries = self.config.snapshot_max_entries;
        let before = req
            .profile
            .workspace_write
            .then(|| WorkspaceSnapshot::take(&self.workspace, &placeholders, max_entries));
        // Held files are planned with the other protections, so the directories above each are
        // pinned: a renamed parent cannot carry a replacement in under the held name.
        let held = before
            .as_ref()
            .map(|b| self.held_files(b))
            .unwrap_or_default();
        if !held.is_empty() {
            let mut protected = self.protected_now();
            protected.extend(held.iter().map(|h| h.rel.clone()));
            spec.protections = match spec::plan_protections(&self.workspace, &protected) {
                Ok(p) => p,
                Err(e) => {
                    if let Some(h) = hold {
                        h.release(&placeholders);
                    }
                    return ToolResult::failed(e.to_string());
                }
            };
        }
        // A file hard-linked to one outside the workspace would be changed there too through
        // the writable workspace: each stays read-only (binds after every other, so they win).
        if let Some(b) = &before {
            spec.protections.extend(
                b.hard_linked_files()
                    .into_iter()
                    .map(|rel| Protection::ReadOnly(self.workspace.join(rel))),
            );
        }
        let absent = |paths: &mut dyn Iterator<Item = &Path>| -> Vec<PathBuf> {
            match req.profile.workspace_write {
                true => paths
                    .map(|p| self.workspace.join(p))
                    .filter(|p| p.symlink_metadata().is_err())
                    .collect(),
                false => Vec::new(),
            }
        };
        let absent_controls = absent(&mut spec::UNPLACEABLE_GIT_CONTROLS.iter().map(Path::new));
        let absent_uncreatable =
            absent(&mut self.config.uncreatable_paths.iter().map(PathBuf::as_path));
        // Directories that must stay the owner's alone after the run (with the root and
        // `.git`, which the check always guards): the protected directories.
        let guarded: Vec<PathBuf> = spec
            .protections
            .iter()
            .filter_map(|p| match p {
                Protection::ReadOnly(p) if p.is_dir() => {
                    p.strip_prefix(&self.workspace).ok().map(Path::to_path_buf)
                }
                _ => None,
            })
            .collect();
        let git_before = req
            .profile
            .workspace_write
            .then(|| git_after_run::GitBefore::take(&self.workspace));
        // What the run has read-only, workspace-relative (nothing it did can show there).
        let read_only: Vec<PathBuf> = spec
            .protections
            .iter()
            .filter_map(|p| match p {
                Protection::ReadOnly(p) | Protection::Placeholder(p) => {
                    p.strip_prefix(&self.workspace).ok().map(Path::to_path_buf)
                }
                Protection::Pin(_) => None,
            })
            .collect();
        let since = modes::CtimeMark::now();
        let timeout = req.timeout.unwrap_or(self.config.default_timeout);
        let mut limits = self.launch_limits();
        limits.cancel = cancel.cloned();
        if cancel.is_some_and(CancelToken::is_cancelled) {
            if let Some(h) = hold {
                h.release(&placeholders);
            }
            return cancelled_before_start();
        }
        let outcome = if req.profile.network && req.profile.egress.path == NetworkPath::Full {
            netns::run_with_slirp(
                &self.sandbox,
                spec,
                &limits,
                sink,
                timeout,
                self.host_loopback_for_tests,
                &self.config.network_allow,
            )
            .await
        } else if req.profile.network {
            proxy::run_with_proxy(
                &self.sandbox,
                spec,
                &limits,
                sink,
                timeout,
                self.proxy_context(&req.profile.egress, req.command.clone()),
            )
            .await
        } else {
            self.sandbox.run(spec, &limits, sink, timeout).await
        };
        let changes = before.map(|b| {
            let after =
                WorkspaceSnapshot::take_after(&self.workspace, &b, &placeholders, max_entries);
            WorkspaceSnapshot::changes(&b, &after)
        });
        let created = remove_created(&absent_controls);
        let created_uncreatable = remove_created(&absent_uncreatable);
        // Not bounded by the snapshot's limits: a run that could write is checked whole.
        let left_modes = req
            .profile
            .workspace_write
            .then(|| modes::repair_after_run(&self.workspace, since, &guarded));
        // Before the hold is released: git's clean-ups run in sandboxes of their own, whose
        // placeholders are this run's.
        let git_told = match git_before {
            Some(b) => self.git_after_run(b, since, &read_only).await,
            None => Vec::new(),
        };
        if let Some(h) = hold {
            h.release(&placeholders);
        }
        let mut result = match outcome {
            Ok(o) => self.to_result(o, timeout),
            Err(e) => ToolResult::failed(e.to_string()),
        };
        if !created.is_empty() {
            let names = self.created_names(&created);
            let why = format!(
                "the command created {}, which would point the repository at another \
                 directory's config and hooks. Change the repository's layout yourself outside \
                 Spear if you mean it",
                names.join(", ")
            );
            fail_with(&mut result, why);
        }
        if !created_uncreatable.is_empty() {
            let why = format!(
                "the command created {}, which no command may create here. Create it yourself \
                 outside Spear if you mean it",
                self.created_names(&created_uncreatable).join(", ")
            );
            fail_with(&mut result, why);
        }
        match left_modes {
            Some(Ok(found)) if !found.is_empty() => {
                let names: Vec<String> = found.iter().map(ToString::to_string).collect();
                let why = format!(
                    "the command left {}: a set-id file runs with its owner's rights, and a \
                     repository or workspace others can write lets them change what git and \
                     your tools run",
                    names.join(", ")
                );
                fail_with(&mut result, why);
            }
            Some(Err(e)) => fail_with(&mut result, e.to_string()),
            _ => {}
        }
        for why in git_told {
            fail_with(&mut result, why);
        }
        // A command that met a held file is told which and why, as a file tool would be.
        if mentions_read_only_fs(&result) {
            for h in &held {
                fail_with(
                    &mut result,
                    format!("`{}` was read-only: {}", h.rel.display(), h.why),
                );
            }
        }
        if let Some(c) = changes {
            result.changed_paths = c.all();
            result.changes = Some(Box::new(c));
        }
        result
    }

    /// Start `argv` as a long-lived process (an MCP stdio server), confined as a command with
    /// `profile` is, with no wall-clock limit: the rlimits (CPU time and memory among them) are
    /// its budget for life. It may read the workspace (without `workspace_read` it sees none
    /// of it) and never write it: a session-long
    /// writer would keep the sandbox's placeholder files in the tree and escape the
    /// after-command checks and checkpoints. With the network in its profile it gets the
    /// same path a command gets (the egress proxy by the profile's names, or slirp4netns).
    pub async fn start_long_lived(
        &self,
        profile: &ExecutionProfile,
        argv: Vec<OsString>,
    ) -> Result<LongLived, LongLivedError> {
        if profile.workspace_write {
            return Err(LongLivedError::Refused(
                "a long-lived process may read the workspace but not write it".into(),
            ));
        }
        if argv.is_empty() {
            return Err(LongLivedError::Refused(
                "there is no program to start".into(),
            ));
        }
        self.check_mechanisms(profile)?;
        self.ensure_sandbox()
            .await
            .map_err(|f| LongLivedError::Preflight(f.reason().to_string()))?;
        if profile.network && profile.egress.path == NetworkPath::Full {
            self.ensure_network()
                .await
                .map_err(|e| LongLivedError::Preflight(e.to_string()))?;
        }
        let command = argv
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let mut spec = self.build_spec(profile, argv)?;
        // Granted no workspace, it sees none (a command always sees its own).
        spec.workspace_hidden = !profile.workspace_read;
        // The variables the person handed this process, besides the sandbox's own environment
        // (which carries none of the host's secrets): theirs win.
        for (name, _) in profile.secrets_allowed.pairs() {
            spec.env.retain(|(n, _)| n != name);
        }
        spec.secret_env = profile.secrets_allowed.clone();
        let network = match (profile.network, profile.egress.path) {
            (false, _) => None,
            (true, NetworkPath::Full) => Some(LongLivedNetwork::Slirp {
                allow_host_loopback: self.host_loopback_for_tests,
                network_allow: &self.config.network_allow,
            }),
            (true, NetworkPath::Proxy) => Some(LongLivedNetwork::Proxy(
                self.proxy_context(&profile.egress, command),
            )),
        };
        Ok(self
            .sandbox
            .start_long_lived(spec, &self.launch_limits(), network)
            .await?)
    }

    /// The network preflight: the full slirp path once per (sandbox, workspace).
    pub async fn ensure_network(&self) -> Result<(), NetworkPreflightError> {
        let mut cache = self.sandbox.net_preflight.lock().await;
        if let Some(r) = cache.get(&self.workspace) {
            return r.clone();
        }
        let mut profile = ExecutionProfile::read_only();
        profile.network = true;
        let script = "grep -q 'tap0:' /proc/net/dev || { echo 'no tap0 interface' >&2; exit 3; }; \
                      grep -q '^nameserver 10.0.2.3' /etc/resolv.conf \
                      || { echo 'resolv.conf does not name 10.0.2.3' >&2; exit 3; }";
        let spec = self
            .build_spec(&profile, vec!["/bin/sh".into(), "-c".into(), script.into()])
            .map_err(|e| NetworkPreflightError::Spec(e.into()))?;
        let mut sink = crate::harness::process::NullSink;
        let r = match netns::run_with_slirp(
            &self.sandbox,
            spec,
            &self.launch_limits(),
            &mut sink,
            crate::harness::sandbox::PREFLIGHT_LIMIT,
            false,
            &self.config.network_allow,
        )
        .await
        {
            Ok(o) if o.end == End::Exited(0) => Ok(()),
            Ok(o) => Err(NetworkPreflightError::Failed {
                end: o.end,
                stderr: o.stderr.render().trim().to_string(),
            }),
            Err(e) => Err(NetworkPreflightError::Launch(e.into())),
        };
        cache.insert(self.workspace.clone(), r.clone());
        r
    }

    /// The proxy path's check: a sandbox on it finds the proxy's socket on its own loopback,
    /// and the proxy answers a CONNECT to a name no list holds with a refusal, recorded. What
    /// it found, in words.
    pub async fn ensure_proxy(&self) -> Result<String, String> {
        let mut profile = ExecutionProfile::read_only();
        profile.network = true;
        profile.shell_complex = true;
        let script = "exec 3<>/dev/tcp/127.0.0.1/3128 || exit 3; \
                      printf 'CONNECT doctor.invalid:443 HTTP/1.1\\r\\n\\r\\n' >&3; \
                      head -c 12 <&3; echo; \
                      grep -q tap0 /proc/net/dev && echo has-tap0; \
                      [ \"$HTTPS_PROXY\" = http://127.0.0.1:3128 ] || echo no-proxy-variable";
        let req = RunRequest {
            command: script.to_string(),
            profile,
            timeout: Some(crate::harness::sandbox::PREFLIGHT_LIMIT),
        };
        let res = self.run(&req, &mut crate::harness::process::NullSink).await;
        let refused = res
            .connections()
            .iter()
            .any(|c| c.host == "doctor.invalid" && c.refused.is_some());
        match (res.stdout.trim(), refused) {
            ("HTTP/1.1 403", true) => Ok(
                "a command's namespace has loopback only; the proxy's socket is on its \
                 127.0.0.1:3128, and an unlisted name is refused and recorded"
                    .into(),
            ),
            (out, _) => Err(format!(
                "the proxy path did not answer as it should ({}; {})",
                if out.is_empty() { "no answer" } else { out },
                res.reason.unwrap_or_else(|| res.stderr.trim().to_string())
            )),
        }
    }

    fn to_result(&self, o: SandboxOutcome, timeout: Duration) -> ToolResult {
        let stdout = o.stdout.render();
        let stderr = o.stderr.render();
        let containment = o
            .containment
            .err()
            .map(|e| format!(" The sandbox's death could not be confirmed: {e}."));
        let (status, reason, code) = match o.end {
            End::Cancelled => (
                ToolStatus::Cancelled,
                Some(
                    "the task was cancelled: the command was stopped and its whole sandbox \
                     killed"
                        .to_string(),
                ),
                None,
            ),
            End::TimedOut => {
                let mut why = format!(
                    "the command ran past its {} s time limit; the whole sandbox was killed",
                    timeout.as_secs_f64()
                );
                // A runaway that was also held back by a limit says so.
                if let Some(hit) = limit_hit(&self.config.resource_limits, 1, &stderr) {
                    why.push_str(&format!(" ({})", hit.describe()));
                }
                (ToolStatus::Timeout, Some(why), None)
            }
            End::Signaled(s) => (
                ToolStatus::Failed,
                Some(format!(
                    "the sandbox was killed by {}",
                    exit::signal(s).map_or(format!("signal {s}"), |d| d.name.to_string())
                )),
                None,
            ),
            End::Exited(c) => {
                let limits = &self.config.resource_limits;
                let hit = limit_hit(limits, c, &stderr);
                if hit.is_some() {
                    (
                        ToolStatus::Failed,
                        exit::failure_reason(c, hit, limits),
                        Some(c),
                    )
                } else if let Some((status, why, code)) = exit::start_failure(c, &stderr) {
                    (status, Some(why), Some(code))
                } else if c == 1 && stderr.starts_with("bwrap: ") {
                    (
                        ToolStatus::Failed,
                        Some(format!(
                            "the sandbox could not be set up: {}",
                            stderr.trim()
                        )),
                        None,
                    )
                } else if c == 127 && stderr.contains("command not found") {
                    (
                        ToolStatus::NotFound,
                        Some("command not found".into()),
                        Some(c),
                    )
                } else if let Some(why) = exit::failure_reason(c, None, limits) {
                    (ToolStatus::Failed, Some(why), Some(c))
                } else {
                    (ToolStatus::Ok, None, Some(c))
                }
            }
        };
        let reason = match (reason, containment) {
            (Some(r), Some(c)) => Some(r + &c),
            (None, Some(c)) => Some(c.trim().to_string()),
            (r, None) => r,
        };
        // The model hears which connections the proxy refused, and why: a failed download is
        // then a policy answer, not a flaky network.
        let reason = match (reason, egress_refusals(&o.connections)) {
            (Some(r), Some(n)) => Some(format!("{r}. {n}")),
            (None, n) => n,
            (r, None) => r,
        };
        ToolResult {
            status,
            reason,
            stdout,
            stderr,
            exit_code: code,
            changed_paths: Vec::new(),
            changes: None,
            connections: (!o.connections.is_empty()).then(|| Box::new(o.connections)),
        }
    }
}

/// The connections the egress proxy refused, said in one sentence; `None` when it refused none.
fn egress_refusals(connections: &[crate::harness::egress::NetConnection]) -> Option<String> {
    const NAMED: usize = 20;
    let all: Vec<String> = connections
        .iter()
        .filter_map(|c| {
            c.refused
                .as_ref()
                .map(|why| format!("{} ({why})", c.target()))
        })
        .collect();
    let mut refused: Vec<String> = all.iter().take(NAMED).cloned().collect();
    if all.len() > NAMED {
        refused.push(format!("and {} more", all.len() - NAMED));
    }
    (!refused.is_empty()).then(|| {
        format!(
            "The egress proxy refused {}: {}. Only names in [network] allow are reached; ask \
             the person to add one if the command needs it",
            if refused.len() == 1 {
                "a connection"
            } else {
                "connections"
            },
            refused.join("; ")
        )
    })
}

/// `$HOME` in the sandbox: the host's when it is a sensible absolute path that neither is nor
/// lies inside the workspace nor covers a system directory; otherwise `/tmp/home`.
fn sandbox_home(host_home: Option<&Path>, workspace: &Path) -> PathBuf {
    match host_home {
        Some(h)
            if h.is_absolute()
                && spec::normalize(h) == h
                && h != Path::new("/")
                && !h.starts_with(workspace)
                && !spec::SYSTEM_PATHS
                    .iter()
                    .any(|s| Path::new(s).starts_with(h) || h.starts_with(s))
                && !Path::new("/tmp").starts_with(h)
                && !h.starts_with("/proc")
                && !h.starts_with("/dev") =>
        {
            h.to_path_buf()
        }
        _ => PathBuf::from("/tmp/home"),
    }
}

impl std::fmt::Debug for CommandRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandRunner")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

pub(crate) mod error;
pub(crate) mod exit;
mod git_after_run;
mod held_files;

/// A cache behind a mutex a panic poisoned (mid-walk) may be half-updated; it is only a
/// cache, so it starts afresh rather than be trusted or take the runner down.
fn fresh_if_poisoned<T>(
    cache: &std::sync::Mutex<T>,
    fresh: impl FnOnce() -> T,
) -> std::sync::MutexGuard<'_, T> {
    match cache.lock() {
        Ok(g) => g,
        Err(poisoned) => {
            let mut g = poisoned.into_inner();
            *g = fresh();
            g
        }
    }
}

#[cfg(test)]
mod tests;
