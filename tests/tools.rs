//! The tool layer's integration tests, one binary: every gate and status in-process and through
//! `spear tool`, exposure, repeated refusals, the sandbox-down guard, host commands, the
//! ResultStore under a 500 MB output, and patch edge cases.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap in a test is a failed test

#[path = "support/audit_log.rs"]
mod audit_log;

#[path = "tools/agent_config.rs"]
mod agent_config;
#[path = "support/alone.rs"]
mod alone;
#[path = "tools/approvals.rs"]
mod approvals;
#[path = "support/approver.rs"]
mod approver;
#[path = "tools/checkpoints.rs"]
mod checkpoints;
#[path = "tools/cli.rs"]
mod cli;
#[path = "tools/exposure.rs"]
mod exposure;
#[path = "support/extractor.rs"]
mod extractor;
#[path = "tools/fail_closed.rs"]
mod fail_closed;
#[path = "tools/gates.rs"]
mod gates;
#[path = "tools/git_control.rs"]
mod git_control;
#[path = "tools/hard_links.rs"]
mod hard_links;
#[path = "tools/hooks.rs"]
mod hooks;
#[path = "tools/host.rs"]
mod host;
#[path = "tools/layers.rs"]
mod layers;
#[path = "tools/patch.rs"]
mod patch;
#[path = "support/pdf.rs"]
mod pdf;
#[path = "tools/pipeline.rs"]
mod pipeline;
#[path = "tools/refusals.rs"]
mod refusals;
#[path = "tools/result_store.rs"]
mod result_store;
#[path = "tools/rules.rs"]
mod rules;
#[path = "tools/special_files.rs"]
mod special_files;
#[path = "tools/standard_cli.rs"]
mod standard_cli;
#[path = "tools/standards.rs"]
mod standards;
#[path = "tools/support.rs"]
mod support;
