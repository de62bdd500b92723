use super::*;

fn p(s: &str) -> IpPrefix {
    s.parse().unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn on_link(addr: &str, len: u8) -> HostAddress {
    HostAddress {
        addr: ip(addr),
        prefix_len: Some(len),
        peer: None,
    }
}

fn refused_by(prefixes: &[IpPrefix], addr: &str) -> bool {
    prefixes.iter().any(|q| q.contains(ip(addr)))
}

#[test]
fn the_refused_set_for_a_public_host_is_exactly_this() {
    let host = [
        on_link("127.0.0.1", 8),
        on_link("81.2.69.161", 27),
        on_link("2a00:1450::5", 64),
    ];
    let got: Vec<String> = refused_prefixes(&host, &[], false, true)
        .iter()
        .map(ToString::to_string)
        .collect();
    let want = [
        "0.0.0.0/8",
        // 10.0.0.0/8 less slirp's DNS 10.0.2.3: one prefix per bit below /8.
        "10.0.0.0/23",
        "10.0.2.0/31",
        "10.0.2.2/32",
        "10.0.2.4/30",
        "10.0.2.8/29",
        "10.0.2.16/28",
        "10.0.2.32/27",
        "10.0.2.64/26",
        "10.0.2.128/25",
        "10.0.3.0/24",
        "10.0.4.0/22",
        "10.0.8.0/21",
        "10.0.16.0/20",
        "10.0.32.0/19",
        "10.0.64.0/18",
        "10.0.128.0/17",
        "10.1.0.0/16",
        "10.2.0.0/15",
        "10.4.0.0/14",
        "10.8.0.0/13",
        "10.16.0.0/12",
        "10.32.0.0/11",
        "10.64.0.0/10",
        "10.128.0.0/9",
        // The host's own public network.
        "81.2.69.160/27",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "168.63.129.16/32",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        // Multicast and reserved side by side.
        "224.0.0.0/3",
        "::/8",
        "100::/64",
        "2001::/32",
        "2001:2::/48",
        "2001:db8::/32",
        "2002::/16",
        "2a00:1450::/64",
        "3fff::/20",
        "5f00::/16",
        "fc00::/7",
        // Link-local and the old site-local side by side.
        "fe80::/9",
        "ff00::/8",
    ];
    assert_eq!(got, want);
}

#[test]
fn what_must_be_refused_is_and_the_internet_is_not() {
    let set = refused_prefixes(&[], &[], false, true);
    for addr in [
        "169.254.169.254",
        "169.254.169.123",
        "168.63.129.16",
        "100.100.100.200",
        "192.0.0.192",
        "10.0.2.2",
        "10.0.2.100",
        "10.255.255.255",
        "172.17.0.1",
        "192.168.1.1",
        "127.0.0.1",
        "0.0.0.0",
        "224.0.0.251",
        "239.255.255.250",
        "255.255.255.255",
        "198.19.0.1",
        "fd00:ec2::254",
        "fd20:ce::254",
        "fe80::1",
        "ff02::fb",
        "::1",
        "::",
        "::ffff:192.168.1.1",
        "64:ff9b::a00:1",
        "64:ff9b:1::1",
        "2002:c0a8:101::1",
        "2001:0:4136:e378::1",
        "2001:db8::1",
    ] {
        assert!(refused_by(&set, addr), "{addr} is not refused");
    }
    for addr in [
        "10.0.2.3",
        "8.8.8.8",
        "1.1.1.1",
        "140.82.112.3",
        "192.31.196.1",
        "192.52.193.1",
        "192.175.48.1",
        "2001:4860:4860::8888",
        "2606:4700::6810:84e5",
    ] {
        assert!(!refused_by(&set, addr), "{addr} is refused");
    }
}

#[test]
fn exceptions_open_holes_but_never_the_gateway() {
    let host = [on_link("192.0.2.2", 24)];
    let allow = [p("192.0.2.2"), p("10.0.0.0/8"), p("fd00::/64")];
    let set = refused_prefixes(&host, &allow, false, true);
    assert!(!refused_by(&set, "192.0.2.2"));
    assert!(
        refused_by(&set, "192.0.2.1"),
        "only the named address opens"
    );
    assert!(!refused_by(&set, "10.1.2.3"));
    assert!(
        refused_by(&set, "10.0.2.2"),
        "the host's loopback stays refused"
    );
    assert!(!refused_by(&set, "fd00::5"));
    assert!(refused_by(&set, "fd01::5"));
    // Even an exception for everything leaves the gateway refused.
    let all = refused_prefixes(&host, &[p("0.0.0.0/0"), p("::/0")], false, true);
    assert_eq!(all, vec![p("10.0.2.2/32")]);
}

#[test]
fn the_dns_forwarder_is_never_refused_and_the_gateway_only_by_the_switch() {
    let host = [on_link("10.0.2.100", 24)];
    let set = refused_prefixes(&host, &[], false, true);
    assert!(!refused_by(&set, "10.0.2.3"));
    assert!(refused_by(&set, "10.0.2.2"));
    let loopback = refused_prefixes(&host, &[], true, true);
    assert!(!refused_by(&loopback, "10.0.2.3"));
    assert!(!refused_by(&loopback, "10.0.2.2"));
    assert!(refused_by(&loopback, "10.0.2.4"));
}

#[test]
fn host_networks_peers_and_absurd_prefixes() {
    let tunnel = HostAddress {
        addr: ip("81.2.69.161"),
        prefix_len: Some(32),
        peer: Some(ip("81.2.70.1")),
    };
    let set = refused_prefixes(&[tunnel, on_link("93.184.215.14", 4)], &[], false, true);
    assert!(refused_by(&set, "81.2.70.1"), "the point-to-point peer");
    assert!(refused_by(&set, "93.184.215.14"), "the address itself");
    assert!(
        !refused_by(&set, "93.184.215.15"),
        "a /4 on-link network is not taken as the host's network"
    );
    let v6 = refused_prefixes(&[on_link("2a00:1450::5", 8)], &[], false, true);
    assert!(refused_by(&v6, "2a00:1450::5") && !refused_by(&v6, "2a00:1450::6"));
}

#[test]
fn without_ipv6_only_ipv4_routes_are_made() {
    let set = refused_prefixes(&[on_link("fd00::2", 64)], &[], false, false);
    assert!(set.iter().all(IpPrefix::is_ipv4));
    assert!(refused_by(&set, "169.254.169.254"));
}

#[test]
fn the_table_has_a_reason_per_row_and_no_row_twice() {
    for (i, r) in REFUSED_RANGES.iter().enumerate() {
        assert!(r.why.len() > 10, "{}", r.prefix);
        assert!(
            REFUSED_RANGES[..i].iter().all(|o| o.prefix != r.prefix),
            "{} twice",
            r.prefix
        );
    }
}

#[test]
fn this_host_has_at_least_its_loopback_address() {
    let host = host_addresses().unwrap();
    assert!(
        host.iter()
            .any(|h| h.addr == ip("127.0.0.1") && h.prefix_len == Some(8)),
        "{host:?}"
    );
}
