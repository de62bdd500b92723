//! Fixtures for the loop tests: a scripted `ChatModel` that replays responses and records every
//! request; a router over the six coding tools in a temporary project with an audit log; an
//! executor that records commands and answers them without running anything; and a helper that
//! runs one task while collecting its events.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spear::agent::event::{AgentEvent, EventSink};
use spear::agent::model::{
    ChatModel, ChatRequest, FinishReason, ModelResponse, StreamDelta, ToolCallRequest, Usage,
};
use spear::agent::runtime::{AgentRuntime, RuntimeOptions, TaskOutcome};
use spear::agent::task::TaskController;
use spear::harness::audit::{AuditLogger, AuditRecord};
use spear::harness::command_policy::{CommandPolicy, ExecutionProfile, PolicyConfig};
use spear::harness::primitives::{ExecutionMode, ToolResult};
use spear::harness::target_policy::TargetPolicy;
use spear::harness::workspace::Workspace;
use spear::tools::coding;
use spear::tools::executor::{CommandExecutor, ExecOutcome, OutputSink, OutputStream};
use spear::tools::host::{HostConfig, SpearHost};
use spear::tools::normative::EngagedStandard;
use spear::tools::observer::AuditObserver;
use spear::tools::registry::ToolRegistry;
use spear::tools::results::{ResultStore, StoreLimits};
use spear::tools::router::ToolRouter;
use tokio::sync::mpsc::UnboundedReceiver;

/// One scripted answer.
pub enum Step {
    Respond(ModelResponse),
    Fail(String),
    /// Stream `text`, then never finish (until dropped, which sets `dropped`).
    Hang {
        text: String,
        dropped: Arc<AtomicBool>,
    },
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ScriptError(pub String);

/// Replays `steps` in order and records every request it was sent.
pub struct ScriptedModel {
    steps: Mutex<VecDeque<Step>>,
    pub requests: Mutex<Vec<ChatRequest>>,
    pub window: Option<u64>,
}

impl ScriptedModel {
    pub fn new(steps: Vec<Step>) -> Arc<Self> {
        Arc::new(ScriptedModel {
            steps: Mutex::new(steps.into()),
            requests: Mutex::new(Vec::new()),
            window: None,
        })
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

/// Sets its flag when dropped: proof a hanging stream was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl ChatModel for ScriptedModel {
    type Error = ScriptError;

    #[allow(clippy::manual_async_fn)] // the trait's signature, spelt out
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut (dyn FnMut(StreamDelta) + Send),
    ) -> impl std::future::Future<Output = Result<ModelResponse, ScriptError>> + Send + 'a {
        async move {
            self.requests.lock().unwrap().push(request.clone());
            let step = self.steps.lock().unwrap().pop_front();
            match step {
                Some(Step::Respond(r)) => {
                    // Stream the text in small pieces, as a server does.
                    let chars: Vec<char> = r.content.chars().collect();
                    for piece in chars.chunks(3) {
                        on_delta(StreamDelta::Text(piece.iter().collect()));
                    }
                    if !r.reasoning.is_empty() {
                        on_delta(StreamDelta::Reasoning(r.reasoning.clone()));
                    }
                    Ok(r)
                }
                Some(Step::Fail(why)) => Err(ScriptError(why)),
                Some(Step::Hang { text, dropped }) => {
                    let _flag = DropFlag(dropped);
                    on_delta(StreamDelta::Text(text));
                    std::future::pending::<()>().await;
                    unreachable!()
                }
                None => Err(ScriptError("the script has no more responses".into())),
            }
        }
    }

    fn context_window(&self) -> Option<u64> {
        self.window
    }

    fn model_name(&self) -> &str {
        "scripted"
    }
}

pub fn text(t: &str) -> Step {
    Step::Respond(ModelResponse {
        content: t.into(),
        reasoning: String::new(),
        tool_calls: Vec::new(),
        finish_reason: FinishReason::Stop,
        usage: Some(Usage {
            prompt_tokens: Some(100),
            completion_tokens: Some(10),
            total_tokens: Some(110),
        }),
    })
}

/// A response calling tools: `(id, name, arguments as text)`.
pub fn calls(list: &[(&str, &str, &str)]) -> Step {
    Step::Respond(ModelResponse {
        content: String::new(),
        reasoning: String::new(),
        tool_calls: list
            .iter()
            .map(|(id, name, args)| ToolCallRequest {
                id: (*id).into(),
                name: (*name).into(),
                arguments: (*args).into(),
            })
            .collect(),
        finish_reason: FinishReason::ToolCalls,
        usage: None,
    })
}

/// Records commands and answers `ran: COMMAND` without running anything.
#[derive(Default, Clone)]
pub struct Recorder {
    pub ran: Arc<Mutex<Vec<String>>>,
    pub count: Arc<AtomicUsize>,
}

impl CommandExecutor for Recorder {
    fn run(
        &self,
        command: &str,
        _profile: &ExecutionProfile,
        _timeout: Duration,
        sink: &mut dyn OutputSink,
    ) -> ExecOutcome {
        self.ran.lock().unwrap().push(command.to_string());
        self.count.fetch_add(1, Ordering::SeqCst);
        let out = format!("ran: {command}\n");
        sink.write(OutputStream::Stdout, out.as_bytes()).unwrap();
        ExecOutcome::ran(ToolResult::ok(out))
    }
}

/// A temporary project, a state directory outside it, and the router over them.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub project: PathBuf,
    pub state: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("project");
        let state = base.join("state");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        Fixture {
            _dir: dir,
            project,
            state,
        }
    }

    pub fn write(&self, rel: &str, contents: &str) {
        let p = self.project.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.project.join(rel)).unwrap()
    }

    /// The router the binary builds: the library's builder, the real sandbox, the audit log in
    /// the state directory, with `engaged` shared by the normative tools.
    pub fn router_engaged(&self, engaged: EngagedStandard) -> Arc<ToolRouter> {
        let place = spear::agent::builder::Place::of(
            Workspace::new(&self.project).unwrap(),
            self.project.clone(),
            self.state.clone(),
        );
        Arc::new(
            spear::agent::builder::SessionBuilder::new(
                place,
                spear::config::HarnessSettings::default(),
                "test",
            )
            .engaged(engaged)
            .router()
            .unwrap(),
        )
    }

    /// The router the binary builds (see `router_engaged`), with no standard engaged.
    pub fn router(&self) -> Arc<ToolRouter> {
        self.router_engaged(EngagedStandard::default())
    }

    /// A router whose commands go to `executor` instead of the sandbox, for the few tests that
    /// must count what ran or must never run what they hand the loop (a dangerous string kept
    /// as data). Everything else builds through `router`.
    pub fn recording_router(&self, executor: Box<dyn CommandExecutor>) -> Arc<ToolRouter> {
        let host = SpearHost::new(
            Workspace::new(&self.project).unwrap(),
            TargetPolicy::default(),
            CommandPolicy::new(PolicyConfig {
                workspace_root: Some(self.project.clone()),
                ..PolicyConfig::default()
            }),
            executor,
            ResultStore::open_in(&self.state, &self.project, StoreLimits::default()).unwrap(),
            HostConfig::default(),
        );
        let mut registry = ToolRegistry::new();
        coding::register(&mut registry).unwrap();
        let audit = Arc::new(AuditLogger::open_in(&self.state, &self.project).unwrap());
        Arc::new(
            ToolRouter::new(registry, Arc::new(host))
                .with_observer(Arc::new(AuditObserver::new(audit, "test")))
                .with_refusal_limit(5),
        )
    }

    pub fn options(&self) -> RuntimeOptions {
        RuntimeOptions {
            max_tool_calls: 50,
            response_max_tokens: 1000,
            context_window: None,
            cwd: self.project.clone(),
        }
    }

    /// A runtime over the router the binary builds.
    pub fn runtime(&self, model: Arc<ScriptedModel>) -> AgentRuntime<ScriptedModel> {
        AgentRuntime::new(model, self.router(), self.options())
    }

    /// A runtime whose commands go to `executor` (see `recording_router`).
    pub fn recording_runtime(
        &self,
        model: Arc<ScriptedModel>,
        executor: Box<dyn CommandExecutor>,
    ) -> AgentRuntime<ScriptedModel> {
        AgentRuntime::new(model, self.recording_router(executor), self.options())
    }

    pub fn audit(&self) -> Vec<AuditRecord> {
        crate::audit_log::records(&self.state, &self.project)
    }
}

/// A task and its event receiver.
pub fn task(mode: ExecutionMode) -> (TaskController, UnboundedReceiver<AgentEvent>) {
    let (sink, rx) = EventSink::channel();
    (TaskController::new(mode, sink), rx)
}

/// Every event received so far.
pub fn drain(rx: &mut UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// Run `objective` to its end and return the outcome and every event.
pub async fn run(
    rt: &mut AgentRuntime<ScriptedModel>,
    objective: &str,
    mode: ExecutionMode,
) -> (TaskOutcome, Vec<AgentEvent>) {
    let (task, mut rx) = task(mode);
    let outcome = rt.run_task(objective, &task).await;
    (outcome, drain(&mut rx))
}

/// The event types, in order, without deltas.
pub fn kinds(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| !e.is_delta())
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

impl Fixture {
    /// A session over this project, built by the library's builder as the binary builds it:
    /// the real sandbox, the audit log in the state directory, `model` answering.
    pub fn session(
        &self,
        model: Arc<ScriptedModel>,
        mode: ExecutionMode,
        network: bool,
    ) -> spear::agent::session::SessionActor<ScriptedModel> {
        self.session_with(
            model,
            mode,
            network,
            spear::config::HarnessSettings::default(),
        )
    }

    /// As `session`, with `harness` settings (MCP servers, say).
    pub fn session_with(
        &self,
        model: Arc<ScriptedModel>,
        mode: ExecutionMode,
        network: bool,
        harness: spear::config::HarnessSettings,
    ) -> spear::agent::session::SessionActor<ScriptedModel> {
        let place = spear::agent::builder::Place::of(
            Workspace::new(&self.project).unwrap(),
            self.project.clone(),
            self.state.clone(),
        );
        let info = spear::agent::session::ModelInfo {
            provider: "scripted".into(),
            model: "scripted".into(),
        };
        spear::agent::builder::SessionBuilder::new(place, harness, "test")
            .network(network)
            .session(
                Some((model, info)),
                Box::new(|name: &str| Err(format!("no model `{name}` in this test"))),
                self.options(),
                mode,
            )
            .unwrap()
    }
}
