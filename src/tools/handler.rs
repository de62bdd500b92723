//! What a tool implementation gives the router: a pure `plan` (targets to gate, the command to
//! classify and authorize) and an `Action` that does the work once every gate has passed. A plan
//! does no I/O, so nothing is read or written before the hard gates have judged the call.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::harness::command_policy::{CommandAssessment, CommandClass, ExecutionProfile};
use crate::harness::primitives::ToolResult;
use crate::harness::target_policy::Writer;
use crate::tools::executor::{CancelToken, OutputTap};
use crate::tools::host::SpearHost;
use crate::tools::host::gates::GatedPath;
use crate::tools::results::StoredOutput;

/// Which step of the call path stopped a call. Tests name gates by this; the envelope carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// No tool of that name is registered.
    UnknownTool,
    /// The arguments do not fit the schema.
    Schema,
    /// The tool is not offered to this turn.
    RequestScope,
    /// Workspace confinement refused a path (traversal, sibling, symlink escape, outside).
    Workspace,
    /// The target policy refused a write (generated, snapshot, third-party).
    TargetPolicy,
    /// The sandbox was reported down earlier in this turn: writes are declined.
    SandboxDown,
    /// The tool may not run in the current mode.
    ExecutionModes,
    /// The tool refused its arguments (a timeout above the maximum, host-command syntax).
    Arguments,
    /// The mode does not grant what the call needs (or the call is DANGEROUS).
    Authorization,
    /// The person said no, or could not be asked.
    Approval,
    /// The turn was stopped earlier for repeating a refused call.
    TurnStopped,
}

impl Gate {
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::UnknownTool => "unknown_tool",
            Gate::Schema => "schema",
            Gate::RequestScope => "request_scope",
            Gate::Workspace => "workspace",
            Gate::TargetPolicy => "target_policy",
            Gate::SandboxDown => "sandbox_down",
            Gate::ExecutionModes => "execution_modes",
            Gate::Arguments => "arguments",
            Gate::Authorization => "authorization",
            Gate::Approval => "approval",
            Gate::TurnStopped => "turn_stopped",
        }
    }

    /// Asking again cannot change this refusal (so repeating it counts toward the stop).
    pub fn is_deterministic(self) -> bool {
        !matches!(self, Gate::Approval | Gate::TurnStopped | Gate::UnknownTool)
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call stopped before its action ran: the gate, a stable rule name, and the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub gate: Gate,
    /// A stable identifier of what was refused (`sibling_target`, `third_party`, ...).
    pub rule: String,
    /// Boxed: refusals travel in `Err` through every gate, and should stay small there.
    pub result: Box<ToolResult>,
}

impl Refusal {
    pub fn new(gate: Gate, rule: impl Into<String>, result: ToolResult) -> Self {
        Refusal {
            gate,
            rule: rule.into(),
            result: Box::new(result),
        }
    }
}

/// How a plan uses a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetAccess {
    Read,
    /// A directory searched recursively: it must lie inside the workspace.
    Search,
    /// Written or deleted by a file tool.
    Write(Writer),
}

/// A path a call names, as written, for the hard gates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub path: String,
    pub access: TargetAccess,
}

/// What a call will do, decided from its arguments alone.
pub struct Plan {
    /// Workspace paths, gated (and resolved) in this order; the action receives them resolved.
    pub targets: Vec<Target>,
    /// A terminal command's assessment: its writes are gated, then it is authorized.
    pub command: Option<CommandAssessment>,
    /// The text the audit log records as the target (a path or the command).
    pub audit_target: Option<String>,
    pub action: Box<dyn Action>,
}

/// What the action gets besides the host.
pub struct RunContext<'a> {
    pub call_id: &'a str,
    /// The targets, resolved, in plan order.
    pub paths: &'a [GatedPath],
    /// The contract authorization produced (read-only for calls that needed no authorization).
    pub profile: &'a ExecutionProfile,
    /// The task's cancellation: a running command stops when it is cancelled.
    pub cancel: &'a CancelToken,
    /// Sees a command's output as it arrives, when someone is watching.
    pub tap: Option<&'a dyn OutputTap>,
}

/// What an action produced.
#[derive(Debug)]
pub struct ToolOutcome {
    pub result: ToolResult,
    /// A terminal command's class.
    pub class: Option<CommandClass>,
    /// Output already kept whole in the ResultStore (the terminal streams there).
    pub stored: Option<StoredOutput>,
    /// The command's outcome says the sandbox is missing.
    pub sandbox_unavailable: bool,
    pub bytes_written: Option<u64>,
}

impl From<ToolResult> for ToolOutcome {
    fn from(result: ToolResult) -> Self {
        ToolOutcome {
            result,
            class: None,
            stored: None,
            sandbox_unavailable: false,
            bytes_written: None,
        }
    }
}

/// The work of one planned call.
pub trait Action: Send {
    /// Read what the action needs and say what it will do (a diff, a command), before the call
    /// is authorized. An `Err` ends the call with that result (a patch that does not apply).
    fn prepare(
        &mut self,
        _host: &SpearHost,
        _paths: &[GatedPath],
    ) -> Result<Option<String>, ToolResult> {
        Ok(None)
    }

    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ToolOutcome;
}

/// A registered tool implementation.
pub trait ToolHandler: Send + Sync {
    /// Turn schema-valid arguments into a plan. Must not touch the filesystem.
    fn plan(&self, args: &Value, host: &SpearHost) -> Result<Plan, Refusal>;
}

/// The common shape of an argument error found after schema validation.
pub fn invalid_arguments(message: impl fmt::Display) -> Refusal {
    Refusal::new(
        Gate::Schema,
        "invalid_arguments",
        ToolResult::failed(format!("invalid arguments: {message}")),
    )
}
