//! How a call is stopped before its action runs: the `Gate` that stopped it, a stable rule name
//! and the `ToolResult` the model is given. A refusal is a value on the call path, never an
//! `Err` of the machinery; every gate, from schema validation to approval, speaks in it.

use std::fmt;

use serde::Serialize;

use crate::harness::primitives::ToolResult;

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
    /// The call would carry a known secret value over the network.
    SecretGuard,
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
            Gate::SecretGuard => "secret_guard",
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

/// The common shape of an argument error found after schema validation.
pub fn invalid_arguments(message: impl fmt::Display) -> Refusal {
    Refusal::new(
        Gate::Schema,
        "invalid_arguments",
        ToolResult::failed(format!("invalid arguments: {message}")),
    )
}
