//! The provider-neutral tool lifecycle above the harness: specs and registry, the per-turn
//! exposure, the router every call takes, the coding tools, SpearHost, the ResultStore and
//! WorkingState. Imports `harness`; `harness` never imports this.

pub mod approval;
pub mod coding;
pub mod documents;
pub mod envelope;
pub mod executor;
pub mod exposure;
pub mod gates;
pub mod handler;
pub mod host;
pub mod host_command;
pub mod knowledge;
pub mod lines;
pub mod normative;
pub mod observer;
pub mod pipeline;
pub mod preview;
pub mod registry;
pub mod result_preview;
pub mod result_store;
pub mod result_writer;
pub mod router;
pub mod runner_executor;
pub mod schema;
pub mod spec;
pub mod turn;
pub mod walk;
pub mod web;
pub mod working_state;
