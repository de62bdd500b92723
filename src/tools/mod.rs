//! The provider-neutral tool lifecycle above the harness: specs and registry, the per-turn
//! exposure, the router every call takes, the coding tools, SpearHost, the ResultStore and
//! WorkingState. Imports `harness`; `harness` never imports this.
//!
//! From the bottom up, each naming only what is below it: `refusal` (how a gate says no),
//! `executor/` (the seam between the terminal and the execution layer), `results/` (the
//! ResultStore and what it tells the model), `host/` (SpearHost, the one door to the harness:
//! its hard gates, host commands and the session's web client), `handler` and `registry` (what
//! a tool is), the tools (`web/` and `mcp/`, then `coding/`, whose terminal plans
//! `spear-capability run` and `call`, then `normative/`, which reuses three coding tools; built
//! from `documents/`), `router/` (the call path: ToolRouter, the turn, schema validation), and
//! `mcp_server` (Spear's harness as an MCP server, over the router). `tests/layers.rs` keeps it
//! so.

pub mod approval;
pub mod checkpoints;
pub mod coding;
pub mod documents;
pub mod egress;
pub mod envelope;
pub mod executor;
pub mod exposure;
pub mod external;
pub mod handler;
pub mod hooks;
pub mod host;
pub(crate) mod lines;
pub mod mcp;
pub mod mcp_server;
pub mod normative;
pub mod observer;
pub mod pipeline;
pub mod preview;
pub mod refusal;
pub mod registry;
pub mod results;
pub mod router;
pub mod spec;
pub(crate) mod walk;
pub mod web;
pub mod working_state;
