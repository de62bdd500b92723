//! The provider-neutral vocabulary between the model client and the loop: messages, tool calls
//! as assembled from a stream, the request, the response, and the `ChatModel` trait the loop is
//! written against (the real client and test doubles both implement it). Invariant: nothing
//! here knows HTTP or a server's dialect; reasoning text is kept for the person and never sent
//! back to a server.

use serde::{Deserialize, Serialize};

/// One message of the conversation as Spear keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        /// `None` when the model only called tools.
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallRequest>,
        /// Reasoning the server streamed. Shown to the person, stored in the transcript,
        /// never sent back to a server (several reject it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A tool call as the model made it, assembled from the stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The call's id as the server gave it; the client invents a unique one (`call_N`) when the
    /// server sent none, so every `tool` message can name its call.
    pub id: String,
    pub name: String,
    /// The arguments as JSON text, exactly as assembled (an object sent by the server is
    /// serialised to text). Parsing, and answering the model `invalid` when it fails, is the
    /// loop's job, never a crash.
    pub arguments: String,
}

/// A tool the model may call (the registry's model-visible view).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One request to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolDefinition>,
    /// Cap on what one response may generate (`SPEAR_RESPONSE_MAX_TOKENS`, 16384).
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    /// Cut at the token cap: reported to the person and the model as truncated.
    Length,
    ContentFilter,
    /// A value this client does not know, kept as sent.
    Other(String),
    /// The stream ended without saying.
    Missing,
}

/// Token counts, when the server reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
}

/// One complete response.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    pub content: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCallRequest>,
    pub finish_reason: FinishReason,
    pub usage: Option<Usage>,
}

impl ModelResponse {
    /// Whether the response was cut at the token cap.
    pub fn truncated(&self) -> bool {
        self.finish_reason == FinishReason::Length
    }
}

/// What the client reports while a response streams in, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    Text(String),
    Reasoning(String),
    /// A tool call's name became known (its arguments follow in fragments).
    ToolCallStarted {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArguments {
        index: usize,
        fragment: String,
    },
    Usage(Usage),
    /// The client is waiting to retry (connect error, 429, 5xx) before anything streamed.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        why: String,
    },
}

/// A model the loop can talk to. Cancelling is dropping the returned future: the real client
/// drops its connection at once.
pub trait ChatModel: Send + Sync {
    /// The error type: its `Display` is what the person reads.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Stream one response, reporting deltas as they arrive, and return it assembled.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut (dyn FnMut(StreamDelta) + Send),
    ) -> impl std::future::Future<Output = Result<ModelResponse, Self::Error>> + Send + 'a;

    /// The context window in tokens, when known (config), for the loop's budget.
    fn context_window(&self) -> Option<u64>;

    /// The model's name, for messages and the transcript.
    fn model_name(&self) -> &str;
}
