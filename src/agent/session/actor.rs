//! `SessionActor`: the one place a front end's request becomes decided, confined and recorded
//! calls. It owns the `AgentRuntime` on its own task, lends it to a running turn and takes it
//! back when the turn ends, so nothing ever waits on a lock a turn holds; it takes `SessionOp`s
//! on a channel at any time. Invariants: at most one turn runs; an op that narrows what calls may
//! do (a stricter mode, the network off, a cancel) applies from the running turn's next call, one
//! that widens applies from the next turn; an op that would change the conversation under a
//! running turn (model, compact, new, resume, standard) is refused with a reason; a pending
//! approval is answered only by an answer naming its call or by a cancel, never by a mode change.

use std::sync::Arc;

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use crate::agent::event::{AgentEvent, EventSink, StopReason};
use crate::agent::model::ChatMessage;
use crate::agent::model::ChatModel;
use crate::agent::runtime::{AgentRuntime, RuntimeOptions, TaskOutcome};
use crate::agent::session::ops::{
    AppliesFrom, Change, OpKind, RewindWhat, SessionEvent, SessionOp,
};
use crate::agent::session::standards::Standards;
use crate::agent::task::{Switches, TaskController};
use crate::agent::transcript::{LoadedSession, SessionStore, SessionWriter};
use crate::harness::command_policy::ApprovalDecision;
use crate::harness::primitives::ExecutionMode;
use crate::tools::approval::ApprovalId;
use crate::tools::checkpoints::SessionCheckpoints;
use crate::tools::host::mcp::client::ServerState;
use crate::tools::observer::SessionLabel;
use crate::tools::router::ToolRouter;

/// Builds the model `/model NAME` switches to (the same configuration with another model).
pub type ModelFactory<M> = Box<dyn Fn(&str) -> Result<(Arc<M>, ModelInfo), String> + Send>;

/// Which model and provider the sessions are recorded with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub provider: String,
    pub model: String,
}

/// What a session is made of (the library's builder assembles it).
pub struct SessionParts<M: ChatModel + 'static> {
    /// `None`: no model is configured; the session still runs commands and lists sessions.
    pub model: Option<(Arc<M>, ModelInfo)>,
    pub remodel: ModelFactory<M>,
    pub router: Arc<ToolRouter>,
    pub options: RuntimeOptions,
    pub store: SessionStore,
    pub mode: ExecutionMode,
    pub network: bool,
    pub standards: Standards,
    /// The session the router's audit records name: set to the recording's id when one starts
    /// or is reopened.
    pub audit_label: SessionLabel,
}

/// A front end's end of a running session: ops go in here.
#[derive(Clone)]
pub struct SessionHandle {
    ops: UnboundedSender<SessionOp>,
}

impl SessionHandle {
    /// Send `op`. `false`: the session has ended.
    pub fn send(&self, op: SessionOp) -> bool {
        self.ops.send(op).is_ok()
    }
}

/// What a running session says: its turns' events and its own.
pub struct SessionStreams {
    pub agent: UnboundedReceiver<AgentEvent>,
    pub session: UnboundedReceiver<SessionEvent>,
}

/// What a finished job gives back.
struct JobEnd<M: ChatModel + 'static> {
    runtime: Option<AgentRuntime<M>>,
    outcome: Option<TaskOutcome>,
    failed: Option<String>,
}

/// The session, before and while it runs on its task.
pub struct SessionActor<M: ChatModel + 'static> {
    parts: SessionParts<M>,
    runtime: Option<AgentRuntime<M>>,
    session: Option<String>,
    sink: EventSink,
    agent_rx: Option<UnboundedReceiver<AgentEvent>>,
    events: UnboundedSender<SessionEvent>,
    events_rx: Option<UnboundedReceiver<SessionEvent>>,
    /// The running job's control, while one runs.
    task: Option<TaskController>,
    /// Files that run code by design the person has already been told this session changed.
    told_code_running: std::collections::BTreeSet<String>,
}

impl<M: ChatModel + 'static> SessionActor<M> {
    pub fn new(parts: SessionParts<M>) -> Self {
        let (sink, agent_rx) = EventSink::channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        // A server that fails (to start, or during a call) is a line on the screen, besides the
        // tool result the model gets.
        if let Some(mcp) = parts.router.host().mcp() {
            let tx: UnboundedSender<SessionEvent> = events.clone();
            mcp.on_failure(Box::new(move |line| {
                let _ = tx.send(SessionEvent::Failed(line.to_string()));
            }));
        }
        SessionActor {
            parts,
            runtime: None,
            session: None,
            sink,
            agent_rx: Some(agent_rx),
            events,
            events_rx: Some(events_rx),
            task: None,
            told_code_running: std::collections::BTreeSet::new(),
        }
    }

    /// The session the conversation is recorded in, once one began.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Start a new session (a runtime with an empty conversation). `None`: no model is
    /// configured, so there is no conversation to record.
    pub fn new_session(&mut self) -> Result<Option<String>, String> {
        let Some((_, info)) = &self.parts.model else {
            return Ok(None);
        };
        let writer = self
            .parts
            .store
            .create(&info.provider, &info.model, self.parts.mode.as_str())
            .map_err(|e| e.to_string())?;
        let id = writer.id().to_string();
        self.continue_in(writer, Vec::new());
        Ok(Some(id))
    }

    /// Record in `writer` from now on, continuing `history` (also for a front end that opened
    /// the session itself, to know its id before the harness was built).
    /// The person's "allow for session" grants and session rules were given for the session
    /// they were in, so a new or reopened one starts with none (rules saved to the person's
    /// file stay).
    pub fn continue_in(&mut self, writer: SessionWriter, history: Vec<ChatMessage>) {
        self.parts.router.grants().clear();
        self.parts.router.host().rules().clear_session();
        self.session = Some(writer.id().to_string());
        self.parts.audit_label.set(writer.id());
        if let Some((model, _)) = &self.parts.model {
            let rt = AgentRuntime::new(
                model.clone(),
                self.parts.router.clone(),
                self.parts.options.clone(),
            )
            .with_session(writer)
            .with_conversation(history)
            .with_standards(self.parts.standards.engaged.clone());
            self.runtime = Some(rt);
        }
    }

    /// Reopen session `id` with its conversation and its mode.
    pub fn resume(&mut self, id: &str) -> Result<LoadedSession, String> {
        let (loaded, writer) = self.parts.store.resume(id).map_err(|e| e.to_string())?;
        self.continue_in(writer, loaded.messages.clone());
        if let Ok(m) = loaded.meta.mode.parse() {
            self.parts.mode = m;
        }
        Ok(loaded)
    }

    /// Run the session on a task of its own. The handle takes ops; the streams carry what it
    /// says. The task ends on `Quit` or when every handle is dropped, and returns the session id.
    pub fn spawn(mut self) -> (SessionHandle, SessionStreams, JoinHandle<Option<String>>) {
        let (ops, rx) = mpsc::unbounded_channel();
        let streams = SessionStreams {
            agent: self
                .agent_rx
                .take()
                .unwrap_or_else(|| EventSink::channel().1),
            session: self
                .events_rx
                .take()
                .unwrap_or_else(|| mpsc::unbounded_channel().1),
        };
        let join = tokio::spawn(self.run(rx));
        (SessionHandle { ops }, streams, join)
    }

    async fn run(mut self, mut ops: UnboundedReceiver<SessionOp>) -> Option<String> {
        let mut job: Option<JoinHandle<JobEnd<M>>> = None;
        loop {
            tokio::select! {
                // Ops first: a cancel or a narrowing must not wait behind a job's end.
                biased;
                op = ops.recv() => match op {
                    None | Some(SessionOp::Quit) => {
                        if let Some(t) = &self.task {
                            t.cancel();
                        }
                        break;
                    }
                    Some(op) => {
                        // A job that sent its last event is only returning: let it, so an op
                        // sent on hearing `done` finds the turn over.
                        if self.task.as_ref().is_some_and(TaskController::has_ended)
                            && let Some(j) = job.take()
                        {
                            let end = j.await;
                            self.job_ended(end);
                        }
                        if let Some(started) = self.handle(op, job.is_some()) {
                            job = Some(started);
                        }
                    }
                },
                end = join(&mut job), if job.is_some() => {
                    job = None;
                    self.job_ended(end);
                }
            }
        }
        self.session
    }

    fn say(&self, e: SessionEvent) {
        let _ = self.events.send(e);
    }

    fn refuse(&self, op: OpKind, reason: impl Into<String>) {
        self.say(SessionEvent::Refused {
            op,
            reason: reason.into(),
        });
    }

    /// Handle one op; `Some` when it started a job.
    fn handle(&mut self, op: SessionOp, running: bool) -> Option<JoinHandle<JobEnd<M>>> {
        const BUSY: &str = "a turn is running: wait for it, or cancel it (Esc) first";
        match op {
            SessionOp::Submit(_) | SessionOp::RunCommand { .. } if running => {
                let kind = match op {
                    SessionOp::Submit(_) => OpKind::Submit,
                    _ => OpKind::RunCommand,
                };
                self.refuse(kind, BUSY);
                None
            }
            SessionOp::Submit(text) => self.submit(text),
            SessionOp::RunCommand { call_id, command } => Some(self.run_command(call_id, command)),
            SessionOp::Answer {
                request_id,
                decision,
            } => {
                self.answer(request_id, decision);
                None
            }
            SessionOp::Cancel => {
                match &self.task {
                    Some(t) => t.cancel(),
                    None => self.refuse(OpKind::Cancel, "no turn is running"),
                }
                None
            }
            SessionOp::SetMode(m) => {
                self.apply(Change::Mode(m));
                None
            }
            SessionOp::SetNetwork(on) => {
                self.apply(Change::Network(on));
                None
            }
            SessionOp::Mcp(None) => {
                self.say(SessionEvent::Note(super::mcp::report(
                    self.parts.router.host().mcp(),
                    self.network_now(),
                )));
                None
            }
            SessionOp::Mcp(Some(_)) if running => {
                self.refuse(OpKind::Mcp, BUSY);
                None
            }
            SessionOp::Mcp(Some(name)) => {
                self.restart_mcp(name);
                None
            }
            SessionOp::SetModel(_) if running => {
                self.refuse(OpKind::SetModel, BUSY);
                None
            }
            SessionOp::SetModel(name) => {
                self.set_model(&name);
                None
            }
            // Listing reads the library only, so it is fine during a turn.
            SessionOp::Standard(None) => {
                self.say(super::standards::list(&self.parts.standards));
                None
            }
            SessionOp::Standard(Some(_)) if running => {
                self.refuse(OpKind::Standard, BUSY);
                None
            }
            SessionOp::Standard(Some(arg)) => {
                self.say(super::standards::engage(&self.parts.standards, &arg));
                None
            }
            SessionOp::Compact if running => {
                self.refuse(OpKind::Compact, BUSY);
                None
            }
            SessionOp::Compact => self.compact(),
            SessionOp::New if running => {
                self.refuse(OpKind::New, BUSY);
                None
            }
            SessionOp::New => {
                match self.new_session() {
                    Ok(Some(id)) => {
                        self.say(SessionEvent::Started {
                            id,
                            by_request: false,
                        });
                        self.tell_undoable();
                    }
                    Ok(None) => self.refuse(
                        OpKind::New,
                        "no model is configured, so there is no session to start",
                    ),
                    Err(e) => {
                        self.say(SessionEvent::Failed(format!("cannot start a session: {e}")))
                    }
                }
                None
            }
            SessionOp::Resume(_) if running => {
                self.refuse(OpKind::Resume, BUSY);
                None
            }
            SessionOp::Resume(id) => {
                match self.resume(&id) {
                    Ok(loaded) => {
                        let torn = loaded.torn;
                        self.say(SessionEvent::Loaded(Box::new(loaded)));
                        if let Some(n) = torn {
                            self.say(SessionEvent::Note(format!(
                                "the last line of session {id} was cut short ({n} bytes, left by \
                                 a crash): it was skipped, and the conversation goes on from the \
                                 line before"
                            )));
                        }
                        // A resumed session keeps its checkpoints.
                        self.tell_undoable();
                    }
                    Err(e) => self.say(SessionEvent::Failed(format!("cannot resume {id}: {e}"))),
                }
                None
            }
            SessionOp::ListSessions => {
                match self.parts.store.list() {
                    Ok(list) => self.say(SessionEvent::Sessions(list)),
                    Err(e) => self.say(SessionEvent::Failed(format!(
                        "cannot list the sessions: {e}"
                    ))),
                }
                None
            }
            SessionOp::Undo { .. } if running => {
                self.refuse(OpKind::Undo, BUSY);
                None
            }
            SessionOp::Undo { turn, force } => {
                self.undo(turn, force);
                None
            }
            SessionOp::Rewind { .. } if running => {
                self.refuse(OpKind::Rewind, BUSY);
                None
            }
            SessionOp::Rewind {
                request,
                what,
                force,
            } => {
                self.rewind(request, what, force);
                None
            }
            // Handled by the loop before it gets here.
            SessionOp::Quit => None,
        }
    }

    /// Deliver an answer to the running job's pending approval. One for a request that is not
    /// pending decides nothing: it is refused, said on both streams, and kept in the audit log.
    fn answer(&mut self, request_id: ApprovalId, decision: ApprovalDecision) {
        let refused = match &self.task {
            // The task reports its own refusal on the agent stream.
            Some(t) => t.answer(request_id, decision).err().map(|e| e.to_string()),
            None => {
                let reason =
                    format!("approval request {request_id} is not pending: no turn is running");
                self.sink.send(AgentEvent::ApprovalAnswerRefused {
                    request_id,
                    reason: reason.clone(),
                });
                Some(reason)
            }
        };
        let Some(reason) = refused else { return };
        if let Err(e) = self.parts.router.record_answer_refused(request_id) {
            self.say(SessionEvent::Failed(format!(
                "the refused answer could not be recorded in the audit log: {e}"
            )));
        }
        self.refuse(OpKind::Answer, reason);
    }

    /// Whether the session grants the network now: its switch on and the mode not SAFE.
    fn network_now(&self) -> bool {
        self.parts.network && self.parts.mode != ExecutionMode::Safe
    }

    /// `/mcp restart NAME`: on a blocking thread (a start may take seconds), said when done.
    fn restart_mcp(&self, name: String) {
        let router = self.parts.router.clone();
        let events = self.events.clone();
        let network_now = self.network_now();
        tokio::task::spawn_blocking(move || {
            let said = match router.host().mcp() {
                None => SessionEvent::Failed(
                    "no MCP servers are configured ([mcp.servers.NAME] in your config)".into(),
                ),
                Some(mcp) => match mcp.restart(&name, network_now) {
                    Ok(tools) => SessionEvent::Note(format!(
                        "MCP server `{name}` restarted: {} tool{} ({})",
                        tools.len(),
                        if tools.len() == 1 { "" } else { "s" },
                        tools
                            .iter()
                            .map(|t| t.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                    // A start that failed was said already, as the server's failure line.
                    Err(why)
                        if mcp.status().iter().any(|s| {
                            s.config.name == name && s.state == ServerState::Failed(why.clone())
                        }) =>
                    {
                        SessionEvent::Note(format!(
                            "/mcp restart {name}: it did not start (the line above says why)"
                        ))
                    }
                    Err(why) => SessionEvent::Failed(format!("/mcp restart {name}: {why}")),
                },
            };
            let _ = events.send(said);
        });
    }

    /// Take a mode or network change: always for the next turn, and for the running turn's next
    /// call when it narrows what calls may do. Says which. A narrowing that takes the network
    /// away stops the MCP servers that have it, at once.
    fn apply(&mut self, change: Change) {
        match change {
            Change::Mode(m) => self.parts.mode = m,
            Change::Network(on) => self.parts.network = on,
        }
        if let Some(mcp) = self.parts.router.host().mcp() {
            // Said now, so no server starts with the network from here on; the ones running
            // are stopped (their deaths confirmed) off the actor, which must stay free for a
            // cancel.
            let now = self.network_now();
            mcp.grant_network(now);
            let router = self.parts.router.clone();
            let events = self.events.clone();
            tokio::task::spawn_blocking(move || {
                let stopped = router
                    .host()
                    .mcp()
                    .map(|m| m.narrow(now))
                    .unwrap_or_default();
                if !stopped.is_empty() {
                    let _ = events.send(SessionEvent::Note(format!(
                        "stopped MCP server{} {}: {} the network, which the session no longer \
                         grants",
                        if stopped.len() == 1 { "" } else { "s" },
                        stopped.join(", "),
                        if stopped.len() == 1 {
                            "it has"
                        } else {
                            "they have"
                        }
                    )));
                }
            });
        }
        let from = match &self.task {
            Some(t) => {
                let mut s = t.switches();
                match change {
                    Change::Mode(m) => s.mode = m,
                    Change::Network(on) => s.network = Some(on),
                }
                if t.narrow(s) {
                    AppliesFrom::NextCall
                } else {
                    AppliesFrom::NextTurn
                }
            }
            None => AppliesFrom::NextTurn,
        };
        self.say(SessionEvent::Applied { change, from });
    }

    /// The switches the next job starts with: the session's mode and network as they are now.
    fn controller(&mut self) -> TaskController {
        let task = TaskController::with_switches(
            Switches {
                mode: self.parts.mode,
                network: Some(self.parts.network),
            },
            self.sink.clone(),
        );
        self.task = Some(task.clone());
        task
    }

    fn submit(&mut self, text: String) -> Option<JoinHandle<JobEnd<M>>> {
        if self.runtime.is_none() {
            match self.new_session() {
                Ok(Some(id)) => self.say(SessionEvent::Started {
                    id,
                    by_request: true,
                }),
                Ok(None) => {
                    self.refuse(
                        OpKind::Submit,
                        "no model is configured (README \"Connect a model\")",
                    );
                    return None;
                }
                Err(e) => {
                    self.refuse(OpKind::Submit, format!("cannot start a session: {e}"));
                    return None;
                }
            }
        }
        let mut rt = self.runtime.take()?;
        // The checkpoint log marks where each request began, so `/rewind` knows which calls
        // came after it.
        if let Some(cp) = self.parts.router.checkpoints()
            && let Err(e) = cp.checkpoints().note_request(&cp.session(), &text)
        {
            self.say(SessionEvent::Failed(format!(
                "the checkpoint log could not mark this request, so `/rewind` to it will not \
                 take files back: {e}"
            )));
        }
        let task = self.controller();
        Some(tokio::spawn(async move {
            let outcome = rt.run_task(&text, &task).await;
            JobEnd {
                runtime: Some(rt),
                outcome: Some(outcome),
                failed: None,
            }
        }))
    }

    fn compact(&mut self) -> Option<JoinHandle<JobEnd<M>>> {
        let Some(mut rt) = self.runtime.take() else {
            self.refuse(OpKind::Compact, "there is no conversation to compact yet");
            return None;
        };
        let task = self.controller();
        Some(tokio::spawn(async move {
            let failed = rt
                .compact(&task)
                .await
                .err()
                .map(|e| format!("/compact: {e}"));
            JobEnd {
                runtime: Some(rt),
                outcome: None,
                failed,
            }
        }))
    }

    /// `/undo`: plan, and carry it out unless it would overwrite what someone else changed or
    /// leave paths it cannot restore (then the plan is shown, and `/undo force` does it).
    fn undo(&mut self, turn: Option<u32>, force: bool) {
        let router = self.parts.router.clone();
        let Some(cp) = router.checkpoints() else {
            self.say(SessionEvent::Failed(
                "this session keeps no checkpoints, so there is nothing to take back".into(),
            ));
            return;
        };
        let again = turn.map_or("/undo force".to_string(), |t| format!("/undo {t} force"));
        if let Some(report) = self.take_back(cp, turn, force, &again) {
            self.say(SessionEvent::Note(report));
        }
    }

    /// Take the session's calls from turn `turn` on back (the last turn's when `None`). Unless
    /// `force`, a plan that would overwrite what someone else changed, or leave paths it cannot
    /// restore, is only shown, with `again` as the way to go ahead. What it did, for the
    /// person to read, when it went ahead; `None` when it said why it did not.
    fn take_back(
        &mut self,
        cp: &SessionCheckpoints,
        turn: Option<u32>,
        force: bool,
        again: &str,
    ) -> Option<String> {
        let plan = match cp.checkpoints().plan_undo(&cp.session(), turn) {
            Ok(p) => p,
            Err(e) => {
                self.say(SessionEvent::Note(e.to_string()));
                return None;
            }
        };
        if !force && (!plan.conflicts.is_empty() || !plan.unrestorable.is_empty()) {
            let mut lines = crate::tools::checkpoints::plan_lines(&plan);
            lines.push(format!(
                "Nothing was changed. `{again}` restores the conflicting files too (what was \
                 changed in them since is lost) and takes back what can be."
            ));
            self.say(SessionEvent::Note(lines.join("\n")));
            return None;
        }
        match cp.checkpoints().undo(&plan, force) {
            Ok(report) => {
                let event = crate::tools::checkpoints::undo_event(&plan, &report, force);
                let lines = crate::tools::checkpoints::report_lines(&plan, &report);
                if let Err(e) = self.parts.router.record_undo(&event) {
                    self.say(SessionEvent::Failed(format!(
                        "the undo was done, but its audit record could not be written: {e}"
                    )));
                }
                self.tell_undoable();
                Some(lines.join("\n"))
            }
            Err(e) => {
                self.say(SessionEvent::Failed(format!("the undo failed: {e}")));
                None
            }
        }
    }

    /// `/rewind`: with no request, the requests there are to go back to; with one, back to
    /// just before it. The files first (what its calls and every later one changed, taken back
    /// as `/undo` does, refusing the same way), then the conversation, which goes on from
    /// there with the request's words back in the composer.
    fn rewind(&mut self, request: Option<usize>, what: RewindWhat, force: bool) {
        let Some(rt) = self.runtime.as_ref() else {
            self.refuse(OpKind::Rewind, "there is no conversation to rewind yet");
            return;
        };
        let requests: Vec<String> = rt.requests().into_iter().map(str::to_string).collect();
        let Some(n) = request else {
            self.say(SessionEvent::Note(request_list(&requests)));
            return;
        };
        let Some(text) = n.checked_sub(1).and_then(|i| requests.get(i)).cloned() else {
            self.refuse(
                OpKind::Rewind,
                format!(
                    "there is no request {n}: this conversation has {} (`/rewind` lists them)",
                    requests.len()
                ),
            );
            return;
        };
        // What the files part did is said after the conversation went back: the screen
        // redraws the conversation then, and the report must not go with it.
        let mut report = None;
        if what.files() {
            let router = self.parts.router.clone();
            match router.checkpoints() {
                None if !what.conversation() => {
                    self.refuse(
                        OpKind::Rewind,
                        "this session keeps no checkpoints, so there are no files to take back",
                    );
                    return;
                }
                None => self.say(SessionEvent::Note(
                    "this session keeps no checkpoints: only the conversation goes back".into(),
                )),
                Some(cp) => match cp.checkpoints().turn_since_request(
                    &cp.session(),
                    &text,
                    same_words_after(&requests, n),
                ) {
                    Err(e) => {
                        self.say(SessionEvent::Failed(format!(
                            "cannot read the checkpoint log, so nothing was rewound: {e}"
                        )));
                        return;
                    }
                    Ok(None) => self.say(SessionEvent::Note(format!(
                        "no file changed by request {n} or after it is left to take back"
                    ))),
                    Ok(Some(turn)) => {
                        let again = match what {
                            RewindWhat::Files => format!("/rewind {n} files force"),
                            _ => format!("/rewind {n} force"),
                        };
                        match self.take_back(cp, Some(turn), force, &again) {
                            Some(r) => report = Some(r),
                            None => return,
                        }
                    }
                },
            }
        }
        if what.conversation() {
            let sink = self.sink.clone();
            let Some(rt) = self.runtime.as_mut() else {
                return;
            };
            if rt.rewind(&sink, n).is_some() {
                let messages = rt.conversation().to_vec();
                self.say(SessionEvent::Rewound {
                    request: n,
                    text,
                    messages,
                });
            }
        }
        if let Some(r) = report {
            self.say(SessionEvent::Note(r));
        }
    }

    /// `!COMMAND`: the person's command, as a job (see `command::run_command`).
    fn run_command(&mut self, call_id: String, command: String) -> JoinHandle<JobEnd<M>> {
        let task = self.controller();
        let router = self.parts.router.clone();
        let sink = self.sink.clone();
        tokio::task::spawn_blocking(move || {
            super::command::run_command(&router, &task, &sink, call_id, command);
            JobEnd {
                runtime: None,
                outcome: None,
                failed: None,
            }
        })
    }

    fn job_ended(&mut self, end: Result<JobEnd<M>, tokio::task::JoinError>) {
        self.task = None;
        match end {
            Ok(end) => {
                if let Some(rt) = end.runtime {
                    self.runtime = Some(rt);
                }
                if let Some(why) = end.failed {
                    self.say(SessionEvent::Failed(why));
                }
                self.tell_code_running_changes();
                self.tell_undoable();
                let notes = self
                    .runtime
                    .as_ref()
                    .and_then(|r| r.system_prompt())
                    .map(|p| p.notes.clone())
                    .unwrap_or_default();
                self.say(SessionEvent::TurnEnded {
                    outcome: end.outcome,
                    notes,
                });
            }
            Err(e) => {
                // The runtime went down with the job: the conversation is on disk, so the
                // session goes on from its transcript.
                let mut why = format!("the turn failed inside Spear ({e})");
                if self.runtime.is_none()
                    && let Some(id) = self.session.clone()
                {
                    match self.resume(&id) {
                        Ok(_) => why.push_str("; the session goes on from its transcript"),
                        Err(r) => {
                            why.push_str(&format!("; the session could not be reopened: {r}"))
                        }
                    }
                }
                self.say(SessionEvent::Failed(why.clone()));
                // Whoever waits for the turn's end hears it.
                self.sink.send(AgentEvent::Done {
                    reason: StopReason::Error,
                    tool_calls: 0,
                    message: Some(why),
                });
                self.say(SessionEvent::TurnEnded {
                    outcome: None,
                    notes: Vec::new(),
                });
            }
        }
    }

    /// How many paths the session can take back, for the status bar.
    fn tell_undoable(&mut self) {
        if let Some(cp) = self.parts.router.checkpoints()
            && let Ok(n) = cp.checkpoints().changes_in(&cp.session())
        {
            self.say(SessionEvent::Undoable(n));
        }
    }

    /// A turn that changed a file which runs code when the person next uses their tools
    /// (a Makefile, package scripts, `.vscode/tasks.json`…) says so as it ends: what it wrote
    /// acts later, outside the sandbox. Each file is told once a session.
    fn tell_code_running_changes(&mut self) {
        let state = self.parts.router.host().working_state();
        let new: Vec<String> = state
            .changed_code_running()
            .into_iter()
            .filter(|p| !self.told_code_running.contains(*p))
            .map(str::to_string)
            .collect();
        if new.is_empty() {
            return;
        }
        let shown: Vec<String> = new.iter().map(|p| format!("`{p}`")).collect();
        self.say(SessionEvent::Note(format!(
            "this session changed {}, which run code when you next build, test, commit or open \
             the project in your editor, outside Spear's sandbox: review them first",
            shown.join(", ")
        )));
        self.told_code_running.extend(new);
    }

    fn set_model(&mut self, name: &str) {
        match (self.parts.remodel)(name) {
            Ok((model, info)) => {
                // The conversation so far stays; the next request goes to the new model.
                if let Some(rt) = &mut self.runtime {
                    rt.set_model(model.clone());
                }
                self.say(SessionEvent::ModelChanged {
                    provider: info.provider.clone(),
                    model: info.model.clone(),
                });
                self.parts.model = Some((model, info));
            }
            Err(e) => self.say(SessionEvent::Failed(format!("/model {name}: {e}"))),
        }
    }
}

/// The running job's end (never, when none runs: the loop does not poll it then).
async fn join<M: ChatModel + 'static>(
    job: &mut Option<JoinHandle<JobEnd<M>>>,
) -> Result<JobEnd<M>, tokio::task::JoinError> {
    match job {
        Some(j) => j.await,
        None => std::future::pending().await,
    }
}

/// How many requests after request `n` (from 1) have the same words: the checkpoint log finds
/// request `n` as that many matches back from its end.
fn same_words_after(requests: &[String], n: usize) -> usize {
    let Some(text) = n.checked_sub(1).and_then(|i| requests.get(i)) else {
        return 0;
    };
    requests.iter().skip(n).filter(|r| *r == text).count()
}

/// `/rewind` with no request: the requests, numbered, one line each.
fn request_list(requests: &[String]) -> String {
    if requests.is_empty() {
        return "no request has been made in this conversation yet".into();
    }
    let mut lines = vec![
        "Requests in this conversation (`/rewind N` goes back to just before N; \
         `/rewind N files` or `/rewind N conversation` takes back only that):"
            .to_string(),
    ];
    for (i, r) in requests.iter().enumerate() {
        let first = r.lines().next().unwrap_or_default();
        let mut line: String = first.chars().take(72).collect();
        if first.chars().count() > 72 || r.lines().nth(1).is_some() {
            line.push('…');
        }
        lines.push(format!("{:>3}. {line}", i + 1));
    }
    lines.join("\n")
}
