//! What `spear run` shows of a task's events. Human: the model's text as it streams on stdout,
//! one line per tool call with its status, notes and errors on stderr, and a spinner on stderr
//! only when stderr is a terminal. `--json`: each event as one line on stdout, nothing else
//! there. Invariant: the events carry no secret, and nothing else from the settings is printed.

use std::io::{IsTerminal, Write};

use spear::agent::event::{AgentEvent, StopReason};
use spear::harness::audit::display::{escape_controls, escape_controls_keeping_lines};
use spear::harness::primitives::ToolStatus;
use spear::harness::secrets::redact_text;
use spear::tools::envelope::ToolResultEnvelope;

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub struct Printer {
    json: bool,
    /// Whether a spinner may be drawn (stderr is a terminal and the output is for people).
    spinner_allowed: bool,
    /// What the spinner says, while something is awaited.
    waiting: Option<String>,
    frame: usize,
    drawn: bool,
    /// Whether stdout is at the start of a line (text may stream without a newline).
    at_line_start: bool,
    in_reasoning: bool,
    /// What the running call aims at (a path, a command), for its status line.
    target: String,
}

impl Printer {
    pub fn new(json: bool) -> Self {
        Printer {
            json,
            spinner_allowed: !json && std::io::stderr().is_terminal(),
            waiting: Some("thinking".into()),
            frame: 0,
            drawn: false,
            at_line_start: true,
            in_reasoning: false,
            target: String::new(),
        }
    }

    pub fn spinning(&self) -> bool {
        self.spinner_allowed && self.waiting.is_some()
    }

    /// Draw the next spinner frame.
    pub fn tick(&mut self) {
        let Some(label) = self.waiting.as_deref().filter(|_| self.spinner_allowed) else {
            return;
        };
        self.frame = (self.frame + 1) % FRAMES.len();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{} {label}\x1b[K", FRAMES[self.frame]);
        let _ = err.flush();
        self.drawn = true;
    }

    fn clear_spinner(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.drawn = false;
        }
    }

    fn end_line(&mut self) {
        if !self.at_line_start {
            println!();
            self.at_line_start = true;
        }
    }

    fn note(&mut self, text: &str) {
        self.clear_spinner();
        self.end_line();
        eprintln!("spear: {}", visible(text));
    }

    /// Show one event.
    pub fn event(&mut self, event: &AgentEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            return;
        }
        if !matches!(event, AgentEvent::ReasoningDelta { .. }) && self.in_reasoning {
            self.clear_spinner();
            eprintln!();
            self.in_reasoning = false;
        }
        match event {
            AgentEvent::TextDelta { text } => {
                self.clear_spinner();
                self.waiting = None;
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(visible_text(text).as_bytes());
                let _ = out.flush();
                self.at_line_start = text.ends_with('\n');
            }
            AgentEvent::ReasoningDelta { text } => {
                self.clear_spinner();
                self.end_line();
                let mut err = std::io::stderr().lock();
                if !self.in_reasoning {
                    let _ = write!(err, "thinking: ");
                    self.in_reasoning = true;
                }
                let _ = err.write_all(visible_text(text).as_bytes());
                let _ = err.flush();
            }
            AgentEvent::ToolCallStarted {
                name, arguments, ..
            } => {
                self.clear_spinner();
                self.end_line();
                self.target = status_target(arguments);
                self.waiting = Some(format!("running {name}"));
            }
            AgentEvent::ToolCallFinished { envelope, .. } => {
                self.clear_spinner();
                self.end_line();
                println!("{}", visible(&tool_line(envelope, &self.target)));
                self.waiting = Some("thinking".into());
            }
            AgentEvent::ApprovalRequested { .. } => {
                self.clear_spinner();
                self.end_line();
                self.waiting = None;
            }
            AgentEvent::ApprovalAnswerRefused { reason, .. }
            | AgentEvent::ApprovalWithdrawn { reason, .. } => self.note(reason),
            AgentEvent::Truncated { message, .. } => self.note(&format!("truncated: {message}")),
            AgentEvent::Retrying {
                attempt,
                delay_ms,
                why,
            } => self.note(&format!(
                "retrying in {:.1} s (attempt {attempt}): {why}",
                *delay_ms as f64 / 1000.0
            )),
            AgentEvent::Compacted {
                how,
                tokens_before,
                tokens_after,
            } => self.note(&format!(
                "the conversation was compacted ({how}): about {tokens_before} -> {tokens_after} tokens"
            )),
            AgentEvent::RequestClassified { .. } | AgentEvent::PassStarted { .. } => {
                self.clear_spinner();
                self.end_line();
                if let Some(line) = event.normative_line() {
                    self.note(&line);
                }
            }
            AgentEvent::Error { message } => self.note(&format!("error: {message}")),
            AgentEvent::Done {
                reason, message, ..
            } => {
                self.waiting = None;
                self.clear_spinner();
                self.end_line();
                match (reason, message) {
                    (StopReason::Finished, _) | (StopReason::Error, _) => {}
                    (StopReason::Cancelled, _) => eprintln!("spear: cancelled"),
                    (_, Some(m)) => eprintln!("spear: stopped: {m}"),
                    (_, None) => eprintln!("spear: stopped"),
                }
            }
            AgentEvent::OutputChunk { .. } | AgentEvent::Usage { .. } => {}
        }
    }
}

/// `  ✓ read_file src/lib.rs` or `  ✗ patch src/lib.rs: denied: reason`.
/// What a call aims at, for its status line: the path, command or pattern, redacted as the
/// audit log redacts it (a line on a terminal or in a CI log is shown to whoever reads it), and
/// cut to 120 characters.
fn status_target(arguments: &serde_json::Value) -> String {
    [
        "path", "command", "pattern", "query", "clause", "pages", "url",
    ]
    .iter()
    .find_map(|k| arguments.get(*k).and_then(|v| v.as_str()))
    .map(|t| redact_text(t).chars().take(120).collect())
    .unwrap_or_default()
}

fn tool_line(env: &ToolResultEnvelope, target: &str) -> String {
    let mark = if env.succeeded() { "✓" } else { "✗" };
    let mut line = format!("  {mark} {} {target} [{}]", env.tool, env.status);
    if let Some(code) = env.exit_code.filter(|c| *c != 0) {
        line.push_str(&format!(" exit {code}"));
    }
    if !env.changed_paths.is_empty() {
        line.push_str(&format!(" changed {}", env.changed_paths.join(", ")));
    }
    if let Some(r) = env
        .reason
        .as_deref()
        .filter(|_| env.status != ToolStatus::Ok)
    {
        let first: String = r.lines().next().unwrap_or("").chars().take(200).collect();
        line.push_str(&format!(": {first}"));
    }
    line
}

/// Model text with its line breaks and tabs, other control characters escaped (a model can be
/// made to repeat what a hostile file says, escape sequences included).
/// The model's prose with its lines and tabs, every other control or invisible format
/// character (ESC, CR, a bidi override) shown escaped.
fn visible_text(s: &str) -> String {
    escape_controls_keeping_lines(s).into_owned()
}

/// One line for a person: control and format characters (a command's ESC, BEL, CR, a bidi
/// override) shown escaped, so a tool line cannot move the cursor, fake other lines or reverse
/// what is read.
fn visible(s: &str) -> String {
    escape_controls(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{status_target, tool_line, visible, visible_text};
    use spear::harness::primitives::{ToolResult, ToolStatus};
    use spear::tools::envelope::ToolResultEnvelope;

    /// Issue 21: a command that ran and exited non-zero is not marked as a success.
    #[test]
    fn a_non_zero_exit_is_marked_as_a_failure() {
        let mut r = ToolResult::ok("");
        r.exit_code = Some(3);
        let env = ToolResultEnvelope::build("c", "terminal", r, None);
        assert_eq!(env.status, ToolStatus::Ok);
        let line = tool_line(&env, "false");
        assert!(line.starts_with("  ✗ terminal false [ok] exit 3"), "{line}");
        let env = ToolResultEnvelope::build("c", "terminal", ToolResult::ok("x"), None);
        assert!(tool_line(&env, "true").starts_with("  ✓ "));
    }

    /// Issue 20 item 11: the plain output escapes bidi and invisible format characters, and
    /// keeps the answer's lines and tabs.
    #[test]
    fn plain_output_escapes_bidi_and_keeps_lines() {
        assert_eq!(
            visible_text("a\u{202e}b\tc\n\u{2066}d\x1b[2J"),
            "a\\u{202e}b\tc\n\\u{2066}d\\x1b[2J"
        );
        assert_eq!(visible("x\u{200f}\ny"), "x\\u{200f}\\ny");
    }

    /// Issue 10, item 5: the status line of a call shows its command redacted.
    #[test]
    fn the_status_line_target_is_redacted() {
        let args = serde_json::json!({"command": "sshpass -p Hunter2pw ssh host uptime"});
        let shown = status_target(&args);
        assert!(!shown.contains("Hunter2pw"), "{shown}");
        assert!(
            shown.contains("[REDACTED]") && shown.contains("ssh host"),
            "{shown}"
        );
        assert_eq!(
            status_target(&serde_json::json!({"path": "src/a.rs"})),
            "src/a.rs"
        );
    }
}
