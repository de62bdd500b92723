//! Helpers for the provider tests: a client pointed at the mock server with quick retries,
//! one completion with every delta recorded, and the captures' location.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use spear::agent::model::{
    ChatMessage, ChatModel, ChatRequest, ModelResponse, StreamDelta, ToolCallRequest,
    ToolDefinition,
};
use spear::agent::provider::{OpenAiCompatible, ProviderError, ProviderSettings, RetryPolicy};

use crate::support::mock_server::MockServer;

/// Settings for `base_url` with retries a test can afford (1 ms backoff, 3 attempts).
pub fn settings_for(base_url: &str) -> ProviderSettings {
    let mut settings = ProviderSettings::new(base_url, "mock-model");
    settings.retry = RetryPolicy {
        max_attempts: 3,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(5),
    };
    settings
}

pub fn client(server: &MockServer) -> OpenAiCompatible {
    OpenAiCompatible::new(settings_for(&server.base_url)).unwrap()
}

/// A tool call as the client returns it, arguments as compact JSON text.
pub fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

/// A user message and one tool, as the loop sends them.
pub fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::System {
                content: "You are a test.".into(),
            },
            ChatMessage::User {
                content: "What is in the workspace?".into(),
            },
        ],
        tools: vec![ToolDefinition {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_tokens: 256,
    }
}

/// One completion and every delta reported on the way.
pub struct Outcome {
    pub result: Result<ModelResponse, ProviderError>,
    pub deltas: Vec<StreamDelta>,
}

impl Outcome {
    pub fn response(&self) -> &ModelResponse {
        match &self.result {
            Ok(response) => response,
            Err(error) => panic!("expected a response, got the error: {error}"),
        }
    }

    pub fn error(&self) -> &ProviderError {
        match &self.result {
            Ok(response) => panic!("expected an error, got {response:?}"),
            Err(error) => error,
        }
    }

    /// The text as it streamed (kept even when the stream then failed).
    pub fn streamed_text(&self) -> String {
        self.deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn retries(&self) -> Vec<(u32, u64, String)> {
        self.deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Retrying {
                    attempt,
                    delay_ms,
                    why,
                } => Some((*attempt, *delay_ms, why.clone())),
                _ => None,
            })
            .collect()
    }
}

pub async fn complete(client: &OpenAiCompatible, request: &ChatRequest) -> Outcome {
    let mut deltas = Vec::new();
    let mut record = |delta: StreamDelta| deltas.push(delta);
    let result = client.complete(request, &mut record).await;
    Outcome { result, deltas }
}

/// `shared/data/sse`, beside the repository (as CI lays it out).
pub fn captures_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/sse");
    assert!(
        dir.is_dir(),
        "the captured streams are missing: expected {} (the project's shared/ folder must sit \
         beside the repository, as it does in CI)",
        dir.display()
    );
    dir
}

/// Every capture: (name, body, sidecar), sorted by name.
pub fn captures() -> Vec<(String, Vec<u8>, serde_json::Value)> {
    let dir = captures_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".sse").map(str::to_string)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let body = std::fs::read(dir.join(format!("{name}.sse"))).unwrap();
            let sidecar = std::fs::read_to_string(dir.join(format!("{name}.json")))
                .unwrap_or_else(|e| panic!("{name}.json: {e}"));
            (name, body, serde_json::from_str(&sidecar).unwrap())
        })
        .collect()
}
