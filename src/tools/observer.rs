//! Observer hooks around every routed call. `before` runs once the gates have passed and the
//! action has said what it will do (its preview); `after` runs for every call that reached a
//! registered tool, refused or not. The audit observer records mutating attempts and refusals;
//! the preview observer is how the TUI shows a pending change.

use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::harness::audit::{
    AuditError, AuditEvent, AuditLogger, AuditTarget, DecidedBy, Decision, GrantRef,
};
use crate::harness::audit::{HookRun, McpToolRef};
use crate::harness::command_policy::CommandClass;
use crate::harness::primitives::ExecutionMode;
use crate::harness::rules::RuleRef;
use crate::tools::envelope::ToolResultEnvelope;
use crate::tools::pipeline::Step;
use crate::tools::preview::Preview;

/// An observer could not do its job; for the audit observer that ends the turn.
#[derive(Debug, Error)]
pub enum ObserverError {
    #[error("audit: {0}")]
    Audit(#[from] AuditError),
}

/// A call about to run.
#[derive(Debug, Clone)]
pub struct CallStart<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    pub mode: ExecutionMode,
    pub target: Option<&'a str>,
    /// The call's arguments as the router validated them.
    pub arguments: &'a serde_json::Value,
    /// What the call will do (a file change, a command), as the tool computed it.
    pub preview: Option<&'a Preview>,
}

/// A call that ended (or was refused).
#[derive(Debug, Clone)]
pub struct CallEnd<'a> {
    pub tool: &'a str,
    pub mode: ExecutionMode,
    pub mutates: bool,
    /// The audit target: a path as written, or the command line.
    pub target: Option<&'a str>,
    pub is_command: bool,
    pub class: Option<CommandClass>,
    pub decision: Decision,
    pub duration: Duration,
    pub bytes_written: Option<u64>,
    pub envelope: &'a ToolResultEnvelope,
    /// The steps of the call path this call passed, in order (`pipeline::SPEC_ORDER` for a
    /// call that passed them all; the last is `Record`, which these hooks are).
    pub steps: &'a [Step],
    /// Who decided (the mode, a person, a session grant, a gate's policy); `None` when nobody
    /// could (a cancelled question).
    pub decided_by: Option<DecidedBy>,
    /// The session grant that answered, when one did.
    pub grant: Option<GrantRef>,
    /// The permission rule that decided, when one did.
    pub rule: Option<RuleRef>,
    /// The person's hooks that ran for the call.
    pub hooks: &'a [HookRun],
    /// The MCP tool the call reached.
    pub mcp_tool: Option<&'a McpToolRef>,
}

pub trait ToolObserver: Send + Sync {
    fn before(&self, _call: &CallStart<'_>) -> Result<(), ObserverError> {
        Ok(())
    }
    fn after(&self, _call: &CallEnd<'_>) -> Result<(), ObserverError> {
        Ok(())
    }
    /// An answer named approval request `request` (shown as its number), which was not
    /// pending: it decided nothing.
    fn answer_refused(&self, _request: &str) -> Result<(), ObserverError> {
        Ok(())
    }
    /// The person took changes back (`/undo`): a restore is an audited event.
    fn undone(&self, _event: &AuditEvent) -> Result<(), ObserverError> {
        Ok(())
    }
}

/// Writes an `AuditEvent` for every mutating attempt and every refusal.
pub struct AuditObserver {
    logger: Arc<AuditLogger>,
    session: SessionLabel,
    /// Said in every command's record: who commands run as, when not the sandbox's own user.
    sandbox_user: Option<&'static str>,
}

/// What a command's audit record says when a root Spear runs commands as the host's root.
pub const HOST_ROOT_NOTE: &str = "host-root (root_uid = \"host\")";

/// The session the audit records name: shared, so the session a front end starts or reopens
/// after the harness was built is the one its calls' records carry (one id in the audit log,
/// the session list and the screen).
#[derive(Debug, Clone)]
pub struct SessionLabel(Arc<std::sync::RwLock<String>>);

impl SessionLabel {
    pub fn new(name: impl Into<String>) -> Self {
        SessionLabel(Arc::new(std::sync::RwLock::new(name.into())))
    }

    pub fn set(&self, name: &str) {
        if let Ok(mut g) = self.0.write() {
            *g = name.to_string();
        }
    }

    pub fn get(&self) -> String {
        self.0.read().map(|g| g.clone()).unwrap_or_default()
    }
}

impl From<&str> for SessionLabel {
    fn from(s: &str) -> Self {
        SessionLabel::new(s)
    }
}

impl From<String> for SessionLabel {
    fn from(s: String) -> Self {
        SessionLabel::new(s)
    }
}

impl AuditObserver {
    pub fn new(logger: Arc<AuditLogger>, session: impl Into<SessionLabel>) -> Self {
        AuditObserver {
            logger,
            session: session.into(),
            sandbox_user: None,
        }
    }

    /// Every command's record says the commands ran as `note` (see [`HOST_ROOT_NOTE`]).
    pub fn with_sandbox_user(mut self, note: Option<&'static str>) -> Self {
        self.sandbox_user = note;
        self
    }

    /// The event for a call's end. Public so the router can record the turn stop the same way.
    pub fn event(&self, call: &CallEnd<'_>) -> AuditEvent {
        let env = call.envelope;
        AuditEvent {
            target: match (call.target, call.is_command) {
                (Some(t), true) => AuditTarget::Command(t.to_string()),
                (Some(t), false) => AuditTarget::Path(t.to_string()),
                (None, _) => AuditTarget::None,
            },
            class: call.class,
            mode: Some(call.mode),
            status: Some(env.status),
            exit_code: env.exit_code,
            duration: Some(call.duration),
            bytes_written: call.bytes_written,
            output_bytes: Some(env.total_bytes),
            changed_paths: Some(env.changed_paths.len() as u64),
            changed: env.changed_paths.clone(),
            changes_incomplete: env.changes.as_ref().is_some_and(|c| c.incomplete.is_some()),
            refusal_rule: env.refusal_rule.clone(),
            decided_by: call.decided_by,
            grant: call.grant,
            rule: call.rule.clone(),
            hooks: call.hooks.to_vec(),
            checkpoint: env.checkpoint.clone(),
            mcp_tool: call.mcp_tool.cloned(),
            connections: env.connections.clone(),
            sandbox_user: self
                .sandbox_user
                .filter(|_| call.is_command)
                .map(str::to_string),
            ..AuditEvent::new(self.session.get(), call.tool, call.decision)
        }
    }
}

impl ToolObserver for AuditObserver {
    fn after(&self, call: &CallEnd<'_>) -> Result<(), ObserverError> {
        let refused = !matches!(call.decision, Decision::Allowed | Decision::Approved);
        // A read-only tool that wrote anyway (fetch_url's save_as) made a mutation too.
        let mutating = (call.mutates && call.class != Some(CommandClass::ReadOnly))
            || call.bytes_written.is_some()
            || !call.envelope.changed_paths.is_empty();
        if refused || mutating || call.is_command {
            self.logger.append(&self.event(call))?;
        }
        Ok(())
    }

    fn undone(&self, event: &AuditEvent) -> Result<(), ObserverError> {
        self.logger.append(event)?;
        Ok(())
    }

    fn answer_refused(&self, request: &str) -> Result<(), ObserverError> {
        // Metadata only: which request the answer named, as the rule it broke.
        self.logger.append(&AuditEvent {
            target: AuditTarget::None,
            refusal_rule: Some(format!("not_pending:{request}")),
            ..AuditEvent::new(self.session.get(), "approval", Decision::AnswerRefused)
        })?;
        Ok(())
    }
}

/// Shown a pending change before it is authorized (the TUI's preview pane).
pub trait PreviewObserver: Send + Sync {
    fn preview(&self, call_id: &str, tool: &str, target: Option<&str>, preview: &Preview);
}

/// Makes a `PreviewObserver` a `ToolObserver`.
pub struct PreviewHook<P>(pub P);

impl<P: PreviewObserver> ToolObserver for PreviewHook<P> {
    fn before(&self, call: &CallStart<'_>) -> Result<(), ObserverError> {
        if let Some(p) = call.preview {
            self.0.preview(call.call_id, call.tool, call.target, p);
        }
        Ok(())
    }
}
