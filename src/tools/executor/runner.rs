//! The terminal's `CommandExecutor` backed by the real sandbox: a `CommandRunner` driven on a
//! current-thread runtime in the caller's thread (the sandbox child is tied to the thread that
//! spawns it). A preflight that finds the sandbox missing or refused is reported as such, typed,
//! so the router's sandbox-down guard can act on it.

use std::io;
use std::time::Duration;

use crate::harness::command_policy::ExecutionProfile;
use crate::harness::command_runner::{CommandRunner, RunRequest};
use crate::harness::primitives::ToolResult;
use crate::harness::process::OutputSink as ProcessSink;
use crate::tools::executor::{CancelToken, CommandExecutor, ExecOutcome, OutputSink, OutputStream};

/// A `CommandRunner` as the terminal tool sees it.
pub struct RunnerExecutor {
    /// Shared with whatever else of the session launches sandboxes (its MCP servers), so one
    /// runner, one ledger, one network poison serve them all.
    runner: std::sync::Arc<CommandRunner>,
    /// Always `Some` until dropped (taken to shut it down without blocking).
    runtime: Option<tokio::runtime::Runtime>,
}

/// The agent's loop owns the executor on an async runtime; dropping a runtime there the
/// ordinary way panics, so it is shut down in the background instead (nothing runs on it
/// between calls: each call's `block_on` returned before).
impl Drop for RunnerExecutor {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl RunnerExecutor {
    pub fn new(runner: CommandRunner) -> io::Result<Self> {
        Self::shared(std::sync::Arc::new(runner))
    }

    /// An executor over a runner shared with others.
    pub fn shared(runner: std::sync::Arc<CommandRunner>) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(RunnerExecutor {
            runner,
            runtime: Some(runtime),
        })
    }
}

/// Forwards the process layer's chunks to the tool layer's sink and keeps the first storage
/// error, which turns the call into `failed`: output that could not be kept is not reported ok.
struct Bridge<'s> {
    sink: &'s mut dyn OutputSink,
    error: Option<io::Error>,
}

impl ProcessSink for Bridge<'_> {
    fn write(&mut self, stream: OutputStream, bytes: &[u8]) {
        if self.error.is_none()
            && let Err(e) = self.sink.write(stream, bytes)
        {
            self.error = Some(e);
        }
    }
}

impl CommandExecutor for RunnerExecutor {
    fn run(
        &self,
        command: &str,
        profile: &ExecutionProfile,
        timeout: Duration,
        sink: &mut dyn OutputSink,
    ) -> ExecOutcome {
        self.run_inner(command, profile, timeout, sink, None)
    }

    fn run_cancellable(
        &self,
        command: &str,
        profile: &ExecutionProfile,
        timeout: Duration,
        sink: &mut dyn OutputSink,
        cancel: &CancelToken,
    ) -> ExecOutcome {
        self.run_inner(command, profile, timeout, sink, Some(cancel))
    }
}

impl RunnerExecutor {
    fn run_inner(
        &self,
        command: &str,
        profile: &ExecutionProfile,
        timeout: Duration,
        sink: &mut dyn OutputSink,
        cancel: Option<&CancelToken>,
    ) -> ExecOutcome {
        let Some(runtime) = self.runtime.as_ref() else {
            return ExecOutcome::ran(ToolResult::failed("the command executor was shut down"));
        };
        if let Err(failure) = runtime.block_on(self.runner.ensure_sandbox()) {
            let reason = format!("the sandbox is not available: {}", failure.reason());
            return if failure.is_terminal() {
                ExecOutcome::sandbox_unavailable(reason)
            } else {
                ExecOutcome::ran(ToolResult::failed(reason))
            };
        }
        let request = RunRequest {
            command: command.to_string(),
            profile: profile.clone(),
            timeout: Some(timeout),
        };
        let mut bridge = Bridge { sink, error: None };
        let mut result =
            runtime.block_on(self.runner.run_cancellable(&request, &mut bridge, cancel));
        if let Some(e) = bridge.error {
            result.status = crate::harness::primitives::ToolStatus::Failed;
            result.reason = Some(format!("the command's output could not be stored: {e}"));
        }
        ExecOutcome::ran(result)
    }
}
