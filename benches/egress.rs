//! The egress proxy against direct slirp4netns, in one run (issue 25): the same Python client
//! inside the sandbox fetches from a loopback origin this program starts, through the proxy
//! (named `bench.test` by the test resolver, reached through the test-only exemption) and
//! through slirp4netns (the test-only host-loopback switch, `10.0.2.2`), rounds interleaved.
//!
//! - per connection: N small requests, each on its own connection, timed inside the sandbox;
//!   the proxy's cost is the difference of the medians. Target: under 2 ms per connection.
//! - throughput: one 100 MB download. Target: the proxy reaches at least 80% of slirp's.
//! - memory: this process's resident set (it hosts the proxy) before and after 1,000
//!   connections through the proxy. Target: flat (the ledger folds connections per
//!   destination; each connection's buffers are freed when it ends).
//!
//! Run with `scripts/bench-egress` (needs `--features test-hooks`, bwrap and slirp4netns).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use spear::harness::command_policy::ExecutionProfile;
use spear::harness::command_runner::{CommandRunner, RunRequest, RunnerConfig};
use spear::harness::egress::{Egress, HostRules, NetworkPath};
use spear::harness::primitives::{Capability, CapabilitySet, ToolResult};
use spear::harness::process::NullSink;
use spear::harness::sandbox::proxy::resolve::TableResolver;

/// What one run measures: the benchmark's sizes under `cargo bench`, a smoke run's when
/// `cargo test --all-targets` runs this program without `--bench`.
struct Scale {
    big: u64,
    small_n: usize,
    rounds: usize,
    memory_connections: usize,
}

const BENCH: Scale = Scale {
    big: 100 * 1024 * 1024,
    small_n: 200,
    rounds: 3,
    memory_connections: 1000,
};

const SMOKE: Scale = Scale {
    big: 1024 * 1024,
    small_n: 5,
    rounds: 1,
    memory_connections: 10,
};

/// GET /small answers 5 bytes; GET /big answers `big` bytes.
fn origin(big_len: u64) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let big = String::from_utf8_lossy(&head).contains("/big");
                let len = if big { big_len } else { 5 };
                let _ = write!(
                    c,
                    "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
                );
                if big {
                    let chunk = vec![b'x'; 1 << 20];
                    let mut left = big_len;
                    while left > 0 {
                        let n = left.min(chunk.len() as u64) as usize;
                        if c.write_all(&chunk[..n]).is_err() {
                            return;
                        }
                        left -= n as u64;
                    }
                } else {
                    let _ = c.write_all(b"hello");
                }
            });
        }
    });
    at
}

const CLIENT: &str = r#"
import sys, time, urllib.request
url, what, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if what == "conn":
    t = time.perf_counter()
    for _ in range(n):
        urllib.request.urlopen(url + "/small", timeout=30).read()
    print("%.4f" % ((time.perf_counter() - t) / n * 1000))
else:
    t = time.perf_counter()
    r = urllib.request.urlopen(url + "/big", timeout=60)
    total = 0
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        total += len(b)
    assert total == %d, total
    print("%.1f" % (total / (time.perf_counter() - t) / 1e6))
"#;

fn profile(path: NetworkPath, allow: &str) -> ExecutionProfile {
    let caps = CapabilitySet::of(&[
        Capability::WorkspaceRead,
        Capability::ShellComplex,
        Capability::Network,
    ]);
    let rules = HostRules::new(&[], &[allow.to_string()], &[]).unwrap();
    let mut egress = Egress::by_name(Arc::new(rules));
    egress.path = path;
    ExecutionProfile::from_granted(caps, Vec::new()).with_egress(egress)
}

fn run(
    rt: &tokio::runtime::Runtime,
    r: &CommandRunner,
    p: &ExecutionProfile,
    cmd: &str,
) -> ToolResult {
    let req = RunRequest {
        command: cmd.to_string(),
        profile: p.clone(),
        timeout: Some(Duration::from_secs(300)),
    };
    let res = rt.block_on(r.run(&req, &mut NullSink));
    assert!(res.is_ok() && res.exit_code == Some(0), "{res:?}");
    res
}

fn number(res: &ToolResult) -> f64 {
    res.stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{res:?}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let scale = if std::env::args().any(|a| a == "--bench") {
        BENCH
    } else {
        SMOKE
    };
    let Scale {
        big,
        small_n,
        rounds,
        memory_connections,
    } = scale;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let at = origin(big);
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let client = ws_path.join("client.py");
    std::fs::write(&client, CLIENT.replace("%d", &big.to_string())).unwrap();

    let mut proxied = CommandRunner::new(RunnerConfig::for_workspace(&ws_path)).unwrap();
    proxied.resolve_egress_for_tests(TableResolver::from_spec("bench.test=127.0.0.1", None));
    proxied.exempt_egress_for_tests(at);
    let mut direct = CommandRunner::new(RunnerConfig::for_workspace(&ws_path)).unwrap();
    direct.allow_host_loopback_for_tests();
    let via_proxy = profile(NetworkPath::Proxy, &format!("bench.test:{}", at.port()));
    let via_slirp = profile(NetworkPath::Full, "unused.example");
    let proxy_url = format!("http://bench.test:{}", at.port());
    let slirp_url = format!("http://10.0.2.2:{}", at.port());
    let cmd =
        |url: &str, what: &str, n: usize| format!("/usr/bin/python3 client.py {url} {what} {n}");
    // Warm both paths (preflights, page cache).
    run(&rt, &proxied, &via_proxy, &cmd(&proxy_url, "conn", 5));
    run(&rt, &direct, &via_slirp, &cmd(&slirp_url, "conn", 5));

    let (mut p_conn, mut s_conn, mut p_mb, mut s_mb) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        p_conn.push(number(&run(
            &rt,
            &proxied,
            &via_proxy,
            &cmd(&proxy_url, "conn", small_n),
        )));
        s_conn.push(number(&run(
            &rt,
            &direct,
            &via_slirp,
            &cmd(&slirp_url, "conn", small_n),
        )));
        p_mb.push(number(&run(
            &rt,
            &proxied,
            &via_proxy,
            &cmd(&proxy_url, "big", 1),
        )));
        s_mb.push(number(&run(
            &rt,
            &direct,
            &via_slirp,
            &cmd(&slirp_url, "big", 1),
        )));
    }
    let (pc, sc, pm, sm) = (median(p_conn), median(s_conn), median(p_mb), median(s_mb));

    let before = rss_kib();
    let res = run(
        &rt,
        &proxied,
        &via_proxy,
        &cmd(&proxy_url, "conn", memory_connections),
    );
    let after_first = rss_kib();
    run(
        &rt,
        &proxied,
        &via_proxy,
        &cmd(&proxy_url, "conn", memory_connections),
    );
    let after_second = rss_kib();
    let lines = res.connections().len();
    let counted: u32 = res.connections().iter().map(|c| c.count).sum();

    println!();
    println!(
        "egress per connection: proxy {pc:.3} ms, slirp4netns {sc:.3} ms, proxy adds {:.3} ms (target < 2 ms)",
        pc - sc
    );
    println!(
        "egress throughput ({} MB): proxy {pm:.0} MB/s, slirp4netns {sm:.0} MB/s, ratio {:.2} (target >= 0.80)",
        big >> 20,
        pm / sm
    );
    println!(
        "egress memory: RSS {before} KiB before, {after_first} KiB after {memory_connections} connections, {after_second} KiB after {} (record: {lines} line(s) for {counted} connection(s))",
        2 * memory_connections
    );
}
