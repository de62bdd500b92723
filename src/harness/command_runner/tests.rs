//! CommandRunner tests that need the crate's insides: the sandbox home rule, and what happens
//! to a sandbox nobody released. The live suite in `tests/execution.rs` covers the rest.

use super::*;
use crate::harness::primitives::{Capability, CapabilitySet};
use std::sync::atomic::Ordering;

#[test]
fn home_falls_back_when_the_host_one_is_unsuitable() {
    let ws = Path::new("/work/p");
    assert_eq!(
        sandbox_home(Some(Path::new("/root")), ws),
        PathBuf::from("/root")
    );
    assert_eq!(
        sandbox_home(Some(Path::new("/work")), ws),
        PathBuf::from("/work")
    );
    for bad in [
        "/",
        "/work/p",
        "/work/p/h",
        "relative",
        "/usr/x",
        "/home/../etc",
    ] {
        assert_eq!(
            sandbox_home(Some(Path::new(bad)), ws),
            PathBuf::from("/tmp/home"),
            "{bad}"
        );
    }
    assert_eq!(sandbox_home(None, ws), PathBuf::from("/tmp/home"));
}

/// A sandbox for `command`, launched and held before its release.
async fn start_unreleased(
    runner: &CommandRunner,
    profile: &ExecutionProfile,
    command: Vec<OsString>,
) -> crate::harness::sandbox::Running {
    let spec = runner.build_spec(profile, command).unwrap();
    runner
        .sandbox()
        .start(
            spec,
            &LaunchLimits::default(),
            Vec::new(),
            None,
            Duration::from_secs(10),
        )
        .await
        .unwrap()
}

/// bwrap reads a closed gate as an open one. A launched sandbox that is dropped before its
/// release (an error path, a cancelled future) must be killed, not let through: its command
/// never runs and bwrap is gone.
#[tokio::test]
async fn a_sandbox_dropped_before_its_release_never_runs_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let runner = CommandRunner::new(RunnerConfig::for_workspace(&ws)).unwrap();
    runner.ensure_sandbox().await.unwrap();
    let caps = CapabilitySet::of(&[
        Capability::WorkspaceRead,
        Capability::WorkspaceWrite,
        Capability::ShellComplex,
    ]);
    let profile = ExecutionProfile::from_granted(caps, Vec::new());
    let marker = ws.join("marker");
    let cmd = format!("touch {}", marker.display());
    let running = start_unreleased(
        &runner,
        &profile,
        vec!["/bin/sh".into(), "-c".into(), cmd.into()],
    )
    .await;
    let pid = running.pid();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    // Held across the drop: it names this bwrap even after it is reaped.
    let pidfd = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::PidfdFlags::empty(),
    )
    .unwrap();
    drop(running);
    // bwrap's exit is what is awaited: its pidfd turns readable when it has exited.
    let mut fds = [rustix::event::PollFd::new(
        &pidfd,
        rustix::event::PollFlags::IN,
    )];
    let limit = rustix::event::Timespec {
        tv_sec: 10,
        tv_nsec: 0,
    };
    let exited = rustix::event::poll(&mut fds, Some(&limit)).unwrap() > 0;
    assert!(exited, "bwrap outlived its dropped Running");
    assert!(
        !marker.exists(),
        "the command ran although it was never released"
    );
    // Positive control: the same command, released, does leave the marker.
    let res = run_cmd(&runner, profile, &format!("touch {}", marker.display())).await;
    assert_eq!(
        res.status,
        crate::harness::primitives::ToolStatus::Ok,
        "{res:?}"
    );
    assert!(marker.exists(), "the released command left no marker");
}

fn networked_profile() -> ExecutionProfile {
    let caps = CapabilitySet::of(&[
        Capability::WorkspaceRead,
        Capability::WorkspaceWrite,
        Capability::ShellComplex,
        Capability::Network,
    ]);
    let mut p = ExecutionProfile::from_granted(caps, Vec::new());
    p.egress.path = crate::harness::egress::NetworkPath::Full;
    p
}

fn runner_in(dir: &tempfile::TempDir) -> CommandRunner {
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    CommandRunner::new(RunnerConfig::for_workspace(&ws)).unwrap()
}

/// A command that ends by itself is confirmed dead through its pidfds, so its ledger entry is
/// forgotten without a look through `/proc` for its marker (bwrap exits as soon as the
/// namespace init reports, often before the init itself is gone). Positive control: a launch
/// dropped unreleased is not confirmed, and its entry does look.
#[tokio::test]
async fn a_command_that_ends_by_itself_is_confirmed_dead_without_a_sweep() {
    use crate::harness::sandbox::ledger::SCANS;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let mut config = RunnerConfig::for_workspace(&ws);
    config.ledger_dir = Some(dir.path().join("ledger"));
    let runner = CommandRunner::new(config).unwrap();
    assert!(runner.ledger_sweep().is_some(), "no ledger was opened");
    runner.ensure_sandbox().await.unwrap();
    SCANS.with(|n| n.set(0));
    for _ in 0..15 {
        let r = run_cmd(&runner, ExecutionProfile::read_only(), "true").await;
        assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    }
    assert_eq!(SCANS.with(|n| n.get()), 0, "a finished launch swept /proc");
    let running = start_unreleased(
        &runner,
        &ExecutionProfile::read_only(),
        vec!["/bin/true".into()],
    )
    .await;
    drop(running);
    assert!(
        SCANS.with(|n| n.get()) > 0,
        "the unreleased launch was not swept"
    );
    let left = std::fs::read_dir(dir.path().join("ledger"))
        .unwrap()
        .count();
    assert_eq!(left, 0, "ledger entries were left behind");
}

async fn run_cmd(runner: &CommandRunner, profile: ExecutionProfile, cmd: &str) -> ToolResult {
    let req = RunRequest {
        command: cmd.into(),
        profile,
        timeout: Some(Duration::from_secs(20)),
    };
    runner
        .run(&req, &mut crate::harness::process::NullSink)
        .await
}

fn inject(runner: &CommandRunner, setup: bool, unconfirmed: bool) {
    let f = &runner.sandbox().faults;
    f.namespace_setup.store(setup, Ordering::SeqCst);
    f.unconfirmed_kill.store(unconfirmed, Ordering::SeqCst);
}

/// Issue 8, item 6: a namespace-setup failure on the network path whose kill cannot be
/// confirmed poisons every later network request; closed-network commands still run.
#[tokio::test]
async fn a_network_setup_failure_with_an_unconfirmed_kill_poisons_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(&dir);
    // Positive control: the network path works here before anything is injected.
    runner.ensure_network().await.unwrap();
    let ok = run_cmd(&runner, networked_profile(), "grep -q tap0 /proc/net/dev").await;
    assert_eq!(ok.status, ToolStatus::Ok, "{ok:?}");
    assert!(!runner.sandbox().network_containment_failed());

    inject(&runner, true, true);
    let failed = run_cmd(&runner, networked_profile(), "true").await;
    assert_eq!(failed.status, ToolStatus::Failed, "{failed:?}");
    assert!(
        failed
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("could not be confirmed"),
        "{failed:?}"
    );
    assert!(runner.sandbox().network_containment_failed());

    // Every later network request is refused, even with the faults gone.
    inject(&runner, false, false);
    let refused = run_cmd(&runner, networked_profile(), "true").await;
    assert_eq!(refused.status, ToolStatus::Failed, "{refused:?}");
    assert!(
        refused
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("network_containment_failed"),
        "{refused:?}"
    );
    // The closed path is not poisoned.
    let closed = run_cmd(&runner, ExecutionProfile::read_only(), "true").await;
    assert_eq!(closed.status, ToolStatus::Ok, "{closed:?}");
}

/// The same failure with the kill confirmed refuses that one launch and poisons nothing.
#[tokio::test]
async fn a_network_setup_failure_with_a_confirmed_kill_poisons_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(&dir);
    runner.ensure_network().await.unwrap();
    inject(&runner, true, false);
    let failed = run_cmd(&runner, networked_profile(), "true").await;
    assert_eq!(failed.status, ToolStatus::Failed, "{failed:?}");
    assert!(!runner.sandbox().network_containment_failed());
    inject(&runner, false, false);
    let ok = run_cmd(&runner, networked_profile(), "true").await;
    assert_eq!(ok.status, ToolStatus::Ok, "{ok:?}");
}

/// The network preflight has the same rule: its own setup failure with an unconfirmed kill
/// poisons the network for the sandbox.
#[tokio::test]
async fn a_network_preflight_setup_failure_with_an_unconfirmed_kill_poisons_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(&dir);
    runner.ensure_sandbox().await.unwrap();
    inject(&runner, true, true);
    let why = runner.ensure_network().await.unwrap_err();
    assert!(
        matches!(&why, NetworkPreflightError::Launch(e)
            if matches!(**e, SandboxError::NamespaceSetup { unconfirmed: Some(_), .. })),
        "{why:?}"
    );
    assert!(why.to_string().contains("could not be confirmed"), "{why}");
    assert!(runner.sandbox().network_containment_failed());
    // Positive control: closed-network commands still run on the same sandbox.
    inject(&runner, false, false);
    let closed = run_cmd(&runner, ExecutionProfile::read_only(), "true").await;
    assert_eq!(closed.status, ToolStatus::Ok, "{closed:?}");
}

#[test]
fn the_protected_scan_runs_only_for_a_writable_run_and_only_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("generated")).unwrap();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut config = RunnerConfig::for_workspace(dir.path());
    let counted = calls.clone();
    config.protected_scan = Some(ProtectedScan::new(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        vec![PathBuf::from("generated")]
    }));
    let runner = CommandRunner::new(config).unwrap();
    let argv = vec![OsString::from("true")];
    let read_only = runner
        .build_spec(&ExecutionProfile::read_only(), argv.clone())
        .unwrap();
    assert!(read_only.protections.is_empty());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "a read-only run walks nothing"
    );
    let writable = ExecutionProfile::from_granted(
        CapabilitySet::of(&[Capability::WorkspaceRead, Capability::WorkspaceWrite]),
        Vec::new(),
    );
    let ws = runner.workspace().to_path_buf();
    for _ in 0..2 {
        let spec = runner.build_spec(&writable, argv.clone()).unwrap();
        assert!(
            spec.protections
                .contains(&Protection::ReadOnly(ws.join("generated"))),
            "{:?}",
            spec.protections
        );
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "walked once, on the first writable run"
    );
}
