//! The provider-neutral tool lifecycle above the harness: specs and registry, the per-turn
//! exposure, the router every call takes, the coding tools, SpearHost, the ResultStore and
//! WorkingState. Imports `harness`; `harness` never imports this.
//!
//! `router/`: the call path (ToolRouter, the turn, schema validation). `host/`: SpearHost, the
//! one door to the harness, its hard gates and host commands. `results/`: the ResultStore and
//! what it tells the model. `executor/`: the seam between the terminal and the execution layer.
//! `coding/`, `normative/`, `web/`, `documents/`: the tools and what they are built from.

pub mod coding;
pub mod documents;
pub mod envelope;
pub mod executor;
pub mod exposure;
pub mod handler;
pub mod host;
pub(crate) mod lines;
pub mod normative;
pub mod observer;
pub mod refusal;
pub mod registry;
pub mod results;
pub mod router;
pub mod spec;
pub(crate) mod walk;
pub mod web;
pub mod working_state;
