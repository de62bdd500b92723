use super::*;
use proptest::prelude::*;

fn p(s: &str) -> IpPrefix {
    s.parse().unwrap()
}

#[test]
fn addresses_and_prefixes_parse() {
    assert_eq!(p("192.168.1.10").to_string(), "192.168.1.10/32");
    assert_eq!(p("10.1.0.0/16").to_string(), "10.1.0.0/16");
    assert_eq!(p(" 10.1.0.0/16 ").to_string(), "10.1.0.0/16");
    assert_eq!(p("0.0.0.0/0").to_string(), "0.0.0.0/0");
    assert_eq!(p("fd00::2").to_string(), "fd00::2/128");
    assert_eq!(p("fd00::/64").to_string(), "fd00::/64");
    assert_eq!(p("::/0").prefix_len(), 0);
    assert!(p("10.1.0.0/16").is_ipv4());
    assert!(!p("fe80::/10").is_ipv4());
}

#[test]
fn bad_exceptions_say_what_was_wrong() {
    let err = |s: &str| s.parse::<IpPrefix>().unwrap_err();
    assert_eq!(err(""), PrefixParseError::Empty);
    assert_eq!(err("  "), PrefixParseError::Empty);
    assert_eq!(
        err("example.com"),
        PrefixParseError::Address("example.com".into())
    );
    assert_eq!(
        err("10.1.0/16"),
        PrefixParseError::Address("10.1.0/16".into())
    );
    assert_eq!(
        err("fe80::1%eth0"),
        PrefixParseError::Address("fe80::1%eth0".into())
    );
    for bad in [
        "10.0.0.0/33",
        "10.0.0.0/",
        "10.0.0.0/-1",
        "10.0.0.0/+8",
        "10.0.0.0/x",
    ] {
        assert_eq!(
            err(bad),
            PrefixParseError::Length {
                text: bad.into(),
                max: 32
            },
            "{bad}"
        );
    }
    assert_eq!(
        err("fd00::/129"),
        PrefixParseError::Length {
            text: "fd00::/129".into(),
            max: 128
        }
    );
    let e = err("10.1.2.3/16");
    assert_eq!(
        e,
        PrefixParseError::HostBits {
            text: "10.1.2.3/16".into(),
            len: 16,
            network: p("10.1.0.0/16"),
        }
    );
    assert!(e.to_string().contains("10.1.0.0/16"), "{e}");
    assert!(err("192.168.1.10/8").to_string().contains("192.0.0.0/8"));
    assert!(err("nonsense").to_string().contains("such as 192.168.1.10"));
}

#[test]
fn prefixes_know_their_bounds_and_members() {
    let x = p("10.0.0.0/8");
    assert_eq!(x.bounds(), (0x0a00_0000, 0x0aff_ffff));
    assert!(x.contains("10.255.0.1".parse().unwrap()));
    assert!(!x.contains("11.0.0.0".parse().unwrap()));
    assert!(!x.contains("::a00:1".parse().unwrap()));
    assert_eq!(p("::/0").bounds(), (0, u128::MAX));
    assert_eq!(
        IpPrefix::network_of("192.168.7.9".parse().unwrap(), 20),
        p("192.168.0.0/20")
    );
    assert_eq!(IpPrefix::new("10.0.0.1".parse().unwrap(), 8), None);
}

#[test]
fn a_hole_for_one_address_costs_one_prefix_per_bit() {
    let mut s = PrefixSet::default();
    s.insert(p("10.0.0.0/8"));
    s.remove(p("10.0.2.3"));
    let out: Vec<String> = s.prefixes().iter().map(|x| x.to_string()).collect();
    assert_eq!(out.len(), 24, "{out:?}");
    assert_eq!(out[0], "10.0.0.0/23");
    assert!(out.contains(&"10.0.2.2/32".to_string()));
    assert!(out.contains(&"10.128.0.0/9".to_string()));
    assert!(!s.contains("10.0.2.3".parse().unwrap()));
    assert!(s.contains("10.0.2.2".parse().unwrap()));
    assert!(s.contains("10.0.2.4".parse().unwrap()));
}

#[test]
fn the_top_of_the_ipv6_space_does_not_overflow() {
    let mut s = PrefixSet::default();
    s.insert(p("::/0"));
    assert_eq!(s.prefixes(), vec![p("::/0")]);
    s.remove(p("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
    let out = s.prefixes();
    assert_eq!(out.len(), 128);
    assert_eq!(out[0], p("::/1"));
    assert_eq!(out[127], p("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/128"));
    s.insert(p("ff00::/8"));
    assert_eq!(s.prefixes(), vec![p("::/0")]);
    s.remove(p("::/0"));
    assert!(s.prefixes().is_empty());
}

#[test]
fn adjacent_prefixes_merge_and_families_stay_apart() {
    let mut s = PrefixSet::default();
    s.insert(p("10.0.0.0/9"));
    s.insert(p("10.128.0.0/9"));
    s.insert(p("::a00:0/104"));
    assert_eq!(s.prefixes(), vec![p("10.0.0.0/8"), p("::a00:0/104")]);
    s.remove(p("::/0"));
    assert_eq!(s.prefixes(), vec![p("10.0.0.0/8")]);
}

/// Brute-force membership of an 8-bit space after the same operations.
fn brute(ops: &[(bool, u8, u8)]) -> [bool; 256] {
    let mut m = [false; 256];
    for &(add, bits, len) in ops {
        let mask: u16 = if len == 0 { 0 } else { 0xff00 >> len };
        let net = u16::from(bits) & mask & 0xff;
        for (x, slot) in m.iter_mut().enumerate() {
            if (x as u16) & mask & 0xff == net {
                *slot = add;
            }
        }
    }
    m
}

proptest! {
    #[test]
    fn set_operations_match_brute_force_membership(
        ops in prop::collection::vec((any::<bool>(), any::<u8>(), 0u8..=8), 0..24)
    ) {
        let mut s = RangeSet::new(8);
        for &(add, bits, len) in &ops {
            let bits = u128::from(bits);
            if add { s.add_prefix(bits, len) } else { s.remove_prefix(bits, len) }
        }
        let want = brute(&ops);
        for x in 0..256u128 {
            prop_assert_eq!(s.contains(x), want[x as usize], "x={}", x);
        }
        // Ranges are sorted, disjoint and not adjacent (one value per set).
        for w in s.ranges().windows(2) {
            prop_assert!(w[0].1 + 1 < w[1].0, "{:?}", s.ranges());
        }
        // The prefixes cover exactly the set, are aligned, and no two could merge.
        let pre = s.prefixes();
        let mut cover = [false; 256];
        for &(bits, len) in &pre {
            prop_assert!(len <= 8);
            let size = 1u128 << (8 - len);
            prop_assert_eq!(bits % size, 0, "unaligned {}/{}", bits, len);
            for x in bits..bits + size {
                prop_assert!(!cover[x as usize], "overlap at {}", x);
                cover[x as usize] = true;
            }
        }
        prop_assert_eq!(cover, want);
        for w in pre.windows(2) {
            let ((a, la), (b, lb)) = (w[0], w[1]);
            let siblings = la == lb && la > 0 && a ^ b == 1u128 << (8 - la)
                && a % (2u128 << (8 - la)) == 0;
            prop_assert!(!siblings, "{}/{} and {}/{} could be one prefix", a, la, b, lb);
        }
    }

    #[test]
    fn ipv4_sets_agree_at_every_boundary(
        ops in prop::collection::vec((any::<bool>(), any::<u32>(), 0u8..=32), 1..16)
    ) {
        let mut s = PrefixSet::default();
        let mut probes = Vec::new();
        for &(add, bits, len) in &ops {
            let q = IpPrefix::network_of(IpAddr::V4(Ipv4Addr::from_bits(bits)), len);
            if add { s.insert(q) } else { s.remove(q) }
            let (lo, hi) = q.bounds();
            let after = hi.saturating_add(1).min(u32::MAX.into());
            probes.extend([lo.saturating_sub(1), lo, hi, after]);
        }
        let pre = s.prefixes();
        for x in probes {
            let addr = IpAddr::V4(Ipv4Addr::from_bits(x as u32));
            // The last operation that covers `x` decides.
            let want = ops.iter().rev().find_map(|&(add, bits, len)| {
                IpPrefix::network_of(IpAddr::V4(Ipv4Addr::from_bits(bits)), len)
                    .contains(addr)
                    .then_some(add)
            }).unwrap_or(false);
            prop_assert_eq!(s.contains(addr), want, "{}", addr);
            prop_assert_eq!(pre.iter().any(|q| q.contains(addr)), want, "{}", addr);
        }
    }

    #[test]
    fn a_printed_prefix_parses_back(bits in any::<u128>(), len in 0u8..=128, v4 in any::<bool>()) {
        let addr = match v4 {
            true => IpAddr::V4(Ipv4Addr::from_bits(bits as u32)),
            false => IpAddr::V6(Ipv6Addr::from_bits(bits)),
        };
        let q = IpPrefix::network_of(addr, len);
        prop_assert_eq!(q.to_string().parse::<IpPrefix>(), Ok(q));
    }
}
