//! `spear exec`: one command through the whole harness: classify, authorize (asking on the
//! terminal in ASK mode), run confined, print. Exit codes: the command's own when it ran, 124 on
//! timeout, 126 when refused or cancelled, 127 when not found, 125 when Spear could not run it.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use spear::harness::command_policy::{
    ApprovalDecision, ApprovalRequest, Approver, AuthorizationResult, CommandPolicy, PolicyConfig,
};
use spear::harness::primitives::{ExecutionMode, ToolResult, ToolStatus};
use spear::harness::process::{NullSink, OutputSink, OutputStream};
use spear::harness::runtime::{CommandRunner, RunRequest, RunnerConfig};

#[derive(Args)]
pub struct ExecArgs {
    /// Execution mode: safe, ask or auto.
    #[arg(long, default_value = "ask")]
    pub mode: ExecutionMode,
    /// Switch the network on for this session (used only by commands that need it).
    #[arg(long)]
    pub network: bool,
    /// Time limit in seconds (default: the sandbox's 45 s).
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Print the ToolResult (and the class) as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The command: one argument is a bash script; several are quoted and joined.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

pub fn run(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let workspace = std::env::current_dir().context("cannot read the current directory")?;
    let command = join_command(&args.command);
    let policy = CommandPolicy::new(PolicyConfig {
        network_enabled: args.network,
        workspace_root: Some(workspace.clone()),
        host_read_paths: Vec::new(),
    });
    let assessment = policy.classify(&command);
    let result = match policy.authorize(args.mode, &assessment, &TtyApprover) {
        AuthorizationResult::Denied { reason } => ToolResult::denied(reason),
        AuthorizationResult::Cancelled { reason } => ToolResult::cancelled(reason),
        AuthorizationResult::Granted { profile, .. } => {
            let mut config = RunnerConfig::for_workspace(&workspace);
            if let Some(t) = args.timeout {
                anyhow::ensure!(
                    t > 0.0 && t.is_finite(),
                    "--timeout must be a positive number"
                );
                config.default_timeout = Duration::from_secs_f64(t);
            }
            let runner = CommandRunner::new(config).context("cannot set up the sandbox")?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            let request = RunRequest {
                command: command.clone(),
                profile,
                timeout: None,
            };
            if args.json {
                rt.block_on(runner.run(&request, &mut NullSink))
            } else {
                rt.block_on(runner.run(&request, &mut Terminal))
            }
        }
    };
    if args.json {
        let mut v = serde_json::to_value(&result)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("class".into(), serde_json::to_value(assessment.class)?);
        }
        println!("{v}");
    } else if result.status != ToolStatus::Ok {
        eprintln!(
            "spear: {}: {}",
            result.status,
            result.reason.as_deref().unwrap_or("no reason given")
        );
    }
    Ok(ExitCode::from(exit_code(&result)))
}

/// One argument is a script as written; several are shell-quoted and joined, so what is
/// classified is exactly what runs.
fn join_command(parts: &[String]) -> String {
    if let [one] = parts {
        return one.clone();
    }
    parts.iter().map(|p| quote(p)).collect::<Vec<_>>().join(" ")
}

fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// DESIGN.md's exit codes.
fn exit_code(r: &ToolResult) -> u8 {
    match r.status {
        ToolStatus::Ok => r.exit_code.map_or(0, |c| c.clamp(0, 255) as u8),
        ToolStatus::Timeout => 124,
        ToolStatus::Denied | ToolStatus::Cancelled => 126,
        ToolStatus::NotFound => 127,
        ToolStatus::InvalidPath => 126,
        ToolStatus::Failed => r.exit_code.map_or(125, |c| c.clamp(1, 255) as u8),
    }
}

/// Streams the command's output to this process's stdout and stderr as it comes.
struct Terminal;

impl OutputSink for Terminal {
    fn write(&mut self, stream: OutputStream, bytes: &[u8]) {
        let _ = match stream {
            OutputStream::Stdout => std::io::stdout().write_all(bytes),
            OutputStream::Stderr => std::io::stderr().write_all(bytes),
        };
    }
}

/// Asks on the controlling terminal; without one, the answer is `cancelled`.
struct TtyApprover;

impl Approver for TtyApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        let Ok(tty) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
        else {
            return ApprovalDecision::Cancel(
                "no terminal to ask for confirmation on, so the request was cancelled".into(),
            );
        };
        let mut out = &tty;
        let caps: Vec<String> = request.asking_for.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(
            out,
            "spear ({} mode) wants to run: {}",
            request.mode, request.command
        );
        let _ = writeln!(out, "  class {}; needs {}", request.class, caps.join(", "));
        for r in &request.reasons {
            let _ = writeln!(out, "  - {r}");
        }
        let _ = write!(out, "Allow? [y/N] ");
        let _ = out.flush();
        let mut line = String::new();
        match std::io::BufReader::new(&tty).read_line(&mut line) {
            Ok(0) | Err(_) => {
                ApprovalDecision::Cancel("the terminal closed before an answer".into())
            }
            Ok(_) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
                ApprovalDecision::Approve
            }
            Ok(_) => ApprovalDecision::Deny(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_joined_with_quoting() {
        assert_eq!(join_command(&["echo hi | wc".into()]), "echo hi | wc");
        assert_eq!(
            join_command(&["printf".into(), "%s\n".into(), "it's".into()]),
            "printf '%s\n' 'it'\\''s'"
        );
    }

    #[test]
    fn exit_codes_follow_the_design() {
        let mut ok = ToolResult::ok("");
        ok.exit_code = Some(3);
        assert_eq!(exit_code(&ok), 3);
        assert_eq!(
            exit_code(&ToolResult::refused(ToolStatus::Timeout, "t")),
            124
        );
        assert_eq!(exit_code(&ToolResult::denied("d")), 126);
        assert_eq!(exit_code(&ToolResult::cancelled("c")), 126);
        assert_eq!(
            exit_code(&ToolResult::refused(ToolStatus::NotFound, "n")),
            127
        );
        assert_eq!(exit_code(&ToolResult::failed("no bwrap")), 125);
    }
}
