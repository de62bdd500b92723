//! How `AgentRuntime` routes one response's tool calls: in order, each on a blocking thread
//! through the `ToolRouter` (commands block, approvals wait there), each answered by one `tool`
//! message under its id, malformed arguments answered `invalid`, and the calls a limit or a
//! cancel left unrun answered too. Invariant: after `route_all` every call of the response has
//! exactly one answer in the conversation.

use serde_json::Value;

use crate::agent::event::{AgentEvent, EventSink, StopReason};
use crate::agent::model::{ChatMessage, ChatModel, ToolCallRequest};
use crate::agent::runtime::{AgentRuntime, Run};
use crate::tools::envelope::ToolResultEnvelope;
use crate::tools::executor::{OutputStream, OutputTap};
use crate::tools::router::ToolCall;

/// Turns command output into `output_chunk` events.
pub(crate) struct EventTap(pub(crate) EventSink);

impl OutputTap for EventTap {
    fn chunk(&self, call_id: &str, stream: OutputStream, bytes: &[u8]) {
        self.0.send(AgentEvent::OutputChunk {
            call_id: call_id.to_string(),
            stream: match stream {
                OutputStream::Stdout => "stdout",
                OutputStream::Stderr => "stderr",
            },
            text: String::from_utf8_lossy(bytes).into_owned(),
        });
    }
}

impl<M: ChatModel + 'static> AgentRuntime<M> {
    /// Route the response's calls in order. `Some` ends the request.
    pub(crate) async fn route_all(
        &mut self,
        run: &mut Run<'_>,
        calls: &[ToolCallRequest],
        truncated: bool,
    ) -> Option<(StopReason, Option<String>)> {
        let events = run.task.events().clone();
        let mut stop: Option<(StopReason, Option<String>)> = None;
        for call in calls {
            if stop.is_none() && run.task.is_cancelled() {
                stop = Some((StopReason::Cancelled, None));
            }
            if stop.is_none() && run.calls >= self.options().max_tool_calls {
                stop = Some((
                    StopReason::ToolCallLimit,
                    Some(format!(
                        "the request reached its limit of {} tool calls (max_tool_calls in the \
                         config); ask again to continue",
                        self.options().max_tool_calls
                    )),
                ));
            }
            if let Some((reason, message)) = &stop {
                // Every call is answered, so the conversation stays valid for a next request.
                let why = match reason {
                    StopReason::Cancelled => {
                        "[cancelled] the task was cancelled before this call ran".to_string()
                    }
                    _ => format!(
                        "[denied] not run: {}",
                        message.as_deref().unwrap_or("the request ended")
                    ),
                };
                self.push(
                    &events,
                    ChatMessage::Tool {
                        tool_call_id: call.id.clone(),
                        content: why,
                    },
                );
                continue;
            }
            match self.route_one(run, call, truncated).await {
                Ok(env) => {
                    run.calls += 1;
                    if env.turn_stopped {
                        stop = Some((StopReason::RepeatedRefusal, env.reason.clone()));
                    }
                }
                Err(message) => stop = Some((StopReason::Error, Some(message))),
            }
        }
        // A cancel during the last call ends the request as cancelled, unless it broke.
        match stop {
            Some(s) if s.0 == StopReason::Error => Some(s),
            _ if run.task.is_cancelled() => Some((StopReason::Cancelled, None)),
            other => other,
        }
    }

    /// One call through the router on a blocking thread (commands block; approvals wait).
    async fn route_one(
        &mut self,
        run: &mut Run<'_>,
        call: &ToolCallRequest,
        truncated: bool,
    ) -> Result<ToolResultEnvelope, String> {
        let events = run.task.events().clone();
        let (arguments, parse_error) = parse_arguments(&call.arguments);
        self.emit(
            &events,
            AgentEvent::ToolCallStarted {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: arguments.clone(),
            },
        );
        let mut turn = run
            .turn
            .take()
            .ok_or_else(|| "the turn was lost after an earlier failure".to_string())?;
        // A narrowing the person made since the last call (mode toward SAFE, network off)
        // applies from this call on.
        let switches = run.task.switches();
        turn.mode = switches.mode;
        turn.network = switches.network;
        let router = self.router().clone();
        let routed = ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments,
        };
        let joined = tokio::task::spawn_blocking(move || {
            let r = router.call(&mut turn, &routed);
            (turn, r)
        })
        .await;
        let (turn, result) = joined.map_err(|e| format!("a tool call failed inside Spear: {e}"))?;
        run.turn = Some(turn);
        let mut env = match result {
            Ok(env) => env,
            Err(e) => {
                let message =
                    format!("the tool call could not be recorded, so the task stops: {e}");
                self.push(
                    &events,
                    ChatMessage::Tool {
                        tool_call_id: call.id.clone(),
                        content: format!("[failed] {message}"),
                    },
                );
                return Err(message);
            }
        };
        if let Some(e) = parse_error {
            let mut why = format!(
                "invalid arguments: they are not one JSON object ({e}); call `{}` again with \
                 arguments that match its schema",
                call.name
            );
            if truncated {
                why.push_str(&format!(
                    ". Your response was truncated at the limit of {} tokens, which cut these \
                     arguments: send smaller calls (split a large write into patches)",
                    self.options().response_max_tokens
                ));
            }
            env.reason = Some(why);
        }
        self.emit(
            &events,
            AgentEvent::ToolCallFinished {
                call_id: call.id.clone(),
                envelope: Box::new(env.clone()),
            },
        );
        self.push(
            &events,
            ChatMessage::Tool {
                tool_call_id: call.id.clone(),
                content: env.model_text(),
            },
        );
        Ok(env)
    }
}

/// The arguments as the router gets them, and why they are malformed when they are. Text that
/// is not JSON goes on as a JSON string, so the router's schema gate refuses it (and audits and
/// counts the refusal) like any other invalid call; empty text is `{}`; an object sent
/// JSON-encoded twice is read once more.
pub fn parse_arguments(text: &str) -> (Value, Option<String>) {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return (Value::Object(Default::default()), None);
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(o)) => (Value::Object(o), None),
        Ok(Value::String(inner)) => match serde_json::from_str::<Value>(&inner) {
            Ok(Value::Object(o)) => (Value::Object(o), None),
            _ => (
                Value::String(inner),
                Some("a JSON string, not an object".into()),
            ),
        },
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                _ => "a number",
            };
            (other, Some(format!("{kind}, not an object")))
        }
        Err(e) => (
            Value::String(text.to_string()),
            Some(format!("not valid JSON: {e}")),
        ),
    }
}
