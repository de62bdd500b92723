//! The network path: slirp4netns attached to the pinned namespace before the command starts.
//! Every address used here is loopback or slirp's own (10.0.2.x inside the sandbox); no test
//! reaches a non-loopback host address.

use std::io::Read;
use std::time::{Duration, Instant};

use crate::support::*;
use spear::harness::primitives::ToolStatus;
use spear::harness::runtime::CommandRunner;

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
}

#[tokio::test]
async fn the_test_only_host_loopback_option_proves_the_path_works() {
    let (_d, ws) = workspace();
    let mut r = net_runner(&ws);
    r.allow_host_loopback_for_tests();
    let (listener, port) = loopback_server();
    let res = run(&r, networked(), &connect_script(port)).await;
    assert!(res.stdout.contains("connected-10.0.2.2"), "{res:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match listener.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false).unwrap();
                let mut got = String::new();
                s.read_to_string(&mut got).unwrap();
                assert_eq!(got, "hello\n");
                break;
            }
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("no connection reached the loopback server: {e}"),
        }
    }
}

#[tokio::test]
async fn the_network_helper_is_stopped_and_nothing_survives() {
    let (_d, ws) = workspace();
    let r = net_runner(&ws);
    let res = run(&r, networked(), "sleep 0.2; echo done").await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    let helpers: Vec<String> = processes_with("slirp4netns")
        .into_iter()
        .filter(|p| p.contains("/proc/self/fd/"))
        .collect();
    // Other tests may run helpers concurrently; ours is gone once run() returned, so at most
    // those remain. Run a second command and check the count does not grow.
    let res = run(&r, networked(), "true").await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    let after = processes_with("slirp4netns").len();
    assert!(
        after <= helpers.len() + 2,
        "slirp4netns helpers accumulate: {after}"
    );
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
