//! `AgentEvent`: everything a task reports, on one channel, in order. The TUI and `spear run`
//! consume the same stream; `spear run --json` prints each as one line. On the wire every event
//! is an object tagged by `"type"` in snake_case. Invariant: no event carries an API key or a
//! header value (nothing here is built from the provider settings).

use serde::Serialize;
use tokio::sync::mpsc;

use crate::agent::model::Usage;
use crate::agent::request_class::ClassifiedBy;
use crate::tools::approval::{ApprovalId, CallApprovalRequest};
use crate::tools::envelope::ToolResultEnvelope;
use crate::tools::exposure::{Pass, RequestClass};
use crate::tools::spec::Surface;

/// Why a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without tool calls.
    Finished,
    /// The request made as many tool calls as it may.
    ToolCallLimit,
    /// The same refused operation was asked for too often (the router stopped the turn).
    RepeatedRefusal,
    /// The person (or SIGINT) cancelled the task.
    Cancelled,
    /// The model could not be reached or the machinery broke; see the `error` event before.
    Error,
}

/// One event of a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The model's answer text, as it streams.
    TextDelta { text: String },
    /// Reasoning the server streamed: shown to the person, never sent back.
    ReasoningDelta { text: String },
    /// A tool call is about to go through the router. `arguments` is the parsed JSON, or the
    /// raw text when it does not parse (the call is then answered `invalid`).
    ToolCallStarted {
        call_id: String,
        name: String,
        arguments: serde_json::Value,
    },
    /// Output of a running command, as it arrives (lossy UTF-8).
    OutputChunk {
        call_id: String,
        stream: &'static str,
        text: String,
    },
    /// The call's envelope, as the model sees it (bounded) and with its facts.
    ToolCallFinished {
        call_id: String,
        envelope: Box<ToolResultEnvelope>,
    },
    /// A call needs the person's yes. Answer it with `TaskController::answer(request_id, ..)`.
    /// On the wire the request's fields stand in the event itself: `request_id`, `call_id`,
    /// `tool`, `mode`, `command`, `class`, `asking_for`, `reasons`, `writes`, `network`, and the
    /// preview's shape (`preview`: a file change's path and line counts, or the command's
    /// assessment; never a file's content).
    ApprovalRequested {
        #[serde(flatten)]
        request: Box<CallApprovalRequest>,
    },
    /// An answer named a request that is not pending (answered already, cancelled, never
    /// asked): it was refused, nothing was decided by it.
    ApprovalAnswerRefused {
        request_id: ApprovalId,
        reason: String,
    },
    /// A question no longer needs an answer (the command that asked it ended first): a front
    /// end closes it; an answer sent for it is refused.
    ApprovalWithdrawn {
        request_id: ApprovalId,
        reason: String,
    },
    /// The response was cut at the token cap; the model is told too.
    Truncated { max_tokens: u32, message: String },
    /// Token counts the server reported for one response.
    Usage {
        #[serde(skip_serializing_if = "Option::is_none")]
        prompt_tokens: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        completion_tokens: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        total_tokens: Option<u64>,
    },
    /// The client waits before retrying (nothing had streamed yet).
    Retrying {
        attempt: u32,
        delay_ms: u64,
        why: String,
    },
    /// The conversation was shortened to fit the context window (or on demand).
    Compacted {
        /// `tool_outputs` (old outputs replaced by their references) or `summary`.
        how: &'static str,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// A standard is engaged and the request was classified (before its first pass).
    RequestClassified {
        standard: String,
        class: RequestClass,
        by: ClassifiedBy,
        normative_score: u32,
        implementation_score: u32,
        /// The rules' cues that matched.
        cues: Vec<String>,
        /// Why the model was asked, or why neither rules nor model could say.
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// A pass of a request with a standard engaged begins, on `surface` with `tools`.
    PassStarted {
        pass: Pass,
        surface: Surface,
        tools: Vec<String>,
    },
    /// Something went wrong; `done` with `reason: error` follows when it ends the task.
    Error { message: String },
    /// The task ended. Always the last event of a task.
    Done {
        reason: StopReason,
        /// Tool calls made for this request.
        tool_calls: u32,
        /// The answer that stopped the task when Spear, not the model, ended it.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

impl AgentEvent {
    pub fn usage(u: &Usage) -> Self {
        AgentEvent::Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
        }
    }

    /// The line a person reads for a classification or a pass (the TUI and `spear run` show
    /// the same words).
    pub fn normative_line(&self) -> Option<String> {
        match self {
            AgentEvent::RequestClassified {
                standard,
                class,
                by,
                cues,
                note,
                ..
            } => {
                let by = match by {
                    ClassifiedBy::Rules => format!("by the rules: {}", cues.join(", ")),
                    ClassifiedBy::Model => "by the model".into(),
                    ClassifiedBy::Fallback => "by default".into(),
                };
                let note = note
                    .as_deref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default();
                Some(format!(
                    "{standard} engaged: the request is {} ({by}{note})",
                    class.as_str()
                ))
            }
            AgentEvent::PassStarted { pass, tools, .. } => {
                let pass = match pass {
                    Pass::Normative => "normative",
                    Pass::Implementation => "implementation",
                };
                Some(format!("{pass} pass: tools {}", tools.join(", ")))
            }
            _ => None,
        }
    }

    /// Deltas are the only events a transcript does not keep (the whole message is kept).
    pub fn is_delta(&self) -> bool {
        matches!(
            self,
            AgentEvent::TextDelta { .. }
                | AgentEvent::ReasoningDelta { .. }
                | AgentEvent::OutputChunk { .. }
        )
    }
}

/// The sending side of a task's event channel. Sending never blocks and never fails the task:
/// a consumer that went away (the TUI closed) only stops hearing.
#[derive(Debug, Clone)]
pub struct EventSink {
    tx: mpsc::UnboundedSender<AgentEvent>,
}

impl EventSink {
    pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (EventSink { tx }, rx)
    }

    pub fn send(&self, event: AgentEvent) {
        let _ = self.tx.send(event);
    }
}
