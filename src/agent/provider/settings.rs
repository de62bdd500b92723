//! What the client needs to know about one server: where, which model, which key, and how
//! patiently to ask. Invariant: the key and every extra header value are secrets, so this type's
//! `Debug` never shows them.

use std::time::Duration;

use secrecy::SecretString;

use super::retry::RetryPolicy;

/// One OpenAI-compatible server and model.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    /// Including the version path, as `OPENAI_BASE_URL` does (`https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`); `/chat/completions` is appended.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …`; `None` for local servers that need none.
    pub api_key: Option<SecretString>,
    pub model: String,
    /// Sent with every request (e.g. OpenRouter's `HTTP-Referer`, Azure's `api-key`). Values
    /// are secrets: some of these headers are keys.
    pub extra_headers: Vec<(String, SecretString)>,
    /// The model's context window in tokens, when configured.
    pub context_window: Option<u64>,
    /// This server's own cap on one response; the request's `max_tokens` is lowered to it.
    pub max_tokens: Option<u32>,
    /// The environment variable a person sets to give the key (named in 401/403 errors).
    pub api_key_env: String,
    /// Ask for a final usage chunk (`stream_options.include_usage`). Dropped by itself, for the
    /// rest of the client's life, when a server refuses it; set false to never send it.
    pub stream_usage: bool,
    pub retry: RetryPolicy,
    /// How long to wait for a connection.
    pub connect_timeout: Duration,
    /// How long the answer may stay silent (no byte, not even a keep-alive) before it counts
    /// as broken.
    pub idle_timeout: Duration,
}

impl ProviderSettings {
    /// Settings with the defaults: no key, no extra headers, `SPEAR_API_KEY` named in key
    /// errors, usage requested, four attempts, 10 s to connect, 300 s of silence allowed.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            extra_headers: Vec::new(),
            context_window: None,
            max_tokens: None,
            api_key_env: "SPEAR_API_KEY".to_string(),
            stream_usage: true,
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
        }
    }
}
