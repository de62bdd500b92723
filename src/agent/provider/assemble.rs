//! Folds parsed chunks into one `ModelResponse`, by the rules of `shared/data/sse/README.md`.
//! Invariant: every tool call that leaves here has a non-empty id unique to it (invented when
//! the server sent none) and a name; arguments are the concatenated fragments (an object sent
//! whole is serialised), `{}` when none came.

use std::fmt::Write as _;

use super::wire::{WireChoice, WireChunk, WireToolCall, WireUsage};
use crate::agent::model::{FinishReason, ModelResponse, StreamDelta, ToolCallRequest, Usage};

/// The finish reason as this client names it; unknown values are kept.
pub fn finish_reason_from_wire(reason: Option<&str>) -> FinishReason {
    match reason {
        None => FinishReason::Missing,
        Some("stop") => FinishReason::Stop,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}

/// A call being assembled.
#[derive(Debug, Default)]
struct CallBuilder {
    /// The `index` the server gave it, if any.
    wire_index: Option<u64>,
    /// The first non-empty id the server sent.
    server_id: Option<String>,
    /// The id announced in `ToolCallStarted` when the server had sent none by then.
    invented_id: Option<String>,
    name: Option<String>,
    arguments: String,
    /// How much of `arguments` was already reported (fragments that came before the name).
    reported: usize,
}

impl CallBuilder {
    fn id(&self) -> Option<&str> {
        self.server_id.as_deref().or(self.invented_id.as_deref())
    }
}

/// The state of one response while it streams in.
#[derive(Debug, Default)]
pub struct Assembler {
    content: String,
    reasoning: String,
    calls: Vec<CallBuilder>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fold one chunk in, reporting what it adds.
    pub fn push(&mut self, chunk: &WireChunk, on_delta: &mut dyn FnMut(StreamDelta)) {
        for choice in chunk.choices.iter().flatten() {
            if choice.index.unwrap_or(0) == 0 {
                self.push_choice(choice, on_delta);
            }
        }
        if let Some(usage) = chunk.usage {
            let usage = usage_from_wire(usage);
            self.usage = Some(usage);
            on_delta(StreamDelta::Usage(usage));
        }
    }

    fn push_choice(&mut self, choice: &WireChoice, on_delta: &mut dyn FnMut(StreamDelta)) {
        if let Some(delta) = choice.delta.as_ref().or(choice.message.as_ref()) {
            if let Some(reasoning) = delta.reasoning_text() {
                self.reasoning.push_str(&reasoning);
                on_delta(StreamDelta::Reasoning(reasoning));
            }
            if let Some(text) = delta.content.as_ref().and_then(|c| c.text())
                && !text.is_empty()
            {
                self.content.push_str(&text);
                on_delta(StreamDelta::Text(text.into_owned()));
            }
            for fragment in delta.tool_calls.iter().flatten() {
                self.push_fragment(fragment, on_delta);
            }
        }
        if let Some(reason) = &choice.finish_reason {
            self.finish_reason = Some(reason.clone());
        }
    }

    /// Rule 4: find the call a fragment belongs to, starting a new one when it begins one.
    fn route(&mut self, fragment: &WireToolCall) -> usize {
        let id = fragment.id.as_deref().filter(|id| !id.is_empty());
        let named = fragment
            .function
            .as_ref()
            .and_then(|f| f.name.as_deref())
            .is_some_and(|n| !n.is_empty());
        let existing = match fragment.index {
            Some(index) => self
                .calls
                .iter()
                .rposition(|c| c.wire_index == Some(index))
                .filter(|&at| match (id, &self.calls[at].server_id) {
                    (Some(new), Some(old)) => new == old,
                    _ => true,
                }),
            None => match id {
                Some(id) => self
                    .calls
                    .iter()
                    .position(|c| c.server_id.as_deref() == Some(id)),
                None if named => None,
                None => self.calls.len().checked_sub(1),
            },
        };
        existing.unwrap_or_else(|| {
            self.calls.push(CallBuilder {
                wire_index: fragment.index,
                ..CallBuilder::default()
            });
            self.calls.len() - 1
        })
    }

    /// Rule 5: merge a fragment into its call.
    fn push_fragment(&mut self, fragment: &WireToolCall, on_delta: &mut dyn FnMut(StreamDelta)) {
        let at = self.route(fragment);
        let call = &mut self.calls[at];
        if call.server_id.is_none()
            && call.invented_id.is_none()
            && let Some(id) = fragment.id.as_deref().filter(|id| !id.is_empty())
        {
            call.server_id = Some(id.to_string());
        }
        let function = fragment.function.as_ref();
        match function.and_then(|f| f.arguments.as_ref()) {
            Some(serde_json::Value::String(text)) => call.arguments.push_str(text),
            Some(serde_json::Value::Null) | None => {}
            Some(object) => {
                let _ = write!(call.arguments, "{object}");
            }
        }
        if call.name.is_none()
            && let Some(name) = function
                .and_then(|f| f.name.as_deref())
                .filter(|n| !n.is_empty())
        {
            call.name = Some(name.to_string());
            if call.server_id.is_none() {
                call.invented_id = Some(invent_call_id());
            }
            on_delta(StreamDelta::ToolCallStarted {
                index: at,
                id: call.id().unwrap_or_default().to_string(),
                name: name.to_string(),
            });
        }
        if call.name.is_some() && call.reported < call.arguments.len() {
            on_delta(StreamDelta::ToolCallArguments {
                index: at,
                fragment: call.arguments[call.reported..].to_string(),
            });
            call.reported = call.arguments.len();
        }
    }

    /// Whether any text, reasoning or tool call arrived (for the "stream broke" diagnosis).
    pub fn is_empty(&self) -> bool {
        self.content.is_empty() && self.reasoning.is_empty() && self.calls.is_empty()
    }

    /// The assembled response. A call that never got a name is kept with an empty name, so
    /// the loop answers it `invalid` instead of silently dropping what the model asked for.
    pub fn finish(self) -> ModelResponse {
        let tool_calls = self
            .calls
            .into_iter()
            .map(|call| ToolCallRequest {
                id: call
                    .server_id
                    .or(call.invented_id)
                    .unwrap_or_else(invent_call_id),
                name: call.name.unwrap_or_default(),
                arguments: if call.arguments.trim().is_empty() {
                    "{}".to_string()
                } else {
                    call.arguments
                },
            })
            .collect();
        ModelResponse {
            content: self.content,
            reasoning: self.reasoning,
            tool_calls,
            finish_reason: finish_reason_from_wire(self.finish_reason.as_deref()),
            usage: self.usage,
        }
    }
}

fn usage_from_wire(usage: WireUsage) -> Usage {
    Usage {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        total_tokens: usage.total_tokens,
    }
}

/// A call id no server sent and no other call of this process or an earlier one has: the
/// process's random hash seed plus a counter (`call_spear_<hex>_<n>`).
pub fn invent_call_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("call_spear_{:012x}_{n}", super::retry::random_u64() >> 16)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn push(assembler: &mut Assembler, chunk: &str) -> Vec<StreamDelta> {
        let mut deltas = Vec::new();
        let chunk: WireChunk = serde_json::from_str(chunk).unwrap();
        assembler.push(&chunk, &mut |d| deltas.push(d));
        deltas
    }

    #[test]
    fn every_finish_reason_is_named() {
        let cases = [
            (None, FinishReason::Missing),
            (Some("stop"), FinishReason::Stop),
            (Some("tool_calls"), FinishReason::ToolCalls),
            (Some("function_call"), FinishReason::ToolCalls),
            (Some("length"), FinishReason::Length),
            (Some("content_filter"), FinishReason::ContentFilter),
            (Some("end_turn"), FinishReason::Other("end_turn".into())),
        ];
        for (wire, expected) in cases {
            assert_eq!(finish_reason_from_wire(wire), expected, "{wire:?}");
        }
    }

    #[test]
    fn the_last_finish_reason_wins_and_null_does_not_erase_it() {
        let mut assembler = Assembler::new();
        push(
            &mut assembler,
            r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
        );
        push(
            &mut assembler,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        );
        push(
            &mut assembler,
            r#"{"choices":[{"delta":{},"finish_reason":null}],"usage":{"total_tokens":3}}"#,
        );
        let response = assembler.finish();
        assert_eq!(response.finish_reason, FinishReason::Stop);
        assert_eq!(response.usage.unwrap().total_tokens, Some(3));
    }

    #[test]
    fn a_call_is_announced_once_with_the_fragments_that_came_before_its_name() {
        let mut assembler = Assembler::new();
        let first = push(
            &mut assembler,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"arguments":"{\"a\""}}]}}]}"#,
        );
        assert_eq!(first, vec![], "nothing to announce before the name");
        let second = push(
            &mut assembler,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"t","arguments":":1}"}}]}}]}"#,
        );
        assert_eq!(
            second,
            vec![
                StreamDelta::ToolCallStarted {
                    index: 0,
                    id: "c".into(),
                    name: "t".into()
                },
                StreamDelta::ToolCallArguments {
                    index: 0,
                    fragment: "{\"a\":1}".into()
                },
            ]
        );
        let response = assembler.finish();
        assert_eq!(response.tool_calls[0].arguments, "{\"a\":1}");
    }

    #[test]
    fn invented_ids_are_distinct() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| invent_call_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|id| id.starts_with("call_spear_")));
    }
}
