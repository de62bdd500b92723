//! A sandboxed process that lives as long as its owner: stdin and stdout piped to Spear, stderr
//! for the owner to keep (bounded) as a log, no wall-clock limit. It is launched exactly as a
//! command is (the same bwrap spec, seccomp filter, id maps, process cap, rlimits, ledger entry)
//! and ended the same way: through pidfds, when the owner stops or drops it, and by the ledger
//! sweep of the next start when Spear itself was killed.
//!
//! Must be started from a task on a runtime worker that lives as long as the process: the
//! parent-death signal bwrap is given follows the thread that spawned it.

use std::fs::File;

use tokio::net::unix::pipe;

use super::launch::Running;
use super::{BubblewrapSandbox, LaunchLimits, STATUS_LIMIT, SandboxError, SandboxSpec};
use crate::harness::process::ProcessError;

/// A long-lived sandboxed process. Dropping it kills the whole sandbox.
pub struct LongLived {
    running: Running,
    /// What the process reads on stdin.
    pub stdin: Option<pipe::Sender>,
    /// What it writes on stdout.
    pub stdout: Option<pipe::Receiver>,
    /// What it (or bwrap, when the launch failed) writes on stderr.
    pub stderr: Option<pipe::Receiver>,
}

impl BubblewrapSandbox {
    /// Start `spec` as a long-lived process. Its network is `spec.network` as built (closed,
    /// unless a caller set up a path); `limits.cancel` is ignored (the owner ends it).
    pub async fn start_long_lived(
        &self,
        spec: SandboxSpec,
        limits: &LaunchLimits,
    ) -> Result<LongLived, SandboxError> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(std::io::Error::from)?;
        let mut limits = limits.clone();
        limits.cancel = None;
        let mut running = self
            .start(
                spec,
                &limits,
                Vec::new(),
                Some(File::from(read)),
                STATUS_LIMIT,
            )
            .await?;
        running.release();
        let (stdout, stderr) = running.take_output();
        let stdin = pipe::Sender::from_owned_fd(write)?;
        Ok(LongLived {
            running,
            stdin: Some(stdin),
            stdout,
            stderr,
        })
    }
}

impl LongLived {
    /// End it now: every process of the sandbox killed through its pidfds, and their death
    /// confirmed.
    pub async fn stop(self) -> Result<(), ProcessError> {
        self.running.kill_all().await
    }

    /// Wait until it ends by itself (or was killed).
    pub async fn exited(&self) -> Result<crate::harness::process::Exit, ProcessError> {
        self.running.wait_outer().await
    }
}
