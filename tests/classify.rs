//! The decision layer's integration tests: one binary, one module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap in a test is a failed test

#[path = "classify/allowlist.rs"]
mod allowlist;
#[path = "classify/authorize.rs"]
mod authorize;
#[path = "classify/budget.rs"]
mod budget;
#[path = "classify/cli.rs"]
mod cli;
#[path = "classify/compose.rs"]
mod compose;
#[path = "classify/corpus.rs"]
mod corpus;
#[path = "classify/differential.rs"]
mod differential;
#[path = "classify/everyday.rs"]
mod everyday;
#[path = "classify/feeders.rs"]
mod feeders;
#[path = "classify/properties.rs"]
mod properties;
