//! `spear [--workspace DIR] [--mode M] [--resume [ID]] [--model M] [--provider P] [--network]`:
//! the full-screen session. Wires what
//! `spear run` wires (settings, model, place, sessions, the audited router) and hands it to
//! `spear::tui::run`; with no model configured the screen still opens, saying how to connect
//! one. Invariant: nothing is printed until the terminal has been restored.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use spear::agent::builder::{self, Place, SessionBuilder};
use spear::agent::provider::OpenAiCompatible;
use spear::agent::runtime::RuntimeOptions;
use spear::agent::session::ModelInfo;
use spear::config::{self, ConfigError, Env, Flags, Settings};
use spear::harness::audit::AuditPaths;
use spear::harness::command_runner::{CommandRunner, RunnerConfig};
use spear::harness::primitives::ExecutionMode;
use spear::harness::sandbox::PreflightFailure;
use spear::tui::app::AppInit;
use spear::tui::preview::PreviewObserver;
use spear::tui::theme::Theme;
use spear::tui::theme_choice::ThemeChoice;
use spear::tui::widgets::status_bar::{SandboxHealth, StatusInfo};
use spear::tui::{Launch, SessionStart};

/// What the command line asked for.
pub struct TuiArgs {
    pub workspace: Option<PathBuf>,
    pub mode: Option<ExecutionMode>,
    /// `Some("")`: `--resume` without an id (pick one).
    pub resume: Option<String>,
    /// `--standard NAME`: engaged from the first request.
    pub standard: Option<String>,
    /// `--model`, `--provider`, `--network`: as `spear run` takes them.
    pub model: Option<String>,
    pub provider: Option<String>,
    pub network: bool,
}

pub fn run(args: TuiArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        std::io::stdin().is_terminal() && std::io::stdout().is_terminal(),
        "the full-screen session needs a terminal; for scripts use `spear run OBJECTIVE`"
    );
    let path = config::default_path()?;
    let flags = Flags {
        mode: args.mode,
        model: args.model.clone(),
        provider: args.provider.clone(),
        network: args.network,
    };
    let (settings, no_model) = match config::load(&path, &Env::Process, &flags) {
        Ok(s) => (Some(s), None),
        Err(e @ (ConfigError::NoModel { .. } | ConfigError::MissingKey { .. })) => {
            (None, Some(e.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let (model, no_model) = match settings.as_ref().map(super::run_model::build) {
        Some(Ok(m)) => (Some(m), no_model),
        Some(Err(e)) => (None, Some(format!("{e:#}"))),
        None => (None, no_model),
    };
    let mode = settings
        .as_ref()
        .map_or(args.mode.unwrap_or(ExecutionMode::Ask), |s| s.mode);
    let network = settings.as_ref().map_or(args.network, |s| s.network);
    let harness = match &settings {
        Some(s) => s.harness.clone(),
        None => super::common::harness_settings()?,
    };
    let place = Place::find(args.workspace.clone())?;
    let (root, cwd, state) = (place.root.clone(), place.cwd.clone(), place.state.clone());
    let no_color = spear::config::Env::Process.no_color();
    // A theme chosen with /theme (kept in the state directory) wins; then the config's; with
    // neither, the terminal's background picks dark or light when the screen opens.
    let theme_choice = ThemeChoice::in_state(&state);
    let configured = settings
        .as_ref()
        .filter(|s| s.theme_set)
        .map(|s| s.theme.clone());
    let (theme_name, theme_auto) = match (theme_choice.load(), configured) {
        (Some(kept), _) => (kept, false),
        (None, Some(c)) => (c, false),
        (None, None) => ("dark".to_string(), true),
    };
    let mut warnings = Vec::new();
    let theme = match Theme::load(&theme_name, no_color) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!(
                "{e}; using the dark theme (set `theme` in {})",
                path.display()
            ));
            Theme::load("dark", no_color)?
        }
    };
    let channel = tokio::sync::mpsc::unbounded_channel();
    let audit_session = format!("tui-{}", spear::agent::transcript::now_rfc3339());
    let health_config = builder::runner_config(&root, &harness);
    let full_network = harness.egress.path == spear::harness::egress::NetworkPath::Full;
    let engaged = spear::tools::normative::EngagedStandard::default();
    if let Some(name) = &args.standard {
        super::standard::check_engageable(&state, name)?;
        engaged.set(Some(name.clone()));
    }
    // The screen's diff previews see write_file/patch calls before the write.
    let previews = channel.0.clone();
    let build = SessionBuilder::new(place, harness, audit_session)
        .network(network)
        .engaged(engaged)
        .observer(Arc::new(PreviewObserver::new(previews)));
    warnings.extend(build.rule_notes());
    let info = settings.as_ref().map(|s: &Settings| ModelInfo {
        provider: s.provider.name.clone(),
        model: s.provider.model.clone(),
    });
    let model: Option<(Arc<OpenAiCompatible>, ModelInfo)> =
        model.zip(info.clone()).map(|(m, i)| (Arc::new(m), i));
    let start = match args.resume.as_deref() {
        None => SessionStart::New,
        Some("") => SessionStart::Pick,
        Some(id) => SessionStart::Resume(id.to_string()),
    };
    let remodel = {
        let path = path.clone();
        let mode = args.mode;
        Box::new(move |name: &str| {
            let flags = Flags {
                mode,
                model: Some(name.to_string()),
                ..Flags::default()
            };
            let s = config::load(&path, &Env::Process, &flags).map_err(|e| e.to_string())?;
            let m = super::run_model::build(&s).map_err(|e| format!("{e:#}"))?;
            let info = ModelInfo {
                provider: s.provider.name.clone(),
                model: s.provider.model.clone(),
            };
            Ok((Arc::new(m), info))
        })
    };
    // Read by the whole-output view; without it the view shows what the screen holds.
    let results = build.results().ok();
    let session = build.session(
        model,
        remodel,
        RuntimeOptions {
            max_tool_calls: settings.as_ref().map_or(50, |s| s.max_tool_calls),
            response_max_tokens: settings.as_ref().map_or(16384, |s| s.response_max_tokens),
            context_window: settings.as_ref().and_then(|s| s.provider.context_window),
            cwd: cwd.clone(),
        },
        mode,
    )?;
    let launch = Launch {
        session,
        init: AppInit {
            status: StatusInfo {
                mode,
                model: info.map(|i| (i.provider, i.model)),
                workspace: root.display().to_string(),
                sandbox: SandboxHealth::Checking,
                network,
                standard: args.standard.clone(),
                tokens: 0,
                busy: false,
                undoable: 0,
            },
            theme,
            cwd: cwd.display().to_string(),
            // Asked of the terminal when the screen takes it (`spear::tui::run`).
            keyboard_enhanced: false,
            no_model,
            warnings,
            results,
        },
        start,
        sandbox: Some(Box::pin(sandbox_health(
            health_config,
            network,
            full_network,
        ))),
        log_dir: state.join("spear"),
        audit_paths: AuditPaths::new(&state, &root),
        notify: settings.as_ref().map(|s| s.notify).unwrap_or_default(),
        theme_auto,
        theme_choice: Some(theme_choice),
        channel,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = rt.block_on(spear::tui::run(launch));
    rt.shutdown_background();
    let outcome = outcome.context("the terminal session failed")?;
    if let Some(id) = outcome.session {
        eprintln!("spear: session {id} (reopen it with `spear --resume {id}`)");
    }
    Ok(ExitCode::SUCCESS)
}

/// The sandbox as its preflight finds it (run once, in the background).
/// With the network on, the path a grant takes is checked too: slirp4netns for
/// `network = "full"`, else the egress proxy.
async fn sandbox_health(config: RunnerConfig, network: bool, full_network: bool) -> SandboxHealth {
    let runner = match CommandRunner::new(config) {
        Ok(r) => r,
        Err(e) => return SandboxHealth::Down(e.to_string()),
    };
    match runner.ensure_sandbox().await {
        Ok(()) => {}
        Err(PreflightFailure::Refused(r)) => return SandboxHealth::Down(r),
        Err(f) => return SandboxHealth::Down(f.reason().to_string()),
    }
    let path = match (network, full_network) {
        (false, _) => Ok(()),
        (true, true) => runner.ensure_network().await.map_err(|e| e.to_string()),
        (true, false) => runner.ensure_proxy().await.map(|_| ()),
    };
    if let Err(why) = path {
        return SandboxHealth::Degraded(format!("network path: {why}"));
    }
    SandboxHealth::Ok
}
