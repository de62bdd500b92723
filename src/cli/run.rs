//! `spear run [--mode M] [--network] [--json] [--resume ID] [--provider P] [--model M]
//! [--standard NAME] OBJECTIVE|-`: the agent, headless, for scripts and CI. The objective (from stdin when `-`)
//! becomes one request; the task's events are printed as they come (see `run_output`). Exit
//! codes: 0 when the model finished its answer, 1 on an error (bad config, unreachable server,
//! bad key) or when a limit stopped the request, 130 when interrupted (SIGINT cancels the task
//! cleanly: the stream is dropped, a running command killed). In ASK mode approvals are asked
//! on the terminal; without one every approval is `cancelled`.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use spear::agent::config::{self, Env, Flags, Settings};
use spear::agent::event::{AgentEvent, EventSink, StopReason};
use spear::agent::model::ChatModel;
use spear::agent::runtime::{AgentRuntime, RuntimeOptions, TaskOutcome};
use spear::agent::session::SessionStore;
use spear::agent::task::TaskController;
use spear::harness::primitives::ExecutionMode;
use tokio::sync::mpsc::UnboundedReceiver;

use super::run_output::Printer;

#[derive(Args)]
pub struct RunArgs {
    /// Execution mode: safe, ask or auto (default: the config's, else ask).
    #[arg(long, value_name = "M")]
    pub mode: Option<ExecutionMode>,
    /// Let commands that need the network have it (slirp4netns; host loopback unreachable).
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
    let place = super::wiring::place(workspace)?;
    let cwd = place.cwd.clone();
    let engaged = spear::tools::normative::EngagedStandard::default();
    if let Some(name) = &args.standard {
        super::standard::check_engageable(&place.state, name)?;
        engaged.set(Some(name.clone()));
    }
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
    let router = super::wiring::coding_router(
        place,
        &super::wiring::RouterOptions {
            session: session.clone(),
            network: settings.network,
            refusal_repeats: Some(settings.refusal_repeats),
            harness: settings.harness.clone(),
            previews: None,
            engaged: engaged.clone(),
        },
    )?;
    let runtime = AgentRuntime::new(
        Arc::new(model),
        Arc::new(router),
        RuntimeOptions {
            max_tool_calls: settings.max_tool_calls,
            response_max_tokens: settings.response_max_tokens,
            context_window: settings.provider.context_window,
            cwd,
        },
    )
    .with_session(writer)
    .with_conversation(history)
    .with_standards(engaged);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (outcome, interrupted) = rt.block_on(drive(runtime, &objective, &settings, args.json));
    // A question left on the terminal must not hold the exit.
    rt.shutdown_background();
    eprintln!("spear: session {session} (continue it with `spear run --resume {session} …`)");
    Ok(match outcome.reason {
        StopReason::Finished => ExitCode::SUCCESS,
        StopReason::Cancelled if interrupted => ExitCode::from(130),
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

/// Run the request while showing its events; returns the outcome and whether SIGINT ended it.
async fn drive<M: ChatModel + 'static>(
    mut runtime: AgentRuntime<M>,
    objective: &str,
    settings: &Settings,
    json: bool,
) -> (TaskOutcome, bool) {
    let (sink, rx) = EventSink::channel();
    let task = TaskController::new(settings.mode, sink);
    let (outcome, interrupted) = tokio::join!(
        runtime.run_task(objective, &task),
        consume(rx, &task, Printer::new(json))
    );
    if let Some(p) = runtime.system_prompt() {
        for note in &p.notes {
            eprintln!("spear: note: {note}");
        }
    }
    (outcome, interrupted)
}

/// Print events until `done`, answer approvals, and turn SIGINT into a cancel. Returns whether
/// the task was interrupted.
async fn consume(
    mut rx: UnboundedReceiver<AgentEvent>,
    task: &TaskController,
    mut printer: Printer,
) -> bool {
    let mut interrupted = false;
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    loop {
        let event = tokio::select! {
            e = rx.recv() => e,
            r = tokio::signal::ctrl_c(), if !interrupted => {
                if r.is_ok() {
                    interrupted = true;
                    task.cancel();
                }
                continue;
            }
            _ = ticker.tick(), if printer.spinning() => {
                printer.tick();
                continue;
            }
        };
        let Some(event) = event else { break };
        printer.event(&event);
        match &event {
            AgentEvent::ApprovalRequested { request } => {
                let (task, request) = (task.clone(), request.clone());
                // Asked on a blocking thread so SIGINT is still heard meanwhile; a cancel
                // answers first, and this later answer then finds nothing pending.
                tokio::task::spawn_blocking(move || {
                    let d = super::common::ask_request_on_tty(&request);
                    let _ = task.answer(request.id, d);
                });
            }
            AgentEvent::Done { .. } => break,
            _ => {}
        }
    }
    interrupted
}
