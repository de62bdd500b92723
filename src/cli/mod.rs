//! One module per subcommand. Each returns the process exit code; errors get context here.

pub mod audit;
pub mod checkpoints;
pub mod classify;
mod common;
pub mod doctor;
pub mod exec;
pub mod mcp;
pub mod rules;
pub mod run;
mod run_model;
mod run_output;
pub mod sessions;
pub mod standard;
mod standard_fetch;
pub mod tool;
mod tui;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// The workspace when none is given: the nearest ancestor holding `.git`, else the current
/// directory.
pub fn default_workspace() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("current directory")?;
    Ok(spear::agent::builder::default_workspace(&cwd))
}

/// `spear` with no subcommand: the full-screen session on the workspace.
pub fn no_subcommand(args: ScreenArgs) -> anyhow::Result<ExitCode> {
    tui::run(args)
}

pub use tui::TuiArgs as ScreenArgs;
