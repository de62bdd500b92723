//! A missing mechanism is a `failed` result that says what to install, and nothing is spawned:
//! each test runs a command that would create a marker file, and checks it never appears.

use std::time::{Duration, Instant};

use crate::features::record_feature;
use crate::support::*;
use spear::harness::command_policy::ExecutionProfile;
use spear::harness::command_runner::{CommandRunner, Mechanism};
use spear::harness::primitives::ToolStatus;
use spear::harness::resource_control::{CgroupLimits, SystemdScopeRunner};
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

/// Where a systemd manager is reachable (PID 1 for root, the user manager otherwise) the
/// cgroup limits bind: a reader that holds 600 MiB is killed under MemoryMax=256M while a small
/// command runs. Elsewhere nothing is spawned and the reason is the scope runner's own.
#[tokio::test]
async fn cgroup_limits_bind_through_a_scope_or_fail_naming_why() {
    let (_d, ws) = workspace();
    let mut cfg = config(&ws);
    cfg.cgroup_limits = CgroupLimits {
        memory_max_bytes: Some(256 << 20),
        ..CgroupLimits::default()
    };
    cfg.resource_limits.data_bytes = None;
    let scope = SystemdScopeRunner::for_host(&cfg.search_path);
    let r = CommandRunner::new(cfg).unwrap();
    match scope.available() {
        Ok(()) => {
            record_feature("systemd_scopes", "a command ran in a systemd scope");
            let res = run(&r, writable(), "echo small").await;
            assert_eq!(res.stdout, "small\n", "{res:?}");
            let hog = r#"perl -e '$x = "a" x (600 << 20); print length($x) > 0 ? "held\n" : ""'"#;
            let res = run(&r, writable(), hog).await;
            assert_ne!(res.stdout, "held\n", "MemoryMax did not bind: {res:?}");
        }
        Err(why) => {
            record_feature("systemd_scopes", &format!("refused: {why}"));
            let res = run(&r, writable(), MARK).await;
            assert_failed_saying(&res, &why.to_string());
            assert_nothing_spawned(&ws);
        }
    }
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
