//! What the audit log records: the event a caller reports (`AuditEvent`) and the stored line
//! (`AuditRecord`). Metadata only: never stdout, stderr or file contents.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::summary::summarize_command;
use crate::harness::command_policy::CommandClass;
use crate::harness::egress::NetConnection;
use crate::harness::primitives::{ExecutionMode, ToolStatus};
use crate::harness::rules::RuleRef;
use crate::harness::secrets::redact_text;

/// How the harness decided a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The mode granted it without asking.
    Allowed,
    /// The person was asked and said yes.
    Approved,
    /// The mode or the person said no.
    Denied,
    /// No answer could be had.
    Cancelled,
    /// A policy refused the target (workspace or target policy).
    Refused,
    /// The same refused request was repeated too often and the turn was stopped.
    RepeatedRefusalStopped,
    /// Written by the logger itself: an incomplete line left by a killed writer was set aside.
    Recovered,
    /// An answer named an approval request that was not pending (answered already, cancelled,
    /// never asked): it decided nothing, and is kept so a late or forged answer is on record.
    AnswerRefused,
}

impl Decision {
    /// A short label for aligned human output.
    pub fn label(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Approved => "approved",
            Decision::Denied => "denied",
            Decision::Cancelled => "cancelled",
            Decision::Refused => "refused",
            Decision::RepeatedRefusalStopped => "stopped",
            Decision::Recovered => "recovered",
            Decision::AnswerRefused => "answer refused",
        }
    }
}

/// Who took a call's decision (recorded as `decided_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The mode granted or refused it without asking.
    Mode,
    /// A person was asked and answered.
    Person,
    /// A grant a person gave earlier in the session ("allow for session") answered; `grant`
    /// names it.
    SessionGrant,
    /// A gate refused the call before it reached authorization (workspace, target policy, ...).
    Policy,
    /// A permission rule decided (an allow where the mode would ask, or a deny); `rule` names
    /// it.
    Rule,
    /// The command's class refused it (DANGEROUS, in every mode).
    Class,
    /// One of the person's `pre_tool` hooks refused it.
    Hook,
    /// The MCP client of `spear mcp serve` answered the question (through elicitation): a
    /// person behind it, or the client itself; Spear cannot tell which.
    McpClient,
}

/// The session grant that answered a call: its number in the session and the class it was
/// given for. The command it was given for is the record's `target` (a grant matches only
/// exactly that command and class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRef {
    pub id: u64,
    pub class: CommandClass,
}

/// One run of a person's hook for a call: which, the program, and what it answered
/// (`proceed`, `ask`, `deny: …`, `observed`, `failed: …`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRun {
    pub event: String,
    pub program: String,
    pub answer: String,
}

/// The MCP tool a call reached, as it was described when the call was decided: the hash of
/// its name, description and input schema, and what changed (a grant or rule speaks for one
/// version only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolRef {
    pub server: String,
    pub tool: String,
    /// SHA-256 (hex) of the tool's name, description and input schema.
    pub hash: String,
    /// Absent: the version last let run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<ToolSeen>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

/// How an MCP tool compared with the version last let run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolSeen {
    /// Never seen before: pinned by this call.
    FirstSeen,
    /// Not the version last let run (`previous` says which that was): the person was asked.
    Changed,
    /// Not listed when its server was first seen: the person was asked.
    New,
}

/// What a call was aimed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditTarget {
    None,
    /// A file path, as written.
    Path(String),
    /// A command line: leading assignments are split off and everything is redacted.
    Command(String),
}

/// One call as the tool layer reports it. Build with `AuditEvent::new` and set what applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEvent {
    pub session: String,
    pub tool: String,
    pub target: AuditTarget,
    pub class: Option<CommandClass>,
    pub mode: Option<ExecutionMode>,
    pub decision: Decision,
    pub status: Option<ToolStatus>,
    pub exit_code: Option<i32>,
    pub duration: Option<Duration>,
    /// Bytes written to files by the call.
    pub bytes_written: Option<u64>,
    /// Size of the output the call produced (its content is never recorded).
    pub output_bytes: Option<u64>,
    pub changed_paths: Option<u64>,
    /// The changed paths themselves, workspace-relative (the record lists the first
    /// `MAX_CHANGED_LISTED`; `changed_paths` counts them all).
    pub changed: Vec<String>,
    /// The comparison that found them could not see the whole workspace.
    pub changes_incomplete: bool,
    /// The refusal kind or rule (`symlink_escape`, `third_party`, ...).
    pub refusal_rule: Option<String>,
    /// Who decided; `None` when nobody could (an approval that was cancelled).
    pub decided_by: Option<DecidedBy>,
    /// The session grant that answered, when `decided_by` is `SessionGrant`.
    pub grant: Option<GrantRef>,
    /// The permission rule that decided, when `decided_by` is `Rule`.
    pub rule: Option<RuleRef>,
    /// The person's hooks that ran for the call.
    pub hooks: Vec<HookRun>,
    /// The checkpoint taken before the call (its session turn and manifest), and the paths it
    /// could not take back.
    pub checkpoint: Option<CheckpointRef>,
    /// Who a command ran as, when not the usual unprivileged sandbox user (a root Spear with
    /// `[sandbox] root_uid = "host"`).
    pub sandbox_user: Option<String>,
    /// The MCP tool the call reached, with the version it was decided on.
    pub mcp_tool: Option<McpToolRef>,
    /// Every connection a command asked the egress proxy for (host, port, bytes, refusal).
    pub connections: Vec<NetConnection>,
}

impl AuditEvent {
    pub fn new(session: impl Into<String>, tool: impl Into<String>, decision: Decision) -> Self {
        AuditEvent {
            session: session.into(),
            tool: tool.into(),
            target: AuditTarget::None,
            class: None,
            mode: None,
            decision,
            status: None,
            exit_code: None,
            duration: None,
            bytes_written: None,
            output_bytes: None,
            changed_paths: None,
            changed: Vec::new(),
            changes_incomplete: false,
            refusal_rule: None,
            decided_by: None,
            grant: None,
            rule: None,
            hooks: Vec::new(),
            sandbox_user: None,
            checkpoint: None,
            mcp_tool: None,
            connections: Vec::new(),
        }
    }
}

/// One stored line. Field order is the line's byte order, which the hash chain covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub v: u32,
    pub seq: u64,
    pub time: String,
    pub session: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<CommandClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ExecutionMode>,
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_written: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_paths: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changes_incomplete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_rule: Option<String>,
    /// Who decided (an addition to format 1: older records have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<DecidedBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantRef>,
    /// The permission rule that decided: its origin, file and id (an addition to format 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleRef>,
    /// The person's hooks that ran for the call (an addition to format 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRun>,
    /// Who the command ran as, when that is the host's root (an addition to format 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_user: Option<String>,
    /// The checkpoint taken before the call (an addition to format 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointRef>,
    /// The MCP tool the call reached (an addition to format 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tool: Option<McpToolRef>,
    /// The connections a command asked the egress proxy for (an addition to format 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<NetConnection>,
    /// Hash of the previous record (64 zeros for the first).
    pub prev: String,
}

/// Which checkpoint a call can be taken back to, as its audit record says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRef {
    /// The session's turn (`spear undo --turn N`).
    pub turn: u32,
    /// The manifest taken just before the call.
    pub before: String,
    /// Paths it could not take (the first `MAX_CHANGED_LISTED`), so the call cannot be taken
    /// back there; or why no checkpoint was taken at all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncovered: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

pub(crate) const FORMAT_VERSION: u32 = 1;

/// Changed paths one record lists at most: the log is metadata, and a command that touched a
/// million files must not make a line of a hundred megabytes.
pub const MAX_CHANGED_LISTED: usize = 200;

impl AuditRecord {
    /// The record for `event`, redacted, not yet chained (`seq` and `prev` are set on append).
    pub(crate) fn from_event(event: &AuditEvent) -> Self {
        let (target, env) = match &event.target {
            AuditTarget::None => (None, Vec::new()),
            AuditTarget::Path(p) => (Some(redact_text(p).into_owned()), Vec::new()),
            AuditTarget::Command(c) => {
                let s = summarize_command(c);
                (Some(s.summary), s.env)
            }
        };
        AuditRecord {
            v: FORMAT_VERSION,
            seq: 0,
            time: rfc3339_now(),
            session: redact_text(&event.session).into_owned(),
            tool: event.tool.clone(),
            target,
            env,
            class: event.class,
            mode: event.mode,
            decision: event.decision,
            status: event.status,
            exit_code: event.exit_code,
            duration_ms: event
                .duration
                .map(|d| d.as_millis().min(u64::MAX as u128) as u64),
            bytes_written: event.bytes_written,
            output_bytes: event.output_bytes,
            changed_paths: event.changed_paths,
            changed: event
                .changed
                .iter()
                .take(MAX_CHANGED_LISTED)
                .map(|p| redact_text(p).into_owned())
                .collect(),
            changes_incomplete: event.changes_incomplete,
            refusal_rule: event.refusal_rule.clone(),
            decided_by: event.decided_by,
            grant: event.grant,
            rule: event.rule.clone(),
            hooks: event
                .hooks
                .iter()
                .map(|h| HookRun {
                    answer: redact_text(&h.answer).into_owned(),
                    ..h.clone()
                })
                .collect(),
            sandbox_user: event.sandbox_user.clone(),
            checkpoint: event.checkpoint.clone().map(|c| CheckpointRef {
                uncovered: c
                    .uncovered
                    .iter()
                    .take(MAX_CHANGED_LISTED)
                    .map(|p| redact_text(p).into_owned())
                    .collect(),
                ..c
            }),
            mcp_tool: event.mcp_tool.clone(),
            connections: event.connections.clone(),
            prev: String::new(),
        }
    }
}

/// Now, as `2026-11-30T15:43:00.123Z`.
pub(crate) fn rfc3339_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since)
}

/// A duration since the epoch as RFC 3339 UTC with milliseconds (no calendar crate needed).
pub fn rfc3339(since_epoch: Duration) -> String {
    let secs = since_epoch.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since_epoch.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

impl AuditRecord {
    /// One aligned human line: time, `decision` (already padded or coloured by the caller),
    /// tool, status, exit code, target, rule and changes, every text escaped
    /// (`escape_controls`). `spear audit` and the TUI's audit pane share it.
    pub fn summary(&self, decision: &str) -> String {
        use crate::harness::audit::display::escape_controls;
        let r = self;
        let time = r.time.get(..19).unwrap_or(&r.time).replace('T', " ");
        let time = escape_controls(&time);
        let status = r.status.map(|s| s.as_str()).unwrap_or("-");
        let exit = r.exit_code.map_or("-".to_string(), |c| c.to_string());
        let mut line = format!(
            "{time}  {decision}  {:<12}  {status:<12}  {exit:>4}  {}",
            escape_controls(&r.tool),
            escape_controls(r.target.as_deref().unwrap_or("-"))
        );
        if let Some(rule) = &r.refusal_rule {
            line.push_str(&format!("  [{}]", escape_controls(rule)));
        }
        if !r.changed.is_empty() {
            let shown: Vec<_> = r.changed.iter().map(|p| escape_controls(p)).collect();
            line.push_str(&format!("  changed: {}", shown.join(", ")));
            let more = r
                .changed_paths
                .unwrap_or(0)
                .saturating_sub(shown.len() as u64);
            if more > 0 {
                line.push_str(&format!(" and {more} more"));
            }
        }
        if r.changes_incomplete {
            line.push_str("  [changes possibly incomplete]");
        }
        if !r.connections.is_empty() {
            let shown: Vec<String> = r
                .connections
                .iter()
                .map(|c| {
                    let what = match &c.refused {
                        Some(_) => "refused",
                        None => "reached",
                    };
                    format!("{} {what}", escape_controls(&c.target()))
                })
                .collect();
            line.push_str(&format!("  net: {}", shown.join(", ")));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(
            rfc3339(Duration::from_millis(0)),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339(Duration::from_millis(951_782_400_123)),
            "2000-02-29T00:00:00.123Z"
        );
        assert_eq!(
            rfc3339(Duration::from_secs(1_796_053_380)),
            "2026-11-30T15:43:00.000Z"
        );
    }
}
