//! What the subcommands that run tools share: the config's harness part, asking on the
//! terminal, and DESIGN.md's exit codes.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use spear::harness::audit::display::escape_controls;
use spear::harness::command_policy::{ApprovalDecision, ApprovalRequest, Approver};
use spear::harness::primitives::ToolStatus;

/// The harness's part of the configuration file, for subcommands that run no model.
pub fn harness_settings() -> anyhow::Result<spear::config::HarnessSettings> {
    let path = spear::config::default_path()?;
    Ok(spear::config::load_harness(&path)?)
}

/// DESIGN.md's exit codes: the command's own when it ran, 124 timeout, 126 refused or
/// cancelled, 127 not found, 125 when Spear could not run it.
pub fn exit_code(status: ToolStatus, code: Option<i32>) -> ExitCode {
    ExitCode::from(exit_number(status, code))
}

/// The number behind [`exit_code`].
pub fn exit_number(status: ToolStatus, code: Option<i32>) -> u8 {
    let n = match status {
        ToolStatus::Ok => code.map_or(0, |c| c.clamp(0, 255)),
        ToolStatus::Timeout => 124,
        ToolStatus::Denied | ToolStatus::Cancelled | ToolStatus::InvalidPath => 126,
        ToolStatus::NotFound => 127,
        ToolStatus::Failed => code.map_or(125, |c| c.clamp(1, 255)),
    };
    u8::try_from(n).unwrap_or(125)
}

/// Asks on the controlling terminal; without one, the answer is `cancelled`.
pub struct TtyApprover;

impl Approver for TtyApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        let caps: Vec<String> = request.asking_for.iter().map(|c| c.to_string()).collect();
        ask_on_tty(
            &format!(
                "spear ({} mode) wants to run: {}",
                request.mode, request.command
            ),
            &format!("class {}; needs {}", request.class, caps.join(", ")),
            &request.reasons,
        )
    }
}

/// Put one yes/no question on the controlling terminal (never stdin: that may be the
/// objective or a pipe). No terminal, or no answer, is `cancelled`; anything but yes is no.
pub fn ask_on_tty(headline: &str, detail: &str, reasons: &[String]) -> ApprovalDecision {
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
    // What the person approves must be what they read: escaped, never interpreted.
    let _ = writeln!(out, "{}", escape_controls(headline));
    let _ = writeln!(out, "  {}", escape_controls(detail));
    for r in reasons {
        let _ = writeln!(out, "  - {}", escape_controls(r));
    }
    let _ = write!(out, "Allow? [y/N] ");
    let _ = out.flush();
    let mut line = String::new();
    match std::io::BufReader::new(&tty).read_line(&mut line) {
        Ok(0) | Err(_) => ApprovalDecision::Cancel("the terminal closed before an answer".into()),
        Ok(_) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
            ApprovalDecision::Approve
        }
        Ok(_) => ApprovalDecision::Deny(None),
    }
}
