//! The context budget: a cheap token estimate of a request, and the two ways the conversation is
//! made to fit the provider's window: older tool outputs replaced by `result://` references
//! (the whole output stays readable with `read_file`), then the earlier conversation replaced by
//! a summary. Invariant: neither step ever separates an assistant message from the `tool`
//! messages that answer its calls, so every request stays one a server accepts.

use crate::agent::model::{ChatMessage, ToolDefinition};

/// Estimated tokens of `messages` and `tools`: a byte count divided by three (conservative for
/// English and code, whose tokens average three to four bytes) plus a few tokens per message.
pub fn estimate_tokens(messages: &[ChatMessage], tools: &[ToolDefinition]) -> u64 {
    let msg: usize = messages
        .iter()
        .map(|m| {
            8 + match m {
                ChatMessage::System { content } | ChatMessage::User { content } => content.len(),
                ChatMessage::Assistant {
                    content,
                    tool_calls,
                    ..
                } => {
                    content.as_deref().map_or(0, str::len)
                        + tool_calls
                            .iter()
                            .map(|c| c.id.len() + c.name.len() + c.arguments.len() + 16)
                            .sum::<usize>()
                }
                ChatMessage::Tool {
                    tool_call_id,
                    content,
                } => tool_call_id.len() + content.len(),
            }
        })
        .sum();
    let defs: usize = tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
        .sum();
    ((msg + defs) / 3) as u64
}

/// The tokens a request may use in a window of `window`: what is left once the response's own
/// cap is set aside (at least half the window).
pub fn request_budget(window: u64, response_max_tokens: u32) -> u64 {
    window
        .saturating_sub(u64::from(response_max_tokens))
        .max(window / 2)
}

/// Tool outputs longer than this are worth replacing by a reference.
pub const ELIDE_MIN_BYTES: usize = 512;

/// The index where the latest exchange begins: the last assistant message with tool calls
/// (whose answers must stay whole), or the end.
pub fn latest_exchange(messages: &[ChatMessage]) -> usize {
    messages
        .iter()
        .rposition(
            |m| matches!(m, ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
        )
        .unwrap_or(messages.len())
}

/// Replace every tool output before `keep_from` that is longer than `ELIDE_MIN_BYTES` by a
/// reference. `store` keeps the text and returns its `result://` URI (`None`: keep the output).
/// Returns how many were replaced.
pub fn elide_tool_outputs(
    messages: &mut [ChatMessage],
    keep_from: usize,
    mut store: impl FnMut(&str) -> Option<String>,
) -> usize {
    let mut n = 0;
    for m in messages.iter_mut().take(keep_from) {
        if let ChatMessage::Tool { content, .. } = m
            && content.len() > ELIDE_MIN_BYTES
            && !content.starts_with(ELIDED)
            && let Some(uri) = store(content)
        {
            let head: String = content
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(160)
                .collect();
            *content = format!(
                "{ELIDED} {} bytes, kept whole as {uri}; read it with read_file \
                 {{\"path\": \"{uri}\"}} if you need it again. It began: {head}",
                content.len()
            );
            n += 1;
        }
    }
    n
}

/// The marker an elided output starts with.
pub const ELIDED: &str = "[output elided to fit the context window:";

/// Where to split for a summary: the start of the shortest tail (at a user or assistant
/// message, never inside a call's answers) that keeps the latest exchange, or 0 when there is
/// nothing before it to summarise.
pub fn summary_split(messages: &[ChatMessage]) -> usize {
    let latest_user = messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::User { .. }))
        .unwrap_or(0);
    let exchange = latest_exchange(messages);
    // Keep the current request whole when it is not the only thing there; else keep from
    // the latest exchange.
    if latest_user > 0 {
        latest_user
    } else if exchange < messages.len() && exchange > 0 {
        exchange
    } else {
        0
    }
}

/// The conversation as text for the summariser, at most `max_bytes` (the middle cut out).
pub fn transcript(messages: &[ChatMessage], max_bytes: usize) -> String {
    let mut out = String::new();
    for m in messages {
        match m {
            ChatMessage::System { .. } => {}
            ChatMessage::User { content } => out.push_str(&format!("USER:\n{content}\n\n")),
            ChatMessage::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if let Some(c) = content {
                    out.push_str(&format!("ASSISTANT:\n{c}\n"));
                }
                for c in tool_calls {
                    out.push_str(&format!("ASSISTANT CALLED {} {}\n", c.name, c.arguments));
                }
                out.push('\n');
            }
            ChatMessage::Tool { content, .. } => {
                out.push_str(&format!("TOOL RESULT:\n{content}\n\n"));
            }
        }
    }
    if out.len() <= max_bytes {
        return out;
    }
    let half = max_bytes / 2;
    let mut head_end = half;
    while !out.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = out.len() - half;
    while !out.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[… {} bytes of the conversation left out …]\n{}",
        &out[..head_end],
        tail_start - head_end,
        &out[tail_start..]
    )
}

/// Whether a server's error says the request is larger than the model's context window (the
/// wordings of OpenAI, vLLM, llama.cpp, Ollama, OpenRouter and Anthropic-style gateways).
pub fn is_context_overflow(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "context window",
        "exceeds the available context",
        "prompt is too long",
        "too many tokens",
        "input is too long",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// What the summariser is asked.
pub const SUMMARY_PROMPT: &str = "You summarise a coding assistant's conversation so the work \
can continue in a fresh context. Write a concise summary: the user's requests and constraints, \
what was done (files read and changed, commands run and their outcomes), decisions taken and \
why, refusals met, and what remains to be done. Keep file paths, identifiers, result:// \
references and error messages exact. Do not invent anything.";

/// The user message that stands for the summarised part.
pub fn summary_message(summary: &str) -> ChatMessage {
    ChatMessage::User {
        content: format!(
            "[Spear: the earlier conversation was summarised to fit the context window]\n\n{}",
            summary.trim()
        ),
    }
}
