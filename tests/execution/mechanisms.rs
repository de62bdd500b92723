//! A missing mechanism is a `failed` result that says what to install, and nothing is spawned:
//! each test runs a command that would create a marker file, and checks it never appears.

use std::time::{Duration, Instant};

use crate::support::*;
use spear::harness::command_policy::ExecutionProfile;
use spear::harness::primitives::ToolStatus;
use spear::harness::resource_control::CgroupLimits;
use spear::harness::runtime::{CommandRunner, Mechanism};
use spear::harness::sandbox::PreflightFailure;

const MARK: &str = "touch spawned-marker";

fn assert_nothing_spawned(ws: &std::path::Path) {
    assert!(
        !ws.join("spawned-marker").exists(),
        "a command ran without its mechanism"
    );
}

/// Positive control for `assert_nothing_spawned`: where its mechanisms are present, the same
/// command under the same profile does leave the marker (removed again afterwards).
async fn assert_marker_made(r: &CommandRunner, profile: ExecutionProfile, ws: &std::path::Path) {
    let res = run(r, profile, MARK).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(
        ws.join("spawned-marker").exists(),
        "the marker command left no marker even with its mechanisms: {res:?}"
    );
    std::fs::remove_file(ws.join("spawned-marker")).unwrap();
}

#[tokio::test]
async fn without_bwrap_nothing_runs_and_the_reason_says_what_to_install() {
    let (_d, ws) = workspace();
    let empty = tempfile::tempdir().unwrap();
    let mut cfg = config(&ws);
    cfg.search_path = empty.path().as_os_str().to_owned();
    let r = CommandRunner::new(cfg).unwrap();
    let res = run(&r, writable(), MARK).await;
    assert_eq!(res.status, ToolStatus::Failed, "{res:?}");
    let why = res.reason.unwrap();
    assert!(
        why.contains("bwrap") && why.contains("apt-get install bubblewrap"),
        "{why}"
    );
    assert_nothing_spawned(&ws);
    // The preflight remembers ABSENT.
    assert!(matches!(
        r.ensure_sandbox().await,
        Err(PreflightFailure::Absent(_))
    ));
    assert_marker_made(&runner(&ws), writable(), &ws).await;
}

#[tokio::test]
async fn without_slirp4netns_network_work_fails_and_closed_work_still_runs() {
    let (_d, ws) = workspace();
    let only_bwrap = tempfile::tempdir().unwrap();
    let bwrap = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
        .expect("bwrap is installed");
    std::os::unix::fs::symlink(&bwrap, only_bwrap.path().join("bwrap")).unwrap();
    let mut cfg = config(&ws);
    cfg.search_path = only_bwrap.path().as_os_str().to_owned();
    let r = CommandRunner::new(cfg).unwrap();
    let res = run(&r, networked(), MARK).await;
    assert_failed_saying(&res, "apt-get install slirp4netns");
    assert_nothing_spawned(&ws);
    // Closed work still runs on the same runner; with slirp4netns the network work runs too.
    assert_marker_made(&r, writable(), &ws).await;
    require_slirp();
    assert_marker_made(&runner(&ws), networked(), &ws).await;
}

#[tokio::test]
async fn without_rlimits_nothing_runs() {
    let (_d, ws) = workspace();
    let mut r = runner(&ws);
    r.simulate_missing_for_tests(Mechanism::Rlimits);
    let res = run(&r, writable(), MARK).await;
    assert_failed_saying(&res, "rlimits");
    assert_nothing_spawned(&ws);
    assert_marker_made(&runner(&ws), writable(), &ws).await;
}

#[tokio::test]
async fn cgroup_limits_without_systemd_fail_naming_why() {
    let (_d, ws) = workspace();
    let mut cfg = config(&ws);
    cfg.cgroup_limits = CgroupLimits {
        memory_max_bytes: Some(1 << 30),
        ..CgroupLimits::default()
    };
    let r = CommandRunner::new(cfg).unwrap();
    let res = run(&r, writable(), MARK).await;
    let pid1 = std::fs::read_to_string("/proc/1/comm").unwrap();
    assert_ne!(
        pid1.trim(),
        "systemd",
        "this test describes a host without systemd as PID 1"
    );
    assert_failed_saying(&res, "systemd as PID 1");
    assert_nothing_spawned(&ws);
}

#[tokio::test]
async fn a_poisoned_network_refuses_every_later_network_request() {
    require_slirp();
    let (_d, ws) = workspace();
    let r = runner(&ws);
    r.sandbox().poison_network_for_tests();
    let res = run(&r, networked(), MARK).await;
    assert_failed_saying(&res, "network_containment_failed");
    assert_nothing_spawned(&ws);
    // The poisoned runner still runs closed work; an unpoisoned one runs the network work.
    assert_marker_made(&r, writable(), &ws).await;
    assert_marker_made(&runner(&ws), networked(), &ws).await;
}

#[tokio::test]
async fn the_preflight_runs_once_and_is_cached() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    r.ensure_sandbox().await.unwrap();
    let started = Instant::now();
    for _ in 0..100 {
        r.ensure_sandbox().await.unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
}
