//! `ToolResultEnvelope`: a `ToolResult` normalised for the model and the TUI. It carries the
//! status and reason, the bounded preview the model is shown, how large the whole output was and
//! how much is shown, the `result://` id where the whole output is kept, the changed paths, the
//! terminal's class, and which gate (if any) stopped the call.

use serde::Serialize;

use crate::harness::audit::{CheckpointRef, DecidedBy};
use crate::harness::command_policy::CommandClass;
use crate::harness::primitives::{ToolResult, ToolStatus, WorkspaceChanges};
use crate::tools::lines::cut_middle;
use crate::tools::refusal::Gate;
use crate::tools::results::{PREVIEW_CHARS, StoreReport, StoredOutput};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolResultEnvelope {
    pub call_id: String,
    pub tool: String,
    pub status: ToolStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What goes into the model's context: at most `PREVIEW_CHARS` characters plus a marker.
    pub preview: String,
    /// The substrate's stdout and stderr, each bounded the same way (for `--json` and the TUI).
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i32>,
    pub changed_paths: Vec<String>,
    /// A command's changes by kind, and whether they could all be seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<WorkspaceChanges>,
    /// Every connection a command asked the egress proxy for: reached (bytes each way) or
    /// refused, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<crate::harness::egress::NetConnection>,
    /// The terminal command's class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<CommandClass>,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub shown_bytes: u64,
    pub shown_lines: u64,
    pub truncated: bool,
    /// `result://ID` when the output is kept in the ResultStore.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_id: Option<String>,
    /// What the store's limits did, when one was hit: what was kept (head and tail), how much
    /// was dropped, and which older results were evicted; `store_note` says it in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_note: Option<String>,
    /// The gate that stopped the call before its action ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
    /// The rule behind a refusal (`sibling_target`, `third_party`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal_rule: Option<String>,
    /// The command's outcome said the sandbox is missing.
    pub sandbox_unavailable: bool,
    /// This call stopped the turn (or came after it was stopped).
    pub turn_stopped: bool,
    /// Who decided the call (as its audit record says), when someone did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<DecidedBy>,
    /// The checkpoint taken before the call (a call that may change the working tree).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointRef>,
}

fn count_lines(s: &str) -> u64 {
    if s.is_empty() {
        0
    } else {
        s.lines().count() as u64
    }
}

impl ToolResultEnvelope {
    /// Normalise `result`. Output kept in the ResultStore comes as `stored` and its preview is
    /// what the model sees; otherwise stdout and stderr are shown, each cut around the middle to
    /// the preview budget.
    pub fn build(
        call_id: &str,
        tool: &str,
        result: ToolResult,
        stored: Option<&StoredOutput>,
    ) -> Self {
        let uri = stored.and_then(StoredOutput::addressable_uri);
        let (stdout, out_cut) = cut_middle(&result.stdout, PREVIEW_CHARS, uri.as_deref());
        let (stderr, err_cut) = cut_middle(&result.stderr, PREVIEW_CHARS, uri.as_deref());
        let (preview, total_bytes, total_lines, shown_bytes, shown_lines, truncated) = match stored
        {
            Some(s) => (
                s.preview.clone(),
                s.total_bytes,
                s.total_lines,
                s.shown_bytes,
                s.shown_lines,
                s.truncated,
            ),
            None => {
                let mut text = stdout.clone();
                if !stderr.is_empty() {
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(&stderr);
                }
                let total = (result.stdout.len() + result.stderr.len()) as u64;
                let lines = count_lines(&result.stdout) + count_lines(&result.stderr);
                (
                    text.clone(),
                    total,
                    lines,
                    text.len() as u64,
                    count_lines(&text),
                    out_cut || err_cut,
                )
            }
        };
        ToolResultEnvelope {
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            status: result.status,
            reason: result.reason,
            preview,
            stdout,
            stderr,
            exit_code: result.exit_code,
            changed_paths: result.changed_paths,
            changes: result.changes.map(|c| *c),
            connections: result.connections.map(|c| *c).unwrap_or_default(),
            class: None,
            total_bytes,
            total_lines,
            shown_bytes,
            shown_lines,
            truncated,
            result_id: uri,
            store: stored.map(|s| s.report).filter(StoreReport::hit),
            store_note: stored
                .filter(|s| s.report.hit())
                .map(|s| s.report.describe()),
            gate: None,
            refusal_rule: None,
            sandbox_unavailable: false,
            turn_stopped: false,
            decided_by: None,
            checkpoint: None,
        }
    }

    /// Whether the call did what it was asked without complaint: it ran (status Ok) and, for
    /// a command, exited 0. A person's views mark the call ✓ only then.
    pub fn succeeded(&self) -> bool {
        self.status == ToolStatus::Ok && self.exit_code.unwrap_or(0) == 0
    }

    /// The text a model receives for this call.
    pub fn model_text(&self) -> String {
        let mut out = String::new();
        if self.status != ToolStatus::Ok {
            out.push_str(&format!("[{}] ", self.status));
            if let Some(r) = &self.reason {
                out.push_str(r);
            }
            out.push('\n');
        }
        if let Some(code) = self.exit_code {
            out.push_str(&format!("[exit code {code}]\n"));
        }
        if let Some(c) = &self.changes {
            out.push_str(&changes_line(c));
        }
        if !self.connections.is_empty() {
            out.push_str(&connections_line(&self.connections));
        }
        if let Some(note) = &self.store_note {
            out.push_str(&format!("[result store: {note}]\n"));
        }
        out.push_str(&self.preview);
        out
    }
}

/// Where a command's connections went, for the model: each destination reached, and each
/// refused with the reason (so a failed download reads as the policy it was).
fn connections_line(connections: &[crate::harness::egress::NetConnection]) -> String {
    const NAMED: usize = 20;
    let mut parts: Vec<String> = connections
        .iter()
        .take(NAMED)
        .map(|c| {
            let times = if c.count > 1 {
                format!(" ×{}", c.count)
            } else {
                String::new()
            };
            match &c.refused {
                Some(why) => format!("refused {}{times}: {why}", c.target()),
                None => format!(
                    "reached {}{times} ({} B up, {} B down)",
                    c.target(),
                    c.bytes_up,
                    c.bytes_down
                ),
            }
        })
        .collect();
    if connections.len() > NAMED {
        parts.push(format!("and {} more", connections.len() - NAMED));
    }
    format!("[network through the egress proxy: {}]\n", parts.join("; "))
}

/// What a command changed, for the model: a few names of each kind, and whether the comparison
/// saw everything.
fn changes_line(c: &WorkspaceChanges) -> String {
    const NAMED: usize = 20;
    let list = |paths: &[String]| {
        let mut s = paths[..paths.len().min(NAMED)].join(", ");
        if paths.len() > NAMED {
            s.push_str(&format!(" and {} more", paths.len() - NAMED));
        }
        s
    };
    let mut parts = Vec::new();
    for (what, paths) in [
        ("created", &c.created),
        ("modified", &c.modified),
        ("deleted", &c.deleted),
    ] {
        if !paths.is_empty() {
            parts.push(format!("{what} {}", list(paths)));
        }
    }
    let mut line = if parts.is_empty() {
        "[the workspace is unchanged".to_string()
    } else {
        format!("[changed in the workspace: {}", parts.join("; "))
    };
    if let Some(why) = &c.incomplete {
        line.push_str(&format!(" (possibly incomplete: {why})"));
    }
    line.push_str("]\n");
    line
}
