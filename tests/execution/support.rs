//! Helpers shared by the live execution tests.
#![allow(dead_code)]

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::features::record_host_facts;

use spear::harness::command_policy::ExecutionProfile;
use spear::harness::command_runner::{CommandRunner, RunRequest, RunnerConfig};
use spear::harness::primitives::{Capability, CapabilitySet, ToolResult};
use spear::harness::process::{OutputSink, OutputStream};

/// Fail (never skip) when bubblewrap is missing.
pub fn require_bwrap() {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join("bwrap").is_file());
    assert!(
        found,
        "bubblewrap (bwrap) is not installed: run `apt-get install bubblewrap` (or `make test`, \
         which installs it) — the live execution tests cannot run without it"
    );
}

pub fn require_slirp() {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join("slirp4netns").is_file());
    assert!(
        found,
        "slirp4netns is not installed: run `apt-get install slirp4netns` (or `make test`)"
    );
}

/// The spear binary: Cargo's, or a copy named by `SPEAR_BIN` (scripts/test-unprivileged).
pub fn spear_bin() -> PathBuf {
    std::env::var_os("SPEAR_BIN")
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_spear").into())
}

/// `spear` run in the workspace `ws`, with its state directory beside it.
pub fn spear_in(ws: &Path) -> assert_cmd::Command {
    require_bwrap();
    record_host_facts();
    let mut c = assert_cmd::Command::new(spear_bin());
    c.current_dir(ws).env("XDG_STATE_HOME", state_dir(ws));
    c
}

/// A fresh workspace directory (canonical).
pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::Builder::new()
        .prefix("spear-ws-")
        .tempdir()
        .unwrap();
    // The workspace is a directory of its own so its siblings (the state directory that
    // holds the audit log) lie outside it, as they do for a real project.
    let p = d.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&p).unwrap();
    std::fs::create_dir(d.path().join("state")).unwrap();
    (d, p)
}

/// The state directory (audit log) that goes with a `workspace()`.
pub fn state_dir(ws: &Path) -> PathBuf {
    ws.parent().unwrap().join("state")
}

pub fn config(ws: &Path) -> RunnerConfig {
    require_bwrap();
    record_host_facts();
    RunnerConfig::for_workspace(ws)
}

pub fn runner(ws: &Path) -> CommandRunner {
    CommandRunner::new(config(ws)).unwrap()
}

pub fn profile(caps: &[Capability]) -> ExecutionProfile {
    let mut all = vec![Capability::WorkspaceRead];
    all.extend_from_slice(caps);
    ExecutionProfile::from_granted(CapabilitySet::of(&all), Vec::new())
}

pub fn read_only() -> ExecutionProfile {
    profile(&[])
}

pub fn writable() -> ExecutionProfile {
    profile(&[Capability::WorkspaceWrite, Capability::ShellComplex])
}

/// Writable with the network on the full path (slirp4netns), which these tests are about.
pub fn networked() -> ExecutionProfile {
    let mut p = profile(&[
        Capability::WorkspaceWrite,
        Capability::ShellComplex,
        Capability::Network,
    ]);
    p.egress.path = spear::harness::egress::NetworkPath::Full;
    p
}

/// Writable with the network through the egress proxy, reaching what `rules` allow.
pub fn proxied(rules: spear::harness::egress::HostRules) -> ExecutionProfile {
    profile(&[
        Capability::WorkspaceWrite,
        Capability::ShellComplex,
        Capability::Network,
    ])
    .with_egress(spear::harness::egress::Egress::by_name(Arc::new(rules)))
}

/// A sink that counts bytes (and keeps nothing).
#[derive(Clone, Default)]
pub struct Counting(pub Arc<Mutex<(u64, u64)>>);

impl OutputSink for Counting {
    fn write(&mut self, stream: OutputStream, bytes: &[u8]) {
        let mut g = self.0.lock().unwrap();
        match stream {
            OutputStream::Stdout => g.0 += bytes.len() as u64,
            OutputStream::Stderr => g.1 += bytes.len() as u64,
        }
    }
}

pub async fn run(r: &CommandRunner, profile: ExecutionProfile, cmd: &str) -> ToolResult {
    run_t(r, profile, cmd, None).await
}

pub async fn run_t(
    r: &CommandRunner,
    profile: ExecutionProfile,
    cmd: &str,
    timeout: Option<Duration>,
) -> ToolResult {
    let req = RunRequest {
        command: cmd.to_string(),
        profile,
        timeout,
    };
    r.run(&req, &mut Counting::default()).await
}

/// Processes on the host whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) && !cmd.contains("cargo") {
                out.push(format!("{pid}: {cmd}"));
            }
        }
    }
    out
}

/// Every process on the host with its `argv[0]` (a zombie's is empty).
pub fn host_argv0s() -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let argv0 = cmd.split(|b| *b == 0).next().unwrap_or_default();
        out.push((pid, String::from_utf8_lossy(argv0).into_owned()));
    }
    out
}

/// Live processes (not zombies) on the host whose `argv[0]` is exactly `argv0`.
pub fn processes_named(argv0: &str) -> Vec<i32> {
    host_argv0s()
        .into_iter()
        .filter(|(_, a)| a == argv0)
        .map(|(pid, _)| pid)
        .collect()
}

/// The result is `failed` and its reason says `needle`.
pub fn assert_failed_saying(res: &ToolResult, needle: &str) {
    assert_eq!(
        res.status,
        spear::harness::primitives::ToolStatus::Failed,
        "{res:?}"
    );
    assert!(
        res.reason.as_deref().unwrap_or("").contains(needle),
        "expected {needle:?}: {res:?}"
    );
}

/// Fork up to 1000 sleeping children in a sandbox of `profile` (bounded, so a broken cap cannot
/// hurt the host) and return how many forks succeeded.
pub async fn bounded_flood(r: &CommandRunner, profile: ExecutionProfile) -> u64 {
    let cmd = r#"perl -e 'my $n = 0; for (1..1000) { my $p = fork; last unless defined $p; if (!$p) { sleep 30; exit } $n++ } print "forked=$n\n"'"#;
    let res = run_t(r, profile, cmd, Some(Duration::from_secs(20))).await;
    assert_eq!(
        res.status,
        spear::harness::primitives::ToolStatus::Ok,
        "{res:?}"
    );
    res.stdout
        .trim()
        .trim_start_matches("forked=")
        .parse()
        .unwrap()
}

/// Wait until `probe` finds what it looks for, or `limit` passes. Only for a condition that is
/// itself what the test awaits (a process appearing in /proc, a connection arriving): there is
/// no event to wait on for "the host can see it now", so the condition is polled.
pub async fn eventually<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Wait in the kernel (poll) until one of `fds` is readable (a listener has a connection
/// waiting), or `limit` passes; true when one is.
pub fn wait_readable(fds: &[&dyn std::os::fd::AsFd], limit: Duration) -> bool {
    let mut polled: Vec<rustix::event::PollFd<'_>> = fds
        .iter()
        .map(|fd| rustix::event::PollFd::from_borrowed_fd(fd.as_fd(), rustix::event::PollFlags::IN))
        .collect();
    let timeout = rustix::event::Timespec::try_from(limit).unwrap();
    loop {
        match rustix::event::poll(&mut polled, Some(&timeout)) {
            Ok(n) => return n > 0,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => panic!("poll: {e}"),
        }
    }
}

/// A FIFO in the workspace a sandboxed command blocks on (`read _ < gate`) until the test lets
/// it through: the test's own handle is open for reading and writing, so the command's open
/// never blocks, and its read returns when the test writes a line. The handle stays open until
/// the gate is dropped, so a line written before the command opened the FIFO is still there.
pub struct Gate {
    held: OwnedFd,
    opened: bool,
}

impl Gate {
    /// The FIFO `ws/name`, held open.
    pub fn new(ws: &Path, name: &str) -> Gate {
        let path = ws.join(name);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o666),
            0,
        )
        .unwrap();
        // mknod applies the umask; the unprivileged run's sandbox user is the test's own, but
        // the mode should not depend on the caller's umask.
        rustix::fs::chmod(&path, rustix::fs::Mode::from_raw_mode(0o666)).unwrap();
        let held = rustix::fs::open(
            &path,
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        Gate {
            held,
            opened: false,
        }
    }

    /// Let the command through (once; later calls do nothing).
    pub fn open(&mut self) {
        if !std::mem::replace(&mut self.opened, true) {
            rustix::io::write(&self.held, b"go\n").unwrap();
        }
    }
}

/// Every process whose command line carries `marker` is gone. The namespace is gone when
/// `run` returns; /proc may take a moment to agree, so that is polled with a deadline.
pub async fn assert_none_survive(marker: &str) {
    for _ in 0..20 {
        if processes_with(marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "processes survived the sandbox: {:?}",
        processes_with(marker)
    );
}

/// A fork bomb marked with `marker` runs under `r`, is refused forks by the process cap (the
/// positive control: it ran and hit the cap), times out, and leaves nothing behind.
pub async fn assert_fork_bomb_stopped(r: &CommandRunner, marker: &str) {
    let cmd = format!("# {marker}\nb() {{ b | b & }}; b; sleep 10");
    let res = run_t(r, writable(), &cmd, Some(Duration::from_secs(3))).await;
    assert_eq!(
        res.status,
        spear::harness::primitives::ToolStatus::Timeout,
        "{res:?}"
    );
    assert!(
        res.reason
            .as_deref()
            .unwrap_or("")
            .contains("too many processes"),
        "{res:?}"
    );
    assert_none_survive(marker).await;
}
