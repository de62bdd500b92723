//! The agent loop's integration tests, one binary: the loop against a scripted model (turns,
//! refusals, approvals, cancellation, context compaction), configuration, sessions, and `spear run`
//! end to end against the loopback mock server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap in a test is a failed test

#[path = "support/audit_log.rs"]
mod audit_log;

#[path = "agent_loop/compaction.rs"]
mod compaction;
#[path = "agent_loop/config.rs"]
mod config;
#[path = "agent_loop/egress.rs"]
mod egress;
#[path = "agent_loop/front_ends.rs"]
mod front_ends;
#[path = "agent_loop/mcp_client.rs"]
mod mcp_client;
#[path = "agent_loop/mcp_http.rs"]
mod mcp_http;
#[path = "agent_loop/mcp_orphans.rs"]
mod mcp_orphans;
#[path = "agent_loop/mcp_serve.rs"]
mod mcp_serve;
#[path = "support/origin.rs"]
mod origin;
#[path = "agent_loop/prompt.rs"]
mod prompt;
#[path = "agent_loop/refusals.rs"]
mod refusals;
#[path = "agent_loop/run_cli.rs"]
mod run_cli;
#[path = "agent_loop/secret_guard.rs"]
mod secret_guard;
#[path = "support/mod.rs"]
mod server;
#[path = "agent_loop/session_actor.rs"]
mod session_actor;
#[path = "agent_loop/sessions.rs"]
mod sessions;
#[path = "agent_loop/standards.rs"]
mod standards;
#[path = "agent_loop/support.rs"]
mod support;
#[path = "agent_loop/tasks.rs"]
mod tasks;
#[path = "agent_loop/turns.rs"]
mod turns;
