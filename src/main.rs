//! The `spear` command line: parses arguments, wires the layers, maps outcomes to exit codes.

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "spear",
    version,
    about = "A coding assistant whose every tool call is decided, confined, bounded and recorded"
)]
struct Cli {
    /// The project to work on (default: the current directory).
    #[arg(long, global = false, value_name = "DIR")]
    workspace: Option<std::path::PathBuf>,
    /// Execution mode for the interactive session: safe, ask or auto.
    #[arg(long, value_name = "MODE")]
    mode: Option<spear::harness::primitives::ExecutionMode>,
    /// Reopen one of this workspace's sessions (without ID: pick from the list).
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    resume: Option<String>,
    /// Engage the standard NAME from the first request (see `spear standard list`).
    #[arg(long, value_name = "NAME")]
    standard: Option<String>,
    /// The model to ask (overrides SPEAR_MODEL and the config), as `spear run --model`.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The configured provider to use (overrides `default_provider`).
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Let commands that need the network have it from the start (as `/network on`).
    #[arg(long)]
    network: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Classify bash commands: READ_ONLY, WORKSPACE_MUTATING, SHELL_COMPLEX or DANGEROUS.
    Classify(cli::classify::ClassifyArgs),
    /// Read, follow or verify the workspace's audit log.
    Audit(cli::audit::AuditArgs),
    /// Run one command through the whole harness: classify, authorize, run confined.
    Exec(cli::exec::ExecArgs),
    /// Report which confinement mechanisms work here, and how to fix those that do not.
    Doctor(cli::doctor::DoctorArgs),
    /// Run one tool call through the router, as the model makes it.
    Tool(cli::tool::ToolArgs),
    /// The agent, headless: one objective, the model's text and tool calls as they happen.
    Run(cli::run::RunArgs),
    /// This workspace's sessions (for `spear run --resume ID`).
    Sessions(cli::sessions::SessionsArgs),
    /// The standards library: add a PDF, Markdown, HTML or text standard, list, remove.
    Standard(cli::standard::StandardArgs),
    /// Permission rules: list, add, remove, explain a command, trust the project's file.
    Rules(cli::rules::RulesArgs),
    /// What this workspace's sessions can take back; `prune` frees the store.
    Checkpoints(cli::checkpoints::CheckpointsArgs),
    /// Take back a session's changes: its last turn, or `--turn N` and later ones.
    Undo(cli::checkpoints::UndoArgs),
    /// The Model Context Protocol: `serve` offers Spear's harness to other agents over stdio.
    Mcp(cli::mcp::McpArgs),
    /// Test only: an MCP stdio server for the MCP client's tests.
    #[cfg(feature = "test-hooks")]
    #[command(name = "__mcp-test-server", hide = true)]
    McpTestServer {
        /// A word the tests find the process by.
        tag: Option<String>,
    },
    /// Internal: one document extraction, run confined by Spear itself (input on stdin).
    #[command(name = "__extract", hide = true)]
    Extract {
        kind: String,
        #[arg(long)]
        base: Option<String>,
    },
}

fn main() -> ExitCode {
    // Documents are parsed by a confined child of this very binary (`__extract`).
    spear::tools::documents::set_extractor(std::path::PathBuf::from("/proc/self/exe"));
    let cli = Cli::parse();
    let outcome = match cli.command {
        Some(Command::Classify(args)) => cli::classify::run(args),
        Some(Command::Audit(args)) => cli::audit::run(args),
        Some(Command::Exec(args)) => cli::exec::run(args),
        Some(Command::Doctor(args)) => cli::doctor::run(args),
        Some(Command::Tool(args)) => cli::tool::run(args, cli.workspace),
        Some(Command::Run(args)) => cli::run::run(args, cli.workspace),
        Some(Command::Sessions(args)) => cli::sessions::run(args, cli.workspace),
        Some(Command::Standard(args)) => cli::standard::run(args),
        Some(Command::Rules(args)) => cli::rules::run(args, cli.workspace),
        Some(Command::Checkpoints(args)) => cli::checkpoints::list(args, cli.workspace),
        Some(Command::Undo(args)) => cli::checkpoints::undo(args, cli.workspace),
        Some(Command::Mcp(args)) => cli::mcp::run(args, cli.workspace),
        #[cfg(feature = "test-hooks")]
        Some(Command::McpTestServer { .. }) => {
            let code = spear::tools::mcp::test_server::serve();
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        Some(Command::Extract { kind, base }) => {
            let code = spear::tools::documents::serve_extraction(&kind, base.as_deref());
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        None => cli::no_subcommand(cli::ScreenArgs {
            workspace: cli.workspace,
            mode: cli.mode,
            resume: cli.resume,
            standard: cli.standard,
            model: cli.model,
            provider: cli.provider,
            network: cli.network,
        }),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("spear: {err:#}");
            // Where Spear was started is the person's to change: a usage error.
            let misplaced = err
                .downcast_ref::<spear::agent::builder::BuildError>()
                .is_some_and(|e| {
                    matches!(
                        e,
                        spear::agent::builder::BuildError::StateInsideWorkspace { .. }
                            | spear::agent::builder::BuildError::ConfigInsideWorkspace { .. }
                            | spear::agent::builder::BuildError::Rules(_)
                    )
                });
            ExitCode::from(if misplaced { 2 } else { 1 })
        }
    }
}
