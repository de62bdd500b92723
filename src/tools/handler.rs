//! What a tool implementation gives the router: a pure `plan` (targets to gate, the command to
//! classify and authorize) and an `Action` that does the work once every gate has passed. A plan
//! does no I/O, so nothing is read or written before the hard gates have judged the call.

use serde_json::Value;

use crate::harness::command_policy::{CommandAssessment, CommandClass, ExecutionProfile};
use crate::harness::primitives::ToolResult;
use crate::tools::executor::{CancelToken, OutputTap};
use crate::tools::host::SpearHost;
use crate::tools::host::gates::{GatedPath, Target};
use crate::tools::preview::Preview;
use crate::tools::refusal::Refusal;
use crate::tools::results::StoredOutput;

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
    /// The front end's time limit for a command whose call names none (`Turn::command_timeout`).
    pub command_timeout: Option<std::time::Duration>,
    /// Whether the session grants the network to this call's turn now (its switch on and the
    /// mode not SAFE): an MCP server with the network starts only then.
    pub network_now: bool,
}

/// What an action says before it is authorized, beyond its preview.
#[derive(Debug, Default)]
pub struct Confirmation {
    /// Why the person must be asked whatever else would answer (a rule, a session grant, the
    /// mode): an MCP tool that changed since it was last let run.
    pub ask: Option<String>,
    /// The MCP tool the call reaches, for its audit record.
    pub mcp_tool: Option<crate::harness::audit::McpToolRef>,
    /// Whatever it does, the call cannot change the working tree (an MCP server never holds
    /// it writable): no checkpoint is taken, and no `/undo` is promised for it.
    pub leaves_workspace: bool,
}

/// What an action produced.
#[derive(Debug)]
pub struct ActionOutcome {
    pub result: ToolResult,
    /// A terminal command's class.
    pub class: Option<CommandClass>,
    /// Output already kept whole in the ResultStore (the terminal streams there).
    pub stored: Option<StoredOutput>,
    /// The command's outcome says the sandbox is missing.
    pub sandbox_unavailable: bool,
    pub bytes_written: Option<u64>,
}

impl From<ToolResult> for ActionOutcome {
    fn from(result: ToolResult) -> Self {
        ActionOutcome {
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
    /// Read what the action needs and say what it will do (a file change with its content
    /// before and after, a command with its assessment), before the call is authorized. The
    /// preview is what the person is shown and approves, so it must be what `run` will do. An
    /// `Err` ends the call with that result (a patch that does not apply).
    fn prepare(
        &mut self,
        _host: &SpearHost,
        _paths: &[GatedPath],
    ) -> Result<Option<Preview>, ToolResult> {
        Ok(None)
    }

    /// After the preview, before authorization: what the person must hear whatever would
    /// answer otherwise. `network_now` is `RunContext::network_now`. An `Err` ends the call
    /// with that result.
    fn confirm(
        &mut self,
        _host: &SpearHost,
        _network_now: bool,
    ) -> Result<Confirmation, ToolResult> {
        Ok(Confirmation::default())
    }

    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome;
}

/// A registered tool implementation.
pub trait ToolHandler: Send + Sync {
    /// Turn schema-valid arguments into a plan. Must not touch the filesystem.
    fn plan(&self, args: &Value, host: &SpearHost) -> Result<Plan, Refusal>;
}
