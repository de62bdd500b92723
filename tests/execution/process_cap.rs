//! The process cap on the hosts people have: the mechanism chosen is the one right for the host
//! found (kernel, root or not, systemd or not), and on the older kernels' path (forced here
//! with the test-only switch, so a new kernel exercises it too) a flood and a fork bomb are
//! still stopped while 400 idle processes of the same user run beside the sandbox, and a plain
//! command still works. The cap is below 400, so a cap that counted the user's other processes
//! would refuse even `echo`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::features::record_feature;
use crate::support::*;
use spear::harness::command_runner::CommandRunner;
use spear::harness::primitives::ToolStatus;
use spear::harness::resource_control::ResourceLimits;
use spear::harness::resource_control::SystemdScopeRunner;
use spear::harness::resource_control::process_cap::HostFacts;

const CAP: u64 = 100;
const CROWD: usize = 400;

fn capped(ws: &std::path::Path, older_kernel: bool) -> CommandRunner {
    let mut cfg = config(ws);
    cfg.resource_limits = ResourceLimits {
        processes: Some(CAP),
        ..ResourceLimits::default()
    };
    let mut r = CommandRunner::new(cfg).unwrap();
    if older_kernel {
        r.pretend_pid_max_not_namespaced_for_tests();
    }
    r
}

/// The mechanism that is right for this host, worked out independently of the runner's choice.
fn expected_mechanism(facts: HostFacts, older_kernel: bool) -> &'static str {
    if facts.pid_max_namespaced && !older_kernel {
        return "pid_namespace";
    }
    let euid = rustix::process::geteuid().as_raw();
    let uid_map = std::fs::read_to_string("/proc/self/uid_map").unwrap();
    let host_root = uid_map.lines().any(|l| {
        let v: Vec<u64> = l.split_whitespace().map(|w| w.parse().unwrap()).collect();
        u64::from(euid) >= v[0]
            && u64::from(euid) < v[0] + v[2]
            && v[1] + u64::from(euid) - v[0] == 0
    });
    assert_eq!(facts.host_root, host_root, "host_root misread");
    if !host_root {
        return "user_namespace_nproc";
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if SystemdScopeRunner::for_host(&path).available().is_ok() {
        "systemd_scope"
    } else {
        "pids_cgroup"
    }
}

/// `CROWD` idle processes of this user, all blocked reading one pipe: they exit together when
/// it closes (on drop), without a signal.
struct IdleCrowd {
    parent: Child,
}

impl IdleCrowd {
    fn start() -> IdleCrowd {
        let script = format!(
            "$| = 1; for (1..{CROWD}) {{ my $p = fork; die \"fork: $!\" unless defined $p; \
             if (!$p) {{ sysread(STDIN, my $b, 1); exit 0 }} }} print \"ready\\n\"; \
             sysread(STDIN, my $b, 1); 1 while wait != -1;"
        );
        let mut parent = Command::new("perl")
            .args(["-e", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("perl starts the idle crowd");
        let mut line = String::new();
        BufReader::new(parent.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n", "the idle crowd did not start");
        IdleCrowd { parent }
    }
}

impl Drop for IdleCrowd {
    fn drop(&mut self) {
        drop(self.parent.stdin.take());
        let _ = self.parent.wait();
    }
}

/// Processes on the host owned by this user (real uid).
fn processes_of_this_user() -> usize {
    let uid = rustix::process::getuid().as_raw().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            std::fs::read_to_string(e.path().join("status")).is_ok_and(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|v| v.split_whitespace().next())
                    == Some(uid.as_str())
            })
        })
        .count()
}

#[tokio::test]
async fn the_mechanism_is_the_one_right_for_this_host() {
    let (_d, ws) = workspace();
    for older_kernel in [false, true] {
        let r = capped(&ws, older_kernel);
        let want = expected_mechanism(r.host_facts(), older_kernel);
        let cap = r.process_cap().unwrap().unwrap();
        let path = if older_kernel {
            "older kernel path"
        } else {
            "native"
        };
        record_feature("process_cap", &format!("{} ({path})", cap.name()));
        assert_eq!(
            cap.name(),
            want,
            "older_kernel={older_kernel}: {}",
            cap.describe()
        );
        let res = run(&r, read_only(), "echo capped").await;
        assert_eq!(res.stdout, "capped\n", "{res:?}");
    }
}

#[tokio::test]
async fn the_older_kernel_path_caps_a_flood_beside_400_idle_processes_of_the_same_user() {
    let crowd = IdleCrowd::start();
    assert!(
        processes_of_this_user() >= CROWD,
        "the crowd is not running: {} processes",
        processes_of_this_user()
    );
    let (_d, ws) = workspace();
    let r = capped(&ws, true);
    // A plain command works although this user already has more processes than the cap.
    let res = run(&r, read_only(), "echo ok").await;
    assert_eq!(
        (res.status, res.stdout.as_str()),
        (ToolStatus::Ok, "ok\n"),
        "{res:?}"
    );
    let n = bounded_flood(&r, writable()).await;
    assert!(
        (CAP - 10..CAP).contains(&n),
        "{n} processes forked under a cap of {CAP} ({})",
        r.process_cap().unwrap().unwrap().describe()
    );
    drop(crowd);
}

#[tokio::test]
async fn the_older_kernel_path_stops_a_fork_bomb_and_nothing_survives() {
    let _crowd = IdleCrowd::start();
    let (_d, ws) = workspace();
    let r = capped(&ws, true);
    let marker = format!("spear-oldbomb-{}", std::process::id());
    assert_fork_bomb_stopped(&r, &marker).await;
    // The rest of the machine is untouched: this user can still start processes.
    let host = Command::new("true").status().unwrap();
    assert!(host.success());
}

/// The cap is in place before the command's first instruction, on whichever path.
#[tokio::test]
async fn the_cap_is_set_before_the_command_starts_on_the_older_kernel_path() {
    let (_d, ws) = workspace();
    let r = capped(&ws, true);
    let mechanism = r.process_cap().unwrap().unwrap().name();
    for _ in 0..10 {
        let res = run(&r, read_only(), "grep '^Max processes' /proc/self/limits").await;
        assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
        let soft: Vec<&str> = res.stdout.split_whitespace().collect();
        match mechanism {
            "user_namespace_nproc" => assert_eq!(soft[2..4], ["100", "100"], "{res:?}"),
            // A cgroup cap leaves the rlimit as the host has it.
            _ => assert_ne!(soft[2], "100", "{res:?}"),
        }
    }
}

/// The network path launches through the same start, so the older kernels' cap holds there too.
#[tokio::test]
async fn the_older_kernel_path_caps_the_network_path_too() {
    require_slirp();
    let (_d, ws) = workspace();
    let r = capped(&ws, true);
    let n = bounded_flood(&r, networked()).await;
    assert!(
        (CAP - 10..CAP).contains(&n),
        "{n} processes forked on the network path under a cap of {CAP} ({})",
        r.process_cap().unwrap().unwrap().describe()
    );
}

/// `spear doctor` names the mechanism this host uses, on the native path and on the older
/// kernels' path (the switch works only in a build with the test hooks, as this one is).
#[test]
fn doctor_names_the_mechanism_for_this_host() {
    let (_d, ws) = workspace();
    let facts = capped(&ws, false).host_facts();
    for older_kernel in [false, true] {
        let mut cmd = spear_in(&ws);
        cmd.args(["doctor", "--json"]);
        if older_kernel {
            cmd.env(
                spear::harness::resource_control::process_cap::PRETEND_OLD_KERNEL_ENV,
                "1",
            );
        }
        let out = cmd.output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let cap = report["mechanisms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mechanism"] == "process_cap")
            .unwrap();
        assert_eq!(cap["status"], "works", "{cap}");
        let detail = cap["detail"].as_str().unwrap();
        let phrase = match expected_mechanism(facts, older_kernel) {
            "pid_namespace" => "of the sandbox's own PID namespace",
            "user_namespace_nproc" => "RLIMIT_NPROC 4096 set inside the sandbox's user namespace",
            "systemd_scope" => "TasksMax=4096 of a systemd scope",
            _ => "pids.max of a cgroup made for each launch",
        };
        assert!(
            detail.contains(phrase),
            "older_kernel={older_kernel}: {detail}"
        );
    }
}
