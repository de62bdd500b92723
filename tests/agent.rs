//! The agent's integration tests, one binary: the provider replaying every captured stream over
//! real HTTP, synthetic stream variations, scripted server scenarios (retries, fallbacks,
//! errors, cancellation), and the SSE parser's split-independence property.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap in a test is a failed test

#[path = "support/mod.rs"]
mod support;

#[path = "agent/captures.rs"]
mod captures;
#[path = "agent/common.rs"]
mod common;
#[path = "agent/dialects.rs"]
mod dialects;
#[path = "agent/errors.rs"]
mod errors;
#[path = "agent/scenarios.rs"]
mod scenarios;
#[path = "agent/sse_props.rs"]
mod sse_props;
#[path = "agent/synthetic.rs"]
mod synthetic;
