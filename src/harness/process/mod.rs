//! Process control through pidfds. A child is held by a pidfd from the moment it exists, waited
//! for through that pidfd (tokio `AsyncFd` + `waitid(P_PIDFD)`), and signalled only with
//! `pidfd_send_signal`. Invariant: no numeric PID is ever signalled or waited for; a numeric PID
//! is used once, to open the pidfd, while the process cannot have been reaped (our own unreaped
//! child) or after its identity is checked through the pidfd (`ForeignProcess::open`).

mod cancel;
mod capture;
mod pidns;
mod stage;

pub use cancel::CancelToken;
pub use capture::{BoundedCapture, NullSink, OutputSink, OutputStream};
pub use pidns::{
    NamespaceConfigError, NetnsPlan, PID_MAX_MIN, configure_namespaces, kernel_at_least,
    pid_max_is_namespaced,
};
pub use stage::{PrivateStage, StagedTree, become_ids};

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use rustix::process::{
    Pid, PidfdFlags, Resource, Rlimit, Signal, WaitId, WaitIdOptions, pidfd_open,
    pidfd_send_signal, waitid,
};
use thiserror::Error;
use tokio::io::AsyncReadExt;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

/// Why process control failed.
#[derive(Debug, Error)]
pub enum ProcessError {
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot hold the child by a pidfd: {0}")]
    Pidfd(std::io::Error),
    #[error("waiting through the pidfd failed: {0}")]
    Wait(std::io::Error),
    #[error("the process did not die after SIGKILL was sent twice through its pidfd")]
    DeathUnconfirmed,
}

/// What `spawn_held` needs to start a child.
pub struct SpawnRequest<'a> {
    pub command: Command,
    /// Fds the child must inherit: close-on-exec is cleared on exactly these, in the child.
    pub inherit_fds: &'a [RawFd],
    /// Resource limits set in the child before exec.
    pub rlimits: &'a [(Resource, Rlimit)],
    /// Capture stdout and stderr through pipes (otherwise they go to /dev/null).
    pub capture: bool,
    /// Without capture: where stderr goes (default /dev/null).
    pub stderr_file: Option<std::fs::File>,
    /// A cgroup's `cgroup.procs`, open for writing: the child joins that cgroup before exec,
    /// so everything it starts is born inside.
    pub join_cgroup: Option<RawFd>,
    /// What the child reads on stdin (default /dev/null).
    pub stdin: Option<std::fs::File>,
    /// A private mount namespace with a stage of mount trees, and the identity the child
    /// continues as, entered after it joined its cgroup and before anything else.
    pub stage: Option<PrivateStage>,
}

/// Our own child, held by a pidfd.
pub struct HeldChild {
    pidfd: AsyncFd<OwnedFd>,
    /// How it ended, once reaped (a reaped child cannot be waited for again).
    reaped: std::sync::Mutex<Option<Exit>>,
    /// The numeric PID, for diagnostics and for reading `/proc` facts only.
    pid: i32,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// Start a child and hold it by a pidfd. Must run on a thread that outlives the child (a tokio
/// worker, not a `spawn_blocking` thread): the parent-death signal set here follows the thread.
pub fn spawn_held(req: SpawnRequest<'_>) -> Result<HeldChild, ProcessError> {
    let SpawnRequest {
        mut command,
        inherit_fds,
        rlimits,
        capture,
        stderr_file,
        join_cgroup,
        stdin,
        stage,
    } = req;
    let program = command.get_program().to_string_lossy().into_owned();
    let fds: Vec<RawFd> = inherit_fds.to_vec();
    let limits: Vec<(Resource, Rlimit)> = rlimits.to_vec();
    command.stdin(stdin.map_or_else(Stdio::null, Stdio::from));
    if capture {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
    } else {
        command.stdout(Stdio::null());
        command.stderr(stderr_file.map_or_else(Stdio::null, Stdio::from));
    }
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs between fork and exec and only makes raw system calls through
    // rustix and libc (no allocation, no locks): it reads the two vectors moved into it, which
    // were allocated before the fork.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // A parent that died between the fork and the line above sent no signal: the child
            // would exec orphaned, and bwrap reads the gates its dead parent held as open.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(fd) = join_cgroup {
                // Writing 0 to `cgroup.procs` moves the writer itself: no pid is named.
                // SAFETY: the launch keeps the descriptor open until after the spawn.
                let procs = std::os::fd::BorrowedFd::borrow_raw(fd);
                if rustix::io::write(procs, b"0")? != 1 {
                    return Err(std::io::Error::from_raw_os_error(libc::EIO));
                }
            }
            if let Some(stage) = &stage {
                stage.enter()?;
                // A change of uid or gid clears the parent-death signal: set it again, and
                // check again that the parent it names is still there.
                rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
                if rustix::process::getppid() != Some(parent) {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
            }
            for (resource, limit) in &limits {
                rustix::process::setrlimit(*resource, *limit)?;
            }
            // Nothing Spear inherited from whatever started it (a shell, an editor, `make`)
            // may reach the child: every descriptor past stdio is closed at exec, and then the
            // few the launch needs are let through again.
            close_inherited_at_exec();
            for fd in &fds {
                // SAFETY: the fd was open in the parent at fork time and stays open in the child
                // until exec; borrowing it for one fcntl is sound.
                let borrowed = std::os::fd::BorrowedFd::borrow_raw(*fd);
                rustix::io::fcntl_setfd(borrowed, rustix::io::FdFlags::empty())?;
            }
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|source| ProcessError::Spawn {
        program: program.clone(),
        source,
    })?;
    let pid = child.id() as i32;
    // Our child cannot be reaped by anyone but us, and we never wait for it by number, so the
    // PID still names it here: this is the moment the pidfd takes over.
    let pidfd = Pid::from_raw(pid)
        .ok_or_else(|| ProcessError::Pidfd(std::io::Error::other("child has pid 0")))
        .and_then(|p| {
            pidfd_open(p, PidfdFlags::empty()).map_err(|e| ProcessError::Pidfd(e.into()))
        })?;
    let stdout = child
        .stdout
        .take()
        .map(|o| pipe::Receiver::from_owned_fd(o.into()));
    let stderr = child
        .stderr
        .take()
        .map(|o| pipe::Receiver::from_owned_fd(o.into()));
    // Dropping `std::process::Child` neither waits nor signals; the pidfd owns the child now.
    drop(child);
    Ok(HeldChild {
        pidfd: register(pidfd).map_err(ProcessError::Pidfd)?,
        reaped: std::sync::Mutex::new(None),
        pid,
        stdout: stdout.transpose().map_err(ProcessError::Pidfd)?,
        stderr: stderr.transpose().map_err(ProcessError::Pidfd)?,
    })
}

/// Mark every descriptor from 3 up close-on-exec. Marking rather than closing keeps the
/// standard library's own exec-error pipe working until the exec itself. Runs between fork and
/// exec: raw system calls only, no allocation.
fn close_inherited_at_exec() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on open descriptors.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked == 0 {
        return;
    }
    // Kernels before 5.11 have no CLOSE_RANGE_CLOEXEC: mark each possible descriptor below
    // the open-file limit (a closed one answers EBADF, which is fine).
    let limit = rustix::process::getrlimit(Resource::Nofile)
        .current
        .unwrap_or(1 << 20)
        .min(1 << 20) as libc::c_int;
    for fd in 3..limit {
        // SAFETY: F_SETFD only changes the descriptor's close-on-exec flag.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
}

fn register(fd: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the AsyncFd takes ownership of the OwnedFd, so the descriptor stays open and names
    // the same pidfd for the whole life of the registration.
    unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}

impl HeldChild {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Wait for the child to exit and reap it through its pidfd.
    pub async fn wait(&self) -> Result<Exit, ProcessError> {
        if let Some(exit) = self.reaped_exit() {
            return Ok(exit);
        }
        loop {
            let mut guard = self.pidfd.readable().await.map_err(ProcessError::Wait)?;
            let status = waitid(
                WaitId::PidFd(self.pidfd.get_ref().as_fd()),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
            )
            .map_err(|e| ProcessError::Wait(e.into()))?;
            match status {
                Some(s) => {
                    let exit = match s.terminating_signal() {
                        Some(sig) => Exit::Signal(sig),
                        None => Exit::Code(s.exit_status().unwrap_or(0)),
                    };
                    if let Ok(mut r) = self.reaped.lock() {
                        *r = Some(exit);
                    }
                    return Ok(exit);
                }
                None => guard.clear_ready(),
            }
        }
    }

    fn reaped_exit(&self) -> Option<Exit> {
        self.reaped.lock().ok().and_then(|r| *r)
    }

    /// SIGKILL and reap through the pidfd without an async runtime, for a drop: a killed
    /// process is normally gone within a millisecond; after `limit` it is left a zombie.
    pub fn kill_and_reap_now(&self, limit: Duration) {
        if self.reaped_exit().is_some() {
            return;
        }
        let _ = sigkill_through(self.pidfd.get_ref());
        let until = std::time::Instant::now() + limit;
        while std::time::Instant::now() < until {
            let status = waitid(
                WaitId::PidFd(self.pidfd.get_ref().as_fd()),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
            );
            match status {
                Ok(None) => std::thread::sleep(Duration::from_millis(1)),
                _ => return,
            }
        }
    }

    /// SIGKILL through the pidfd (nothing once reaped).
    pub fn send_sigkill(&self) -> std::io::Result<()> {
        if self.reaped_exit().is_some() {
            return Ok(());
        }
        sigkill_through(self.pidfd.get_ref())
    }

    /// Kill and reap, confirming death through the pidfd: one retry on the same pidfd, never a
    /// numeric fallback.
    pub async fn stop(&self, grace: Duration) -> Result<Exit, ProcessError> {
        for _ in 0..2 {
            let _ = self.send_sigkill();
            if let Ok(r) = tokio::time::timeout(grace, self.wait()).await {
                return r;
            }
        }
        Err(ProcessError::DeathUnconfirmed)
    }
}

fn sigkill_through(fd: &OwnedFd) -> std::io::Result<()> {
    match pidfd_send_signal(fd, Signal::KILL) {
        Ok(()) => Ok(()),
        // Already dead (and perhaps reaped): nothing to kill, which is what we wanted.
        Err(e) if e == rustix::io::Errno::SRCH => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A process that is not our child (bwrap's namespace init), held by a pidfd whose identity was
/// checked. Only its exit can be observed (it is reaped by its own parent).
pub struct ForeignProcess {
    pidfd: AsyncFd<OwnedFd>,
}

impl ForeignProcess {
    /// Open a pidfd for `pid` and check, through the pidfd, that it is the process whose PID
    /// namespace has inode `pid_namespace`: the pidfd is opened first, the namespace read by
    /// number next, and the pidfd found still alive last, so the number named the pidfd's
    /// process the whole time. `None` when it has already gone (or is not who it should be).
    pub fn open(pid: i32, pid_namespace: u64) -> Option<ForeignProcess> {
        let fd = pidfd_open(Pid::from_raw(pid)?, PidfdFlags::empty()).ok()?;
        let link = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
        if link.to_str()? != format!("pid:[{pid_namespace}]") || !is_alive(&fd) {
            return None;
        }
        register(fd).ok().map(|pidfd| ForeignProcess { pidfd })
    }

    pub fn send_sigkill(&self) -> std::io::Result<()> {
        sigkill_through(self.pidfd.get_ref())
    }

    /// Resolves when the process has exited (for a PID-namespace init: when every process of
    /// the namespace is gone, since the kernel empties the namespace before its init exits).
    pub async fn exited(&self) -> std::io::Result<()> {
        let _guard = self.pidfd.readable().await?;
        Ok(())
    }

    /// The numeric PID behind the pidfd (from its fdinfo), for naming `/proc` entries only;
    /// an error once the process has exited.
    pub fn pid(&self) -> std::io::Result<i32> {
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", self.raw_fd()))?;
        info.lines()
            .find_map(|l| l.strip_prefix("Pid:"))
            .and_then(|v| v.trim().parse::<i32>().ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| std::io::Error::other("the process has already exited"))
    }

    /// Whether the process has not exited yet (its pidfd does not poll readable).
    pub fn is_alive(&self) -> bool {
        is_alive(self.pidfd.get_ref())
    }

    pub fn raw_fd(&self) -> RawFd {
        self.pidfd.get_ref().as_raw_fd()
    }

    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.pidfd.get_ref().as_fd()
    }

    /// Kill and confirm the exit through the pidfd, retrying once on the same pidfd.
    pub async fn stop(&self, grace: Duration) -> Result<(), ProcessError> {
        for _ in 0..2 {
            let _ = self.send_sigkill();
            if let Ok(r) = tokio::time::timeout(grace, self.exited()).await {
                return r.map_err(ProcessError::Wait);
            }
        }
        Err(ProcessError::DeathUnconfirmed)
    }
}

/// SIGKILL the process numbered `pid` through a pidfd when `is_it()` holds with the pidfd
/// open (checked after opening and found alive after, so the number named the pidfd's process
/// throughout), and confirm its death within `limit`. `Ok(false)` when no such process was
/// there. Needs no async runtime.
pub fn kill_checked(
    pid: i32,
    is_it: impl Fn() -> bool,
    limit: Duration,
) -> Result<bool, ProcessError> {
    let Some(fd) = Pid::from_raw(pid).and_then(|p| pidfd_open(p, PidfdFlags::empty()).ok()) else {
        return Ok(false);
    };
    if !is_it() || !is_alive(&fd) {
        return Ok(false);
    }
    sigkill_through(&fd).map_err(ProcessError::Pidfd)?;
    let until = std::time::Instant::now() + limit;
    while is_alive(&fd) {
        if std::time::Instant::now() >= until {
            return Err(ProcessError::DeathUnconfirmed);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(true)
}

/// A pidfd polls readable once its process has exited.
fn is_alive(fd: &OwnedFd) -> bool {
    let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
    matches!(
        rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default())),
        Ok(0)
    )
}

/// Copy both pipes into `sink` and into bounded captures until both reach end of file.
pub async fn pump_output(
    mut stdout: Option<pipe::Receiver>,
    mut stderr: Option<pipe::Receiver>,
    sink: &mut dyn OutputSink,
    out: &mut BoundedCapture,
    err: &mut BoundedCapture,
) -> std::io::Result<()> {
    let mut buf_o = vec![0u8; 64 * 1024];
    let mut buf_e = vec![0u8; 64 * 1024];
    while stdout.is_some() || stderr.is_some() {
        tokio::select! {
            r = read_some(&mut stdout, &mut buf_o) => match r? {
                0 => stdout = None,
                n => {
                    sink.write(OutputStream::Stdout, &buf_o[..n]);
                    out.push(&buf_o[..n]);
                }
            },
            r = read_some(&mut stderr, &mut buf_e) => match r? {
                0 => stderr = None,
                n => {
                    sink.write(OutputStream::Stderr, &buf_e[..n]);
                    err.push(&buf_e[..n]);
                }
            },
        }
    }
    Ok(())
}

/// Read from a pipe that may already be closed; a closed one never completes.
async fn read_some(pipe: &mut Option<pipe::Receiver>, buf: &mut [u8]) -> std::io::Result<usize> {
    match pipe {
        Some(p) => p.read(buf).await,
        None => std::future::pending().await,
    }
}
