//! The network path. The sandbox starts in its own network namespace and blocks (`--block-fd`)
//! until Spear has held its namespace init by a pidfd, opened its `ns/net` and owner `ns/user`
//! handles, started slirp4netns against those pinned handles (never a numeric PID) with
//! `--configure --disable-host-loopback --ready-fd`, and seen the helper ready; only then does
//! the command start, with `/etc/resolv.conf` naming slirp's DNS. Before that, inside the
//! sandbox's own network namespace, every address that is not the internet (the host's own, its
//! networks, private, link-local and metadata, multicast and the other special ranges, less the
//! configured exceptions) gets a `prohibit` route, read back before the command is released.
//! Invariants: no command starts on this path with a refusal route missing; if a sandbox on this
//! path was told to die and its death could not be confirmed through its pidfd, the sandbox
//! instance refuses every later network request (`network_containment_failed`).

pub(crate) mod error;
pub mod ranges;
pub mod refused;
pub mod routes;

pub use error::{NetworkPreflightError, NetworkSetupError, NetworkSupportError};
pub use ranges::{IpPrefix, PrefixParseError};

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::launch::{KILL_GRACE, Running};
use super::{
    BubblewrapSandbox, LaunchLimits, SandboxError, SandboxNetwork, SandboxOutcome, SandboxSpec,
};
use crate::harness::process::{ForeignProcess, NetnsPlan, OutputSink, SpawnRequest, spawn_held};

/// slirp's DNS forwarder inside the sandbox network.
pub const SLIRP_DNS: &str = "10.0.2.3";
/// How long slirp4netns may take to configure the interface.
const READY_LIMIT: Duration = Duration::from_secs(10);

/// Whether the network path can work here: the helper exists and supports pinned namespaces.
pub fn check_support(sandbox: &BubblewrapSandbox) -> Result<(), NetworkSupportError> {
    let slirp = sandbox.slirp()?;
    static PINNED: OnceLock<Result<(), NetworkSupportError>> = OnceLock::new();
    PINNED
        .get_or_init(|| {
            let help = Command::new(slirp)
                .arg("--help")
                .env_clear()
                .output()
                .map_err(|e| NetworkSupportError::SlirpUnrunnable(Arc::new(e)))?;
            let text = String::from_utf8_lossy(&help.stdout);
            if !text.contains("--netns-type") || !text.contains("--userns-path") {
                return Err(NetworkSupportError::NoPinnedNamespaces);
            }
            // The helper parses the sandbox's untrusted packets; it is never run without its
            // own mount namespace and syscall filter.
            if !text.contains("--enable-sandbox") || !text.contains("--enable-seccomp") {
                return Err(NetworkSupportError::NoSelfConfinement);
            }
            // Unprivileged, slirp4netns opens /dev/net/tun inside the sandbox's namespaces
            // with no privilege on the host: the device must be open to everyone, as
            // distributions ship it.
            if !rustix::process::geteuid().is_root() {
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/net/tun")
                    .map_err(|e| NetworkSupportError::TunUnopenable(Arc::new(e)))?;
            }
            for ns in ["net", "user"] {
                File::open(format!("/proc/self/ns/{ns}")).map_err(|e| {
                    NetworkSupportError::NamespaceHandle {
                        ns,
                        source: Arc::new(e),
                    }
                })?;
            }
            Ok(())
        })
        .clone()
}

/// Run `spec` with slirp networking attached before the command starts.
pub async fn run_with_slirp(
    sandbox: &BubblewrapSandbox,
    spec: SandboxSpec,
    limits: &LaunchLimits,
    sink: &mut dyn OutputSink,
    timeout: Duration,
    allow_host_loopback: bool,
    network_allow: &[IpPrefix],
) -> Result<SandboxOutcome, SandboxError> {
    let (mut running, helper) = start_with_slirp(
        sandbox,
        spec,
        limits,
        None,
        timeout,
        allow_host_loopback,
        network_allow,
    )
    .await?;
    // Only now may the command start.
    running.release();
    let outcome = running.finish(sink, timeout).await;
    if outcome.containment.is_err() {
        sandbox.poison_network();
    }
    // The helper is ours: stop it and reap it through its pidfd.
    if helper.stop(KILL_GRACE).await.is_err() {
        sandbox.poison_network();
    }
    Ok(outcome)
}

/// Launch `spec` with slirp attached to its network namespace and the refusal routes checked,
/// the command still held: the caller releases it, and owns the helper (slirp4netns, held by
/// its pidfd), which must be stopped when the sandbox ends.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn start_with_slirp(
    sandbox: &BubblewrapSandbox,
    mut spec: SandboxSpec,
    limits: &LaunchLimits,
    stdin: Option<File>,
    timeout: Duration,
    allow_host_loopback: bool,
    network_allow: &[IpPrefix],
) -> Result<(Running, crate::harness::process::HeldChild), SandboxError> {
    if sandbox.network_containment_failed() {
        return Err(SandboxError::NetworkPoisoned);
    }
    let slirp = sandbox.slirp()?.to_path_buf();
    let resolv = resolv_conf_memfd()?;
    spec.network = SandboxNetwork::Slirp {
        resolv_conf_fd: resolv.as_raw_fd(),
        resolv_conf_dest: sandbox.layout().resolv_conf_dest.clone(),
    };
    let (refused, ipv6) = refusals(network_allow, allow_host_loopback)?;
    let mut limits = limits.clone();
    limits.netns = Some(NetnsPlan {
        netlink: routes::route_batch(&refused),
        ipv6_off_for_new_links: ipv6,
        listen: None,
    });
    // bwrap sets up loopback and its mounts meanwhile; the command waits on --block-fd.
    let mut running = sandbox
        .start(spec, &limits, vec![resolv], stdin, timeout)
        .await?;
    let attached = attach(&mut running, &slirp, allow_host_loopback, &refused).await;
    match attached {
        Ok(helper) => Ok((running, helper)),
        Err(why) => {
            // Nothing ran yet; take the blocked sandbox down and report the setup failure.
            if sandbox.kill_confirmed(&running).await.is_err() {
                sandbox.poison_network();
            }
            Err(SandboxError::NetworkSetup(why))
        }
    }
}

/// What this launch refuses, from the host's addresses now: the routes, and whether the kernel
/// has IPv6 (then IPv6 is also turned off on slirp's link, which carries none).
fn refusals(
    network_allow: &[IpPrefix],
    allow_host_loopback: bool,
) -> Result<(Vec<IpPrefix>, bool), SandboxError> {
    let host = refused::host_addresses().map_err(SandboxError::HostAddresses)?;
    let ipv6 = refused::kernel_has_ipv6();
    let prefixes = refused::refused_prefixes(&host, network_allow, allow_host_loopback, ipv6);
    Ok((prefixes, ipv6))
}

/// Read the sandbox's routing tables back and check every refusal route is in place.
fn verify_refusals(
    inner: &ForeignProcess,
    pid: i32,
    refused: &[IpPrefix],
) -> Result<(), NetworkSetupError> {
    let read = |table: &'static str| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{table}"))
            .map_err(|source| NetworkSetupError::RouteTableUnreadable { table, source })
    };
    let v4 = read("route")?;
    let v6 = match refused.iter().any(|p| !p.is_ipv4()) {
        true => read("ipv6_route")?,
        false => String::new(),
    };
    // As for the namespace handles: alive after the read, so the number named the sandbox.
    if !inner.is_alive() {
        return Err(NetworkSetupError::DiedWhileRoutesChecked);
    }
    Ok(routes::check_installed(
        refused,
        &routes::reject_routes(&v4, &v6),
    )?)
}

/// Pin the sandbox's namespaces and start slirp4netns on them; returns the helper once ready
/// and the refusal routes are confirmed in place.
async fn attach(
    running: &mut Running,
    slirp: &std::path::Path,
    allow_host_loopback: bool,
    refused: &[IpPrefix],
) -> Result<crate::harness::process::HeldChild, NetworkSetupError> {
    let inner = running
        .inner(READY_LIMIT)
        .await
        .ok_or(NetworkSetupError::EndedBeforeReport)?;
    let pid = inner.pid()?;
    let net: OwnedFd = File::open(format!("/proc/{pid}/ns/net"))
        .map_err(NetworkSetupError::NetnsOpen)?
        .into();
    // slirp4netns must not configure the namespace while bwrap still does (bwrap's loopback
    // setup fails when the two race): wait until bwrap's loopback is up.
    wait_for_loopback(inner, pid).await?;
    // The owner of the network namespace, asked of the namespace itself: bwrap's init may sit
    // in a nested user namespace (`--disable-userns`) that has no power over the netns.
    let user = owner_userns(&net).map_err(NetworkSetupError::OwnerUserns)?;
    // The init cannot finish before the command is let through --block-fd, and its pidfd held
    // it before the handles were opened; check through the pidfd that it is still alive, so the
    // number named it throughout.
    if !inner.is_alive() {
        return Err(NetworkSetupError::DiedWhilePinned);
    }
    let (ready_read, ready_write) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(std::io::Error::from)?;
    let mut cmd = Command::new(slirp);
    cmd.env_clear()
        .arg("--configure")
        .arg("--mtu=65520")
        .arg("--netns-type=path")
        // Its seccomp filter always: a flaw in libslirp reached by the sandbox's packets then
        // holds only the calls slirp needs. If the helper cannot start with it, it reports an
        // error and the network is refused.
        .arg("--enable-seccomp")
        .arg(format!("--userns-path=/proc/self/fd/{}", user.as_raw_fd()))
        .arg(format!("--ready-fd={}", ready_write.as_raw_fd()));
    // As root, also its own mount namespace with every capability but binding low ports
    // dropped. Unprivileged it has no capability on the host to drop, and it cannot make the
    // mount namespace: slirp4netns builds it as root of the namespace's owning user namespace,
    // and the sandbox's maps only the person's uid, never root.
    if rustix::process::geteuid().is_root() {
        cmd.arg("--enable-sandbox");
    }
    if !allow_host_loopback {
        cmd.arg("--disable-host-loopback");
    }
    cmd.arg(format!("/proc/self/fd/{}", net.as_raw_fd()))
        .arg("tap0");
    let fds = [net.as_raw_fd(), user.as_raw_fd(), ready_write.as_raw_fd()];
    // The helper's complaints go to an in-memory file: never a pipe it could block on.
    let log = File::from(
        rustix::fs::memfd_create("spear-slirp-log", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(std::io::Error::from)?,
    );
    let helper = spawn_held(SpawnRequest {
        command: cmd,
        inherit_fds: &fds,
        rlimits: &[],
        capture: false,
        stderr_file: Some(log.try_clone()?),
        join_cgroup: None,
        stdin: None,
        stage: None,
    })?;
    drop((net, user, ready_write));
    let mut ready = pipe::Receiver::from_owned_fd(ready_read)?;
    let mut byte = [0u8; 1];
    // Why the helper is not ready, completed with what it wrote to its log.
    enum NotReady {
        Read(std::io::Error),
        Exited(Result<crate::harness::process::Exit, crate::harness::process::ProcessError>),
        TimedOut,
    }
    let waited = tokio::select! {
        r = ready.read(&mut byte) => r.map_err(NotReady::Read),
        r = helper.wait() => Err(NotReady::Exited(r)),
        _ = tokio::time::sleep(READY_LIMIT) => Err(NotReady::TimedOut),
    };
    match waited {
        Ok(1) => match verify_refusals(inner, pid, refused) {
            Ok(()) => Ok(helper),
            Err(why) => {
                let _ = helper.stop(KILL_GRACE).await;
                Err(why)
            }
        },
        other => {
            let _ = helper.stop(KILL_GRACE).await;
            let said = read_log(&log);
            Err(match other {
                Err(NotReady::Read(source)) => NetworkSetupError::ReadyRead { source, said },
                Err(NotReady::Exited(exit)) => NetworkSetupError::HelperExited { exit, said },
                Err(NotReady::TimedOut) => NetworkSetupError::HelperNotReady { said },
                Ok(_) => NetworkSetupError::ReadyFdClosed { said },
            })
        }
    }
}

/// Wait until the sandbox's loopback has its address (bwrap configures it after the user
/// namespace gate opens, before its mounts), or the sandbox dies.
async fn wait_for_loopback(
    inner: &crate::harness::process::ForeignProcess,
    pid: i32,
) -> Result<(), NetworkSetupError> {
    let deadline = std::time::Instant::now() + READY_LIMIT;
    let path = format!("/proc/{pid}/net/fib_trie");
    loop {
        if std::fs::read_to_string(&path).is_ok_and(|t| t.contains("127.0.0.1")) {
            return Ok(());
        }
        if !inner.is_alive() {
            return Err(NetworkSetupError::DiedDuringSetup);
        }
        if std::time::Instant::now() > deadline {
            return Err(NetworkSetupError::LoopbackNeverUp);
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

/// The first kilobytes of the helper's log.
fn read_log(log: &File) -> String {
    use std::io::{Read, Seek};
    let mut f = log;
    let mut buf = Vec::new();
    let _ = f.seek(std::io::SeekFrom::Start(0));
    let _ = f.take(4096).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).trim().replace('\n', "; ")
}

/// `ioctl(NS_GET_USERNS)`: the user namespace that owns namespace `ns`.
fn owner_userns(ns: &OwnedFd) -> std::io::Result<OwnedFd> {
    const NS_GET_USERNS: libc::c_ulong = 0xb701; // _IO(0xb7, 0x1)
    // SAFETY: NS_GET_USERNS takes no argument and returns a new file descriptor or -1; `ns`
    // is a valid open namespace fd for the duration of the call.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_USERNS) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd to us and nothing else owns it.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// A sealed in-memory file holding the sandbox's resolv.conf, for `--ro-bind-data`.
fn resolv_conf_memfd() -> std::io::Result<OwnedFd> {
    let fd = rustix::fs::memfd_create("spear-resolv.conf", rustix::fs::MemfdFlags::CLOEXEC)?;
    let mut f = File::from(fd);
    writeln!(f, "nameserver {SLIRP_DNS}")?;
    rustix::fs::seek(&f, rustix::fs::SeekFrom::Start(0))?;
    Ok(f.into())
}
