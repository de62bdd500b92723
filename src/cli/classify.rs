//! `spear classify`: assessments for commands given as arguments or read from stdin.

use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct ClassifyArgs {
    /// Print one JSON object per command.
    #[arg(long)]
    pub json: bool,
    /// Read commands separated by NUL bytes instead of newlines (so a command may span lines).
    #[arg(short = '0')]
    pub nul: bool,
    /// Commands to classify, one per argument. Read from stdin when none are given.
    pub commands: Vec<String>,
}

pub fn run(_args: ClassifyArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not built yet")
}
