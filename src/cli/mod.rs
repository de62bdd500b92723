//! One module per subcommand. Each returns the process exit code; errors get context here.

pub mod audit;
pub mod classify;
pub mod doctor;
pub mod exec;

use std::process::ExitCode;

/// `spear` with no subcommand. The full-screen interface is not built yet; say so honestly,
/// and say what can be used on this workspace today.
pub fn no_subcommand(
    workspace: Option<std::path::PathBuf>,
    mode: Option<spear::harness::primitives::ExecutionMode>,
) -> anyhow::Result<ExitCode> {
    let dir = match workspace {
        Some(d) => d,
        None => std::env::current_dir()?,
    };
    let mode = mode.unwrap_or(spear::harness::primitives::ExecutionMode::Ask);
    println!(
        "Spear on {} ({mode} mode).\n\
         The full-screen interface is not built yet. Available now:\n  \
         spear classify COMMAND...        what a command would do, before it runs\n  \
         spear exec -- COMMAND            run one command through the harness, confined\n  \
         spear doctor                     which confinement mechanisms work here\n  \
         spear audit [--verify]           the workspace's audit log\n\
         See `spear --help`.",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
