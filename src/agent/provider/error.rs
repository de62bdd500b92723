//! What can go wrong talking to a model server, each said so that the person knows what to fix.
//! Invariant: no error text ever holds the API key (server text and transport errors pass
//! through [`Redactor`] first), and every error that depends on the configuration names the
//! base URL and the model.

use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use thiserror::Error;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ProviderError {
    #[error("the provider settings are not usable: {0}")]
    Settings(String),

    #[error(
        "cannot reach the model server at {base_url} ({detail}; tried {attempts} time(s)). \
         Check the base URL and that the server is running"
    )]
    Unreachable {
        base_url: String,
        attempts: u32,
        detail: String,
    },

    #[error(
        "{base_url} refused {what} for model `{model}` (HTTP {status}: {message}). \
         Set {key_env} to a valid API key for this server",
        what = if *key_sent { "the API key" } else { "a request without an API key" }
    )]
    Unauthorized {
        status: u16,
        base_url: String,
        model: String,
        key_env: String,
        key_sent: bool,
        message: String,
    },

    #[error(
        "HTTP 404 from {base_url}/chat/completions for model `{model}`: {hint} (server said: {message})"
    )]
    NotFound {
        base_url: String,
        model: String,
        hint: String,
        message: String,
    },

    #[error(
        "model `{model}` at {base_url} does not support tool calls, which Spear needs \
         (server said: {message}). Choose a model that supports tools (function calling), \
         or enable tool calling on the server"
    )]
    ToolsUnsupported {
        base_url: String,
        model: String,
        message: String,
    },

    #[error("{base_url} rejected the request for model `{model}` (HTTP {status}): {message}")]
    Rejected {
        status: u16,
        base_url: String,
        model: String,
        message: String,
    },

    #[error(
        "{base_url} kept failing (HTTP {status} on each of {attempts} attempts; last: {message}). \
         Try again later"
    )]
    GaveUp {
        status: u16,
        base_url: String,
        attempts: u32,
        message: String,
    },

    #[error("the response from {base_url} broke off mid-stream: {detail}")]
    StreamBroken { base_url: String, detail: String },

    #[error("the server reported an error in the middle of its answer: {message}")]
    InStream {
        message: String,
        /// The server's error object as sent.
        error: Value,
    },

    #[error("the server sent a chunk that is not JSON: {excerpt}")]
    BadChunk { excerpt: String },

    #[error("the server's answer is larger than {limit} bytes; it was cut off")]
    TooLarge { limit: usize },
}

/// The message a server put in an error body or error object: `error.message`, `error` as a
/// string, `message`, `detail`, or the text itself (bounded).
pub fn server_message(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => message_of(&value),
        Err(_) => excerpt(String::from_utf8_lossy(body).trim()),
    }
}

/// The message of a JSON error value (a whole body, or the object under `error`).
pub fn message_of(value: &Value) -> String {
    let found = [
        value.pointer("/error/message"),
        value.get("error").filter(|e| e.is_string()),
        value.get("message"),
        value.get("detail"),
    ]
    .into_iter()
    .flatten()
    .find(|v| !v.is_null());
    match found {
        Some(Value::String(text)) => excerpt(text),
        Some(other) => excerpt(&other.to_string()),
        None => match value {
            Value::String(text) => excerpt(text),
            other => excerpt(&other.to_string()),
        },
    }
}

/// At most 600 characters of a server's text.
pub fn excerpt(text: &str) -> String {
    const LIMIT: usize = 600;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Removes the API key from text that came from outside (a server may echo the header back).
#[derive(Default)]
pub struct Redactor {
    key: Option<SecretString>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor")
    }
}

impl Redactor {
    pub fn new(key: Option<SecretString>) -> Self {
        Self { key }
    }

    pub fn clean(&self, text: String) -> String {
        match &self.key {
            Some(key) if !key.expose_secret().is_empty() => {
                let key = key.expose_secret();
                if text.contains(key) {
                    text.replace(key, "[REDACTED]")
                } else {
                    text
                }
            }
            _ => text,
        }
    }
}

/// What a 4xx body says about why the request was refused, lower-cased text in, the
/// recognised cause out. The phrases are the ones real servers send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The model or server cannot take `tools` (Ollama, vLLM without auto tool choice,
    /// llama.cpp without `--jinja`).
    ToolsUnsupported,
    /// The server refuses `stream: true`.
    StreamUnsupported,
    /// The server refuses `stream_options` (Azure AI model inference, some proxies).
    StreamOptionsUnsupported,
    /// The model wants `max_completion_tokens` instead of `max_tokens` (OpenAI reasoning models).
    MaxCompletionTokens,
    Other,
}

const TOOLS_UNSUPPORTED: &[&str] = &[
    "does not support tools",
    "does not support tool",
    "tools are not supported",
    "tools is not supported",
    "tool calls are not supported",
    "tool calling is not supported",
    "tool use is not supported",
    "does not support function calling",
    "function calling is not supported",
    "enable-auto-tool-choice",
    "tools param requires --jinja",
];

const REFUSED: &[&str] = &[
    "not supported",
    "unsupported",
    "not allowed",
    "not permitted",
    "does not support",
    "unknown",
    "unrecognized",
    "extra",
    "invalid",
];

pub fn classify_refusal(message: &str) -> Refusal {
    let text = message.to_lowercase();
    if TOOLS_UNSUPPORTED.iter().any(|p| text.contains(p)) {
        return Refusal::ToolsUnsupported;
    }
    if text.contains("stream_options") {
        return Refusal::StreamOptionsUnsupported;
    }
    if text.contains("max_completion_tokens") && text.contains("max_tokens") {
        return Refusal::MaxCompletionTokens;
    }
    let mentions_stream = text
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|word| word == "stream" || word == "streaming");
    if mentions_stream && REFUSED.iter().any(|p| text.contains(p)) {
        return Refusal::StreamUnsupported;
    }
    Refusal::Other
}

/// What to suggest for a 404: a model the server does not know, or a base URL without its
/// version path.
pub fn not_found_hint(base_url: &str, model: &str, message: &str) -> String {
    let text = message.to_lowercase();
    if text.contains("model") {
        return format!(
            "the server does not know the model `{model}`: check the model name (and, for \
             Ollama, that it is pulled)"
        );
    }
    let has_version = base_url.split('/').skip(3).any(|segment| {
        segment.len() > 1
            && segment.starts_with('v')
            && segment[1..].starts_with(|c: char| c.is_ascii_digit())
    });
    if has_version {
        format!(
            "no Chat Completions endpoint at {base_url}/chat/completions: check the base URL and the model name"
        )
    } else {
        format!(
            "no Chat Completions endpoint at {base_url}/chat/completions: the base URL must \
             include the API's version path, e.g. {base_url}/v1"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_server_refusals_are_recognised() {
        let cases = [
            (
                r#"registry.ollama.ai/library/gemma:2b does not support tools"#,
                Refusal::ToolsUnsupported,
            ),
            (
                r#""auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"#,
                Refusal::ToolsUnsupported,
            ),
            (
                "tools param requires --jinja flag",
                Refusal::ToolsUnsupported,
            ),
            (
                "Extra parameters ['stream_options'] are not allowed when extra-parameters is not set",
                Refusal::StreamOptionsUnsupported,
            ),
            (
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                Refusal::MaxCompletionTokens,
            ),
            (
                "Streaming is not supported for this model",
                Refusal::StreamUnsupported,
            ),
            (
                "stream: extra inputs are not permitted",
                Refusal::StreamUnsupported,
            ),
            ("Invalid value for 'temperature'", Refusal::Other),
            ("upstream timeout", Refusal::Other),
        ];
        for (message, expected) in cases {
            assert_eq!(classify_refusal(message), expected, "{message}");
        }
    }

    #[test]
    fn messages_come_from_the_usual_places() {
        assert_eq!(
            server_message(br#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(
            server_message(br#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(server_message(br#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(server_message(b"  plain text\n"), "plain text");
        assert_eq!(server_message(&[b'x'; 700]).chars().count(), 601);
    }

    #[test]
    fn the_key_is_redacted_from_server_text() {
        let redactor = Redactor::new(Some(SecretString::from("sk-live-123")));
        assert_eq!(
            redactor.clean("Incorrect API key provided: sk-live-123.".into()),
            "Incorrect API key provided: [REDACTED]."
        );
    }

    #[test]
    fn not_found_suggests_the_version_path_only_when_missing() {
        assert!(
            not_found_hint("http://127.0.0.1:11434", "m", "404 page not found")
                .contains("e.g. http://127.0.0.1:11434/v1")
        );
        assert!(!not_found_hint("http://h/v1", "m", "Not Found").contains("e.g."));
        assert!(!not_found_hint("https://h/v1beta/openai", "m", "Not Found").contains("e.g."));
        assert!(
            not_found_hint(
                "http://h/v1",
                "qwen",
                r#"model "qwen" not found, try pulling it first"#
            )
            .contains("`qwen`")
        );
    }
}
