//! The network path: slirp4netns attached to the pinned namespace before the command starts.
//! Every address used here is loopback or slirp's own (10.0.2.x inside the sandbox); no test
//! reaches a non-loopback host address.

use std::io::Read;
use std::time::{Duration, Instant};

use crate::features::record_feature;
use crate::support::*;
use spear::harness::command_runner::CommandRunner;
use spear::harness::primitives::ToolStatus;

fn net_runner(ws: &std::path::Path) -> CommandRunner {
    require_slirp();
    runner(ws)
}

#[tokio::test]
async fn a_networked_sandbox_has_a_configured_interface_and_dns() {
    let (_d, ws) = workspace();
    let r = net_runner(&ws);
    let res = run(
        &r,
        networked(),
        "ip -4 addr show tap0; cat /etc/resolv.conf",
    )
    .await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(res.stdout.contains("inet 10.0.2.100/24"), "{res:?}");
    assert!(res.stdout.contains("nameserver 10.0.2.3"), "{res:?}");
    record_feature("network", "slirp4netns (tap0 10.0.2.100/24, DNS 10.0.2.3)");
}

fn loopback_server() -> (std::net::TcpListener, u16) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

fn connect_script(port: u16) -> String {
    // 10.0.2.2 is slirp's gateway, which is the host's loopback unless slirp refuses it.
    format!(
        "for a in 10.0.2.2 127.0.0.1; do (timeout 3 bash -c \"echo hello > /dev/tcp/$a/{port}\") 2>/dev/null \
         && echo connected-$a || echo refused-$a; done"
    )
}

/// The connection waiting on `listener`, if one arrives within `limit`.
fn accept_within(listener: &std::net::TcpListener, limit: Duration) -> Option<std::net::TcpStream> {
    wait_readable(&[listener], limit).then(|| listener.accept().unwrap().0)
}

#[tokio::test]
async fn a_networked_sandbox_still_cannot_reach_host_loopback() {
    let (_d, ws) = workspace();
    let r = net_runner(&ws);
    let (listener, port) = loopback_server();
    let res = run(&r, networked(), &connect_script(port)).await;
    assert!(
        res.stdout.contains("refused-10.0.2.2") && res.stdout.contains("refused-127.0.0.1"),
        "{res:?}"
    );
    assert!(
        listener.accept().is_err(),
        "the host loopback server saw a connection"
    );
    // Positive control, same listener and script: with host loopback let through (a test-only
    // switch) the connect reaches it, so the refusal above was the sandbox's.
    let mut open = net_runner(&ws);
    open.allow_host_loopback_for_tests();
    let res = run(&open, networked(), &connect_script(port)).await;
    assert!(res.stdout.contains("connected-10.0.2.2"), "{res:?}");
    assert!(
        accept_within(&listener, Duration::from_secs(5)).is_some(),
        "the control's connection never reached the listener"
    );
}

#[tokio::test]
async fn the_test_only_host_loopback_option_proves_the_path_works() {
    let (_d, ws) = workspace();
    let mut r = net_runner(&ws);
    r.allow_host_loopback_for_tests();
    let (listener, port) = loopback_server();
    // The command stays a moment after its write: slirp4netns is stopped when the command
    // ends, and bytes it had not yet forwarded to the host go with it (a loaded machine showed
    // the connection arrive empty).
    let script = format!("{}; sleep 1", connect_script(port));
    let res = run(&r, networked(), &script).await;
    assert!(res.stdout.contains("connected-10.0.2.2"), "{res:?}");
    let mut s = accept_within(&listener, Duration::from_secs(5))
        .expect("no connection reached the loopback server");
    s.set_nonblocking(false).unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hello\n");
}

/// The slirp4netns processes holding a handle on the network namespace `netns` (as
/// `readlink /proc/self/ns/net` names it inside the sandbox).
fn helpers_of(netns: &str) -> Vec<i32> {
    host_argv0s()
        .into_iter()
        .filter(|(_, argv0)| argv0.ends_with("slirp4netns"))
        .filter(|(pid, _)| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map(|fds| {
                    fds.flatten().any(|fd| {
                        std::fs::read_link(fd.path()).is_ok_and(|t| t.to_string_lossy() == netns)
                    })
                })
                .unwrap_or(false)
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// How a helper process is confined, from its `/proc` entries.
#[derive(Debug)]
struct Confinement {
    seccomp: String,
    mnt: std::path::PathBuf,
    cap_eff: u64,
}

fn confinement_of(pid: i32) -> Option<Confinement> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    Some(Confinement {
        seccomp: field("Seccomp:")?,
        mnt: std::fs::read_link(format!("/proc/{pid}/ns/mnt")).ok()?,
        cap_eff: u64::from_str_radix(&field("CapEff:")?, 16).ok()?,
    })
}

#[tokio::test]
async fn the_network_helper_is_stopped_and_nothing_survives() {
    let (_d, ws) = workspace();
    let r = net_runner(&ws);
    let mut gate = Gate::new(&ws, "gate");
    // The command names its network namespace, then waits until the test has found the
    // helper serving that namespace.
    let cmd = "readlink /proc/self/ns/net > .netns && mv .netns netns; read _ < gate; echo done";
    let (res, seen) = tokio::join!(run(&r, networked(), cmd), async {
        let seen = eventually(Duration::from_secs(20), || {
            let netns = std::fs::read_to_string(ws.join("netns")).ok()?;
            let helpers = helpers_of(netns.trim());
            let pidfds: Vec<_> = helpers
                .iter()
                .filter_map(|p| {
                    rustix::process::pidfd_open(
                        rustix::process::Pid::from_raw(*p)?,
                        rustix::process::PidfdFlags::empty(),
                    )
                    .ok()
                })
                .collect();
            // Read while the helper runs: its seccomp mode, mount namespace and capabilities.
            let confinement: Vec<_> = helpers.iter().map(|p| confinement_of(*p)).collect();
            (!pidfds.is_empty()).then_some((netns, helpers, pidfds, confinement))
        })
        .await;
        gate.open();
        seen
    });
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(res.stdout.ends_with("done\n"), "{res:?}");
    // Positive control: this sandbox's helper was alive while the command ran.
    let (netns, helpers, pidfds, confinement) =
        seen.expect("no slirp4netns serving the sandbox's namespace was ever seen");
    eprintln!(
        "slirp4netns {helpers:?} served {}: {confinement:?}",
        netns.trim()
    );
    // Issue 20 item 9: the helper parses the sandbox's packets, so it runs under its own
    // seccomp filter, in its own mount namespace, and (as root) without its capabilities.
    // Unprivileged it has no host capability to drop and cannot make a mount namespace (the
    // sandbox's user namespace does not map root): the filter is what it gets.
    let root = rustix::process::geteuid().is_root();
    let own_mnt = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    for (pid, c) in helpers.iter().zip(&confinement) {
        let c = c
            .as_ref()
            .unwrap_or_else(|| panic!("slirp4netns {pid}: status unreadable"));
        assert_eq!(
            c.seccomp, "2",
            "slirp4netns {pid} runs without its seccomp filter"
        );
        if root {
            assert_ne!(
                c.mnt, own_mnt,
                "slirp4netns {pid} shares Spear's mount namespace"
            );
            // Only CAP_NET_BIND_SERVICE (bit 10) may stay.
            assert_eq!(
                c.cap_eff & !(1 << 10),
                0,
                "slirp4netns {pid} keeps capabilities {:#x}",
                c.cap_eff
            );
        }
    }
    record_feature(
        "slirp_confined",
        if root {
            "seccomp filter, own mount namespace, capabilities dropped"
        } else {
            "seccomp filter (unprivileged: no host capabilities)"
        },
    );
    // Once run() returned, each has exited: its pidfd is readable at once (exit, or zombie).
    for (pid, fd) in helpers.iter().zip(&pidfds) {
        assert!(
            wait_readable(&[fd], Duration::ZERO),
            "slirp4netns {pid} outlived its sandbox"
        );
    }
}

#[tokio::test]
async fn network_setup_is_fast_once_preflighted() {
    let (_d, ws) = workspace();
    let r = net_runner(&ws);
    let res = run(&r, networked(), "true").await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    let started = Instant::now();
    let n = 5;
    for _ in 0..n {
        let res = run(&r, networked(), "true").await;
        assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    }
    let per = started.elapsed() / n;
    eprintln!("network path: {per:?} per `true`");
    assert!(per < Duration::from_millis(500), "{per:?}");
}
