//! Issue 8, item 4: on the network path, the host's services and every address that is not the
//! internet are refused inside the sandbox's own network namespace before the command starts;
//! `network_allow` names exceptions. The only connects made are to this machine's own
//! addresses, to listeners these tests start; every other range is checked in the sandbox's
//! routing table, never by sending.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, TcpListener};
use std::time::{Duration, Instant};

use crate::features::record_feature;
use crate::support::*;
use spear::harness::command_runner::{CommandRunner, RunnerConfig};
use spear::harness::primitives::ToolStatus;
use spear::harness::sandbox::netns::IpPrefix;
use spear::harness::sandbox::netns::refused::REFUSED_RANGES;

/// This machine's own addresses, read apart from Spear's code: IPv4 from the local routing
/// table (`/proc/net/fib_trie`), IPv6 from `/proc/net/if_inet6`.
fn machine_addresses() -> Vec<IpAddr> {
    let mut out = BTreeSet::new();
    let trie = std::fs::read_to_string("/proc/net/fib_trie").unwrap();
    let mut last: Option<Ipv4Addr> = None;
    for line in trie.lines() {
        let t = line.trim_start_matches([' ', '|', '+', '-', '`']);
        if let Ok(a) = t.trim().parse::<Ipv4Addr>() {
            last = Some(a);
        } else if t.contains("/32 host LOCAL")
            && let Some(a) = last
        {
            out.insert(IpAddr::V4(a));
        }
    }
    for line in std::fs::read_to_string("/proc/net/if_inet6")
        .unwrap_or_default()
        .lines()
    {
        if let Some(hex) = line.split_whitespace().next()
            && let Ok(bits) = u128::from_str_radix(hex, 16)
        {
            out.insert(IpAddr::V6(Ipv6Addr::from(bits)));
        }
    }
    out.into_iter().collect()
}

fn is_loopback(a: &IpAddr) -> bool {
    a.is_loopback()
}

fn is_link_local_v6(a: &IpAddr) -> bool {
    matches!(a, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80)
}

/// Listeners on every address of the host, one port: `[::]` (dual-stack where the host allows)
/// and `0.0.0.0` when that is a separate socket.
fn listen_everywhere() -> (Vec<TcpListener>, u16) {
    let mut ls = Vec::new();
    let port = match TcpListener::bind("[::]:0") {
        Ok(l) => {
            let port = l.local_addr().unwrap().port();
            ls.push(l);
            // A dual-stack [::] already holds the IPv4 port; a v6-only one does not.
            if let Ok(v4) = TcpListener::bind(("0.0.0.0", port)) {
                ls.push(v4);
            }
            port
        }
        Err(_) => {
            let l = TcpListener::bind("0.0.0.0:0").unwrap();
            let port = l.local_addr().unwrap().port();
            ls.push(l);
            port
        }
    };
    for l in &ls {
        l.set_nonblocking(true).unwrap();
    }
    (ls, port)
}

/// Connections waiting on the listeners now.
fn accepted(ls: &[TcpListener]) -> usize {
    let mut n = 0;
    for l in ls {
        while l.accept().is_ok() {
            n += 1;
        }
    }
    n
}

/// One line per address: `ADDR connected` or `ADDR <bash's error>`.
fn connect_script(addrs: &[IpAddr], port: u16) -> String {
    let list: Vec<String> = addrs.iter().map(ToString::to_string).collect();
    format!(
        "for a in {}; do if (timeout 5 bash -c \"exec 3<>/dev/tcp/$a/{port}\") 2>/tmp/err; \
         then echo \"$a connected\"; else echo \"$a $(tail -1 /tmp/err)\"; fi; done; echo done",
        list.join(" ")
    )
}

fn line_for<'a>(out: &'a str, a: &IpAddr) -> &'a str {
    let key = format!("{a} ");
    out.lines()
        .find(|l| l.starts_with(&key))
        .unwrap_or_else(|| panic!("no result for {a}: {out}"))
}

fn net_runner_allowing(ws: &std::path::Path, allow: &[IpAddr]) -> CommandRunner {
    require_slirp();
    let mut cfg: RunnerConfig = config(ws);
    cfg.network_allow = allow.iter().map(|a| IpPrefix::host(*a)).collect();
    CommandRunner::new(cfg).unwrap()
}

#[tokio::test]
async fn regression_issue_8_host_services_are_refused_unless_named() {
    let (_d, ws) = workspace();
    let (listeners, port) = listen_everywhere();
    let all = machine_addresses();
    let targets: Vec<IpAddr> = all
        .iter()
        .copied()
        .filter(|a| !is_loopback(a) && !is_link_local_v6(a))
        .collect();
    let v4: Vec<IpAddr> = targets.iter().copied().filter(IpAddr::is_ipv4).collect();
    if v4.is_empty() {
        eprintln!(
            "this host has no non-loopback IPv4 address: the connect refusal could not be \
             exercised here; the routing-table test still checks the ranges"
        );
        record_feature(
            "host_services",
            "no non-loopback IPv4 address: refusal checked in the routing table only",
        );
    }
    let mut probe = targets.clone();
    // The sandbox's own loopback still answers (nothing listens: refused by the peer, not by
    // a route).
    probe.push(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let script = connect_script(&probe, port);

    let refused = net_runner_allowing(&ws, &[]);
    let res = run(&refused, networked(), &script).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(res.stdout.contains("done"), "the command went on: {res:?}");
    for a in &targets {
        let l = line_for(&res.stdout, a);
        assert!(
            l.contains("Permission denied"),
            "{a} of this host was not refused by the sandbox's routes: {l}"
        );
    }
    let lo = line_for(&res.stdout, &IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert!(lo.contains("Connection refused"), "{lo}");
    assert_eq!(accepted(&listeners), 0, "a host listener saw a connection");

    // Positive control, same listeners and commands: named exceptions are reached.
    let allowed = net_runner_allowing(&ws, &targets);
    let res = run(&allowed, networked(), &script).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    for a in &targets {
        let l = line_for(&res.stdout, a);
        assert!(!l.contains("Permission denied"), "{a} still refused: {l}");
        if a.is_ipv4() {
            assert!(l.ends_with("connected"), "{a} not reached: {l}");
        }
    }
    // slirp carries IPv4 only: each allowed IPv4 address reached the listener through the host.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = accepted(&listeners);
    let fds: Vec<&dyn std::os::fd::AsFd> = listeners.iter().map(|l| l as _).collect();
    while seen < v4.len() && wait_readable(&fds, deadline.saturating_duration_since(Instant::now()))
    {
        seen += accepted(&listeners);
    }
    if !v4.is_empty() {
        record_feature(
            "host_services",
            &format!(
                "{} host address(es) refused, then reached once named ({} over IPv4)",
                targets.len(),
                v4.len()
            ),
        );
    }
    assert_eq!(
        seen,
        v4.len(),
        "the listener did not see every allowed connect"
    );
}

/// One route of a main table, as `/proc/net/route` or `/proc/net/ipv6_route` shows it.
#[derive(Debug)]
struct Route {
    prefix: IpPrefix,
    reject: bool,
}

fn parse_routes(text: &str) -> Vec<Route> {
    let (v4, v6) = text.split_once("==\n").unwrap();
    let mut out = Vec::new();
    for l in v4.lines().skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let word = |i: usize| u32::from_str_radix(f[i], 16).unwrap();
        let dest = Ipv4Addr::from(word(1).to_ne_bytes());
        let len = u32::from_be_bytes(word(7).to_ne_bytes()).leading_ones() as u8;
        out.push(Route {
            prefix: IpPrefix::new(IpAddr::V4(dest), len).unwrap(),
            reject: word(3) & 0x200 != 0,
        });
    }
    for l in v6.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let len = u8::from_str_radix(f[1], 16).unwrap();
        if len == 0 {
            continue; // the kernel's "no route" sentinels
        }
        let dest = Ipv6Addr::from(u128::from_str_radix(f[0], 16).unwrap());
        out.push(Route {
            prefix: IpPrefix::new(IpAddr::V6(dest), len).unwrap(),
            reject: u32::from_str_radix(f[8], 16).unwrap() & 0x200 != 0,
        });
    }
    out
}

/// The longest-prefix match among `routes` for `a`.
fn lookup(routes: &[Route], a: IpAddr) -> Option<&Route> {
    routes
        .iter()
        .filter(|r| r.prefix.contains(a))
        .max_by_key(|r| r.prefix.prefix_len())
}

#[tokio::test]
async fn regression_issue_8_the_sandbox_routing_table_refuses_what_is_not_the_internet() {
    let (_d, ws) = workspace();
    let r = net_runner_allowing(&ws, &[]);
    let res = run(
        &r,
        networked(),
        "cat /proc/net/route; echo ==; cat /proc/net/ipv6_route 2>/dev/null; true",
    )
    .await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    let routes = parse_routes(&res.stdout);
    let ipv6 = std::path::Path::new("/proc/net/if_inet6").exists();
    if !ipv6 {
        eprintln!("this kernel has no IPv6: only the IPv4 ranges were checked");
    }
    let mut must_refuse: Vec<IpAddr> = [
        "169.254.169.254",
        "168.63.129.16",
        "100.100.100.200",
        "10.0.2.2",
        "10.1.2.3",
        "172.17.0.1",
        "192.168.1.1",
        "192.0.0.192",
        "224.0.0.251",
        "239.255.255.250",
        "255.255.255.255",
        "0.0.0.1",
        "198.18.0.1",
        "203.0.113.5",
        "fd00:ec2::254",
        "fe80::1",
        "ff02::fb",
        "64:ff9b::a9fe:a9fe",
        "::ffff:10.0.0.1",
        "2002:a9fe:a9fe::1",
        "2001:db8::1",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    for row in REFUSED_RANGES {
        let (lo, hi) = row.prefix.bounds();
        let w = row.prefix.width();
        for bits in [lo, hi] {
            must_refuse.push(if w == 32 {
                IpAddr::V4(Ipv4Addr::from_bits(bits as u32))
            } else {
                IpAddr::V6(Ipv6Addr::from_bits(bits))
            });
        }
    }
    // The host's loopback is the sandbox's own inside (its local table answers first).
    must_refuse.extend(machine_addresses().into_iter().filter(|a| !is_loopback(a)));
    for a in must_refuse.into_iter().filter(|a| ipv6 || a.is_ipv4()) {
        let hit = lookup(&routes, a);
        assert!(
            hit.is_some_and(|r| r.reject),
            "{a} is not refused by the sandbox's routing table (best match {hit:?})"
        );
    }
    // slirp's DNS forwarder and the internet are routed, not refused: the positive control.
    for a in ["10.0.2.3", "8.8.8.8", "1.1.1.1"] {
        let hit = lookup(&routes, a.parse().unwrap());
        assert!(hit.is_some_and(|r| !r.reject), "{a}: {hit:?}");
    }
    assert!(
        lookup(&routes, "2001:4860:4860::8888".parse().unwrap()).is_none_or(|r| !r.reject),
        "a public IPv6 address is refused by a route"
    );
}

#[tokio::test]
async fn a_route_the_kernel_refuses_stops_the_launch_before_the_command() {
    use spear::harness::process::{NetnsPlan, NullSink};
    use spear::harness::sandbox::netns::routes::route_batch;
    use spear::harness::sandbox::{End, LaunchLimits};
    let (_d, ws) = workspace();
    let r = runner(&ws);
    r.ensure_sandbox().await.unwrap();
    let launch = |netlink: Vec<u8>| LaunchLimits {
        netns: Some(NetnsPlan {
            netlink,
            ipv6_off_for_new_links: false,
            listen: None,
        }),
        ..Default::default()
    };
    let spec = |marker: &str| {
        let cmd = format!("cat /proc/net/route > {marker}");
        r.build_spec(&writable(), vec!["/bin/sh".into(), "-c".into(), cmd.into()])
            .unwrap()
    };
    let doc: IpPrefix = "192.0.2.0/24".parse().unwrap();
    let limit = Duration::from_secs(20);

    // Positive control: the route is made inside the sandbox's namespace and the command runs.
    let once = launch(route_batch(&[doc]));
    let o = r
        .sandbox()
        .run(spec("ok"), &once, &mut NullSink, limit)
        .await;
    let o = o.unwrap();
    assert_eq!(o.end, End::Exited(0), "{}", o.stderr.render());
    let table = std::fs::read_to_string(ws.join("ok")).unwrap();
    let raw = u32::from_ne_bytes([192, 0, 2, 0]);
    assert!(
        table.contains(&format!("*\t{raw:08X}\t00000000\t0201")),
        "no prohibit route in the sandbox: {table}"
    );

    // The same route twice: the kernel refuses the second, and nothing runs.
    let twice = launch(route_batch(&[doc, doc]));
    let err = match r
        .sandbox()
        .run(spec("bad"), &twice, &mut NullSink, limit)
        .await
    {
        Err(e) => e.to_string(),
        Ok(o) => panic!("the launch went on: {:?}", o.end),
    };
    assert!(
        err.contains("route request 2") && err.contains("File exists"),
        "{err}"
    );
    assert!(!ws.join("bad").exists(), "the command ran");
}
