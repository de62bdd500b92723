//! One module per subcommand. Each returns the process exit code; errors get context here.

pub mod audit;
pub mod classify;
mod common;
pub mod doctor;
pub mod exec;
pub mod run;
mod run_model;
mod run_output;
pub mod sessions;
pub mod tool;
mod wiring;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

/// The workspace when none is given: the nearest ancestor holding `.git`, else the current
/// directory.
pub fn default_workspace() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("current directory")?;
    Ok(cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
        .unwrap_or(cwd))
}

/// `spear` with no subcommand. The full-screen interface is not built yet; say so honestly,
/// and say what can be used on this workspace today.
pub fn no_subcommand(
    workspace: Option<PathBuf>,
    mode: Option<spear::harness::primitives::ExecutionMode>,
) -> anyhow::Result<ExitCode> {
    let dir = match workspace {
        Some(d) => d,
        None => default_workspace()?,
    };
    let mode = mode.unwrap_or(spear::harness::primitives::ExecutionMode::Ask);
    println!(
        "Spear on {} ({mode} mode).\n\
         The full-screen interface is not built yet. Available now:\n  \
         spear classify COMMAND...        what a command would do, before it runs\n  \
         spear exec -- COMMAND            run one command through the harness, confined\n  \
         spear tool NAME JSON_ARGS        one tool call (read_file, patch, terminal, …) as the model makes it\n  \
         spear doctor                     which confinement mechanisms work here\n  \
         spear audit [--verify]           the workspace's audit log\n  \
         spear run OBJECTIVE              the agent, headless (configure a model first: see README)\n  \
         spear sessions                   this workspace's sessions, for `spear run --resume`\n\
         See `spear --help`.",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
