//! The boundary layer's integration tests, one binary: workspace confinement, target policy and
//! the audit log, including the tests that need real processes and real races.

// A test binary: a failed unwrap is a failed test, which is what we want. Helpers outside
// `#[test]` functions would otherwise trip the crate-wide deny.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "boundary/audit.rs"]
mod audit;
#[path = "boundary/audit_display.rs"]
mod audit_display;
#[path = "boundary/audit_process.rs"]
mod audit_process;
#[path = "boundary/audit_secrets.rs"]
mod audit_secrets;
#[path = "support/features.rs"]
mod features;
#[path = "boundary/special_files.rs"]
mod special_files;
#[path = "boundary/support.rs"]
mod support;
#[path = "boundary/target_policy.rs"]
mod target_policy;
#[path = "boundary/workspace.rs"]
mod workspace;
#[path = "boundary/workspace_props.rs"]
mod workspace_props;
#[path = "boundary/workspace_race.rs"]
mod workspace_race;
