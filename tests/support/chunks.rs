//! Builders of Chat Completions bodies for scripted replies: streamed chunks in the shape
//! OpenAI sends them, an SSE body around them, and the non-streamed `chat.completion`.
//! Invariant: what these build is valid wire format; oddities are written out by the tests
//! that exercise them, so a reader sees the bytes.

#![allow(dead_code)] // each test binary uses a different part

use serde_json::{Value, json};

use super::mock_server::Reply;

/// One `chat.completion.chunk` with choice 0 carrying `delta`.
pub fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

pub fn role() -> Value {
    chunk(json!({"role": "assistant", "content": ""}), None)
}

pub fn text(content: &str) -> Value {
    chunk(json!({"content": content}), None)
}

/// The first fragment of a call: index, id and name, empty arguments.
pub fn call_start(index: u64, id: &str, name: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                               "function": {"name": name, "arguments": ""}}]}),
        None,
    )
}

/// A later fragment: index and a piece of the arguments only.
pub fn call_args(index: u64, fragment: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
        None,
    )
}

pub fn finish(reason: &str) -> Value {
    chunk(json!({}), Some(reason))
}

/// The final usage chunk, `choices: []`.
pub fn usage(prompt: u64, completion: u64) -> Value {
    json!({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "model": "mock-model",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    })
}

/// `data: <chunk>\n\n` for each chunk, then `data: [DONE]\n\n`.
pub fn sse_body(chunks: &[Value]) -> String {
    let mut body = sse_events(chunks);
    body.push_str("data: [DONE]\n\n");
    body
}

/// `data: <chunk>\n\n` for each chunk, no `[DONE]`.
pub fn sse_events(chunks: &[Value]) -> String {
    chunks.iter().map(|c| format!("data: {c}\n\n")).collect()
}

/// A streamed answer that only says `content`, in pieces of a few characters.
pub fn text_answer(content: &str) -> Reply {
    let mut chunks = vec![role()];
    let chars: Vec<char> = content.chars().collect();
    chunks.extend(
        chars
            .chunks(5)
            .map(|piece| text(&piece.iter().collect::<String>())),
    );
    chunks.push(finish("stop"));
    Reply::sse(sse_body(&chunks))
}

/// A streamed answer that calls these tools `(id, name, arguments JSON)` one after the other,
/// the arguments in fragments of 7 bytes as OpenAI sends them.
pub fn tool_calls_answer(calls: &[(&str, &str, Value)]) -> Reply {
    let mut chunks = vec![role()];
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let index = index as u64;
        chunks.push(call_start(index, id, name));
        for piece in fragments(&arguments.to_string(), 7) {
            chunks.push(call_args(index, &piece));
        }
    }
    chunks.push(finish("tool_calls"));
    Reply::sse(sse_body(&chunks))
}

/// `text` cut into pieces of at most `size` bytes, never inside a character.
pub fn fragments(text: &str, size: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if current.len() + c.len_utf8() > size && !current.is_empty() {
            pieces.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// A whole `chat.completion` (the non-streamed answer).
pub fn completion(content: Option<&str>, calls: &[(&str, &str, Value)], finish: &str) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({"id": id, "type": "function",
                   "function": {"name": name, "arguments": arguments.to_string()}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    json!({
        "id": "chatcmpl-mock", "object": "chat.completion", "model": "mock-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    })
}
