//! `spear run [--mode M] [--network] [--json] [--resume ID] [--provider P] [--model M]
//! [--standard NAME] [--approver CMD] OBJECTIVE|-`: the agent, headless, for scripts and CI.
//! The objective (from stdin when `-`)
//! becomes one request; the task's events are printed as they come (see `run_output`). Exit
//! codes: 0 when the model finished its answer, 1 on an error (bad config, unreachable server,
//! bad key) or when a limit stopped the request, 130 when interrupted (SIGINT cancels the task
//! cleanly: the stream is dropped, a running command killed). In ASK mode approvals are asked
//! on the terminal (without one every approval is `cancelled`), or of `--approver CMD`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use spear::agent::builder::{Place, SessionBuilder};
use spear::agent::event::{AgentEvent, StopReason};
use spear::agent::runtime::{RuntimeOptions, TaskOutcome};
use spear::agent::session::{ModelInfo, SessionEvent, SessionHandle, SessionOp, SessionStreams};
use spear::agent::transcript::SessionStore;
use spear::config::{self, Env, Flags};
use spear::harness::audit::display::escape_controls;
use spear::harness::primitives::ExecutionMode;
use spear::tools::approval::{CallApprover, ExternalApprover};

use super::run_output::Printer;

#[derive(Args)]
pub struct RunArgs {
    /// Execution mode: safe, ask or auto (default: the config's, else ask).
    #[arg(long, value_name = "M")]
    pub mode: Option<ExecutionMode>,
    /// Let commands that need the network have it (the egress proxy, by the names `[network]`
    /// allows; `network = "full"`: slirp4netns).
    #[arg(long)]
    pub network: bool,
    /// Print one JSON event per line on stdout.
    #[arg(long)]
    pub json: bool,
    /// Continue the session ID (see `spear sessions`).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// The provider to use (a name under [providers] in the config).
    #[arg(long, value_name = "P")]
    pub provider: Option<String>,
    /// The model to ask (overrides SPEAR_MODEL and the config).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Engage the standard NAME (see `spear standard list`): the request is classified and
    /// answered by the normative runtime.
    #[arg(long, value_name = "NAME")]
    pub standard: Option<String>,
    /// Ask this program instead of the terminal: each approval request as JSON on stdin, its
    /// JSON answer (`{"request_id": N, "decision": "allow"|"deny", "message": …}`) decides;
    /// anything else is a deny. An absolute path, optionally with arguments.
    #[arg(long, value_name = "CMD")]
    pub approver: Option<String>,
    /// How long the approver may take per request, in seconds.
    #[arg(long, value_name = "S", default_value_t = 60, requires = "approver")]
    pub approver_timeout: u64,
    /// What to do; `-` reads it from stdin.
    #[arg(value_name = "OBJECTIVE")]
    pub objective: String,
}

pub fn run(args: RunArgs, workspace: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let objective = objective(&args.objective)?;
    let flags = Flags {
        provider: args.provider.clone(),
        model: args.model.clone(),
        mode: args.mode,
        network: args.network,
    };
    let path = config::default_path()?;
    let settings = config::load(&path, &Env::Process, &flags)?;
    let model = super::run_model::build(&settings)?;
    let place = Place::find(workspace)?;
    let approver = match &args.approver {
        Some(cmd) => Some(Arc::new(external_approver(
            cmd,
            args.approver_timeout,
            &place.root,
        )?)),
        None => None,
    };
    let cwd = place.cwd.clone();
    let engaged = spear::tools::normative::EngagedStandard::default();
    if let Some(name) = &args.standard {
        super::standard::check_engageable(&place.state, name)?;
        engaged.set(Some(name.clone()));
    }
    let info = ModelInfo {
        provider: settings.provider.name.clone(),
        model: settings.provider.model.clone(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The audit records carry the session id, so the session is opened (or reopened) first.
    let store = SessionStore::open_in(&place.state, &place.root)?;
    let (writer, history) = match &args.resume {
        Some(id) => {
            let (loaded, w) = store.resume(id)?;
            (w, loaded.messages)
        }
        None => (
            store.create(
                &settings.provider.name,
                &settings.provider.model,
                settings.mode.as_str(),
            )?,
            Vec::new(),
        ),
    };
    let session = writer.id().to_string();
    let build = SessionBuilder::new(place, settings.harness.clone(), session.clone())
        .network(settings.network)
        .engaged(engaged);
    for note in build.rule_notes() {
        eprintln!("spear: note: {}", escape_controls(&note));
    }
    let mut actor = build.session(
        Some((Arc::new(model), info)),
        Box::new(|name: &str| Err(format!("`{name}`: spear run keeps one model per run"))),
        RuntimeOptions {
            max_tool_calls: settings.max_tool_calls,
            response_max_tokens: settings.response_max_tokens,
            context_window: settings.provider.context_window,
            cwd,
        },
        settings.mode,
    )?;
    actor.continue_in(writer, history);
    let (outcome, interrupted) = rt.block_on(async {
        let (handle, streams, join) = actor.spawn();
        let driven = drive(&handle, streams, objective, args.json, approver).await;
        // The session ends before Spear does: its MCP servers are stopped and confirmed gone.
        handle.send(SessionOp::Quit);
        let _ = tokio::time::timeout(spear::agent::session::SESSION_END_WAIT, join).await;
        driven
    });
    // A question left on the terminal must not hold the exit.
    rt.shutdown_background();
    eprintln!("spear: session {session} (continue it with `spear run --resume {session} …`)");
    Ok(match outcome.map(|o| o.reason) {
        Some(StopReason::Finished) => ExitCode::SUCCESS,
        Some(StopReason::Cancelled) if interrupted => ExitCode::from(130),
        _ => ExitCode::from(1),
    })
}

/// The objective as given, or stdin's when `-`.
fn objective(given: &str) -> anyhow::Result<String> {
    let text = if given == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read the objective from stdin")?;
        s
    } else {
        given.to_string()
    };
    anyhow::ensure!(
        !text.trim().is_empty(),
        "the objective is empty: say what to do (or pipe it in with `-`)"
    );
    Ok(text)
}

/// Submit the objective to the session and show its events until the turn ends; returns the
/// outcome and whether SIGINT ended it.
async fn drive(
    session: &SessionHandle,
    mut streams: SessionStreams,
    objective: String,
    json: bool,
    approver: Option<Arc<ExternalApprover>>,
) -> (Option<TaskOutcome>, bool) {
    session.send(SessionOp::Submit(objective));
    let mut printer = Printer::new(json);
    let mut interrupted = false;
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    let mut agent_done = false;
    loop {
        tokio::select! {
            e = streams.agent.recv(), if !agent_done => match e {
                Some(event) => {
                    printer.event(&event);
                    if let AgentEvent::ApprovalRequested { .. } = &event {
                        ask(session, &event, approver.clone());
                    }
                }
                None => agent_done = true,
            },
            s = streams.session.recv() => match s {
                Some(SessionEvent::TurnEnded { outcome, notes }) => {
                    // Whatever the turn said before it ended is printed first.
                    while let Ok(event) = streams.agent.try_recv() {
                        printer.event(&event);
                    }
                    for note in &notes {
                        eprintln!("spear: note: {note}");
                    }
                    session.send(SessionOp::Quit);
                    return (outcome, interrupted);
                }
                Some(SessionEvent::Refused { op, reason }) => {
                    eprintln!("spear: {}: {reason}", op.as_str());
                }
                Some(SessionEvent::Failed(why)) => eprintln!("spear: {}", escape_controls(&why)),
                Some(SessionEvent::Note(what)) => {
                    eprintln!("spear: note: {}", escape_controls(&what))
                }
                Some(_) => {}
                None => return (None, interrupted),
            },
            r = tokio::signal::ctrl_c(), if !interrupted => {
                if r.is_ok() {
                    interrupted = true;
                    session.send(SessionOp::Cancel);
                }
            }
            _ = ticker.tick(), if printer.spinning() => printer.tick(),
        }
    }
}

/// Ask the approval on the terminal, on a blocking thread so SIGINT is still heard meanwhile; a
/// cancel answers first, and this later answer is then refused as no longer pending.
fn ask(session: &SessionHandle, event: &AgentEvent, approver: Option<Arc<ExternalApprover>>) {
    let AgentEvent::ApprovalRequested { request } = event else {
        return;
    };
    let (session, request) = (session.clone(), request.clone());
    tokio::task::spawn_blocking(move || {
        let decision = match approver {
            Some(a) => a.approve(&request),
            None => super::common::ask_request_on_tty(&request),
        };
        session.send(SessionOp::Answer {
            request_id: request.id,
            decision,
        });
    });
}

/// `--approver CMD`: the program (an absolute path, then its arguments, split on blanks; no
/// shell), checked like a hook: executable, only its owner may change it, outside the workspace.
fn external_approver(cmd: &str, timeout: u64, root: &Path) -> anyhow::Result<ExternalApprover> {
    let mut words = cmd.split_whitespace();
    let program = words
        .next()
        .context("--approver is empty: give the approver program's absolute path")?;
    let path = spear::tools::external::check(program, Some(root))
        .map_err(|why| anyhow::anyhow!("--approver: {why}"))?;
    let args: Vec<String> = words.map(str::to_string).collect();
    spear::tools::external::check_args(&args, root)
        .map_err(|why| anyhow::anyhow!("--approver: {why}"))?;
    anyhow::ensure!(
        (1..=3600).contains(&timeout),
        "--approver-timeout must be between 1 and 3600 seconds"
    );
    Ok(ExternalApprover {
        program: spear::tools::external::Program {
            path,
            args,
            timeout: Duration::from_secs(timeout),
        },
        workspace: root.to_path_buf(),
    })
}
