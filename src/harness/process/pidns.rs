//! Settings written from inside a sandbox's namespaces before its command starts: the process
//! cap (`kernel.pid_max` of the sandbox's own PID namespace, namespaced since Linux 6.14; unlike
//! `RLIMIT_NPROC` it counts only the sandbox's processes and binds root too),
//! `user.max_user_namespaces = 0` (no nested user namespaces: what bwrap's `--disable-userns`
//! does, which cannot be combined with `--userns-block-fd`) and, on the network path, the
//! network namespace's own settings (netlink requests, IPv6 off on links made later).
//! Invariant: `pid_max` is written only on a kernel that namespaces it, from a process whose
//! active PID namespace is the sandbox's, and the host's value is checked unchanged afterwards;
//! network settings are made only from inside the sandbox's own network namespace.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use std::os::fd::{FromRawFd, OwnedFd};

use rustix::process::{WaitId, WaitIdOptions, waitid};
use thiserror::Error;

mod netlink;

/// The smallest `pid_max` the kernel accepts (`RESERVED_PIDS + 1`).
pub const PID_MAX_MIN: u32 = 301;

/// Whether this kernel keeps `pid_max` per PID namespace (Linux >= 6.14).
pub fn pid_max_is_namespaced() -> bool {
    kernel_at_least(&kernel_release(), (6, 14))
}

/// This kernel's release, as `uname -r` prints it.
pub fn kernel_release() -> String {
    rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned()
}

/// Whether a `uname -r` release is at least `(major, minor)`.
pub fn kernel_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= want
}

fn host_pid_max() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/pid_max").ok()
}

/// What the sandbox's network namespace is given before the command starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetnsPlan {
    /// Netlink requests back to back, numbered 1..=n, each asking for an acknowledgement.
    pub netlink: Vec<u8>,
    /// Set `net.ipv6.conf.default.disable_ipv6 = 1`: links made later (slirp's tap) get no IPv6.
    pub ipv6_off_for_new_links: bool,
    /// Open a listening TCP socket on this address inside the namespace and hand it back (the
    /// egress proxy accepts on it from outside; nothing of Spear's runs in the sandbox).
    pub listen: Option<std::net::SocketAddrV4>,
}

/// What the helper needs, prepared before it starts: it may not allocate. Raw pointers, since
/// the helper and the writer run at once on the same memory.
struct HelperPlan {
    pidfd: libc::c_int,
    /// The namespaces to join through the pidfd.
    setns_flags: libc::c_int,
    writer: *mut WriterPlan,
    writer_stack: *mut [u8],
    /// Share the file table (a listener is made): see `WriterPlan::listen`.
    share_files: bool,
}

/// What the writer needs.
struct WriterPlan {
    pid_max_text: Option<Vec<u8>>,
    /// `RLIMIT_NPROC` for the namespace's init (PID 1 there), inherited by everything it starts.
    nproc: Option<libc::rlimit64>,
    ipv6_off_for_new_links: bool,
    netlink: netlink::Exchange,
    /// Where to listen, and the socket made there (-1 until then). The helper and the writer
    /// share Spear's file table when this is set, so the descriptor is Spear's.
    listen: Option<libc::sockaddr_in>,
    listener: libc::c_int,
}

/// The exit codes the helper reports; success is 0.
const STEP_SETNS: libc::c_int = 10;
const STEP_PID_MAX: libc::c_int = 12;
const STEP_WRITER_SPAWN: libc::c_int = 13;
const STEP_WRITER_WAIT: libc::c_int = 14;
const STEP_WRITER_KILLED: libc::c_int = 15;
const STEP_USERNS: libc::c_int = 16;
const STEP_IPV6_OFF: libc::c_int = 17;
const STEP_NETLINK_SOCKET: libc::c_int = 18;
const STEP_NETLINK_SEND: libc::c_int = 19;
const STEP_NETLINK_RECEIVE: libc::c_int = 20;
const STEP_NETLINK_REFUSED: libc::c_int = 21;
const STEP_NPROC: libc::c_int = 22;
const STEP_LISTEN: libc::c_int = 23;

/// Room for one acknowledgement (a refusal echoes the request: well under a page).
const NETLINK_BUFFER: usize = 8192;

const HELPER_STACK: usize = 64 * 1024;

/// A stack for a helper that shares Spear's memory: mapped on its own, with its lowest page
/// inaccessible, so an overflow faults instead of writing over Spear's heap.
struct HelperStack {
    base: *mut libc::c_void,
    len: usize,
}

impl HelperStack {
    fn new() -> std::io::Result<HelperStack> {
        let page = rustix::param::page_size();
        let len = HELPER_STACK + page;
        // SAFETY: a fresh private anonymous mapping, owned by the returned value alone.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let stack = HelperStack { base, len };
        // SAFETY: the first page of the mapping just made.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stack)
    }

    fn as_slice(&mut self) -> *mut [u8] {
        std::ptr::slice_from_raw_parts_mut(self.base.cast::<u8>(), self.len)
    }
}

impl Drop for HelperStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}

/// Start `f(arg)` in a child that shares this process's memory, and return once it has exited
/// (`CLONE_VM | CLONE_VFORK`): nothing is copied, where the two forks this replaced copied
/// Spear's page tables twice. The child has its own file table and filesystem context and is
/// its own thread group, which is what `setns(CLONE_NEWUSER)` asks of its caller.
///
/// # Safety
/// `f` may only make async-signal-safe system calls on data prepared before the call: it must
/// not allocate, take a lock or unwind. `stack` and whatever `arg` points to must stay alive
/// until the child exits, which the vfork semantics give for anything the caller holds.
unsafe fn spawn_sharing_memory(
    f: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    stack: *mut [u8],
    arg: *mut libc::c_void,
    pidfd: Option<&mut libc::c_int>,
    share_files: bool,
) -> libc::pid_t {
    // The stack grows down on every architecture Spear runs on; its top is aligned to 16.
    let top = (stack.cast::<u8>() as usize + stack.len()) & !0xf;
    let files = if share_files { libc::CLONE_FILES } else { 0 };
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD | files;
    // SAFETY: the caller upholds the contract above; the stack is unused memory of ours. With
    // CLONE_PIDFD the kernel writes the child's pidfd into the int behind the parent-tid slot.
    unsafe {
        match pidfd {
            Some(out) => libc::clone(
                f,
                top as *mut libc::c_void,
                flags | libc::CLONE_PIDFD,
                arg,
                std::ptr::from_mut(out),
            ),
            None => libc::clone(f, top as *mut libc::c_void, flags, arg),
        }
    }
}

/// The helper: joins the sandbox's user and PID namespaces, then starts the writer, the first
/// process that lives in that PID namespace (a joined PID namespace is entered by children).
extern "C" fn namespace_helper(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `HelperPlan`, alive while the parent is suspended; only
    // system calls follow.
    unsafe {
        let plan = arg.cast::<HelperPlan>();
        if libc::setns((*plan).pidfd, (*plan).setns_flags) != 0 {
            return STEP_SETNS;
        }
        let writer = spawn_sharing_memory(
            namespace_writer,
            (*plan).writer_stack,
            (*plan).writer.cast(),
            None,
            (*plan).share_files,
        );
        if writer < 0 {
            return STEP_WRITER_SPAWN;
        }
        // The writer is this helper's only child, and has exited (vfork semantics): reap it
        // without naming it.
        let mut status = 0;
        if libc::wait(&mut status) != writer {
            return STEP_WRITER_WAIT;
        }
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            STEP_WRITER_KILLED
        }
    }
}

/// The writer, inside the sandbox's PID namespace: `user.max_user_namespaces = 0`, then the
/// namespace's own `kernel.pid_max` or its init's `RLIMIT_NPROC` when one is asked for, then the
/// network settings. PID 1 here is the namespace init, which cannot be another process while
/// the namespace lives.
extern "C" fn namespace_writer(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `WriterPlan`, alive while the parent is suspended; only
    // system calls follow.
    unsafe {
        let plan = arg.cast::<WriterPlan>();
        if !write_sysctl(c"/proc/sys/user/max_user_namespaces", b"0\n") {
            return STEP_USERNS;
        }
        if let Some(text) = &(*plan).pid_max_text
            && !write_sysctl(c"/proc/sys/kernel/pid_max", text)
        {
            return STEP_PID_MAX;
        }
        if let Some(limit) = &(*plan).nproc {
            // The writer holds every capability in the sandbox's user namespace, where the
            // init's credentials live, so it may set the init's limits.
            let set = libc::syscall(
                libc::SYS_prlimit64,
                1 as libc::pid_t,
                libc::RLIMIT_NPROC,
                std::ptr::from_ref(limit),
                std::ptr::null_mut::<libc::rlimit64>(),
            );
            if set != 0 {
                return STEP_NPROC;
            }
        }
        if (*plan).ipv6_off_for_new_links
            && !write_sysctl(c"/proc/sys/net/ipv6/conf/default/disable_ipv6", b"1\n")
        {
            return STEP_IPV6_OFF;
        }
        let routed = match netlink::run(&mut (*plan).netlink) {
            Ok(()) => 0,
            Err(netlink::Failure::Socket) => STEP_NETLINK_SOCKET,
            Err(netlink::Failure::Send) => STEP_NETLINK_SEND,
            Err(netlink::Failure::Receive) => STEP_NETLINK_RECEIVE,
            Err(netlink::Failure::Refused) => STEP_NETLINK_REFUSED,
        };
        if routed != 0 {
            return routed;
        }
        if let Some(addr) = &(*plan).listen {
            match listen_on(addr) {
                Some(fd) => (*plan).listener = fd,
                None => return STEP_LISTEN,
            }
        }
        0
    }
}

/// A listening TCP socket on `addr` in the caller's network namespace (close-on-exec,
/// non-blocking). `IP_FREEBIND`: bwrap may not have brought loopback up yet; the socket takes
/// connections once it is.
///
/// # Safety
/// Async-signal-safe: socket, setsockopt, bind, listen and close only.
unsafe fn listen_on(addr: &libc::sockaddr_in) -> Option<libc::c_int> {
    // SAFETY: plain system calls on valid memory.
    unsafe {
        let fd = libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        );
        if fd < 0 {
            return None;
        }
        let one: libc::c_int = 1;
        let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let ok = libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            libc::IP_FREEBIND,
            std::ptr::from_ref(&one).cast(),
            len,
        ) == 0
            && libc::bind(
                fd,
                std::ptr::from_ref(addr).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ) == 0
            && libc::listen(fd, 128) == 0;
        if ok {
            Some(fd)
        } else {
            libc::close(fd);
            None
        }
    }
}

/// Write `value` to the sysctl at `path` with one write; whether all of it was taken.
///
/// # Safety
/// Async-signal-safe: open, write and close only.
unsafe fn write_sysctl(path: &std::ffi::CStr, value: &[u8]) -> bool {
    // SAFETY: plain system calls on a valid C string and buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, value.as_ptr().cast(), value.len());
        libc::close(fd);
        n == value.len() as isize
    }
}

/// Why a sandbox's namespaces could not be given their settings.
#[derive(Debug, Error)]
pub enum NamespaceConfigError {
    #[error("this kernel does not keep pid_max per PID namespace (needs Linux 6.14 or later)")]
    PidMaxNotNamespaced,
    #[error("the host's pid_max changed while capping a sandbox; refusing to continue")]
    HostPidMaxChanged,
    #[error("the namespace helper was killed")]
    HelperKilled,
    /// The helper (or its writer) stopped at step `code`; `refused` is the netlink request the
    /// kernel refused and its errno, when that was the step.
    #[error(
        "configuring the sandbox's namespaces failed at step {code}: {}",
        describe_step(*code, *refused)
    )]
    Step {
        code: libc::c_int,
        refused: (u32, i32),
    },
    /// Starting or waiting for the helper failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Configure the namespaces of the process behind `pidfd` (a namespace init that is blocked
/// before its setup): forbid nested user namespaces, cap its PID namespace when `pid_max` is
/// given, set the init's `RLIMIT_NPROC` to `nproc` when given (counted in the sandbox's user
/// namespace alone), and apply `net` inside its network namespace. A helper joins the user and PID (and,
/// for `net`, network) namespaces through the pidfd; its own child, which lives in that PID
/// namespace, makes the settings.
pub fn configure_namespaces(
    pidfd: BorrowedFd<'_>,
    pid_max: Option<u32>,
    nproc: Option<u64>,
    net: Option<&NetnsPlan>,
) -> Result<Option<OwnedFd>, NamespaceConfigError> {
    if pid_max.is_some() && !pid_max_is_namespaced() {
        return Err(NamespaceConfigError::PidMaxNotNamespaced);
    }
    let before = host_pid_max();
    let mut writer_stack = HelperStack::new()?;
    let mut helper_stack = HelperStack::new()?;
    // On the heap, so that a writer left running (below) never reads this stack frame.
    let writer = Box::into_raw(Box::new(WriterPlan {
        pid_max_text: pid_max.map(|v| format!("{}\n", v.max(PID_MAX_MIN)).into_bytes()),
        nproc: nproc.map(|n| libc::rlimit64 {
            rlim_cur: n,
            rlim_max: n,
        }),
        ipv6_off_for_new_links: net.is_some_and(|n| n.ipv6_off_for_new_links),
        netlink: netlink::Exchange {
            requests: net.map(|n| n.netlink.clone()).unwrap_or_default(),
            buffer: vec![0; if net.is_some() { NETLINK_BUFFER } else { 0 }],
            refused: (0, 0),
        },
        listen: net.and_then(|n| n.listen).map(|a| libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: a.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(*a.ip()).to_be(),
            },
            sin_zero: [0; 8],
        }),
        listener: -1,
    }));
    let share_files = net.is_some_and(|n| n.listen.is_some());
    let net_flag = if net.is_some() { libc::CLONE_NEWNET } else { 0 };
    let mut plan = HelperPlan {
        pidfd: pidfd.as_raw_fd(),
        setns_flags: libc::CLONE_NEWUSER | libc::CLONE_NEWPID | net_flag,
        writer,
        writer_stack: writer_stack.as_slice(),
        share_files,
    };
    let mut helper_pidfd: libc::c_int = -1;
    // SAFETY: the helper and the writer make only async-signal-safe system calls on the plans
    // prepared above; this thread is suspended until the helper has exited (CLONE_VFORK), and
    // the helper until the writer has, so the plans and both stacks outlive them (but see
    // below for a helper killed from outside).
    let child = unsafe {
        spawn_sharing_memory(
            namespace_helper,
            helper_stack.as_slice(),
            (&raw mut plan).cast(),
            Some(&mut helper_pidfd),
            share_files,
        )
    };
    if child < 0 || helper_pidfd < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: CLONE_PIDFD gave us this descriptor, and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(helper_pidfd) };
    let status = waitid(WaitId::PidFd(fd.as_fd()), WaitIdOptions::EXITED);
    let status = status
        .map_err(std::io::Error::from)
        .map(|s| s.and_then(|s| s.exit_status()));
    // A helper that did not end on its own (killed from outside while it waited for the
    // writer, or it could not reap the writer) may have left the writer running on the shared
    // stacks and plans: those are never freed then, rather than freed under it.
    let mut refused = (0, 0);
    let mut listener = None;
    if matches!(status, Ok(Some(code)) if code != STEP_WRITER_WAIT) {
        // SAFETY: from Box::into_raw above; the writer has exited, nothing else holds it.
        let plan = unsafe { Box::from_raw(writer) };
        refused = plan.netlink.refused;
        if plan.listener >= 0 {
            // SAFETY: the writer made this descriptor in the file table it shared with us and
            // has exited; nothing else owns it.
            listener = Some(unsafe { OwnedFd::from_raw_fd(plan.listener) });
        }
    } else {
        std::mem::forget(writer_stack);
        std::mem::forget(helper_stack);
    }
    let status = status?;
    if host_pid_max() != before {
        return Err(NamespaceConfigError::HostPidMaxChanged);
    }
    match status {
        Some(0) => Ok(listener),
        Some(code) => Err(NamespaceConfigError::Step { code, refused }),
        None => Err(NamespaceConfigError::HelperKilled),
    }
}

/// What a helper's exit code means; `refused` is the netlink request the kernel refused.
fn describe_step(code: libc::c_int, refused: (u32, i32)) -> String {
    match code {
        STEP_SETNS => "joining the sandbox's namespaces".to_string(),
        STEP_USERNS => "writing user.max_user_namespaces".to_string(),
        STEP_PID_MAX => "writing kernel.pid_max".to_string(),
        STEP_NPROC => "setting the sandbox init's RLIMIT_NPROC".to_string(),
        STEP_IPV6_OFF => "turning IPv6 off for the sandbox's uplink".to_string(),
        STEP_NETLINK_SOCKET => "opening a netlink socket in the sandbox's network".to_string(),
        STEP_NETLINK_SEND => "sending a route to the sandbox's network".to_string(),
        STEP_NETLINK_RECEIVE => {
            "reading the kernel's acknowledgement of a route (none came)".to_string()
        }
        STEP_NETLINK_REFUSED => format!(
            "installing route request {}: the kernel refused it ({})",
            refused.0,
            std::io::Error::from_raw_os_error(refused.1)
        ),
        STEP_WRITER_SPAWN => "starting the namespace writer".to_string(),
        STEP_LISTEN => "opening the egress proxy's listening socket in the sandbox".to_string(),
        STEP_WRITER_KILLED => "the namespace writer was killed".to_string(),
        _ => "waiting for the namespace writer".to_string(),
    }
}
