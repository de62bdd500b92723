//! The agent: a streaming client for any OpenAI-compatible server, the model <-> tool loop and
//! the task that spans a request's turns. Invariant (DESIGN.md): `agent` may use `tools` and
//! `harness`, never the reverse; the router is the only way a model's call reaches a tool.

pub mod builder;
pub(crate) mod compact;
pub mod context;
pub mod event;
pub mod model;
pub mod prompt;
pub mod provider;
pub mod request_class;
pub mod runtime;
pub mod session;
pub mod task;
pub mod transcript;
