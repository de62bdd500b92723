//! One module per subcommand. Each returns the process exit code; errors get context here.

pub mod audit;
pub mod classify;
pub mod doctor;
pub mod exec;

use std::process::ExitCode;

/// `spear` with no subcommand. The full-screen interface is not built yet; say so honestly.
pub fn no_subcommand() -> anyhow::Result<ExitCode> {
    eprintln!(
        "spear: the full-screen interface is not built yet.\n\
         Available now: `spear classify` (see `spear --help`)."
    );
    Ok(ExitCode::SUCCESS)
}
