//! Helpers shared by the live execution tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spear::harness::command_policy::ExecutionProfile;
use spear::harness::primitives::{Capability, CapabilitySet, ToolResult};
use spear::harness::process::{OutputSink, OutputStream};
use spear::harness::runtime::{CommandRunner, RunRequest, RunnerConfig};

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

pub fn networked() -> ExecutionProfile {
    profile(&[
        Capability::WorkspaceWrite,
        Capability::ShellComplex,
        Capability::Network,
    ])
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

/// Fork up to 1000 sleeping children in the sandbox (bounded, so a broken cap cannot hurt the
/// host) and return how many forks succeeded.
pub async fn bounded_flood(r: &CommandRunner) -> u64 {
    let cmd = r#"perl -e 'my $n = 0; for (1..1000) { my $p = fork; last unless defined $p; if (!$p) { sleep 30; exit } $n++ } print "forked=$n\n"'"#;
    let res = run_t(r, writable(), cmd, Some(Duration::from_secs(20))).await;
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
