//! `spear tool NAME [JSON_ARGS] [--mode M] [--network] [--json]`: one tool call through the same router the
//! model's calls take, on the coding surface. Exit codes as `spear exec`: the command's own code
//! when a terminal command ran, 0 ok, 126 refused or cancelled, 127 not found, 124 timeout,
//! 1 failed.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use spear::harness::audit::default_state_home;
use spear::harness::audit::display::escape_controls;
use spear::harness::command_policy::{Approver, CommandPolicy, ExecutionProfile, PolicyConfig};
use spear::harness::primitives::ExecutionMode;
use spear::harness::runtime::{CommandRunner, RunnerConfig};
use spear::harness::target_policy::TargetPolicy;
use spear::harness::workspace::Workspace;
use spear::tools::coding;
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::executor::{CommandExecutor, CommandOutcome, OutputSink};
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::host::{HostConfig, SpearHost};
use spear::tools::observer::AuditObserver;
use spear::tools::registry::ToolRegistry;
use spear::tools::result_store::{ResultStore, StoreLimits};
use spear::tools::router::{ToolCall, ToolRouter};
use spear::tools::runner_executor::RunnerExecutor;
use spear::tools::turn::Turn;

#[derive(Args)]
pub struct ToolArgs {
    /// The tool: read_file, search_files, patch, write_file, delete_file or terminal.
    pub name: String,
    /// The arguments as one JSON object (default: {}).
    pub arguments: Option<String>,
    /// Execution mode: safe, ask or auto (default: ask).
    #[arg(long, value_name = "M")]
    pub mode: Option<ExecutionMode>,
    /// Print the envelope as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Let terminal commands that need the network have it (through slirp4netns; host
    /// loopback stays unreachable). Without it they are denied, as the spec's session setting.
    #[arg(long)]
    pub network: bool,
}

/// The executor the terminal tool runs commands with: the sandboxed `CommandRunner`, with the
/// target policy's protected directories bound read-only. When the sandbox cannot even be set
/// up, every command is refused as "sandbox unavailable" and nothing runs unconfined.
pub fn command_executor(root: &std::path::Path) -> Box<dyn CommandExecutor> {
    let mut config = RunnerConfig::for_workspace(root);
    config.protected_paths =
        TargetPolicy::default().protected_dirs(root, super::common::PROTECTED_SCAN_BUDGET);
    let built = CommandRunner::new(config)
        .map_err(|e| e.to_string())
        .and_then(|runner| RunnerExecutor::new(runner).map_err(|e| e.to_string()));
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
    ) -> CommandOutcome {
        CommandOutcome::sandbox_unavailable(format!("the sandbox cannot be set up: {}", self.0))
    }
}

pub fn run(args: ToolArgs, workspace: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let arguments: serde_json::Value = match &args.arguments {
        Some(text) => serde_json::from_str(text).context("JSON_ARGS is not valid JSON")?,
        None => serde_json::json!({}),
    };
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
    let session = format!("tool-{}", std::process::id());
    let host = SpearHost::new(
        ws,
        TargetPolicy::default(),
        CommandPolicy::new(PolicyConfig {
            network_enabled: args.network,
            workspace_root: Some(root.clone()),
            ..PolicyConfig::default()
        }),
        command_executor(&root),
        ResultStore::open_in(&state, &root, StoreLimits::default())?,
        HostConfig {
            session: session.clone(),
            ..HostConfig::default()
        },
    );
    let mut registry = ToolRegistry::new();
    coding::register(&mut registry)?;
    let audit = Arc::new(super::common::open_audit(&root)?);
    let view = ToolExposurePolicy::view(&registry, &ExposureSettings::default());
    let router = ToolRouter::new(registry, Arc::new(host))
        .with_observer(Arc::new(AuditObserver::new(audit, session)));
    let approver: Arc<dyn Approver + Send + Sync> = Arc::new(super::common::TtyApprover);
    let mut turn = Turn::new(args.mode.unwrap_or(ExecutionMode::Ask), view, approver);
    let call = ToolCall {
        id: "cli-1".into(),
        name: args.name,
        arguments,
    };
    let env = router.call(&mut turn, &call)?;
    print(&env, args.json)?;
    Ok(exit_code(&env))
}

fn print(env: &ToolResultEnvelope, json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, env)?;
        writeln!(out)?;
    } else {
        out.write_all(env.preview.as_bytes())?;
        // The preview is the tool's output, passed through as a command's output would be;
        // Spear's own words about it may quote a command or a path, so they are escaped.
        if let Some(note) = &env.store_note {
            eprintln!("spear: note: {}", escape_controls(note));
        }
        if let Some(reason) = &env.reason {
            eprintln!("spear: {}: {}", env.status, escape_controls(reason));
        }
    }
    out.flush()?;
    Ok(())
}

fn exit_code(env: &ToolResultEnvelope) -> ExitCode {
    super::common::exit_code(env.status, env.exit_code)
}
