//! Resource limits and process control: each runaway ends as reported, nothing survives, and
//! Spear's own memory stays bounded.

use std::time::{Duration, Instant};

use crate::support::*;
use spear::harness::command_runner::{CommandRunner, RunRequest};
use spear::harness::primitives::ToolStatus;
use spear::harness::resource_control::ResourceLimits;

fn limited(ws: &std::path::Path, limits: ResourceLimits) -> CommandRunner {
    let mut cfg = config(ws);
    cfg.resource_limits = limits;
    CommandRunner::new(cfg).unwrap()
}

fn marker(tag: &str) -> String {
    format!("spear-{tag}-{}-{}", std::process::id(), rand_suffix())
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
}

#[tokio::test]
async fn a_process_flood_stops_at_the_process_cap() {
    let (_d, ws) = workspace();
    let r = limited(
        &ws,
        ResourceLimits {
            processes: Some(128),
            ..ResourceLimits::default()
        },
    );
    let n = bounded_flood(&r, writable()).await;
    assert!(
        (100..=301).contains(&n),
        "{n} processes forked under a cap of 128 (pid_max 301)"
    );
}

#[tokio::test]
async fn a_fork_bomb_hits_the_process_limit_and_dies_with_its_sandbox() {
    let (_d, ws) = workspace();
    let r = limited(
        &ws,
        ResourceLimits {
            processes: Some(128),
            ..ResourceLimits::default()
        },
    );
    assert_fork_bomb_stopped(&r, &marker("bomb")).await;
}

#[tokio::test]
async fn a_memory_hog_is_refused_its_memory() {
    let (_d, ws) = workspace();
    let r = limited(
        &ws,
        ResourceLimits {
            data_bytes: Some(256 << 20),
            ..ResourceLimits::default()
        },
    );
    let res = run(
        &r,
        writable(),
        r#"perl -e '$x = "a" x (1 << 30); print length $x'"#,
    )
    .await;
    assert_failed_saying(&res, "out of memory");
}

#[tokio::test]
async fn a_cpu_spinner_is_killed_by_the_cpu_limit() {
    let (_d, ws) = workspace();
    let r = limited(
        &ws,
        ResourceLimits {
            cpu_seconds: Some(1),
            ..ResourceLimits::default()
        },
    );
    let started = Instant::now();
    let res = run(&r, writable(), "while :; do :; done").await;
    assert_failed_saying(&res, "CPU time limit");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn a_file_larger_than_the_limit_is_stopped() {
    let (_d, ws) = workspace();
    let r = limited(
        &ws,
        ResourceLimits {
            file_size_bytes: Some(1 << 20),
            ..ResourceLimits::default()
        },
    );
    let res = run(&r, writable(), "head -c 4194304 /dev/zero > big").await;
    assert_failed_saying(&res, "file too large");
    assert_eq!(std::fs::metadata(ws.join("big")).unwrap().len(), 1 << 20);
}

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn a_gigabyte_of_output_streams_through_with_bounded_memory() {
    // VmHWM is the whole process's, and parallel tests move it: the flood is measured in a
    // process that runs this test alone.
    let name = "limits::a_gigabyte_of_output_streams_through_with_bounded_memory";
    if !crate::alone::alone_in_own_process(name) {
        return;
    }
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let sink = Counting::default();
    let hwm_before = status_kib("VmHWM:");
    let req = RunRequest {
        command: "head -c 1073741824 /dev/zero; echo tail-marker".into(),
        profile: read_only(),
        timeout: Some(Duration::from_secs(60)),
    };
    let res = r.run(&req, &mut sink.clone()).await;
    let hwm_after = status_kib("VmHWM:");
    assert_eq!(res.status, ToolStatus::Ok, "{:?}", res.reason);
    assert_eq!(
        sink.0.lock().unwrap().0,
        (1 << 30) + "tail-marker\n".len() as u64
    );
    assert!(
        res.stdout.len() < 200 * 1024,
        "the result kept {} bytes",
        res.stdout.len()
    );
    assert!(res.stdout.ends_with("tail-marker\n") && res.stdout.contains("bytes omitted"));
    let grown = hwm_after.saturating_sub(hwm_before);
    eprintln!(
        "measured: Spear's peak memory grew {grown} KiB (from {hwm_before} KiB) while 1 GiB \
         streamed through, in a process of its own"
    );
    assert!(
        grown < 64 * 1024,
        "Spear's peak memory grew by {grown} KiB during the flood"
    );
}

/// The processes whose `argv[0]` is each of `names`, once every one of them is alive.
async fn all_alive(names: &[String], limit: Duration) -> Option<Vec<Vec<i32>>> {
    eventually(limit, || {
        let found: Vec<Vec<i32>> = names.iter().map(|n| processes_named(n)).collect();
        found.iter().all(|p| !p.is_empty()).then_some(found)
    })
    .await
}

#[tokio::test]
async fn setsid_and_nohup_daemons_die_with_the_sandbox() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let m = marker("daemon");
    let names: Vec<String> = ["a", "b", "c"].iter().map(|t| format!("{m}-{t}")).collect();
    let mut gate = Gate::new(&ws, "gate");
    // `exec -a` names each daemon with the marker so /proc can find it, alive and after; the
    // command waits on the gate until the test has seen all three from the host.
    let cmd = format!(
        "setsid bash -c 'exec -a {m}-a sleep 1000' </dev/null >/dev/null 2>&1 & \
         nohup bash -c 'exec -a {m}-b sleep 1000' >/dev/null 2>&1 & \
         (bash -c 'exec -a {m}-c sleep 1000' &); read _ < gate; echo released"
    );
    let (res, alive) = tokio::join!(run(&r, writable(), &cmd), async {
        let alive = all_alive(&names, Duration::from_secs(20)).await;
        gate.open();
        alive
    });
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(res.stdout.contains("released"), "{res:?}");
    // Positive control: the three daemons were alive, found by the probe the check below uses.
    let alive = alive.unwrap_or_else(|| {
        panic!(
            "the daemons were never all seen alive: {:?}",
            processes_with(&m)
        )
    });
    eprintln!("daemons seen alive before the sandbox ended: {alive:?}");
    assert_none_survive(&m).await;
}

#[tokio::test]
async fn a_timeout_kills_the_whole_sandbox_including_daemons() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let m = marker("timeout");
    let names = [format!("{m}-daemon"), format!("{m}-fg")];
    let cmd = format!("setsid bash -c 'exec -a {m}-daemon sleep 999' & exec -a {m}-fg sleep 999");
    let limit = Duration::from_secs(4);
    let started = Instant::now();
    let (res, alive) = tokio::join!(
        run_t(&r, writable(), &cmd, Some(limit)),
        all_alive(&names, limit)
    );
    assert_eq!(res.status, ToolStatus::Timeout, "{res:?}");
    assert!(
        started.elapsed() < limit + Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        res.reason.as_deref().unwrap().contains("time limit"),
        "{res:?}"
    );
    // Positive control: both were alive before the limit struck.
    let alive = alive.unwrap_or_else(|| {
        panic!(
            "the daemon and the command were never both seen alive: {:?}",
            processes_with(&m)
        )
    });
    eprintln!("seen alive before the time limit: {alive:?}");
    assert_none_survive(&m).await;
}

/// The namespace settings are made while bwrap mounts, concurrently; the command itself waits on
/// `--block-fd`. Its very first read must already see them, on every run and on both paths.
#[tokio::test]
async fn the_command_starts_only_after_the_namespace_settings() {
    let (_d, ws) = workspace();
    let r = limited(
        &ws,
        ResourceLimits {
            processes: Some(500),
            ..ResourceLimits::default()
        },
    );
    let first_read = "cat /proc/sys/kernel/pid_max /proc/sys/user/max_user_namespaces; \
                      grep '^Max processes' /proc/self/limits";
    // What the first read must show depends on how this host caps processes: the namespace's
    // own pid_max (Linux >= 6.14), or the init's RLIMIT_NPROC, or a cgroup (neither visible).
    let host_pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let (pid_max, nproc) = match r.process_cap().unwrap().unwrap().name() {
        "pid_namespace" => ("501".to_string(), None),
        "user_namespace_nproc" => (host_pid_max.trim().to_string(), Some("500")),
        _ => (host_pid_max.trim().to_string(), None),
    };
    require_slirp();
    let paths = std::iter::repeat_n(read_only(), 15).chain(std::iter::repeat_n(networked(), 3));
    for profile in paths {
        let res = run(&r, profile, first_read).await;
        assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
        let seen: Vec<&str> = res.stdout.split_whitespace().collect();
        assert_eq!(seen[..2], [pid_max.as_str(), "0"], "{res:?}");
        if let Some(n) = nproc {
            assert_eq!(seen[4..6], [n, n], "{res:?}");
        }
    }
}
