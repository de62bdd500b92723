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

/// The network path a long-lived process gets, as a command's: the egress proxy by name, or
/// slirp4netns refusing the same ranges.
pub enum LongLivedNetwork<'a> {
    Proxy(super::proxy::ProxyContext),
    Slirp {
        allow_host_loopback: bool,
        network_allow: &'a [IpPrefix],
    },
}

/// A long-lived sandboxed process. Dropping it kills the whole sandbox.
pub struct LongLived {
    running: Running,
    /// slirp4netns, when it has the network that way: stopped with it.
    helper: Option<HeldChild>,
    /// The egress proxy, when it has the network that way: it serves until the process ends.
    proxy: Option<super::proxy::Proxy>,
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
        let (mut running, helper, proxy) = match network {
            None => (
                self.start(spec, &limits, Vec::new(), stdin, STATUS_LIMIT)
                    .await?,
                None,
                None,
            ),
            Some(LongLivedNetwork::Proxy(ctx)) => {
                let (running, proxy) =
                    super::proxy::start_with_proxy(self, spec, &limits, stdin, STATUS_LIMIT, ctx)
                        .await?;
                (running, None, proxy)
            }
            Some(LongLivedNetwork::Slirp {
                allow_host_loopback,
                network_allow,
            }) => {
                let (running, helper) = netns::start_with_slirp(
                    self,
                    spec,
                    &limits,
                    stdin,
                    STATUS_LIMIT,
                    allow_host_loopback,
                    network_allow,
                )
                .await?;
                (running, Some(helper), None)
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
            proxy,
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
        if let Some(p) = self.proxy.take() {
            p.stop().await;
        }
        let stopped = sandbox.and(helper);
        if stopped.is_err()
            && let Some(p) = &self.poison
        {
            p.store(true, Ordering::SeqCst);
        }
        stopped
    }

    /// Keep what it writes on stderr from now on, the last `cap` bytes of it (a server that
    /// floods its stderr costs no more memory than that). `None` when stderr was taken.
    pub fn keep_stderr(&mut self, cap: usize) -> Option<StderrLog> {
        let mut stderr = self.stderr.take()?;
        let log = StderrLog {
            kept: Arc::default(),
            cap,
            ended: Arc::new(tokio::sync::Notify::new()),
            done: Arc::default(),
        };
        let writer = log.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                writer.push(&buf[..n]);
            }
            writer.done.store(true, Ordering::SeqCst);
            writer.ended.notify_waiters();
        });
        Some(log)
    }

    /// Whether it has the network.
    /// On the proxy path: the connections it made since this was last asked.
    pub fn take_connections(&self) -> Vec<crate::harness::egress::NetConnection> {
        self.proxy
            .as_ref()
            .map(super::proxy::Proxy::take_connections)
            .unwrap_or_default()
    }

    pub fn networked(&self) -> bool {
        self.helper.is_some() || self.proxy.is_some()
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

/// The tail of a long-lived process's stderr, bounded.
#[derive(Debug, Clone)]
pub struct StderrLog {
    /// The bytes kept and how many were dropped before them.
    kept: Arc<std::sync::Mutex<(std::collections::VecDeque<u8>, u64)>>,
    cap: usize,
    /// Told when the stream ended (every byte the process wrote is kept).
    ended: Arc<tokio::sync::Notify>,
    done: Arc<AtomicBool>,
}

impl StderrLog {
    /// Wait, at most `limit`, until the stream has ended: after the process died, what it
    /// wrote last (why it failed) is then kept.
    pub async fn settled(&self, limit: Duration) {
        let ended = self.ended.notified();
        if self.done.load(Ordering::SeqCst) {
            return;
        }
        let _ = tokio::time::timeout(limit, ended).await;
    }

    fn push(&self, bytes: &[u8]) {
        let Ok(mut k) = self.kept.lock() else {
            return;
        };
        let (kept, dropped) = &mut *k;
        kept.extend(bytes);
        let over = kept.len().saturating_sub(self.cap);
        kept.drain(..over);
        *dropped += over as u64;
    }

    /// What is kept, as text (invalid UTF-8 replaced), after a line saying how much came
    /// before it when some was dropped.
    pub fn text(&self) -> String {
        let Ok(k) = self.kept.lock() else {
            return String::new();
        };
        let (kept, dropped) = &*k;
        let (a, b) = kept.as_slices();
        let body = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        match dropped {
            0 => body,
            n => format!("[{n} earlier bytes not kept]\n{body}"),
        }
    }
}
