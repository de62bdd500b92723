//! What the subcommands that run tools share: the config's harness part, asking on the
//! terminal (the same preview the screen shows: the command with its class and reasons, or the
//! tool's diff cut to a head and a tail), and DESIGN.md's exit codes.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use spear::harness::audit::display::escape_controls;
use spear::harness::command_policy::ApprovalDecision;
use spear::harness::primitives::ToolStatus;
use spear::tools::approval::{CallApprovalRequest, CallApprover};
use spear::tools::preview::{Preview, head_and_tail};
use spear::tui::widgets::confirm::GUARD;

/// Diff lines the terminal prompt shows from the start of a change, and from its end.
const DIFF_HEAD: usize = 40;
const DIFF_TAIL: usize = 10;

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

impl CallApprover for TtyApprover {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        ask_request_on_tty(request)
    }
}

/// The question for `request` as the terminal shows it, one line a string: what the call will
/// do, its class and what it needs, every reason, then the tool's preview: a file change as a
/// unified diff cut to its first `DIFF_HEAD` and last `DIFF_TAIL` lines with the number of
/// lines left out between them. Unescaped: `ask_on_tty` escapes every line it prints.
pub fn prompt_lines(request: &CallApprovalRequest) -> Vec<String> {
    let caps: Vec<String> = request.asking_for.iter().map(|c| c.to_string()).collect();
    let change = request.preview.as_ref().and_then(Preview::file_change);
    let headline = match change {
        Some(f) => {
            let (added, removed) = f.counts();
            format!(
                "spear ({} mode) wants to {} `{}` with {} (+{added} -{removed})",
                request.mode,
                f.verb(),
                f.path,
                request.tool
            )
        }
        None => format!(
            "spear ({} mode) wants to run: {}",
            request.mode, request.command
        ),
    };
    let mut lines = vec![
        headline,
        format!("  class {}; needs {}", request.class, caps.join(", ")),
    ];
    lines.extend(request.reasons.iter().map(|r| format!("  - {r}")));
    if let Some(f) = change {
        let diff = f.unified_lines();
        let (head, tail, omitted) = head_and_tail(&diff, DIFF_HEAD, DIFF_TAIL);
        lines.extend(head.into_iter().map(|l| format!("  {l}")));
        if omitted > 0 {
            lines.push(format!("  ... {omitted} lines left out ..."));
        }
        lines.extend(tail.into_iter().map(|l| format!("  {l}")));
    }
    lines
}

/// Ask `request` on the controlling terminal (see [`ask_on_tty`]).
pub fn ask_request_on_tty(request: &CallApprovalRequest) -> ApprovalDecision {
    ask_on_tty(&prompt_lines(request))
}

/// Put one yes/no question on the controlling terminal (never stdin: that may be the
/// objective or a pipe). No terminal, or no answer, is `cancelled`; anything but yes is no.
pub fn ask_on_tty(lines: &[String]) -> ApprovalDecision {
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
    for l in lines {
        let _ = writeln!(out, "{}", escape_controls(l));
    }
    let _ = write!(out, "Allow? [y/N] ");
    let _ = out.flush();
    // Only a key pressed after the person could read the question answers it: what was typed
    // before it appeared (a `y` meant for something else, or typed ahead) and in the screen's
    // guard time after is discarded, as the screen's dialog ignores it.
    discard_typed_ahead(&tty);
    std::thread::sleep(GUARD);
    discard_typed_ahead(&tty);
    let mut line = String::new();
    match std::io::BufReader::new(&tty).read_line(&mut line) {
        Ok(0) | Err(_) => ApprovalDecision::Cancel("the terminal closed before an answer".into()),
        Ok(_) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
            ApprovalDecision::Approve
        }
        Ok(_) => ApprovalDecision::Deny(None),
    }
}

/// Drop the terminal's pending input. A failure leaves it in place; the answer is then read
/// as before, and nothing else depends on it.
fn discard_typed_ahead(tty: &std::fs::File) {
    let _ = rustix::termios::tcflush(tty, rustix::termios::QueueSelector::IFlush);
}

#[cfg(test)]
mod tests {
    use spear::harness::command_policy::CommandClass;
    use spear::harness::primitives::{Capability, CapabilitySet, ExecutionMode};
    use spear::tools::approval::ApprovalId;
    use spear::tools::preview::FileChange;

    use super::*;

    fn request(tool: &str, command: &str, preview: Option<Preview>) -> CallApprovalRequest {
        CallApprovalRequest {
            id: ApprovalId(1),
            call_id: "c1".into(),
            tool: tool.into(),
            mode: ExecutionMode::Ask,
            command: command.into(),
            class: CommandClass::WorkspaceMutating,
            asking_for: CapabilitySet::of(&[Capability::WorkspaceWrite]),
            reasons: vec!["it writes".into()],
            targets: Vec::new(),
            network: false,
            preview,
            always: Vec::new(),
        }
    }

    #[test]
    fn a_command_is_shown_with_its_class_and_reasons() {
        let lines = prompt_lines(&request("terminal", "touch a", None));
        assert_eq!(
            lines,
            [
                "spear (ASK mode) wants to run: touch a",
                "  class WORKSPACE_MUTATING; needs workspace_write",
                "  - it writes",
            ]
        );
    }

    #[test]
    fn a_long_diff_is_cut_to_a_head_and_a_tail_with_the_count_left_out() {
        let before: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let after: String = (0..100).map(|i| format!("LINE {i}\n")).collect();
        let change = FileChange::new("f.txt", Some(before.as_bytes()), Some(after.as_bytes()));
        let lines = prompt_lines(&request(
            "write_file",
            "write_file f.txt",
            Some(Preview::FileChange(change)),
        ));
        assert_eq!(
            lines[0],
            "spear (ASK mode) wants to change `f.txt` with write_file (+100 -100)"
        );
        // One hunk header and 200 changed lines: 40 shown, then the count, then 10.
        let diff = &lines[3..];
        assert_eq!(diff.len(), DIFF_HEAD + 1 + DIFF_TAIL);
        assert_eq!(diff[0], "  @@ -1,100 +1,100 @@");
        assert_eq!(diff[1], "  -line 0");
        assert_eq!(diff[DIFF_HEAD], "  ... 151 lines left out ...");
        assert_eq!(diff[diff.len() - 1], "  +LINE 99");
    }
}
