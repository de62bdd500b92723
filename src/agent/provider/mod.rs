//! `agent::provider`: Chat Completions with streamed tool calls, for any OpenAI-compatible
//! server (OpenAI, OpenRouter, DeepSeek, Azure, Groq, Mistral, Ollama, vLLM, llama.cpp, LM
//! Studio, ...). Invariant: the rest of Spear sees only `agent::model`'s vocabulary; every
//! server dialect is absorbed here.
//!
//! The layers, each testable without the next: [`sse`] (bytes to events), [`wire`] (lenient
//! JSON), [`assemble`] (chunks to one response), [`stream`] (a whole body), [`request`] (the
//! request body), [`retry`] (when to ask again), [`failure`] (what a refusal means),
//! [`client`] (HTTP).

pub mod assemble;
pub mod client;
pub mod error;
pub mod failure;
pub mod request;
pub mod retry;
pub mod settings;
pub mod sse;
pub mod stream;
pub mod wire;

pub use client::OpenAiCompatible;
pub use error::ProviderError;
pub use retry::RetryPolicy;
pub use settings::ProviderSettings;
pub use stream::{StreamAssembler, assemble_whole};
