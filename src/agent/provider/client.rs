//! `OpenAiCompatible`: one Chat Completions request over reqwest, streamed, retried while
//! nothing has streamed yet, adapted once to a server that refuses part of it. Invariant: no
//! attempt is made after the first body byte arrived, the attempts are bounded, and dropping
//! the future drops the connection (nothing is spawned).

use std::sync::Mutex;
use std::time::SystemTime;

use reqwest::header::{
    AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER,
};
use secrecy::ExposeSecret;

use super::error::{ProviderError, Redactor, server_message};
use super::failure::{Failure, refused, with_attempts};
use super::request::{Dialect, build_body};
use super::retry::parse_retry_after;
use super::settings::ProviderSettings;
use super::stream::{MAX_BODY_BYTES, Progress, StreamAssembler, assemble_whole};
use crate::agent::model::{ChatModel, ChatRequest, ModelResponse, StreamDelta};

/// The most of an error body read (its message is all we need).
const MAX_ERROR_BODY: usize = 64 * 1024;

type OnDelta<'a> = &'a mut (dyn FnMut(StreamDelta) + Send);

/// A client for any server that speaks OpenAI's Chat Completions with streaming tool calls.
#[derive(Debug)]
pub struct OpenAiCompatible {
    settings: ProviderSettings,
    url: String,
    headers: HeaderMap,
    http: reqwest::Client,
    redactor: Redactor,
    /// What this server was found to refuse, kept for later requests.
    dialect: Mutex<Dialect>,
}

impl OpenAiCompatible {
    pub fn new(mut settings: ProviderSettings) -> Result<Self, ProviderError> {
        let trimmed = settings.base_url.trim().trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&trimmed).map_err(|e| {
            ProviderError::Settings(format!("the base URL `{trimmed}` is not a URL ({e})"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ProviderError::Settings(format!(
                "the base URL `{trimmed}` must start with http:// or https://"
            )));
        }
        settings.base_url = trimmed;
        settings.retry.max_attempts = settings.retry.max_attempts.max(1);
        let headers = headers(&settings)?;
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("spear/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(settings.connect_timeout)
            .read_timeout(settings.idle_timeout);
        // A server on this machine (Ollama, llama.cpp, vLLM) is never reached through an
        // HTTP(S)_PROXY from the environment, whatever NO_PROXY says.
        if is_loopback(&parsed) {
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|e| ProviderError::Settings(format!("cannot set up HTTP: {e}")))?;
        let dialect = Dialect {
            stream_usage: settings.stream_usage,
            ..Dialect::default()
        };
        Ok(Self {
            url: format!("{}/chat/completions", settings.base_url),
            redactor: Redactor::new(settings.api_key.clone()),
            settings,
            headers,
            http,
            dialect: Mutex::new(dialect),
        })
    }

    pub fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    /// Stream one response. Retries (reported as `StreamDelta::Retrying`) happen only before
    /// any of the answer arrived.
    pub async fn complete_request(
        &self,
        request: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let max_tokens = match self.settings.max_tokens {
            Some(cap) => request.max_tokens.min(cap),
            None => request.max_tokens,
        };
        let policy = &self.settings.retry;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let dialect = self.dialect();
            let body = build_body(&self.settings.model, request, max_tokens, dialect);
            let failure = match self.attempt(&body, dialect, on_delta).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            match failure {
                Failure::Fatal(error) => return Err(error),
                Failure::Adapt(adapted) => {
                    self.remember(adapted);
                    attempt -= 1;
                }
                Failure::Retry { last, .. } if attempt >= policy.max_attempts => {
                    return Err(with_attempts(last, attempt));
                }
                Failure::Retry {
                    why, retry_after, ..
                } => {
                    let delay = policy.delay(attempt, retry_after);
                    on_delta(StreamDelta::Retrying {
                        attempt: attempt + 1,
                        delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        why,
                    });
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    async fn attempt(
        &self,
        body: &serde_json::Value,
        dialect: Dialect,
        on_delta: OnDelta<'_>,
    ) -> Result<ModelResponse, Failure> {
        let sent = self
            .http
            .post(&self.url)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                let detail = self.describe(&error);
                let last = ProviderError::Unreachable {
                    base_url: self.settings.base_url.clone(),
                    attempts: 1,
                    detail: detail.clone(),
                };
                return Err(if error.is_connect() || error.is_timeout() {
                    Failure::Retry {
                        why: format!("cannot connect: {detail}"),
                        retry_after: None,
                        last,
                    }
                } else {
                    Failure::Fatal(last)
                });
            }
        };
        let status = response.status();
        if status.is_success() {
            return self.read_answer(response, dialect, on_delta).await;
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let body = read_capped(response, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let message = self.redactor.clean(server_message(&body));
        Err(refused(
            &self.settings,
            status.as_u16(),
            message,
            retry_after,
            dialect,
        ))
    }

    /// Read a 2xx answer: an event stream, or one JSON document (asked for, or sent by a
    /// server that ignores `stream`).
    async fn read_answer(
        &self,
        mut response: reqwest::Response,
        dialect: Dialect,
        on_delta: OnDelta<'_>,
    ) -> Result<ModelResponse, Failure> {
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("json"));
        if !dialect.stream || is_json {
            let body = read_capped(response, MAX_BODY_BYTES)
                .await
                .map_err(|e| self.broken_before_body(self.describe(&e)))?;
            if body.len() >= MAX_BODY_BYTES {
                return Err(Failure::Fatal(ProviderError::TooLarge {
                    limit: MAX_BODY_BYTES,
                }));
            }
            return assemble_whole(&body, on_delta).map_err(Failure::Fatal);
        }
        let mut stream = StreamAssembler::new();
        let mut received = false;
        loop {
            match response.chunk().await {
                Ok(Some(bytes)) => {
                    received |= !bytes.is_empty();
                    let progress = stream
                        .push_bytes(&bytes, on_delta)
                        .map_err(Failure::Fatal)?;
                    if progress == Progress::Done {
                        break;
                    }
                }
                Ok(None) if !received => {
                    return Err(self.broken_before_body(
                        "the server closed the connection without sending anything".to_string(),
                    ));
                }
                Ok(None) => break,
                Err(error) if !received => {
                    return Err(self.broken_before_body(self.describe(&error)));
                }
                Err(error) => {
                    return Err(Failure::Fatal(ProviderError::StreamBroken {
                        base_url: self.settings.base_url.clone(),
                        detail: self.describe(&error),
                    }));
                }
            }
        }
        stream.finish(on_delta).map_err(Failure::Fatal)
    }

    /// A 200 whose body failed before its first byte: nothing was shown, so it may be retried.
    fn broken_before_body(&self, detail: String) -> Failure {
        Failure::Retry {
            why: format!("the answer broke off before it began: {detail}"),
            retry_after: None,
            last: ProviderError::StreamBroken {
                base_url: self.settings.base_url.clone(),
                detail,
            },
        }
    }

    /// A transport error with its causes, without the key.
    fn describe(&self, error: &reqwest::Error) -> String {
        let mut parts: Vec<String> = Vec::new();
        if error.is_timeout() {
            parts.push("timed out".to_string());
        }
        let mut source: Option<&dyn std::error::Error> = Some(error);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !parts.iter().any(|p| p.contains(&text)) {
                parts.push(text);
            }
            source = cause.source();
        }
        self.redactor.clean(parts.join(": "))
    }

    fn dialect(&self) -> Dialect {
        *self.dialect.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn remember(&self, dialect: Dialect) {
        *self.dialect.lock().unwrap_or_else(|e| e.into_inner()) = dialect;
    }
}

impl ChatModel for OpenAiCompatible {
    type Error = ProviderError;

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut (dyn FnMut(StreamDelta) + Send),
    ) -> impl std::future::Future<Output = Result<ModelResponse, Self::Error>> + Send + 'a {
        self.complete_request(request, on_delta)
    }

    fn context_window(&self) -> Option<u64> {
        self.settings.context_window
    }

    fn model_name(&self) -> &str {
        &self.settings.model
    }
}

/// The request headers: the key and every extra value marked sensitive, so no `Debug` of
/// reqwest's shows them.
fn headers(settings: &ProviderSettings) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = &settings.api_key {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose_secret().trim()))
            .map_err(|_| {
                ProviderError::Settings(format!(
                    "the API key (from {}) holds characters an HTTP header cannot carry",
                    settings.api_key_env
                ))
            })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    for (name, value) in &settings.extra_headers {
        let header = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            ProviderError::Settings(format!("`{name}` is not a valid HTTP header name"))
        })?;
        let mut value = HeaderValue::from_str(value.expose_secret()).map_err(|_| {
            ProviderError::Settings(format!(
                "the value of header `{name}` holds characters an HTTP header cannot carry"
            ))
        })?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    Ok(headers)
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Read a whole body, refusing more than `limit` bytes.
async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(bytes) = response.chunk().await? {
        let room = limit.saturating_sub(body.len());
        body.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if body.len() >= limit {
            break;
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn loopback_servers_are_recognised() {
        for (url, loopback) in [
            ("http://127.0.0.1:11434/v1", true),
            ("http://127.8.0.2/v1", true),
            ("http://localhost:8080/v1", true),
            ("http://[::1]:8000/v1", true),
            ("https://api.openai.com/v1", false),
            ("http://10.0.0.5/v1", false),
        ] {
            assert_eq!(
                is_loopback(&reqwest::Url::parse(url).unwrap()),
                loopback,
                "{url}"
            );
        }
    }
}
