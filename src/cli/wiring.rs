//! How the subcommands that drive tools build the harness under them: the workspace, the
//! sandboxed command executor, the SpearHost and the router over the six coding tools and the
//! web pair, audited
//! into the workspace's log under a session name. `spear tool` and `spear run` share it, so a
//! model's calls and a person's take exactly the same path.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use spear::agent::config::HarnessSettings;
use spear::harness::audit::default_state_home;
use spear::harness::command_policy::{CommandPolicy, ExecutionProfile, PolicyConfig};
use spear::harness::command_runner::{CommandRunner, RunnerConfig};
use spear::harness::target_policy::TargetPolicy;
use spear::harness::workspace::Workspace;
use spear::tools::coding;
use spear::tools::executor::{CommandExecutor, ExecOutcome, OutputSink};
use spear::tools::host::{HostConfig, SpearHost};
use spear::tools::normative::{self, EngagedStandard, StandardsLibrary};
use spear::tools::observer::AuditObserver;
use spear::tools::registry::ToolRegistry;
use spear::tools::results::ResultStore;
use spear::tools::router::ToolRouter;
use spear::tui::preview::PreviewObserver;

/// The workspace a subcommand works on: `--workspace`, else the git root or the current
/// directory, with the current directory as the launch directory.
pub struct Place {
    pub workspace: Workspace,
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub state: PathBuf,
}

pub fn place(workspace: Option<PathBuf>) -> anyhow::Result<Place> {
    let root = match workspace {
        Some(dir) => dir,
        None => super::default_workspace()?,
    };
    let cwd = std::env::current_dir().context("current directory")?;
    let ws = Workspace::new(&root)
        .and_then(|w| w.with_launch_dir(&cwd))
        .with_context(|| format!("workspace {}", root.display()))?;
    let root = ws.project_root().to_path_buf();
    let state = default_state_home()?;
    Ok(Place {
        workspace: ws,
        root,
        cwd,
        state,
    })
}

/// What the router is built with besides the place.
pub struct RouterOptions {
    /// Recorded in every audit event (a session id for `spear run`).
    pub session: String,
    pub network: bool,
    pub refusal_repeats: Option<u32>,
    /// The configuration's `[sandbox]` and `[results]` tables.
    pub harness: HarnessSettings,
    /// The TUI's loop: write_file/patch diffs are sent there before the write (`PreviewObserver`).
    pub previews: Option<tokio::sync::mpsc::UnboundedSender<spear::tui::event::Event>>,
    /// The standard engaged, shared by the normative tools and the agent runtime.
    pub engaged: EngagedStandard,
}

/// The router over the coding tools and the normative runtime's tools for `place`, audited
/// under `opts.session`. Which of them a turn sees is the exposure policy's decision.
pub fn coding_router(place: Place, opts: &RouterOptions) -> anyhow::Result<ToolRouter> {
    let Place {
        workspace,
        root,
        state,
        ..
    } = place;
    let host = SpearHost::new(
        workspace,
        TargetPolicy::default(),
        CommandPolicy::new(PolicyConfig {
            network_enabled: opts.network,
            workspace_root: Some(root.clone()),
            ..PolicyConfig::default()
        }),
        command_executor(&root, &opts.harness),
        ResultStore::open_in(&state, &root, opts.harness.store_limits)?,
        HostConfig {
            session: opts.session.clone(),
            web_enabled: opts.harness.web_enabled,
            web: opts.harness.web.clone(),
            ..HostConfig::default()
        },
    );
    let library = Arc::new(StandardsLibrary::open_in(&state)?);
    let mut registry = ToolRegistry::new();
    coding::register(&mut registry)?;
    normative::register(&mut registry, library, opts.engaged.clone())?;
    // Registered always, offered by the exposure policy only on the normative surface and only
    // with the web enabled; the coding core reaches them through `spear-capability run`.
    spear::tools::web::register(&mut registry)?;
    let audit = Arc::new(super::common::open_audit(&root)?);
    let host = Arc::new(host);
    let mut router = ToolRouter::new(registry, host.clone())
        .with_observer(Arc::new(AuditObserver::new(audit, opts.session.clone())));
    if let Some(tx) = &opts.previews {
        router = router.with_observer(Arc::new(PreviewObserver::new(host, tx.clone())));
    }
    if let Some(n) = opts.refusal_repeats {
        router = router.with_refusal_limit(n);
    }
    Ok(router)
}

/// The harness's part of the configuration file, for subcommands that run no model.
pub fn harness_settings() -> anyhow::Result<HarnessSettings> {
    let path = spear::agent::config::default_path()?;
    Ok(spear::agent::config::load_harness(&path)?)
}

/// The runner's configuration for `root` with the file's `[sandbox]`, `[limits]` and
/// `[cgroups]` applied: every subcommand that runs or probes commands builds its runner here.
pub fn runner_config(root: &Path, harness: &HarnessSettings) -> RunnerConfig {
    let mut config = RunnerConfig::for_workspace(root);
    config.network_allow = harness.network_allow.clone();
    config.resource_limits = harness.resource_limits.clone();
    config.cgroup_limits = harness.cgroup_limits.clone();
    config
}

/// The executor the terminal tool runs commands with: the sandboxed `CommandRunner`, with the
/// target policy's protected directories bound read-only. When the sandbox cannot even be set
/// up, every command is refused as "sandbox unavailable" and nothing runs unconfined.
pub fn command_executor(root: &Path, harness: &HarnessSettings) -> Box<dyn CommandExecutor> {
    let mut config = runner_config(root, harness);
    config.protected_paths =
        TargetPolicy::default().protected_dirs(root, super::common::PROTECTED_SCAN_BUDGET);
    let built = CommandRunner::new(config)
        .map_err(|e| e.to_string())
        .and_then(|runner| {
            spear::tools::executor::runner::RunnerExecutor::new(runner).map_err(|e| e.to_string())
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
