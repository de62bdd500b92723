//! The one composition root: from settings and a place, the harness under the tools (workspace,
//! command policy, target policy, the sandboxed executor, the ResultStore, the audit log), the
//! router over the registered tools with its observers, and the session actor over them. The
//! binary, the tests and the benches build here, so what they exercise is the wiring users run.
//! Invariant: nothing here swaps the sandbox, the audit logger or the policy; the model and the
//! approver are a caller's choice (the model is the session's type parameter, the approver is
//! per task), and there is no other way in.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::agent::model::ChatModel;
use crate::agent::runtime::RuntimeOptions;
use crate::agent::session::{ModelFactory, ModelInfo, SessionActor, SessionParts, Standards};
use crate::agent::transcript::{SessionError, SessionStore};
use crate::config::HarnessSettings;
use crate::harness::audit::{AuditError, AuditLogger, default_state_home};
use crate::harness::checkpoint::Checkpoints;
use crate::harness::command_policy::{CommandPolicy, ExecutionProfile, PolicyConfig};
use crate::harness::command_runner::{CommandRunner, HeldFileCheck, ProtectedScan, RunnerConfig};
use crate::harness::primitives::ExecutionMode;
use crate::harness::rules::RuleBook;
use crate::harness::secrets::{KnownSecrets, dotenv_values, secret_variables};
use crate::harness::target_policy::TargetPolicy;
use crate::harness::workspace::{Workspace, WorkspaceError};
use crate::tools::checkpoints::SessionCheckpoints;
use crate::tools::executor::{CommandExecutor, ExecOutcome, OutputSink};
use crate::tools::host::mcp::McpClients;
use crate::tools::host::{HostConfig, SpearHost};
use crate::tools::normative::{self, EngagedStandard, StandardError, StandardsLibrary};
use crate::tools::observer::{AuditObserver, HOST_ROOT_NOTE, SessionLabel, ToolObserver};
use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::tools::results::{ResultStore, StoreError, workspace_state_dir};
use crate::tools::router::ToolRouter;

/// How many directory entries the protected-path scan may look at before the sandbox starts.
pub const PROTECTED_SCAN_BUDGET: usize = 50_000;

/// What could not be built. Nothing has run when one of these is returned.
#[derive(Debug, Error)]
pub enum BuildError {
    #[error("cannot read the current directory: {0}")]
    Cwd(#[source] std::io::Error),
    #[error("workspace {path}: {source}")]
    Workspace {
        path: PathBuf,
        #[source]
        source: WorkspaceError,
    },
    #[error("cannot find a state directory for the audit log: {0}")]
    StateHome(#[source] AuditError),
    #[error(
        "Spear keeps its state (the audit log, results and sessions) in {}, which is inside \
         the workspace {}, where a sandboxed command could rewrite it. Start Spear in a \
         project directory or give --workspace DIR, or set XDG_STATE_HOME to a directory \
         outside the workspace",
        state.display(),
        workspace.display()
    )]
    StateInsideWorkspace { state: PathBuf, workspace: PathBuf },
    #[error(
        "Spear's configuration (its config file, rules and hooks) is in {}, which is inside \
         the workspace {}, where the model's commands could change what Spear allows. Start \
         Spear in a project directory or give --workspace DIR, or set XDG_CONFIG_HOME to a \
         directory outside the workspace",
        config.display(),
        workspace.display()
    )]
    ConfigInsideWorkspace { config: PathBuf, workspace: PathBuf },
    #[error("cannot open the audit log; nothing was run: {0}")]
    Audit(#[source] AuditError),
    #[error("cannot start the MCP servers' runtime: {0}")]
    McpRuntime(#[source] std::io::Error),
    #[error("cannot open the result store: {0}")]
    Store(#[from] StoreError),
    #[error("cannot open the standards library: {0}")]
    Standards(#[from] StandardError),
    #[error("cannot register the tools: {0}")]
    Registry(#[from] RegistryError),
    #[error("cannot open the sessions: {0}")]
    Sessions(#[from] SessionError),
    #[error(
        "permission rules: {0} (fix or remove the file; `spear rules list` shows what is read)"
    )]
    Rules(#[from] crate::harness::rules::RulesError),
    #[error("a hook in your config is refused: {0}")]
    Hook(String),
    #[error("cannot open the checkpoints: {0}")]
    Checkpoints(#[source] crate::harness::checkpoint::CheckpointError),
}

/// The workspace a front end works on, the directory it was started in, and where state lives.
pub struct Place {
    pub workspace: Workspace,
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub state: PathBuf,
}

impl Place {
    /// `workspace`, else the git root above the current directory, else the current directory;
    /// the current directory is the launch directory.
    pub fn find(workspace: Option<PathBuf>) -> Result<Place, BuildError> {
        let cwd = std::env::current_dir().map_err(BuildError::Cwd)?;
        let root = workspace.unwrap_or_else(|| default_workspace(&cwd));
        let ws = Workspace::new(&root)
            .and_then(|w| w.with_launch_dir(&cwd))
            .map_err(|source| BuildError::Workspace {
                path: root.clone(),
                source,
            })?;
        let state = default_state_home().map_err(BuildError::StateHome)?;
        let place = Place::of(ws, cwd, state);
        // Said once, before anything is opened in it (started in $HOME, every store would
        // refuse in turn).
        if state_inside(&place.state, &place.root) {
            return Err(BuildError::StateInsideWorkspace {
                state: place.state,
                workspace: place.root,
            });
        }
        if let Some(config) = crate::config::default_path()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .filter(|c| state_inside(c, &place.root))
        {
            return Err(BuildError::ConfigInsideWorkspace {
                config,
                workspace: place.root,
            });
        }
        Ok(place)
    }

    /// A place from its parts (tests give a temporary state directory).
    pub fn of(workspace: Workspace, cwd: PathBuf, state: PathBuf) -> Place {
        let root = workspace.project_root().to_path_buf();
        Place {
            workspace,
            root,
            cwd,
            state,
        }
    }
}

/// The nearest ancestor of `cwd` holding `.git`, else `cwd`.
pub fn default_workspace(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| cwd.to_path_buf())
}

/// The audit log for the workspace at `root`, under `state`. It must lie outside the workspace:
/// a sandboxed command gets the workspace and could otherwise rewrite its own record.
pub fn open_audit(state: &Path, root: &Path) -> Result<AuditLogger, BuildError> {
    if state_inside(state, root) {
        return Err(BuildError::StateInsideWorkspace {
            state: state.to_path_buf(),
            workspace: root.to_path_buf(),
        });
    }
    AuditLogger::open_in(state, root).map_err(BuildError::Audit)
}

/// Whether `state` lies inside the workspace `root` (canonical), judged on its nearest existing
/// ancestor resolved (the state directory may not exist yet) and the rest as written.
fn state_inside(state: &Path, root: &Path) -> bool {
    let resolved = state
        .ancestors()
        .find_map(|a| {
            let real = a.canonicalize().ok()?;
            let rest = state.strip_prefix(a).ok()?;
            Some(real.join(rest))
        })
        .unwrap_or_else(|| state.to_path_buf());
    resolved.starts_with(root)
}

/// The runner's configuration for `root` with the file's `[sandbox]`, `[limits]` and
/// `[cgroups]` applied: everything that runs or probes commands builds its runner here.
pub fn runner_config(root: &Path, harness: &HarnessSettings) -> RunnerConfig {
    let mut config = RunnerConfig::for_workspace(root);
    config.network_allow = harness.network_allow.clone();
    config.root_uid_host = harness.root_uid_host;
    config.resource_limits = harness.resource_limits.clone();
    config.cgroup_limits = harness.cgroup_limits.clone();
    config
}

/// The executor the terminal tool runs commands with: the sandboxed `CommandRunner`, with the
/// target policy's protected directories bound read-only. The workspace is walked for them
/// only when a writable run first needs them: a read-only run binds nothing writable, so it
/// never pays for the walk. When the sandbox cannot even be set up, every command is refused
/// as "sandbox unavailable" and nothing runs unconfined.
pub fn command_executor(root: &Path, harness: &HarnessSettings) -> Box<dyn CommandExecutor> {
    executor_over(sandboxed_runner(command_runner_config(root, harness)))
}

/// The runner's configuration for commands: `runner_config` with the protected directories,
/// the uncreatable agent configuration and the held generated files.
fn command_runner_config(root: &Path, harness: &HarnessSettings) -> RunnerConfig {
    let mut config = runner_config(root, harness);
    let scan_root = root.to_path_buf();
    config.protected_scan = Some(ProtectedScan::new(move || {
        TargetPolicy::default().protected_dirs(&scan_root, PROTECTED_SCAN_BUDGET)
    }));
    // Agents' configuration at the workspace root: the file tools refuse it, so commands get
    // it read-only, and what a command creates of it is removed again. (Deeper directories of
    // it are among the protected directories the scan finds.)
    config.uncreatable_paths = crate::harness::target_policy::AGENT_DIRS
        .iter()
        .map(PathBuf::from)
        .chain(
            crate::harness::target_policy::AGENT_FILES
                .iter()
                .map(|f| f.iter().collect::<PathBuf>()),
        )
        .collect();
    // Generated-header files: the file tools refuse them, and every writer must meet the same
    // refusal, so commands get them read-only.
    if let Ok(ws) = Workspace::new(root) {
        let policy = TargetPolicy::default();
        config.held_files = Some(HeldFileCheck::new(move |rel| {
            policy.held_for_commands(&ws, rel)
        }));
    }
    config
}

/// The runner of `config`, shared by the terminal's executor and the session's MCP servers.
fn sandboxed_runner(config: RunnerConfig) -> Result<Arc<CommandRunner>, String> {
    #[allow(unused_mut)]
    let mut runner = CommandRunner::new(config).map_err(|e| e.to_string())?;
    #[cfg(feature = "test-hooks")]
    runner.egress_hooks_from_env_for_tests();
    Ok(Arc::new(runner))
}

/// The terminal's executor over `runner`; when the sandbox cannot be set up, one that says why
/// and runs nothing.
fn executor_over(runner: Result<Arc<CommandRunner>, String>) -> Box<dyn CommandExecutor> {
    let built = runner.and_then(|r| {
        crate::tools::executor::runner::RunnerExecutor::shared(r).map_err(|e| e.to_string())
    });
    match built {
        Ok(executor) => Box::new(executor),
        Err(why) => Box::new(Unavailable(why)),
    }
}

/// The executor when the sandbox cannot be set up: says why, runs nothing.
struct Unavailable(String);

impl CommandExecutor for Unavailable {
    fn run(
        &self,
        _command: &str,
        _profile: &ExecutionProfile,
        _timeout: Duration,
        _sink: &mut dyn OutputSink,
    ) -> ExecOutcome {
        ExecOutcome::sandbox_unavailable(format!("the sandbox cannot be set up: {}", self.0))
    }
}

/// The harness and tools of one front end, from settings: `router()` builds them; `session()`
/// puts a session actor over the router.
pub struct SessionBuilder {
    place: Place,
    harness: HarnessSettings,
    audit_session: SessionLabel,
    network: bool,
    engaged: EngagedStandard,
    observers: Vec<Arc<dyn ToolObserver>>,
}

impl SessionBuilder {
    /// Tools over `place` as `harness` configures them, audited under `audit_session` (a
    /// session id, or a front end's name and process), with the network off.
    pub fn new(place: Place, harness: HarnessSettings, audit_session: impl Into<String>) -> Self {
        SessionBuilder {
            place,
            harness,
            audit_session: SessionLabel::new(audit_session),
            network: false,
            engaged: EngagedStandard::default(),
            observers: Vec::new(),
        }
    }

    /// The label the audit records and checkpoints carry; a front end that learns its
    /// caller's name later (`spear mcp serve`, from the client's `initialize`) sets it before
    /// the first call.
    pub fn label(&self) -> SessionLabel {
        self.audit_session.clone()
    }

    /// The session's network setting (`--network`, the config).
    #[must_use]
    pub fn network(mut self, on: bool) -> Self {
        self.network = on;
        self
    }

    /// The engaged standard the normative tools and the runtime share.
    #[must_use]
    pub fn engaged(mut self, engaged: EngagedStandard) -> Self {
        self.engaged = engaged;
        self
    }

    /// One more observer after the audit log (the screen's previews). It sees calls; it can
    /// neither decide nor confine them.
    #[must_use]
    pub fn observer(mut self, observer: Arc<dyn ToolObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    pub fn place(&self) -> &Place {
        &self.place
    }

    pub fn harness(&self) -> &HarnessSettings {
        &self.harness
    }

    /// The workspace's ResultStore (the screen's whole-output view reads it too).
    pub fn results(&self) -> Result<ResultStore, BuildError> {
        Ok(ResultStore::open_in(
            &self.place.state,
            &self.place.root,
            self.harness.store_limits,
        )?)
    }

    /// The workspace's checkpoints, bound to this session (the first is taken in the
    /// background from now on).
    pub fn checkpoints(&self) -> Result<SessionCheckpoints, BuildError> {
        let (dir, root) = workspace_state_dir(&self.place.state, "checkpoints", &self.place.root)?;
        let cp = Checkpoints::open(&root, &dir, self.harness.checkpoint_limits.clone())
            .map_err(BuildError::Checkpoints)?;
        Ok(SessionCheckpoints::new(cp, self.audit_session.clone()))
    }

    /// The permission rules for this workspace: the person's file, the project's (its allows
    /// only when trusted), no session rules yet.
    pub fn rules(&self) -> Result<RuleBook, BuildError> {
        Ok(crate::harness::rules::load(
            &self.place.root,
            self.harness.rules_file.as_deref(),
            &self.place.state,
        )?)
    }

    /// The person's hooks, each program checked to lie outside this workspace.
    fn checked_hooks(&self) -> Result<crate::tools::hooks::Hooks, BuildError> {
        let hooks = self.harness.hooks.clone();
        hooks
            .check_for(&self.place.root)
            .map_err(BuildError::Hook)?;
        Ok(hooks)
    }

    /// What a person should be told about the rules at the start: the project's allows that do
    /// not count because its file is not trusted as it is. (A rules file that does not read is
    /// an error when the host is built.)
    pub fn rule_notes(&self) -> Vec<String> {
        let Ok(book) = self.rules() else {
            return Vec::new();
        };
        let ignored: Vec<String> = book
            .ignored()
            .iter()
            .map(|r| format!("`{}`", r.describe()))
            .collect();
        if ignored.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "{} is not trusted as it is, so its allows do not count: {} (read the file, then `spear rules trust`); its deny and ask rules apply",
            crate::harness::rules::project_rules_path(&self.place.root).display(),
            ignored.join(", ")
        )]
    }

    /// The secret values Spear knows at the session's start: the secret-looking variables of
    /// its environment (provider keys among them) and the values of the workspace's `.env`
    /// files (`.env`, `.env.*` at its root: regular files of at most 1 MiB, never followed
    /// through a link).
    pub fn known_secrets(&self) -> KnownSecrets {
        let mut known = KnownSecrets::default().with(
            "Spear's environment",
            secret_variables(
                std::env::vars_os()
                    .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
            ),
        );
        let Ok(entries) = std::fs::read_dir(&self.place.root) else {
            return known;
        };
        let mut files: Vec<(String, std::path::PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                (name == ".env" || name.starts_with(".env.")).then(|| (name, e.path()))
            })
            .collect();
        files.sort();
        for (name, path) in files {
            use std::io::Read;
            use std::os::unix::fs::OpenOptionsExt;
            // Not through a link, and never waiting on a FIFO: the file is checked as opened.
            let Ok(mut f) = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&path)
            else {
                continue;
            };
            let regular = f
                .metadata()
                .is_ok_and(|m| m.file_type().is_file() && m.len() <= 1 << 20);
            let mut text = String::new();
            if regular && f.read_to_string(&mut text).is_ok() {
                known = known.with(&format!("the workspace's {name}"), dotenv_values(&text));
            }
        }
        known
    }

    /// The host under the tools: the workspace, both policies, the sandboxed executor and the
    /// ResultStore.
    pub fn host(&self) -> Result<SpearHost, BuildError> {
        let root = &self.place.root;
        // One runner for the terminal's commands and the MCP servers: one ledger, one network
        // poison.
        let mut config = command_runner_config(root, &self.harness);
        // The egress proxy refuses a plain-HTTP request carrying one of these.
        config.known_secrets = self.known_secrets();
        let runner = sandboxed_runner(config);
        let mcp = match (&runner, self.harness.mcp_servers.is_empty()) {
            (Ok(r), false) => Some(Arc::new(
                McpClients::new(
                    self.harness.mcp_servers.clone(),
                    r.clone(),
                    &self.place.state,
                )
                .map_err(BuildError::McpRuntime)?
                .with_egress(self.harness.egress.clone()),
            )),
            _ => None,
        };
        let mut known = self.known_secrets();
        if let Some(m) = &mcp {
            known = known.merged(m.known_secrets());
        }
        let host = SpearHost::new(
            self.place.workspace.clone(),
            TargetPolicy::default(),
            CommandPolicy::new(PolicyConfig {
                network_enabled: self.network,
                workspace_root: Some(root.clone()),
                ..PolicyConfig::default()
            }),
            executor_over(runner),
            self.results()?,
            HostConfig {
                session: self.audit_session.get(),
                web_enabled: self.harness.web_enabled,
                web: self.harness.web.clone(),
                rules: self.rules()?,
                hooks: self.checked_hooks()?,
                known_secrets: known,
                egress: self.harness.egress.clone(),
                ..HostConfig::default()
            },
        );
        Ok(match mcp {
            Some(m) => host.with_mcp(m),
            None => host,
        })
    }

    /// The router over the coding tools, the normative runtime's tools and the web pair (which
    /// of them a turn sees is the exposure policy's decision), audited into the workspace's log.
    pub fn router(&self) -> Result<ToolRouter, BuildError> {
        let host = Arc::new(self.host()?);
        let library = Arc::new(StandardsLibrary::open_in(&self.place.state)?);
        let mut registry = ToolRegistry::new();
        crate::tools::coding::register(&mut registry)?;
        normative::register(&mut registry, library, self.engaged.clone())?;
        // Registered always, offered by the exposure policy only on the normative surface and
        // only with the web enabled; the coding core reaches them through `spear-capability`.
        crate::tools::web::register(&mut registry)?;
        // No record carries a secret value Spear knows (one handed to an MCP server, one of
        // its environment's, one of the workspace's `.env` files).
        let audit = Arc::new(
            open_audit(&self.place.state, &self.place.root)?
                .with_known_secrets(host.config().known_secrets.clone()),
        );
        let mut router = ToolRouter::new(registry, host.clone())
            .with_observer(Arc::new(
                AuditObserver::new(audit, self.audit_session.clone()).with_sandbox_user(
                    (self.harness.root_uid_host && rustix::process::geteuid().is_root())
                        .then_some(HOST_ROOT_NOTE),
                ),
            ))
            .with_refusal_limit(self.harness.refusal_repeats);
        for o in &self.observers {
            router = router.with_observer(o.clone());
        }
        if !self.harness.checkpoints_enabled {
            return Ok(router);
        }
        Ok(router.with_checkpoints(Arc::new(self.checkpoints()?)))
    }

    /// A session actor over a router built here, answering with `model` (none: the session
    /// still runs `!COMMAND` and lists sessions), in `mode`.
    pub fn session<M: ChatModel + 'static>(
        self,
        model: Option<(Arc<M>, ModelInfo)>,
        remodel: ModelFactory<M>,
        options: RuntimeOptions,
        mode: ExecutionMode,
    ) -> Result<SessionActor<M>, BuildError> {
        let router = Arc::new(self.router()?);
        let store = SessionStore::open_in(&self.place.state, &self.place.root)?;
        let library = Arc::new(StandardsLibrary::open_in(&self.place.state)?);
        Ok(SessionActor::new(SessionParts {
            model,
            remodel,
            router,
            options,
            store,
            mode,
            network: self.network,
            standards: Standards {
                library,
                engaged: self.engaged,
            },
            audit_label: self.audit_session,
        }))
    }
}
