//! The refused set in the kernel's terms: one netlink batch of `RTM_NEWROUTE` requests adding a
//! `prohibit` route to the main table per prefix (built here, sent by the namespace helper), and
//! the read-back of `/proc/PID/net/route` and `ipv6_route` that checks every one is in place
//! before the command starts. Invariant: `route_batch` numbers its requests 1..=n in order, each
//! asking for an acknowledgement, so the helper can tie every ack to its request.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::ranges::IpPrefix;

const RTM_NEWROUTE: u16 = 24;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const RT_TABLE_MAIN: u8 = 254;
const RTPROT_STATIC: u8 = 4;
const RT_SCOPE_UNIVERSE: u8 = 0;
const RTN_PROHIBIT: u8 = 8;
const RTA_DST: u16 = 1;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
/// `RTF_REJECT` in `/proc/net/route` and `/proc/net/ipv6_route` flags.
const RTF_REJECT: u32 = 0x0200;

/// `nlmsghdr` (16 bytes) + `rtmsg` (12 bytes) + one `RTA_DST` attribute (4 + 4 or 16 bytes).
fn message_len(p: &IpPrefix) -> usize {
    16 + 12 + 4 + if p.is_ipv4() { 4 } else { 16 }
}

/// One datagram's worth of requests: a `prohibit` route in the main table for each prefix, in
/// order, numbered from 1, each with `NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK` (a route that
/// already exists is an error, never silently someone else's).
pub fn route_batch(prefixes: &[IpPrefix]) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefixes.iter().map(message_len).sum());
    for (i, p) in prefixes.iter().enumerate() {
        let len = message_len(p) as u32;
        let seq = (i + 1) as u32;
        out.extend_from_slice(&len.to_ne_bytes());
        out.extend_from_slice(&RTM_NEWROUTE.to_ne_bytes());
        let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE;
        out.extend_from_slice(&flags.to_ne_bytes());
        out.extend_from_slice(&seq.to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
        let family = if p.is_ipv4() { AF_INET } else { AF_INET6 };
        // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
        out.extend_from_slice(&[
            family,
            p.prefix_len(),
            0,
            0,
            RT_TABLE_MAIN,
            RTPROT_STATIC,
            RT_SCOPE_UNIVERSE,
            RTN_PROHIBIT,
        ]);
        out.extend_from_slice(&0u32.to_ne_bytes());
        let addr: Vec<u8> = match p.addr() {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        out.extend_from_slice(&((4 + addr.len()) as u16).to_ne_bytes());
        out.extend_from_slice(&RTA_DST.to_ne_bytes());
        out.extend_from_slice(&addr);
    }
    out
}

/// The `prohibit`/`unreachable` routes of a main table, from the text of `/proc/PID/net/route`
/// and `/proc/PID/net/ipv6_route`. IPv6's catch-all `::/0` reject entries (the kernel's "no
/// route" sentinels) are left out.
pub fn reject_routes(route_v4: &str, route_v6: &str) -> Vec<IpPrefix> {
    let mut out = Vec::new();
    // Iface Destination Gateway Flags RefCnt Use Metric Mask ...; addresses are the raw
    // network-order words printed as native-endian hex.
    for line in route_v4.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let word = |i: usize| f.get(i).and_then(|s| u32::from_str_radix(s, 16).ok());
        if let (Some(dest), Some(flags), Some(mask)) = (word(1), word(3), word(7))
            && flags & RTF_REJECT != 0
        {
            let addr = IpAddr::V4(Ipv4Addr::from(dest.to_ne_bytes()));
            let len = u32::from_be_bytes(mask.to_ne_bytes()).leading_ones() as u8;
            out.extend(IpPrefix::new(addr, len));
        }
    }
    // dest dest_len src src_len next_hop metric refcnt use flags device, all hex.
    for line in route_v6.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let dest = f.first().and_then(|s| u128::from_str_radix(s, 16).ok());
        let len = f.get(1).and_then(|s| u8::from_str_radix(s, 16).ok());
        let flags = f.get(8).and_then(|s| u32::from_str_radix(s, 16).ok());
        if let (Some(dest), Some(len), Some(flags)) = (dest, len, flags)
            && flags & RTF_REJECT != 0
            && len > 0
        {
            out.extend(IpPrefix::new(IpAddr::V6(Ipv6Addr::from(dest)), len));
        }
    }
    out
}

/// Refusal routes that were asked for and are not in the sandbox's routing table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} of {expected} refusal routes are not in the sandbox's routing table: {}",
    missing.len(),
    joined(missing)
)]
pub struct RoutesMissing {
    pub missing: Vec<IpPrefix>,
    /// How many were asked for.
    pub expected: usize,
}

fn joined(prefixes: &[IpPrefix]) -> String {
    let names: Vec<String> = prefixes.iter().map(ToString::to_string).collect();
    names.join(", ")
}

/// `Ok` when every prefix of `expected` is among `installed`; otherwise which are missing.
pub fn check_installed(expected: &[IpPrefix], installed: &[IpPrefix]) -> Result<(), RoutesMissing> {
    let missing: Vec<IpPrefix> = expected
        .iter()
        .filter(|p| !installed.contains(p))
        .copied()
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(RoutesMissing {
            missing,
            expected: expected.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> IpPrefix {
        s.parse().unwrap()
    }

    /// One request as the kernel reads it: header, rtmsg, RTA_DST.
    fn request(seq: u32, family: u8, len: u8, addr: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend((32 + addr.len() as u32).to_ne_bytes());
        m.extend(24u16.to_ne_bytes()); // RTM_NEWROUTE
        m.extend(0x0605u16.to_ne_bytes()); // REQUEST | ACK | EXCL | CREATE
        m.extend(seq.to_ne_bytes());
        m.extend(0u32.to_ne_bytes());
        // family, dst_len, src_len, tos, main table, static, universe, prohibit; flags 0.
        m.extend([family, len, 0, 0, 254, 4, 0, 8]);
        m.extend(0u32.to_ne_bytes());
        m.extend((4 + addr.len() as u16).to_ne_bytes());
        m.extend(1u16.to_ne_bytes()); // RTA_DST
        m.extend(addr);
        m
    }

    #[test]
    fn a_batch_is_the_exact_kernel_messages() {
        let b = route_batch(&[p("10.0.0.0/8"), p("fc00::/7")]);
        let mut want = request(1, 2, 8, &[10, 0, 0, 0]);
        let fc00: Ipv6Addr = "fc00::".parse().unwrap();
        want.extend(request(2, 10, 7, &fc00.octets()));
        assert_eq!(b, want);
        assert_eq!(b.len(), 36 + 48);
        assert!(route_batch(&[]).is_empty());
    }

    /// Real text read from a sandbox's namespace (little-endian host).
    const ROUTE: &str = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
        *\t00000000\t00000000\t0201\t0\t0\t0\t000000FF\t0\t0\t0\n\
        tap0\t00000000\t0202000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
        tap0\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
        *\t0202000A\t00000000\t0205\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n\
        *\t000000F0\t00000000\t0201\t0\t0\t0\t000000F0\t0\t0\t0\n";
    /// ipv6_route lines: destination, length, source, length, next hop, metric, refcount, use,
    /// flags, device (the zero source and next hop are written out below).
    fn route6_line(dest: &str, len: &str, metric: &str, flags: &str) -> String {
        let zero = "0".repeat(32);
        format!("{dest} {len} {zero} 00 {zero} {metric} 00000001 00000000 {flags}       lo\n")
    }

    fn route6() -> String {
        [
            (
                "00000000000000000000000000000000",
                "08",
                "00000400",
                "00200200",
            ),
            (
                "fe800000000000000000000000000000",
                "0a",
                "00000400",
                "00200200",
            ),
            (
                "00000000000000000000000000000001",
                "80",
                "00000000",
                "80200001",
            ),
            (
                "00000000000000000000000000000000",
                "00",
                "ffffffff",
                "00200200",
            ),
        ]
        .iter()
        .map(|(d, l, m, f)| route6_line(d, l, m, f))
        .collect()
    }

    #[test]
    fn reject_routes_are_read_back_from_proc() {
        if cfg!(target_endian = "big") {
            return; // the sample text above is what a little-endian kernel prints
        }
        assert_eq!(
            reject_routes(ROUTE, &route6()),
            vec![
                p("0.0.0.0/8"),
                p("10.0.2.2/32"),
                p("240.0.0.0/4"),
                p("::/8"),
                p("fe80::/10"),
            ]
        );
        assert_eq!(reject_routes("", ""), vec![]);
        assert_eq!(reject_routes("header\ngarbage line\n", "zz 08\n"), vec![]);
    }

    #[test]
    fn a_missing_route_is_named() {
        let have = [p("10.0.0.0/8")];
        assert_eq!(check_installed(&[p("10.0.0.0/8")], &have), Ok(()));
        let missing = check_installed(&[p("10.0.0.0/8"), p("fc00::/7")], &have).unwrap_err();
        assert_eq!(missing.missing, [p("fc00::/7")]);
        assert_eq!(
            missing.to_string(),
            "1 of 2 refusal routes are not in the sandbox's routing table: fc00::/7"
        );
    }
}
