//! CommandRunner tests that need the crate's insides: the sandbox home rule, and what happens
//! to a sandbox nobody released. The live suite in `tests/execution.rs` covers the rest.

use super::*;
use crate::harness::primitives::{Capability, CapabilitySet};

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
    let spec = runner
        .build_spec(&profile, vec!["/bin/sh".into(), "-c".into(), cmd.into()])
        .unwrap();
    let running = runner
        .sandbox()
        .start(
            spec,
            &LaunchLimits::default(),
            Vec::new(),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    let pid = running.pid();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    drop(running);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !marker.exists(),
        "the command ran although it was never released"
    );
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "bwrap outlived its dropped Running"
    );
}
