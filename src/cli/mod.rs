//! One module per subcommand. Each returns the process exit code; errors get context here.

pub mod audit;
pub mod classify;
pub mod tool;

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

/// `spear` with no subcommand. The full-screen interface is not built yet; say so honestly.
pub fn no_subcommand() -> anyhow::Result<ExitCode> {
    eprintln!(
        "spear: the full-screen interface is not built yet.\n\
         Available now: `spear classify` (see `spear --help`)."
    );
    Ok(ExitCode::SUCCESS)
}
