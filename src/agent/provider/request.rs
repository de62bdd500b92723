//! The JSON body of a Chat Completions request, built from Spear's conversation. Invariant:
//! reasoning is never sent back, every assistant tool call goes out as `type: function` with
//! its id, and every tool result names the call it answers.

use serde_json::{Value, json};

use crate::agent::model::{ChatMessage, ChatRequest, ToolDefinition};

/// How this server wants to be asked; adjusted when a server refuses a part of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// `stream: true` (false once the server refused streaming).
    pub stream: bool,
    /// `stream_options: {include_usage: true}` with a streamed request.
    pub stream_usage: bool,
    /// Name the cap `max_completion_tokens` (OpenAI's reasoning models refuse `max_tokens`).
    pub max_completion_tokens: bool,
}

impl Default for Dialect {
    fn default() -> Self {
        Self {
            stream: true,
            stream_usage: true,
            max_completion_tokens: false,
        }
    }
}

/// The request body.
pub fn build_body(model: &str, request: &ChatRequest, max_tokens: u32, dialect: Dialect) -> Value {
    let mut body = serde_json::Map::new();
    body.insert("model".into(), Value::from(model));
    body.insert(
        "messages".into(),
        Value::Array(request.messages.iter().map(message).collect()),
    );
    body.insert("stream".into(), Value::Bool(dialect.stream));
    if dialect.stream && dialect.stream_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool).collect()),
        );
        body.insert("tool_choice".into(), Value::from("auto"));
    }
    let cap_name = if dialect.max_completion_tokens {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body.insert(cap_name.into(), Value::from(max_tokens));
    Value::Object(body)
}

fn message(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::System { content } => json!({"role": "system", "content": content}),
        ChatMessage::User { content } => json!({"role": "user", "content": content}),
        ChatMessage::Assistant {
            content,
            tool_calls,
            reasoning: _,
        } => {
            let mut out = serde_json::Map::new();
            out.insert("role".into(), Value::from("assistant"));
            // Several servers refuse a null content on a message without tool calls.
            let content = match content {
                Some(text) => Value::from(text.as_str()),
                None if tool_calls.is_empty() => Value::from(""),
                None => Value::Null,
            };
            out.insert("content".into(), content);
            if !tool_calls.is_empty() {
                let calls = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        })
                    })
                    .collect();
                out.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(out)
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

fn tool(tool: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::model::ToolCallRequest;

    fn conversation() -> ChatRequest {
        ChatRequest {
            messages: vec![
                ChatMessage::System {
                    content: "be brief".into(),
                },
                ChatMessage::User {
                    content: "list".into(),
                },
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![ToolCallRequest {
                        id: "call_1".into(),
                        name: "terminal".into(),
                        arguments: r#"{"command":"ls"}"#.into(),
                    }],
                    reasoning: Some("I should look".into()),
                },
                ChatMessage::Tool {
                    tool_call_id: "call_1".into(),
                    content: "a.rs".into(),
                },
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![],
                    reasoning: None,
                },
            ],
            tools: vec![ToolDefinition {
                name: "terminal".into(),
                description: "run".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: 100,
        }
    }

    #[test]
    fn whole_body_with_tools() {
        let body = build_body("m", &conversation(), 100, Dialect::default());
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "list"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "terminal", "arguments": "{\"command\":\"ls\"}"}}]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "a.rs"},
                    {"role": "assistant", "content": ""},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "tools": [{"type": "function", "function":
                    {"name": "terminal", "description": "run", "parameters": {"type": "object"}}}],
                "tool_choice": "auto",
                "max_tokens": 100,
            })
        );
        assert!(!body.to_string().contains("I should look"));
    }

    #[test]
    fn adjusted_dialect_and_no_tools() {
        let mut request = conversation();
        request.tools.clear();
        request.messages.truncate(2);
        let dialect = Dialect {
            stream: false,
            stream_usage: true,
            max_completion_tokens: true,
        };
        assert_eq!(
            build_body("m", &request, 7, dialect),
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "list"},
                ],
                "stream": false,
                "max_completion_tokens": 7,
            })
        );
    }
}
