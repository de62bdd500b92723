//! Settings written from inside a sandbox's namespaces before its command starts: the process
//! cap (`kernel.pid_max` of the sandbox's own PID namespace, namespaced since Linux 6.14; unlike
//! `RLIMIT_NPROC` it counts only the sandbox's processes and binds root too) and
//! `user.max_user_namespaces = 0` (no nested user namespaces: what bwrap's `--disable-userns`
//! does, which cannot be combined with `--userns-block-fd`). Invariant: `pid_max` is written only
//! on a kernel that namespaces it, from a process whose active PID namespace is the sandbox's,
//! and the host's value is checked unchanged afterwards.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use rustix::process::{Pid, PidfdFlags, WaitId, WaitIdOptions, pidfd_open, waitid};

/// The smallest `pid_max` the kernel accepts (`RESERVED_PIDS + 1`).
pub const PID_MAX_MIN: u32 = 301;

/// Whether this kernel keeps `pid_max` per PID namespace (Linux >= 6.14).
pub fn pid_max_is_namespaced() -> bool {
    let release = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (6, 14)
}

fn host_pid_max() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/pid_max").ok()
}

/// Configure the namespaces of the process behind `pidfd` (a namespace init that is blocked
/// before its setup): forbid nested user namespaces and, when `pid_max` is given, cap its PID
/// namespace. A forked child joins the user and PID namespaces through the pidfd; its own
/// child, which lives in that PID namespace, writes the values.
pub fn configure_namespaces(pidfd: BorrowedFd<'_>, pid_max: Option<u32>) -> std::io::Result<()> {
    if pid_max.is_some() && !pid_max_is_namespaced() {
        return Err(std::io::Error::other(
            "this kernel does not keep pid_max per PID namespace (needs Linux 6.14 or later)",
        ));
    }
    let before = host_pid_max();
    let pid_max_text = pid_max.map(|v| format!("{}\n", v.max(PID_MAX_MIN)));
    let pid_max_path = c"/proc/sys/kernel/pid_max";
    let userns_path = c"/proc/sys/user/max_user_namespaces";
    let zero = b"0\n";
    let raw = pidfd.as_raw_fd();
    // SAFETY: between fork and _exit the child makes only async-signal-safe system calls
    // (setns, fork, open, write, wait, _exit) on data prepared before the fork; it never
    // returns into Rust code, allocates or takes a lock.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if child == 0 {
        // SAFETY: see above; every path ends in _exit.
        unsafe {
            if libc::setns(raw, libc::CLONE_NEWUSER | libc::CLONE_NEWPID) != 0 {
                libc::_exit(10);
            }
            let writer = libc::fork();
            if writer == 0 {
                let fd = libc::open(userns_path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0
                    || libc::write(fd, zero.as_ptr().cast(), zero.len()) != zero.len() as isize
                {
                    libc::_exit(16);
                }
                if let Some(text) = &pid_max_text {
                    let fd = libc::open(pid_max_path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 {
                        libc::_exit(11);
                    }
                    let n = libc::write(fd, text.as_ptr().cast(), text.len());
                    libc::_exit(if n == text.len() as isize { 0 } else { 12 });
                }
                libc::_exit(0);
            }
            if writer < 0 {
                libc::_exit(13);
            }
            let mut status = 0;
            if libc::wait(&mut status) != writer {
                libc::_exit(14);
            }
            libc::_exit(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                15
            });
        }
    }
    // Our own unreaped child: the number still names it; hold it by a pidfd and reap it there.
    let fd = Pid::from_raw(child)
        .ok_or_else(|| std::io::Error::other("fork returned pid 0 in the parent"))
        .and_then(|p| pidfd_open(p, PidfdFlags::empty()).map_err(std::io::Error::from))?;
    let status = waitid(WaitId::PidFd(fd.as_fd()), WaitIdOptions::EXITED)
        .map_err(std::io::Error::from)?
        .and_then(|s| s.exit_status());
    if host_pid_max() != before {
        return Err(std::io::Error::other(
            "the host's pid_max changed while capping a sandbox; refusing to continue",
        ));
    }
    match status {
        Some(0) => Ok(()),
        Some(code) => Err(std::io::Error::other(format!(
            "configuring the sandbox's namespaces failed (step {code})"
        ))),
        None => Err(std::io::Error::other("the namespace helper was killed")),
    }
}
