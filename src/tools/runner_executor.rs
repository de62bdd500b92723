//! The terminal's `CommandExecutor` backed by the real sandbox: a `CommandRunner` driven on a
//! current-thread runtime in the caller's thread (the sandbox child is tied to the thread that
//! spawns it). A preflight that finds the sandbox missing or refused is reported as such, typed,
//! so the router's sandbox-down guard can act on it.

use std::io;
use std::time::Duration;

use crate::harness::command_policy::ExecutionProfile;
use crate::harness::primitives::ToolResult;
use crate::harness::process::OutputSink as ProcessSink;
use crate::harness::runtime::{CommandRunner, RunRequest};
use crate::tools::executor::{CommandExecutor, CommandOutcome, OutputSink, OutputStream};

/// A `CommandRunner` as the terminal tool sees it.
pub struct RunnerExecutor {
    runner: CommandRunner,
    runtime: tokio::runtime::Runtime,
}

impl RunnerExecutor {
    pub fn new(runner: CommandRunner) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(RunnerExecutor { runner, runtime })
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
    ) -> CommandOutcome {
        if let Err(failure) = self.runtime.block_on(self.runner.ensure_sandbox()) {
            let reason = format!("the sandbox is not available: {}", failure.reason());
            return if failure.is_terminal() {
                CommandOutcome::sandbox_unavailable(reason)
            } else {
                CommandOutcome::ran(ToolResult::failed(reason))
            };
        }
        let request = RunRequest {
            command: command.to_string(),
            profile: profile.clone(),
            timeout: Some(timeout),
        };
        let mut bridge = Bridge { sink, error: None };
        let mut result = self
            .runtime
            .block_on(self.runner.run(&request, &mut bridge));
        if let Some(e) = bridge.error {
            result.status = crate::harness::primitives::ToolStatus::Failed;
            result.reason = Some(format!("the command's output could not be stored: {e}"));
        }
        CommandOutcome::ran(result)
    }
}
