//! `TaskController`: one request across its turns. It owns the request's cancellation (the model
//! stream is dropped and a running sandboxed command is killed through its pidfd), its event
//! channel, and its approvals: the router asks through a synchronous `CallApprover` with the
//! call's typed request, which this turns into an `approval_requested` event and waits for one
//! answer naming the request's id, from the TUI, `spear run`, or a cancel. Invariant: at most
//! one approval is pending; a cancel answers it `cancelled`; an answer to a request that is not
//! pending is refused and reported (`approval_answer_refused`); no approval defaults to yes.

use std::sync::{Arc, Mutex};

use thiserror::Error;
use tokio::sync::oneshot;

use crate::agent::event::{AgentEvent, EventSink};
use crate::agent::model::{ChatMessage, ChatModel, ChatRequest};
use crate::agent::request_class::{self, ClassifiedBy, RuleVerdict};
use crate::harness::command_policy::ApprovalDecision;
use crate::harness::primitives::ExecutionMode;
use crate::tools::approval::{ApprovalId, CallApprovalRequest, CallApprover};
use crate::tools::executor::CancelToken;
use crate::tools::exposure::RequestClass;

/// Tokens the classifying model call may answer with.
const CLASSIFY_MAX_TOKENS: u32 = 16;

/// How a request was classified, with the rules' evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub standard: String,
    pub class: RequestClass,
    pub by: ClassifiedBy,
    pub verdict: RuleVerdict,
    pub note: Option<String>,
}

impl Classification {
    pub fn event(&self) -> AgentEvent {
        AgentEvent::RequestClassified {
            standard: self.standard.clone(),
            class: self.class,
            by: self.by,
            normative_score: self.verdict.normative,
            implementation_score: self.verdict.implementation,
            cues: self.verdict.cues.iter().map(|c| c.to_string()).collect(),
            note: self.note.clone(),
        }
    }
}

/// An answer that could not be delivered.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum AnswerError {
    /// The request was answered already, cancelled, or never asked.
    #[error("approval request {0} is not pending (answered, cancelled, or never asked)")]
    NotPending(ApprovalId),
}

struct Pending {
    id: ApprovalId,
    answer: oneshot::Sender<ApprovalDecision>,
}

struct Shared {
    /// What the running request's next call may do; only ever narrowed while it runs.
    switches: Mutex<Switches>,
    cancel: CancelToken,
    /// Set just before the request's last event (`done`): what follows is only its return.
    ended: std::sync::atomic::AtomicBool,
    events: EventSink,
    pending: Mutex<Option<Pending>>,
}

/// What a request's calls may do: the mode, and the network switch (`None`: as the session's
/// command policy was built). Read by the loop before every call, so a narrowing applies from the
/// next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switches {
    pub mode: ExecutionMode,
    pub network: Option<bool>,
}

/// A request's control. Cheap to clone: the TUI, a signal handler and the loop share one.
#[derive(Clone)]
pub struct TaskController {
    shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl TaskController {
    /// A task in `mode` with the network as the session's policy says (`network: None`).
    pub fn new(mode: ExecutionMode, events: EventSink) -> Self {
        Self::with_switches(
            Switches {
                mode,
                network: None,
            },
            events,
        )
    }

    /// A task that starts with `switches`.
    pub fn with_switches(switches: Switches, events: EventSink) -> Self {
        TaskController {
            shared: Arc::new(Shared {
                switches: Mutex::new(switches),
                cancel: CancelToken::new(),
                ended: std::sync::atomic::AtomicBool::new(false),
                events,
                pending: Mutex::new(None),
            }),
        }
    }

    /// The mode the next call runs in.
    pub fn mode(&self) -> ExecutionMode {
        lock(&self.shared.switches).mode
    }

    /// What the next call may do.
    pub fn switches(&self) -> Switches {
        *lock(&self.shared.switches)
    }

    /// Narrow what the running request's later calls may do: a stricter mode, or the network
    /// off. A wider setting is refused (`false`): it waits for the next request, so a turn the
    /// person started under one promise never gains rights halfway. A call already running,
    /// and an approval already pending, keep what they were asked under.
    pub fn narrow(&self, to: Switches) -> bool {
        let mut s = lock(&self.shared.switches);
        let mode_ok = to.mode.strictness() >= s.mode.strictness();
        let network_ok = match (s.network, to.network) {
            (_, None) => true,
            (Some(false), Some(true)) => false,
            (None, Some(true)) => false,
            _ => true,
        };
        if !(mode_ok && network_ok) {
            return false;
        }
        s.mode = to.mode;
        if to.network.is_some() {
            s.network = to.network;
        }
        true
    }

    pub fn events(&self) -> &EventSink {
        &self.shared.events
    }

    pub fn cancel_token(&self) -> CancelToken {
        self.shared.cancel.clone()
    }

    /// Classify `request` for the engaged `standard`: by the rules table, and when it is unsure
    /// by one short call to `model` without tools. A model that fails, is cancelled, or names
    /// no class leaves the request MIXED, so both passes run.
    pub async fn classify<M: ChatModel>(
        &self,
        request: &str,
        standard: &str,
        model: &M,
    ) -> Classification {
        let verdict = request_class::by_rules(request);
        let standard = standard.to_string();
        if let Some(class) = verdict.class {
            return Classification {
                standard,
                class,
                by: ClassifiedBy::Rules,
                verdict,
                note: None,
            };
        }
        let ask = ChatRequest {
            messages: vec![
                ChatMessage::System {
                    content: request_class::model_prompt(&standard),
                },
                ChatMessage::User {
                    content: request.to_string(),
                },
            ],
            tools: Vec::new(),
            max_tokens: CLASSIFY_MAX_TOKENS,
        };
        let mut ignore = |_| {};
        let cancel = self.cancel_token();
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => Err("the task was cancelled".to_string()),
            r = model.complete(&ask, &mut ignore) => r.map_err(|e| e.to_string()),
        };
        let unsure = format!(
            "the rules were unsure (normative {}, implementation {})",
            verdict.normative, verdict.implementation
        );
        let (class, by, note) = match answer {
            Ok(r) => match request_class::parse_model_answer(&r.content) {
                Some(c) => (
                    c,
                    ClassifiedBy::Model,
                    format!("{unsure}; the model said {}", c.as_str()),
                ),
                None => (
                    RequestClass::Mixed,
                    ClassifiedBy::Fallback,
                    format!("{unsure} and the model's answer named no class; both passes run"),
                ),
            },
            Err(e) => (
                RequestClass::Mixed,
                ClassifiedBy::Fallback,
                format!("{unsure} and the model could not be asked ({e}); both passes run"),
            ),
        };
        Classification {
            standard,
            class,
            by,
            verdict,
            note: Some(note),
        }
    }

    /// Stop the request: the model stream is dropped, a running command is killed, a pending
    /// approval is answered `cancelled`, and no further call starts.
    pub fn cancel(&self) {
        self.shared.cancel.cancel();
        if let Some(p) = lock(&self.shared.pending).take() {
            let _ = p.answer.send(ApprovalDecision::Cancel(
                "the task was cancelled while waiting for an answer".into(),
            ));
        }
    }

    /// The request is about to send its last event: a front end that heard `done` may send
    /// its next op, and the session waits the moment it takes the request to return.
    pub fn end(&self) {
        self.shared
            .ended
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether [`TaskController::end`] was called.
    pub fn has_ended(&self) -> bool {
        self.shared.ended.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn is_cancelled(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }

    /// The id of the approval request waiting for an answer, if any.
    pub fn pending_approval(&self) -> Option<ApprovalId> {
        lock(&self.shared.pending).as_ref().map(|p| p.id)
    }

    /// Answer the pending approval request `request_id`. An answer for a request that is not
    /// pending (answered already, cancelled, never asked) is refused, and the refusal is
    /// reported on the event stream (`approval_answer_refused`) as well as returned.
    pub fn answer(
        &self,
        request_id: ApprovalId,
        decision: ApprovalDecision,
    ) -> Result<(), AnswerError> {
        let mut pending = lock(&self.shared.pending);
        match pending.take() {
            Some(p) if p.id == request_id => {
                let _ = p.answer.send(decision);
                Ok(())
            }
            other => {
                *pending = other;
                drop(pending);
                let err = AnswerError::NotPending(request_id);
                self.shared.events.send(AgentEvent::ApprovalAnswerRefused {
                    request_id,
                    reason: err.to_string(),
                });
                Err(err)
            }
        }
    }

    /// The approver the router asks through for this task.
    pub fn approver(&self) -> Arc<dyn CallApprover> {
        Arc::new(TaskApprover {
            shared: self.shared.clone(),
        })
    }
}

/// The router's `CallApprover` for a task. Called on the router's (blocking) thread: it
/// registers the question, announces it, and blocks until `answer` or `cancel` delivers a
/// decision.
struct TaskApprover {
    shared: Arc<Shared>,
}

impl CallApprover for TaskApprover {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        let id = request.id;
        let (tx, rx) = oneshot::channel();
        {
            // Checked under the lock `cancel` takes, so a cancel is either seen here or answers
            // the registered question: it cannot fall between the two.
            let mut pending = lock(&self.shared.pending);
            if self.shared.cancel.is_cancelled() {
                return ApprovalDecision::Cancel("the task was cancelled".into());
            }
            if let Some(other) = pending.as_ref() {
                return ApprovalDecision::Cancel(format!(
                    "another approval (request {}) is still pending",
                    other.id
                ));
            }
            *pending = Some(Pending { id, answer: tx });
        }
        self.shared.events.send(AgentEvent::ApprovalRequested {
            request: Box::new(request.clone()),
        });
        let decision = rx.blocking_recv().unwrap_or_else(|_| {
            ApprovalDecision::Cancel("nobody could answer the approval".into())
        });
        // An answer delivered removed the entry already; a dropped sender leaves nothing.
        let mut pending = lock(&self.shared.pending);
        if pending.as_ref().is_some_and(|p| p.id == id) {
            pending.take();
        }
        decision
    }

    fn withdraw(&self, request_id: ApprovalId, reason: &str) {
        let mut pending = lock(&self.shared.pending);
        if pending.as_ref().is_some_and(|p| p.id == request_id)
            && let Some(p) = pending.take()
        {
            let _ = p.answer.send(ApprovalDecision::Cancel(reason.to_string()));
            drop(pending);
            self.shared.events.send(AgentEvent::ApprovalWithdrawn {
                request_id,
                reason: reason.to_string(),
            });
        }
    }
}
