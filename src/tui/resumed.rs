//! A resumed session's conversation as cells: what was said, the reasoning (folded), and each
//! tool call with the result the model was given, rebuilt from the transcript. The transcript
//! keeps what the model saw (status, exit code, preview), not the live output, so a resumed
//! tool cell says it comes from the transcript and shows that text.

use std::time::Instant;

use serde_json::Value;

use crate::agent::model::ChatMessage;
use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::tools::envelope::ToolResultEnvelope;
use crate::tui::cells::{CellKind, Cells, ToolCell};

/// The result a `tool` message told the model, read back: `[status] reason` and `[exit code N]`
/// lines first (as `ToolResultEnvelope::model_text` writes them), then the output.
pub fn envelope_from_text(call_id: &str, tool: &str, text: &str) -> ToolResultEnvelope {
    let mut result = ToolResult::ok("");
    let mut rest = text;
    if let Some((first, after)) = rest.split_once('\n')
        && let Some(status) = ToolStatus::ALL[1..]
            .iter()
            .find(|s| first.starts_with(&format!("[{}] ", s.as_str())))
    {
        result.status = *status;
        let reason = first[status.as_str().len() + 3..].trim();
        result.reason = (!reason.is_empty()).then(|| reason.to_string());
        rest = after;
    }
    if let Some((first, after)) = rest.split_once('\n')
        && let Some(code) = first
            .strip_prefix("[exit code ")
            .and_then(|c| c.strip_suffix(']'))
            .and_then(|c| c.parse().ok())
    {
        result.exit_code = Some(code);
        rest = after;
    }
    result.stdout = rest.to_string();
    ToolResultEnvelope::build(call_id, tool, result, None)
}

/// The cells of a transcript's messages.
pub fn cells(messages: &[ChatMessage], now: Instant) -> Cells {
    let mut cells = Cells::default();
    for m in messages {
        match m {
            ChatMessage::User { content } => {
                cells.push(CellKind::User(content.clone()));
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
                reasoning,
            } => {
                if let Some(r) = reasoning.as_ref().filter(|r| !r.trim().is_empty()) {
                    let i = cells.push(CellKind::Reasoning(r.clone()));
                    cells.items[i].folded = true;
                }
                if let Some(c) = content.as_ref().filter(|c| !c.trim().is_empty()) {
                    cells.push(CellKind::Assistant {
                        text: c.clone(),
                        streaming: false,
                    });
                }
                for call in tool_calls {
                    let args = serde_json::from_str(&call.arguments)
                        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                    let mut t = ToolCell::new(&call.id, &call.name, args, now);
                    t.resumed = true;
                    cells.push(CellKind::Tool(Box::new(t)));
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => {
                if let Some((t, v)) = cells.tool_mut(tool_call_id) {
                    t.envelope = Some(Box::new(envelope_from_text(tool_call_id, &t.name, content)));
                    *v = v.wrapping_add(1);
                }
            }
            ChatMessage::System { .. } => {}
        }
    }
    // A call the transcript has no result for was stopped before it ended.
    for c in &mut cells.items {
        if let CellKind::Tool(t) = &mut c.kind
            && t.envelope.is_none()
        {
            let mut r = ToolResult::ok("");
            r.status = ToolStatus::Cancelled;
            r.reason = Some("no result in the transcript (the session ended first)".into());
            t.envelope = Some(Box::new(ToolResultEnvelope::build(
                &t.call_id, &t.name, r, None,
            )));
        }
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::model::ToolCallRequest;

    #[test]
    fn statuses_exit_codes_and_output_are_read_back() {
        let e = envelope_from_text("c", "terminal", "[exit code 2]\nerror: x\n");
        assert_eq!((e.status, e.exit_code), (ToolStatus::Ok, Some(2)));
        assert_eq!(e.stdout, "error: x\n");
        assert!(!e.succeeded());
        let e = envelope_from_text("c", "terminal", "[denied] the person said no\n");
        assert_eq!(e.status, ToolStatus::Denied);
        assert_eq!(e.reason.as_deref(), Some("the person said no"));
        let e = envelope_from_text("c", "read_file", "[exitcode 1]\nplain text\n");
        assert_eq!((e.status, e.exit_code), (ToolStatus::Ok, None));
        assert_eq!(e.stdout, "[exitcode 1]\nplain text\n");
    }

    #[test]
    fn a_transcript_becomes_cells_with_its_tool_calls() {
        let messages = vec![
            ChatMessage::User {
                content: "list".into(),
            },
            ChatMessage::Assistant {
                content: Some("Listing.".into()),
                tool_calls: vec![
                    ToolCallRequest {
                        id: "c1".into(),
                        name: "terminal".into(),
                        arguments: "{\"command\":\"ls\"}".into(),
                    },
                    ToolCallRequest {
                        id: "c2".into(),
                        name: "terminal".into(),
                        arguments: "not json".into(),
                    },
                ],
                reasoning: Some("think".into()),
            },
            ChatMessage::Tool {
                tool_call_id: "c1".into(),
                content: "[exit code 0]\na\nb\n".into(),
            },
        ];
        let cells = cells(&messages, Instant::now());
        let kinds: Vec<&str> = cells
            .items
            .iter()
            .map(|c| match &c.kind {
                CellKind::User(_) => "user",
                CellKind::Reasoning(_) => "reasoning",
                CellKind::Assistant { .. } => "assistant",
                CellKind::Tool(_) => "tool",
                CellKind::Notice { .. } => "notice",
            })
            .collect();
        assert_eq!(kinds, ["user", "reasoning", "assistant", "tool", "tool"]);
        let c1 = cells.tool("c1").unwrap();
        assert!(c1.resumed && c1.envelope.as_ref().unwrap().succeeded());
        assert_eq!(c1.target(), "ls");
        let c2 = cells.tool("c2").unwrap();
        assert_eq!(c2.envelope.as_ref().unwrap().status, ToolStatus::Cancelled);
    }
}
