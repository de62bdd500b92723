//! `spear exec`: one command through the whole harness: classify, authorize (asking on the
//! terminal in ASK mode), run confined, print. Exit codes: the command's own when it ran, 124 on
//! timeout, 126 when refused or cancelled, 127 when not found, 125 when Spear could not run it.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use spear::harness::audit::display::escape_controls;
use spear::harness::audit::{AuditEvent, AuditTarget, Decision};
use spear::harness::command_policy::{AuthorizationResult, CommandPolicy, PolicyConfig};
use spear::harness::command_runner::{CommandRunner, RunRequest};
use spear::harness::primitives::{ExecutionMode, ToolResult, ToolStatus};
use spear::harness::process::{OutputSink, OutputStream};
use spear::harness::target_policy::TargetPolicy;
use spear::harness::workspace::Workspace;

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
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let workspace =
        Workspace::new(&cwd).context("cannot use the current directory as the workspace")?;
    let root = workspace.project_root().to_path_buf();
    let audit = super::common::open_audit(&root)?;
    let command = join_command(&args.command);
    let policy = CommandPolicy::new(PolicyConfig {
        network_enabled: args.network,
        workspace_root: Some(root.clone()),
        host_read_paths: Vec::new(),
    });
    let targets = TargetPolicy::default();
    let started = Instant::now();
    let assessment = policy.classify(&command);
    let mut event = AuditEvent::new(session_id(), "exec", Decision::Allowed);
    event.target = AuditTarget::Command(command.clone());
    event.class = Some(assessment.class);
    event.mode = Some(args.mode);
    let result = if let Err(refusal) = targets.check_command_writes(&workspace, &assessment) {
        event.decision = Decision::Refused;
        event.refusal_rule = Some(refusal.rule.as_str().to_string());
        ToolResult::denied(refusal.reason)
    } else {
        match policy.authorize(args.mode, &assessment, &super::common::TtyApprover) {
            AuthorizationResult::Denied { reason } => {
                event.decision = Decision::Denied;
                ToolResult::denied(reason)
            }
            AuthorizationResult::Cancelled { reason } => {
                event.decision = Decision::Cancelled;
                ToolResult::cancelled(reason)
            }
            AuthorizationResult::Granted { profile, asked, .. } => {
                if asked {
                    event.decision = Decision::Approved;
                }
                let mut config =
                    super::wiring::runner_config(&root, &super::wiring::harness_settings()?);
                // Only a writable run binds anything inside the workspace read-only; a
                // read-only one need not walk the tree for protected directories.
                if profile.workspace_write {
                    config.protected_paths =
                        targets.protected_dirs(&root, super::common::PROTECTED_SCAN_BUDGET);
                }
                if let Some(t) = args.timeout {
                    anyhow::ensure!(
                        t > 0.0 && t.is_finite(),
                        "--timeout must be a positive number of seconds"
                    );
                    config.default_timeout = Duration::from_secs_f64(t);
                }
                // The sandbox's messages already end with their io cause; as text, so that
                // `{:#}` does not print that cause twice.
                let runner = CommandRunner::new(config)
                    .map_err(|e| anyhow::anyhow!("cannot set up the sandbox: {e}"))?;
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("cannot start the async runtime")?;
                let request = RunRequest {
                    command: command.clone(),
                    profile,
                    timeout: None,
                };
                let mut sink = CountingSink {
                    echo: !args.json,
                    bytes: 0,
                };
                let result = rt.block_on(runner.run(&request, &mut sink));
                event.output_bytes = Some(sink.bytes);
                result
            }
        }
    };
    event.status = Some(result.status);
    event.exit_code = result.exit_code;
    event.duration = Some(started.elapsed());
    event.changed_paths = Some(result.changed_paths.len() as u64);
    event.changed.clone_from(&result.changed_paths);
    event.changes_incomplete = result
        .changes
        .as_ref()
        .is_some_and(|c| c.incomplete.is_some());
    audit
        .append(&event)
        .context("cannot write the audit record for this command")?;
    if args.json {
        let mut v = serde_json::to_value(&result)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("class".into(), serde_json::to_value(assessment.class)?);
        }
        println!("{v}");
    } else if result.status != ToolStatus::Ok {
        // The reason may quote the command or its stderr: shown escaped.
        eprintln!(
            "spear: {}: {}",
            result.status,
            escape_controls(result.reason.as_deref().unwrap_or("no reason given"))
        );
    }
    Ok(super::common::exit_code(result.status, result.exit_code))
}

/// A session id for one `spear exec` process: its pid and start time, enough to group records.
fn session_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("exec-{}-{secs}", std::process::id())
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

/// Counts the command's output (the audit records its size, never its content) and, unless
/// JSON was asked for, streams it to this process's stdout and stderr as it comes.
struct CountingSink {
    echo: bool,
    bytes: u64,
}

impl OutputSink for CountingSink {
    fn write(&mut self, stream: OutputStream, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        if !self.echo {
            return;
        }
        let _ = match stream {
            OutputStream::Stdout => std::io::stdout().write_all(bytes),
            OutputStream::Stderr => std::io::stderr().write_all(bytes),
        };
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
        use super::super::common::exit_number as code;
        let exit_code = |r: &ToolResult| code(r.status, r.exit_code);
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
