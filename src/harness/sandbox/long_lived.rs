//! A sandboxed process that lives as long as its owner: stdin and stdout piped to Spear, stderr
//! for the owner to keep (bounded) as a log, no wall-clock limit. It is launched exactly as a
//! command is (the same bwrap spec, seccomp filter, id maps, process cap, rlimits, ledger entry)
//! and ended the same way: through pidfds, when the owner stops or drops it, and by the ledger
//! sweep of the next start when Spear itself was killed.
//!
//! Must be started from a task on a runtime worker that lives as long as the process: the
//! parent-death signal bwrap is given follows the thread that spawned it.

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::unix::pipe;

use super::launch::Running;
use super::netns::{self, IpPrefix};
use super::{BubblewrapSandbox, LaunchLimits, STATUS_LIMIT, SandboxError, SandboxSpec};
use crate::harness::process::{HeldChild, ProcessError};

/// How long a stop waits for each process to die before it reports the death unconfirmed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The network path a long-lived process gets: slirp4netns, as a command's, refusing the same
/// ranges.
pub struct LongLivedNetwork<'a> {
    pub allow_host_loopback: bool,
    pub network_allow: &'a [IpPrefix],
}

/// A long-lived sandboxed process. Dropping it kills the whole sandbox.
pub struct LongLived {
    running: Running,
    /// slirp4netns, when it has the network: stopped with it.
    helper: Option<HeldChild>,
    /// The sandbox's network poison: set when the death of a networked launch cannot be
    /// confirmed, so no later network request is served.
    poison: Option<Arc<AtomicBool>>,
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
        network: Option<LongLivedNetwork<'_>>,
    ) -> Result<LongLived, SandboxError> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(std::io::Error::from)?;
        let mut limits = limits.clone();
        limits.cancel = None;
        let stdin = Some(File::from(read));
        let (mut running, helper) = match network {
            None => (
                self.start(spec, &limits, Vec::new(), stdin, STATUS_LIMIT)
                    .await?,
                None,
            ),
            Some(n) => {
                let (running, helper) = netns::start_with_slirp(
                    self,
                    spec,
                    &limits,
                    stdin,
                    STATUS_LIMIT,
                    n.allow_host_loopback,
                    n.network_allow,
                )
                .await?;
                (running, Some(helper))
            }
        };
        running.release();
        let (stdout, stderr) = running.take_output();
        let stdin = pipe::Sender::from_owned_fd(write)?;
        Ok(LongLived {
            poison: helper
                .is_some()
                .then(|| self.network_containment_failed.clone()),
            helper,
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
    pub async fn stop(mut self) -> Result<(), ProcessError> {
        let sandbox = self.running.kill_all().await;
        let helper = match self.helper.take() {
            Some(h) => h.stop(STOP_GRACE).await.map(|_| ()),
            None => Ok(()),
        };
        let stopped = sandbox.and(helper);
        if stopped.is_err()
            && let Some(p) = &self.poison
        {
            p.store(true, Ordering::SeqCst);
        }
        stopped
    }

    /// Whether it has the network.
    pub fn networked(&self) -> bool {
        self.helper.is_some()
    }

    /// Wait until it ends by itself (or was killed).
    pub async fn exited(&self) -> Result<crate::harness::process::Exit, ProcessError> {
        self.running.wait_outer().await
    }
}

/// Dropped without a stop: the sandbox is killed by its own drop (through its pidfds), the
/// helper here; what cannot be confirmed is left to the ledger's sweep.
impl Drop for LongLived {
    fn drop(&mut self) {
        if let Some(h) = self.helper.take() {
            h.kill_and_reap_now(Duration::from_millis(200));
        }
    }
}
