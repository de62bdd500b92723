//! The loop's hands: performs the effects `update` asks for. Requests go to the `AgentRuntime`
//! on a task of their own, each with its `TaskController`; `!COMMAND` goes through the same
//! `ToolRouter` as the model's calls (same policy, dialog and audit), as a `terminal` call on a
//! blocking thread; approvals are answered by call id; Esc cancels through the controller (the
//! command is killed through its pidfd). Results come back as events on the loop's channels,
//! never by touching the app. Invariant: at most one task runs at a time, and every task, cancelled
//! or not, ends with a `done` event.

use std::sync::Arc;

use tokio::sync::Mutex;
use tokio::sync::mpsc::UnboundedSender;

use crate::agent::calls::EventTap;
use crate::agent::event::{AgentEvent, EventSink, StopReason};
use crate::agent::model::ChatModel;
use crate::agent::runtime::{AgentRuntime, RuntimeOptions};
use crate::agent::session::SessionStore;
use crate::agent::task::TaskController;
use crate::harness::audit::AuditPaths;
use crate::harness::primitives::ExecutionMode;
use crate::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use crate::tools::normative::{EngagedStandard, StandardsLibrary};
use crate::tools::router::turn::Turn;
use crate::tools::router::{ToolCall, ToolRouter};
use crate::tui::audit::PAGE;
use crate::tui::audit_feed::AuditFeed;
use crate::tui::event::{Effect, Event};

/// Builds the router again for another network setting (the policy is fixed per router).
pub type RouterFactory = Box<dyn Fn(bool) -> Result<Arc<ToolRouter>, String> + Send>;

/// Builds the model `/model NAME` switches to (the same configuration with another model).
pub type ModelFactory<M> = Box<dyn Fn(&str) -> Result<(Arc<M>, ModelInfo), String> + Send>;

/// Which model and provider the sessions are recorded with.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub provider: String,
    pub model: String,
}

pub struct Driver<M: ChatModel + 'static> {
    pub(crate) model: Option<(Arc<M>, ModelInfo)>,
    runtime: Option<Arc<Mutex<AgentRuntime<M>>>>,
    pub(crate) router: Arc<ToolRouter>,
    rebuild: RouterFactory,
    remodel: ModelFactory<M>,
    options: RuntimeOptions,
    store: SessionStore,
    pub(crate) session: Option<String>,
    mode: ExecutionMode,
    sink: EventSink,
    tx: UnboundedSender<Event>,
    task: Option<TaskController>,
    pub(crate) feed: Option<AuditFeed>,
    audit_paths: AuditPaths,
    standards: Standards,
}

/// The standards library and the engaged standard the router's normative tools share.
pub struct Standards {
    pub library: Arc<StandardsLibrary>,
    pub engaged: EngagedStandard,
}

pub struct DriverParts<M: ChatModel + 'static> {
    pub model: Option<(Arc<M>, ModelInfo)>,
    pub router: Arc<ToolRouter>,
    pub rebuild: RouterFactory,
    pub remodel: ModelFactory<M>,
    pub options: RuntimeOptions,
    pub store: SessionStore,
    pub mode: ExecutionMode,
    pub audit_paths: AuditPaths,
    pub standards: Standards,
}

impl<M: ChatModel + 'static> Driver<M> {
    pub fn new(p: DriverParts<M>, sink: EventSink, tx: UnboundedSender<Event>) -> Self {
        Driver {
            model: p.model,
            runtime: None,
            router: p.router,
            rebuild: p.rebuild,
            remodel: p.remodel,
            options: p.options,
            store: p.store,
            session: None,
            mode: p.mode,
            sink,
            tx,
            task: None,
            feed: None,
            audit_paths: p.audit_paths,
            standards: p.standards,
        }
    }

    pub fn store(&self) -> &SessionStore {
        &self.store
    }

    /// Start a new session (a runtime with an empty conversation), when a model is configured.
    pub fn new_session(&mut self) -> Result<Option<String>, String> {
        let Some((model, info)) = &self.model else {
            return Ok(None);
        };
        let writer = self
            .store
            .create(&info.provider, &info.model, self.mode.as_str())
            .map_err(|e| e.to_string())?;
        let id = writer.id().to_string();
        let rt = AgentRuntime::new(model.clone(), self.router.clone(), self.options.clone())
            .with_session(writer)
            .with_standards(self.standards.engaged.clone());
        self.runtime = Some(Arc::new(Mutex::new(rt)));
        self.session = Some(id.clone());
        Ok(Some(id))
    }

    /// Reopen session `id` with its conversation.
    pub fn resume(&mut self, id: &str) -> Result<crate::agent::session::LoadedSession, String> {
        let (loaded, writer) = self.store.resume(id).map_err(|e| e.to_string())?;
        if let Some((model, _)) = &self.model {
            let rt = AgentRuntime::new(model.clone(), self.router.clone(), self.options.clone())
                .with_session(writer)
                .with_conversation(loaded.messages.clone())
                .with_standards(self.standards.engaged.clone());
            self.runtime = Some(Arc::new(Mutex::new(rt)));
        }
        if let Ok(m) = loaded.meta.mode.parse() {
            self.mode = m;
        }
        self.session = Some(loaded.meta.id.clone());
        Ok(loaded)
    }

    /// The runtime, starting a session on the first request (so a look around opens none).
    fn runtime_or_new(&mut self) -> Option<Arc<Mutex<AgentRuntime<M>>>> {
        if self.runtime.is_none() {
            match self.new_session() {
                Ok(Some(id)) => self.send(Event::Note(format!("session {id}"))),
                Ok(None) => {}
                Err(e) => self.fail(format!("cannot start a session: {e}")),
            }
        }
        self.runtime.clone()
    }

    fn controller(&mut self) -> TaskController {
        let task = TaskController::new(self.mode, self.sink.clone());
        self.task = Some(task.clone());
        task
    }

    /// Perform one effect. `false`: the app is to quit.
    pub async fn perform(&mut self, effect: Effect) -> bool {
        match effect {
            Effect::Quit => {
                if let Some(t) = &self.task {
                    t.cancel();
                }
                return false;
            }
            Effect::Submit(text) => match self.runtime_or_new() {
                Some(rt) => {
                    let task = self.controller();
                    tokio::spawn(async move {
                        rt.lock().await.run_task(&text, &task).await;
                    });
                }
                None => self.fail("no model is configured (README \"Connect a model\")"),
            },
            Effect::RunCommand { call_id, command } => self.run_command(call_id, command),
            Effect::Answer { call_id, decision } => {
                if let Some(t) = &self.task
                    && let Err(e) = t.answer(&call_id, decision)
                {
                    self.fail(e.to_string());
                }
            }
            Effect::Cancel => {
                if let Some(t) = &self.task {
                    t.cancel();
                }
            }
            Effect::Mode(m) => self.mode = m,
            Effect::Model(name) => match (self.remodel)(&name) {
                Ok((model, info)) => {
                    // The conversation so far stays; the next request goes to the new model.
                    if let Some(rt) = &self.runtime {
                        rt.lock().await.set_model(model.clone());
                    }
                    self.send(Event::ModelChanged {
                        provider: info.provider.clone(),
                        model: info.model.clone(),
                    });
                    self.model = Some((model, info));
                }
                Err(e) => self.fail(format!("/model {name}: {e}")),
            },
            Effect::Network(on) => self.network(on).await,
            Effect::Standard(arg) => self.standard(arg.as_deref()),
            Effect::Compact => {
                if let Some(rt) = self.runtime.clone() {
                    let task = self.controller();
                    let tx = self.tx.clone();
                    tokio::spawn(async move {
                        if let Err(e) = rt.lock().await.compact(&task).await {
                            let _ = tx.send(Event::Failed(format!("/compact: {e}")));
                        }
                    });
                }
            }
            Effect::NewSession => match self.new_session() {
                Ok(Some(id)) => self.send(Event::NewSession(id)),
                Ok(None) => self.fail("no model is configured, so there is no session to start"),
                Err(e) => self.fail(format!("cannot start a session: {e}")),
            },
            Effect::ListSessions => match self.store.list() {
                Ok(list) => self.send(Event::Sessions(list)),
                Err(e) => self.fail(format!("cannot list the sessions: {e}")),
            },
            Effect::Resume(id) => match self.resume(&id) {
                Ok(loaded) => self.send(Event::SessionLoaded(Box::new(loaded))),
                Err(e) => self.fail(format!("cannot resume {id}: {e}")),
            },
            Effect::AuditOpen => self.audit_open(),
            Effect::AuditOlder => self.audit_older(),
            Effect::Copy(text) => crate::tui::terminal::copy_osc52(&text),
        }
        true
    }

    /// `/standard`, `/standard NAME`, `/standard off`.
    fn standard(&mut self, arg: Option<&str>) {
        let lib = &self.standards.library;
        let engaged = &self.standards.engaged;
        match arg {
            None => match lib.list() {
                Ok(list) if list.is_empty() => self.send(Event::Note(
                    "the standards library is empty: `spear standard add FILE|URL` adds one".into(),
                )),
                Ok(list) => {
                    let current = engaged.get();
                    let names: Vec<String> = list
                        .iter()
                        .map(|m| {
                            let mark = if current.as_deref() == Some(m.name.as_str()) {
                                " (engaged)"
                            } else {
                                ""
                            };
                            format!("{}{mark}", m.name)
                        })
                        .collect();
                    self.send(Event::Note(format!(
                        "standards: {}; /standard NAME engages one",
                        names.join(", ")
                    )));
                }
                Err(e) => self.fail(format!("/standard: {e}")),
            },
            Some("off") => {
                engaged.set(None);
                self.send(Event::StandardChanged {
                    name: None,
                    note: "no standard engaged: the coding tools answer the next requests".into(),
                });
            }
            Some(name) => match lib.load(name) {
                Ok(s) => {
                    engaged.set(Some(name.to_string()));
                    self.send(Event::StandardChanged {
                        name: Some(name.to_string()),
                        note: format!(
                            "{name} engaged ({} units): each request is classified NORMATIVE, \
                         IMPLEMENTATION or MIXED and answered with the normative tools",
                            s.meta.units
                        ),
                    });
                }
                Err(e) => self.fail(format!("/standard {name}: {e}")),
            },
        }
    }

    fn send(&self, e: Event) {
        let _ = self.tx.send(e);
    }

    fn fail(&self, why: impl Into<String>) {
        self.send(Event::Failed(why.into()));
    }

    fn run_command(&mut self, call_id: String, command: String) {
        let task = self.controller();
        let router = self.router.clone();
        let sink = self.sink.clone();
        tokio::task::spawn_blocking(move || {
            let view = ToolExposurePolicy::view(router.registry(), &ExposureSettings::default());
            let mut turn = Turn::new(task.mode(), view, task.approver());
            turn.cancel = task.cancel_token();
            turn.output_tap = Some(Arc::new(EventTap(sink.clone())));
            let call = ToolCall {
                id: call_id.clone(),
                name: "terminal".into(),
                arguments: serde_json::json!({ "command": command }),
            };
            task.set_current_call(Some(&call_id));
            let routed = router.call(&mut turn, &call);
            task.set_current_call(None);
            match routed {
                Ok(env) => sink.send(AgentEvent::ToolCallFinished {
                    call_id,
                    envelope: Box::new(env),
                }),
                Err(e) => sink.send(AgentEvent::Error {
                    message: format!("the command could not be recorded: {e}"),
                }),
            }
            let reason = if task.is_cancelled() {
                StopReason::Cancelled
            } else {
                StopReason::Finished
            };
            sink.send(AgentEvent::Done {
                reason,
                tool_calls: 1,
                message: None,
            });
        });
    }

    async fn network(&mut self, on: bool) {
        let router = match (self.rebuild)(on) {
            Ok(r) => r,
            Err(e) => {
                return self.fail(format!(
                    "cannot switch the network {}: {e}",
                    if on { "on" } else { "off" }
                ));
            }
        };
        self.router = router;
        // The conversation goes on in the same session, with the new router under it.
        if let (Some(old), Some(id)) = (self.runtime.clone(), self.session.clone()) {
            let conversation = old.lock().await.conversation().to_vec();
            match (self.store.resume(&id), &self.model) {
                (Ok((_, writer)), Some((model, _))) => {
                    let rt =
                        AgentRuntime::new(model.clone(), self.router.clone(), self.options.clone())
                            .with_session(writer)
                            .with_conversation(conversation)
                            .with_standards(self.standards.engaged.clone());
                    self.runtime = Some(Arc::new(Mutex::new(rt)));
                }
                (Err(e), _) => self.fail(format!("the session could not be continued: {e}")),
                _ => {}
            }
        }
        self.send(Event::Network(on));
    }

    fn audit_open(&mut self) {
        let mut feed = AuditFeed::new(self.audit_paths.clone());
        match feed.older(PAGE) {
            Ok(page) => self.send(Event::AuditOlder(page)),
            Err(e) => self.fail(format!("cannot read the audit log: {e}")),
        }
        self.feed = Some(feed);
        let paths = self.audit_paths.clone();
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(Event::AuditChain(AuditFeed::verify(&paths)));
        });
    }

    fn audit_older(&mut self) {
        if let Some(feed) = &mut self.feed {
            match feed.older(PAGE) {
                Ok(page) => self.send(Event::AuditOlder(page)),
                Err(e) => self.fail(format!("cannot read the audit log: {e}")),
            }
        }
    }

    /// New audit records since the last poll (the pane follows the log).
    pub fn poll_audit(&mut self) -> Option<Event> {
        let feed = self.feed.as_mut()?;
        match feed.poll() {
            Ok(r) if r.is_empty() => None,
            Ok(r) => Some(Event::AuditNew(r)),
            Err(e) => Some(Event::Failed(format!("cannot follow the audit log: {e}"))),
        }
    }
}
