//! `spear exec`: one command through the whole harness, as a `terminal` call through the same
//! `ToolRouter` (built by the same wiring) as `spear tool` and the model's calls: the same gates
//! in the same order, ASK asking on the terminal, the sandbox, and the router's audit record.
//! What is its own: the command's output streams to this process's stdout and stderr as it
//! comes (the turn's output tap), the time limit is `--timeout` or else the sandbox's own 45 s
//! (a front-end override the terminal honours, not the model's 180 s), and the exit codes: the
//! command's own when it ran, 124 on timeout, 126 when refused or cancelled, 127 when not
//! found, 125 when Spear could not run it.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use spear::agent::builder::{Place, SessionBuilder};
use spear::harness::audit::display::escape_controls;
use spear::harness::command_runner::DEFAULT_TIMEOUT;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::executor::{OutputStream, OutputTap};
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::router::ToolCall;
use spear::tools::router::turn::Turn;

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
    let timeout = match args.timeout {
        Some(t) => {
            anyhow::ensure!(
                t > 0.0 && t.is_finite(),
                "--timeout must be a positive number of seconds"
            );
            Duration::from_secs_f64(t)
        }
        None => DEFAULT_TIMEOUT,
    };
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let place =
        Place::find(Some(cwd)).context("cannot use the current directory as the workspace")?;
    let session = session_id();
    let router = SessionBuilder::new(place, super::common::harness_settings()?, session.clone())
        .network(args.network)
        .router()?;
    let view = ToolExposurePolicy::view(router.registry(), &ExposureSettings::default());
    let mut turn = Turn::new(args.mode, view, super::common::TtyApprover);
    turn.command_timeout = Some(timeout);
    if !args.json {
        turn.output_tap = Some(Arc::new(Stdio));
    }
    let call = ToolCall {
        id: "exec-1".into(),
        name: "terminal".into(),
        arguments: serde_json::json!({ "command": join_command(&args.command) }),
    };
    let env = router
        .call(&mut turn, &call)
        .context("cannot write the audit record for this command")?;
    super::checkpoints::say_checkpoint(&env, &session);
    if args.json {
        println!("{}", result_json(&env));
    } else if env.status != ToolStatus::Ok {
        // The reason may quote the command or its stderr: shown escaped.
        eprintln!(
            "spear: {}: {}",
            env.status,
            escape_controls(env.reason.as_deref().unwrap_or("no reason given"))
        );
    }
    Ok(super::common::exit_code(env.status, env.exit_code))
}

/// `--json`: the ToolResult's fields (`status`, `reason`, `stdout`, `stderr`, `exit_code`,
/// `changed_paths`, `changes`) and the command's `class`, from the router's envelope.
fn result_json(env: &ToolResultEnvelope) -> serde_json::Value {
    let mut v = serde_json::json!({
        "status": env.status,
        "stdout": env.stdout,
        "stderr": env.stderr,
        "exit_code": env.exit_code,
        "changed_paths": env.changed_paths,
        "class": env.class,
    });
    if let Some(o) = v.as_object_mut() {
        if let Some(r) = &env.reason {
            o.insert("reason".into(), r.clone().into());
        }
        if let Some(c) = env
            .changes
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok())
        {
            o.insert("changes".into(), c);
        }
    }
    v
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

/// Without `--json`, the command's output goes to this process's stdout and stderr as it
/// comes (the ResultStore keeps it whole and the audit log records its size, as for any call).
struct Stdio;

impl OutputTap for Stdio {
    fn chunk(&self, _call_id: &str, stream: OutputStream, bytes: &[u8]) {
        // Flushed chunk by chunk: a prompt or a progress line without a newline shows too.
        let _ = match stream {
            OutputStream::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes).and_then(|()| out.flush())
            }
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
        use spear::harness::primitives::ToolResult;
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
