//! One bwrap process from spawn to reaped: the outer bwrap is our pidfd-held child, the
//! namespace init it reports on `--info-fd` is held by a checked pidfd, output is pumped
//! with bounds, and a timeout kills the whole PID namespace. Invariant: `finish` returns only
//! after the outer process is reaped and, when it was killed, the namespace's death confirmed
//! (or `containment` says it could not be).

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rustix::process::{Resource, Rlimit};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::ledger::LedgerEntry;

use crate::harness::process::{
    BoundedCapture, CancelToken, Exit, ForeignProcess, HeldChild, OutputSink, PrivateStage,
    ProcessError, SpawnRequest, pump_output, spawn_held,
};
use crate::harness::resource_control::pids_cgroup::LaunchCgroup;

/// How long a killed process gets before the kill is repeated once, then declared unconfirmed.
pub const KILL_GRACE: Duration = Duration::from_secs(5);
/// How long output may keep flowing after the sandbox is gone (nothing should hold the pipes).
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How long the namespace init may take to be gone once bwrap has ended. bwrap's outer process
/// exits as soon as the init reports the command's status, which the init does just before it
/// exits itself, so a look at that instant often finds it still there; an init still there
/// after this is left to the ledger entry, which ends whatever carries the launch's marker.
const INIT_EXIT_GRACE: Duration = Duration::from_millis(200);

/// Bytes of head and of tail kept per stream for the result. The terminal shows up to 25,000
/// characters of each end, and a character takes up to four bytes: 100,000 bytes hold them whatever
/// the script (32 KiB cut a preview of CJK text to a third of what the spec allows).
pub const CAPTURE_HEAD: usize = 25_000 * 4;
pub const CAPTURE_TAIL: usize = 25_000 * 4;

/// How a sandboxed command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    /// Its `CancelToken` was cancelled: the whole sandbox was killed.
    Cancelled,
}

/// How a sandboxed command ended, with its bounded output and whether its death was confirmed.
pub struct SandboxOutcome {
    pub end: End,
    pub stdout: BoundedCapture,
    pub stderr: BoundedCapture,
    /// `Err` when a kill was sent and the death of the sandbox could not be confirmed.
    pub containment: Result<(), ProcessError>,
    /// From spawning bwrap to releasing the command (namespaces prepared, network attached).
    pub setup_time: Option<Duration>,
    /// On the proxied network path: every connection the command asked for.
    pub connections: Vec<crate::harness::egress::NetConnection>,
}

/// A status pipe: bwrap writes JSON documents to `write` (inherited), we read `read`.
pub struct StatusPipe {
    pub read: OwnedFd,
    pub write: OwnedFd,
}

impl StatusPipe {
    pub fn new() -> std::io::Result<Self> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        Ok(StatusPipe { read, write })
    }
}

pub struct Running {
    child: HeldChild,
    /// The write end of bwrap's gate pipe and how many of its gates are still shut: the first
    /// byte opens `--userns-block-fd` (setup continues), the second `--block-fd` (the command
    /// starts). Closing the pipe would open every gate at once, so it is kept until the last.
    gates: Option<(OwnedFd, u8)>,
    spawned: std::time::Instant,
    released: Option<std::time::Instant>,
    status: pipe::Receiver,
    status_buf: Vec<u8>,
    inner: Option<ForeignProcess>,
    cancel: Option<CancelToken>,
    /// Dropped last (after `Drop::drop` killed what it knew of): unless every process was
    /// confirmed dead, it ends whatever still carries the launch's marker.
    ledger: LedgerEntry,
    /// The launch's own pids cgroup, when that is the process cap here: removed after every
    /// process in it has ended. Held only to be dropped, after the ledger entry.
    _cgroup: Option<LaunchCgroup>,
    /// The egress proxy's listening socket, made inside the sandbox's network namespace.
    listener: Option<OwnedFd>,
}

/// bwrap reads a closed gate as an open one, so a `Running` must never close its gates with
/// bwrap alive: whatever ends it (an error path, a future cancellation), the sandbox is killed
/// through its pidfds first. After `finish` both are gone and this sends nothing that matters.
impl Drop for Running {
    fn drop(&mut self) {
        if let Some(inner) = &self.inner {
            let _ = inner.send_sigkill();
        }
        self.child.kill_and_reap_now(Duration::from_millis(200));
    }
}

impl Running {
    /// Stop the command as a timeout would once `cancel` is cancelled.
    pub fn cancel_on(&mut self, cancel: Option<CancelToken>) {
        self.cancel = cancel;
    }

    /// bwrap's numeric PID, for tests' look at `/proc` only.
    #[cfg(test)]
    pub fn pid(&self) -> i32 {
        self.child.pid()
    }

    /// Spawn `program argv` with the ledger entry's marker as `argv[0]`. `child_fds` are
    /// inherited by the child and closed here after the spawn (the child holds its own copies);
    /// `stdin` is what it reads (default /dev/null); `env` its whole environment.
    #[allow(clippy::too_many_arguments)]
    pub fn spawn(
        program: &Path,
        argv: &[OsString],
        env: &[(String, String)],
        status_read: OwnedFd,
        child_fds: Vec<OwnedFd>,
        rlimits: &[(Resource, Rlimit)],
        ledger: LedgerEntry,
        cgroup: Option<LaunchCgroup>,
        stage: Option<PrivateStage>,
        stdin: Option<std::fs::File>,
    ) -> Result<Running, ProcessError> {
        let mut command = Command::new(program);
        // Only what the spec hands the command through bwrap's environment (its secrets): the
        // rest of its environment is on bwrap's command line.
        command
            .arg0(ledger.marker())
            .args(argv)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)));
        let raw: Vec<RawFd> = child_fds.iter().map(|f| f.as_raw_fd()).collect();
        let child = spawn_held(SpawnRequest {
            command,
            inherit_fds: &raw,
            rlimits,
            capture: true,
            stderr_file: None,
            join_cgroup: cgroup.as_ref().and_then(LaunchCgroup::procs_fd),
            stdin,
            // The child attaches the trees in its own namespace; the parent's descriptors go
            // with the spawned command.
            stage,
        })?;
        drop(child_fds);
        let status = match pipe::Receiver::from_owned_fd(status_read) {
            Ok(s) => s,
            Err(e) => {
                // bwrap waits on gates this function never got to hold; closing them would let
                // it go on, so it is killed first.
                let _ = child.send_sigkill();
                return Err(ProcessError::Pidfd(e));
            }
        };
        Ok(Running {
            child,
            gates: None,
            spawned: std::time::Instant::now(),
            released: None,
            status,
            status_buf: Vec::new(),
            inner: None,
            cancel: None,
            ledger,
            _cgroup: cgroup,
            listener: None,
        })
    }

    /// Keep the write end of the gate pipe bwrap waits on `shut` times; `open_gate` opens
    /// them in order.
    /// Keep the listening socket made in the sandbox's network namespace.
    pub fn keep_listener(&mut self, listener: Option<OwnedFd>) {
        self.listener = listener;
    }

    /// The listening socket made in the sandbox's network namespace, once.
    pub fn take_listener(&mut self) -> Option<OwnedFd> {
        self.listener.take()
    }

    pub fn hold_gates(&mut self, gate_write: OwnedFd, shut: u8) {
        self.gates = Some((gate_write, shut));
    }

    /// Open the next gate bwrap waits on (one byte; the pipe is closed after the last).
    pub fn open_gate(&mut self) {
        if let Some((fd, shut)) = &mut self.gates {
            let _ = rustix::io::write(&*fd, b"1");
            *shut = shut.saturating_sub(1);
            if *shut == 0 {
                self.gates = None;
            }
        }
    }

    /// Open every remaining gate: the command starts.
    pub fn release(&mut self) {
        while self.gates.is_some() {
            self.open_gate();
        }
        self.released.get_or_insert_with(std::time::Instant::now);
    }

    /// The command's stdout and stderr, for an owner that reads them itself (a long-lived
    /// process); `finish` then has none to pump.
    pub fn take_output(&mut self) -> (Option<pipe::Receiver>, Option<pipe::Receiver>) {
        (self.child.stdout.take(), self.child.stderr.take())
    }

    /// Wait for bwrap itself to end (it ends when the command does, or when it is killed).
    pub async fn wait_outer(&self) -> Result<crate::harness::process::Exit, ProcessError> {
        self.child.wait().await
    }

    /// The namespace init `inner` found, if it has.
    pub fn held_inner(&self) -> Option<&ForeignProcess> {
        self.inner.as_ref()
    }

    /// Read bwrap's first status document and hold the namespace init by a checked pidfd.
    /// `None` when bwrap ended before reporting (its stderr says why).
    pub async fn inner(&mut self, limit: Duration) -> Option<&ForeignProcess> {
        if self.inner.is_none() {
            let doc = tokio::time::timeout(limit, self.next_status())
                .await
                .ok()??;
            let pid = doc.get("child-pid")?.as_i64()?;
            let ns = doc.get("pid-namespace")?.as_u64()?;
            self.inner = ForeignProcess::open(i32::try_from(pid).ok()?, ns);
        }
        self.inner.as_ref()
    }

    /// The next JSON document on the status pipe (bwrap concatenates several).
    async fn next_status(&mut self) -> Option<serde_json::Value> {
        let mut buf = [0u8; 1024];
        loop {
            let mut stream = serde_json::Deserializer::from_slice(&self.status_buf)
                .into_iter::<serde_json::Value>();
            if let Some(Ok(v)) = stream.next() {
                let used = stream.byte_offset();
                self.status_buf.drain(..used);
                return Some(v);
            }
            match self.status.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.status_buf.extend_from_slice(&buf[..n]),
            }
        }
    }

    /// Kill the sandbox: the namespace init (which takes every process of the namespace with
    /// it) and the outer bwrap, and confirm both through their pidfds.
    pub async fn kill_all(&self) -> Result<(), ProcessError> {
        let inner = match &self.inner {
            Some(i) => i.stop(KILL_GRACE).await,
            None => Ok(()),
        };
        let outer = self.child.stop(KILL_GRACE).await.map(|_| ());
        inner.and(outer)
    }

    /// Pump output and wait for the end, killing everything at `timeout`.
    pub async fn finish(mut self, sink: &mut dyn OutputSink, timeout: Duration) -> SandboxOutcome {
        let mut out = BoundedCapture::new(CAPTURE_HEAD, CAPTURE_TAIL);
        let mut err = BoundedCapture::new(CAPTURE_HEAD, CAPTURE_TAIL);
        let stdout = self.child.stdout.take();
        let stderr = self.child.stderr.take();
        let mut containment = Ok(());
        let end;
        {
            let pump = pump_output(stdout, stderr, sink, &mut out, &mut err);
            tokio::pin!(pump);
            let deadline = tokio::time::sleep(timeout);
            tokio::pin!(deadline);
            let token = self.cancel.clone();
            let cancelled = async move {
                match token {
                    Some(t) => t.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(cancelled);
            let mut pumped = false;
            let mut exit: Option<End> = None;
            enum Event {
                Pumped,
                Exited(Result<Exit, ProcessError>),
                Deadline,
                Cancelled,
            }
            loop {
                let event = tokio::select! {
                    _ = &mut pump, if !pumped => Event::Pumped,
                    r = self.child.wait(), if exit.is_none() => Event::Exited(r),
                    _ = &mut deadline, if exit.is_none() => Event::Deadline,
                    _ = &mut cancelled, if exit.is_none() => Event::Cancelled,
                };
                match event {
                    Event::Pumped => pumped = true,
                    Event::Exited(r) => {
                        exit = Some(match r {
                            Ok(Exit::Code(c)) => End::Exited(c),
                            Ok(Exit::Signal(s)) => End::Signaled(s),
                            Err(e) => {
                                containment = Err(e);
                                End::Signaled(libc::SIGKILL)
                            }
                        })
                    }
                    Event::Deadline | Event::Cancelled => {
                        let end = match event {
                            Event::Cancelled => End::Cancelled,
                            _ => End::TimedOut,
                        };
                        if self.inner.is_none() {
                            // Learn the namespace init if bwrap reported it meanwhile.
                            let _ = self.inner(Duration::from_millis(50)).await;
                        }
                        containment = self.kill_all().await;
                        exit = Some(end);
                    }
                }
                if exit.is_some() && !pumped {
                    if tokio::time::timeout(DRAIN_GRACE, &mut pump).await.is_err() {
                        // Something still holds the pipes: the sandbox cannot be fully gone.
                        containment = self.kill_all().await;
                    }
                    pumped = true;
                }
                if exit.is_some() && pumped {
                    break;
                }
            }
            end = exit.unwrap_or(End::TimedOut);
        }
        if containment.is_ok()
            && let Some(inner) = &self.inner
            && tokio::time::timeout(INIT_EXIT_GRACE, inner.exited())
                .await
                .is_ok_and(|r| r.is_ok())
        {
            self.ledger.confirm_dead();
        }
        SandboxOutcome {
            end,
            stdout: out,
            stderr: err,
            containment,
            setup_time: self.released.map(|r| r.duration_since(self.spawned)),
            connections: Vec::new(),
        }
    }
}
