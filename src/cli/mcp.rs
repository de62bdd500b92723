//! `spear mcp serve [--mode safe|ask|auto] [--workspace DIR] [--network]`: Spear's harness as
//! an MCP server over stdio, for other agents (Claude Code, Codex, editors) to run their file
//! and shell work through. stdout carries nothing but the protocol; Spear's own words go to
//! stderr, and only before the server starts.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use spear::agent::builder::{Place, SessionBuilder};
use spear::harness::primitives::ExecutionMode;
use spear::tools::mcp_server::{ServeOptions, SpearMcp};

#[derive(Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Subcommand)]
pub enum McpCommand {
    /// Serve the six coding tools and `classify` over stdio, each call through the harness.
    Serve(ServeArgs),
}

#[derive(Args)]
pub struct ServeArgs {
    /// Execution mode for every call: safe, ask or auto (default: ask; in ASK the client is
    /// asked through MCP elicitation, and a client that cannot be asked is refused).
    #[arg(long, value_name = "M")]
    pub mode: Option<ExecutionMode>,
    /// The workspace (default: the nearest ancestor holding `.git`, else the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Let commands that need the network have it (through slirp4netns; host loopback stays
    /// unreachable).
    #[arg(long)]
    pub network: bool,
}

pub fn run(args: McpArgs, workspace: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    match args.command {
        McpCommand::Serve(s) => serve(s, workspace),
    }
}

fn serve(args: ServeArgs, workspace: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let place = Place::find(args.workspace.or(workspace))?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let suffix = format!("{}-{secs}", std::process::id());
    let write_lock = place
        .state
        .join("mcp")
        .join(format!("{}.lock", lock_name(&place.root)));
    let builder = SessionBuilder::new(
        place,
        super::common::harness_settings()?,
        format!("mcp-{suffix}"),
    )
    .network(args.network);
    let label = builder.label();
    let router = Arc::new(builder.router()?);
    let server = SpearMcp::new(
        router,
        ServeOptions {
            mode: args.mode.unwrap_or(ExecutionMode::Ask),
            label,
            label_suffix: suffix,
            write_lock,
        },
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(server.serve_stdio())?;
    Ok(ExitCode::SUCCESS)
}

/// One lock file per workspace: its root's path, hashed (the name stays short and plain).
fn lock_name(root: &std::path::Path) -> String {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    let digest = sha2::Sha256::digest(root.as_os_str().as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}
