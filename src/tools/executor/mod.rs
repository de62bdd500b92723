//! The seam between the terminal tool and the execution layer. The terminal builds everything
//! against `CommandExecutor`; the sandboxed `CommandRunner` implements it (wired in by `main.rs`),
//! tests use doubles. Output is streamed into an `OutputSink` (the ResultStore) as it arrives, so
//! neither side ever holds a whole output in memory.

pub mod runner;

use std::io;
use std::time::Duration;

use crate::harness::command_policy::ExecutionProfile;
use crate::harness::primitives::ToolResult;

/// How a task tells a running command to stop: the execution layer's own type.
pub use crate::harness::process::CancelToken;
/// Which stream a chunk came from: the execution layer's own type.
pub use crate::harness::process::OutputStream;

/// Sees a running command's output as it arrives, besides the sink that keeps it (the agent
/// turns it into `output_chunk` events). Must not block: it is called on the command's path.
pub trait OutputTap: Send + Sync {
    fn chunk(&self, call_id: &str, stream: OutputStream, bytes: &[u8]);
}

/// Receives a command's output as it arrives, in arrival order.
pub trait OutputSink: Send {
    /// An error means the sink cannot keep the output; the executor should stop the command and
    /// return `failed`.
    fn write(&mut self, stream: OutputStream, chunk: &[u8]) -> io::Result<()>;
}

/// A sink that keeps nothing (for callers that need no stored output).
pub struct DiscardSink;

impl OutputSink for DiscardSink {
    fn write(&mut self, _stream: OutputStream, _chunk: &[u8]) -> io::Result<()> {
        Ok(())
    }
}

/// What running a command came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutcome {
    /// The substrate's result: status, reason, bounded stdout/stderr (head and tail), exit code.
    pub result: ToolResult,
    /// The command could not run because the sandbox is missing or refused (bwrap absent,
    /// inexecutable, user namespaces refused). Typed, so the router's sandbox-down guard never
    /// depends on the wording of a reason.
    pub sandbox_unavailable: bool,
}

impl ExecOutcome {
    /// The command ran (whatever its status).
    pub fn ran(result: ToolResult) -> Self {
        ExecOutcome {
            result,
            sandbox_unavailable: false,
        }
    }

    /// The sandbox is not there: `failed`, marked so the turn declines later writes.
    pub fn sandbox_unavailable(reason: impl Into<String>) -> Self {
        ExecOutcome {
            result: ToolResult::failed(reason),
            sandbox_unavailable: true,
        }
    }
}

/// Runs one command confined by `profile`, killing it (and everything it started) after
/// `timeout`, which replaces the sandbox's own default for this call.
pub trait CommandExecutor: Send + Sync {
    fn run(
        &self,
        command: &str,
        profile: &ExecutionProfile,
        timeout: Duration,
        sink: &mut dyn OutputSink,
    ) -> ExecOutcome;

    /// `run`, stopped when `cancel` is cancelled. Nothing starts once it is; an executor that
    /// can stop a running command (the sandbox's, through its pidfds) overrides this, others
    /// let a command that already started run to its end or its timeout.
    fn run_cancellable(
        &self,
        command: &str,
        profile: &ExecutionProfile,
        timeout: Duration,
        sink: &mut dyn OutputSink,
        cancel: &CancelToken,
    ) -> ExecOutcome {
        if cancel.is_cancelled() {
            return ExecOutcome::ran(ToolResult::cancelled(
                "the task was cancelled before the command started; nothing ran",
            ));
        }
        self.run(command, profile, timeout, sink)
    }
}
