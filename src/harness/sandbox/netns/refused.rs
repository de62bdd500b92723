//! What the network path refuses: a fixed table of address ranges that are not the internet
//! (each with the reason), the host's own addresses and on-link networks found at launch, minus
//! the person's named exceptions and slirp's DNS forwarder. Invariant: the refused set always
//! holds slirp's gateway (the host's loopback) unless the test-only host-loopback switch is on,
//! and never holds slirp's DNS forwarder.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::ranges::{IpPrefix, PrefixSet};

/// One range the network path refuses, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefusedRange {
    pub prefix: IpPrefix,
    pub why: &'static str,
}

const fn v4(a: [u8; 4], len: u8, why: &'static str) -> RefusedRange {
    let addr = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
    RefusedRange {
        prefix: IpPrefix::fixed(IpAddr::V4(addr), len),
        why,
    }
}

const fn v6(head: [u16; 2], len: u8, why: &'static str) -> RefusedRange {
    let addr = Ipv6Addr::new(head[0], head[1], 0, 0, 0, 0, 0, 0);
    RefusedRange {
        prefix: IpPrefix::fixed(IpAddr::V6(addr), len),
        why,
    }
}

/// Everything a sandbox on the network path may not reach whatever the host looks like: the
/// special-purpose registries (RFC 6890 and successors) less the few entries that are globally
/// reachable services (AS112 192.31.196.0/24 and 192.175.48.0/24, AMT 192.52.193.0/24), plus
/// the one public address a cloud serves its VMs' secrets on. Checked at compile time.
#[rustfmt::skip]
pub const REFUSED_RANGES: &[RefusedRange] = &[
    v4([0, 0, 0, 0], 8, "\"this network\" (RFC 791, 1122): never a destination"),
    v4([10, 0, 0, 0], 8, "private (RFC 1918); holds slirp's own 10.0.2.0/24"),
    v4([100, 64, 0, 0], 10, "shared carrier-grade NAT space (RFC 6598): Tailscale, \
        Alibaba Cloud's metadata 100.100.100.200"),
    v4([127, 0, 0, 0], 8, "loopback (RFC 1122); the sandbox's own loopback is answered \
        first by the local table"),
    v4([168, 63, 129, 16], 32, "Azure's platform address (WireServer): VM configuration \
        and certificates"),
    v4([169, 254, 0, 0], 16, "link-local (RFC 3927): the cloud metadata services at \
        169.254.169.254 (AWS, GCP, Azure, OCI, OpenStack)"),
    v4([172, 16, 0, 0], 12, "private (RFC 1918): container bridges such as docker0"),
    v4([192, 0, 0, 0], 24, "IETF protocol assignments (RFC 6890): DS-Lite, NAT64 \
        discovery, Oracle's 192.0.0.192"),
    v4([192, 0, 2, 0], 24, "documentation TEST-NET-1 (RFC 5737)"),
    v4([192, 88, 99, 0], 24, "deprecated 6to4 relay anycast (RFC 7526)"),
    v4([192, 168, 0, 0], 16, "private (RFC 1918)"),
    v4([198, 18, 0, 0], 15, "benchmarking (RFC 2544); also proxies' fake-IP ranges"),
    v4([198, 51, 100, 0], 24, "documentation TEST-NET-2 (RFC 5737)"),
    v4([203, 0, 113, 0], 24, "documentation TEST-NET-3 (RFC 5737)"),
    v4([224, 0, 0, 0], 4, "multicast (RFC 5771)"),
    v4([240, 0, 0, 0], 4, "reserved (RFC 1112), with the limited broadcast 255.255.255.255"),
    v6([0, 0], 8, "reserved (RFC 4291): ::, ::1, IPv4-mapped ::ffff:0:0/96, and NAT64 \
        64:ff9b::/96 and 64:ff9b:1::/48 (RFC 6052, 8215), which embed IPv4 addresses"),
    v6([0x100, 0], 64, "discard-only (RFC 6666)"),
    v6([0x2001, 0], 32, "Teredo (RFC 4380): embeds IPv4 addresses"),
    v6([0x2001, 2], 48, "benchmarking (RFC 5180)"),
    v6([0x2001, 0xdb8], 32, "documentation (RFC 3849)"),
    v6([0x2002, 0], 16, "6to4 (RFC 3056): embeds IPv4 addresses"),
    v6([0x3fff, 0], 20, "documentation (RFC 9637)"),
    v6([0x5f00, 0], 16, "SRv6 segment identifiers (RFC 9602)"),
    v6([0xfc00, 0], 7, "unique local (RFC 4193): AWS's metadata fd00:ec2::254, GCP's \
        fd20:ce::254"),
    v6([0xfe80, 0], 10, "link-local (RFC 4291)"),
    v6([0xfec0, 0], 10, "deprecated site-local (RFC 3879)"),
    v6([0xff00, 0], 8, "multicast (RFC 4291)"),
];

/// Why the table refuses `addr` (the first range holding it), or `None`: what both the sandbox's
/// egress proxy and `fetch_url` ask of an address.
pub fn range_refusing(addr: IpAddr) -> Option<&'static str> {
    REFUSED_RANGES
        .iter()
        .find(|r| r.prefix.contains(addr))
        .map(|r| r.why)
}

/// slirp's gateway: the host's loopback when slirp lets it through.
pub const SLIRP_GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
/// slirp's DNS forwarder (slirp answers on port 53 only and forwards to the host's resolver).
pub const SLIRP_DNS_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 3);

/// An on-link network wider than this is taken for a misconfiguration and only the address
/// itself is refused: refusing a /0 would refuse the internet and collide with slirp's route.
const WIDEST_ON_LINK_V4: u8 = 8;
const WIDEST_ON_LINK_V6: u8 = 16;

/// One address the host holds, with its on-link prefix length and a point-to-point peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostAddress {
    pub addr: IpAddr,
    pub prefix_len: Option<u8>,
    pub peer: Option<IpAddr>,
}

impl HostAddress {
    /// What this address makes refused: itself, its on-link network (unless absurdly wide),
    /// and the peer of a point-to-point link.
    pub(crate) fn refused(&self) -> impl Iterator<Item = IpPrefix> {
        let widest = if self.addr.is_ipv4() {
            WIDEST_ON_LINK_V4
        } else {
            WIDEST_ON_LINK_V6
        };
        let network = self
            .prefix_len
            .filter(|l| *l >= widest)
            .map(|l| IpPrefix::network_of(self.addr, l));
        [
            Some(IpPrefix::host(self.addr)),
            network,
            self.peer.map(IpPrefix::host),
        ]
        .into_iter()
        .flatten()
    }
}

/// The refused set, as the fewest prefixes: the table and the host's addresses, minus `allow`,
/// minus slirp's DNS forwarder; slirp's gateway stays refused unless `host_loopback`. IPv6
/// prefixes are left out when `ipv6` is false (a kernel without IPv6 has no IPv6 table).
pub fn refused_prefixes(
    host: &[HostAddress],
    allow: &[IpPrefix],
    host_loopback: bool,
    ipv6: bool,
) -> Vec<IpPrefix> {
    let mut set = PrefixSet::default();
    REFUSED_RANGES.iter().for_each(|r| set.insert(r.prefix));
    host.iter()
        .flat_map(HostAddress::refused)
        .for_each(|p| set.insert(p));
    allow.iter().for_each(|p| set.remove(*p));
    set.remove(IpPrefix::host(IpAddr::V4(SLIRP_DNS_ADDR)));
    let gateway = IpPrefix::host(IpAddr::V4(SLIRP_GATEWAY));
    if host_loopback {
        set.remove(gateway);
    } else {
        set.insert(gateway);
    }
    set.prefixes()
        .into_iter()
        .filter(|p| ipv6 || p.is_ipv4())
        .collect()
}

/// Whether this kernel has IPv6 (it may be compiled out or disabled at boot).
pub fn kernel_has_ipv6() -> bool {
    std::path::Path::new("/proc/sys/net/ipv6").exists()
}

/// The addresses of every interface in Spear's own network namespace, now.
pub fn host_addresses() -> std::io::Result<Vec<HostAddress>> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list it allocated into `list`, or fails and writes nothing.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not freed before the end;
        // its socket addresses are null or valid for the size their family implies, and
        // `ifa_ifu` is the peer's address on a point-to-point link.
        let (ifa, addr, netmask, peer) = unsafe {
            let ifa = &*cur;
            let p2p = ifa.ifa_flags & libc::IFF_POINTOPOINT as libc::c_uint != 0;
            let peer = if p2p {
                socket_address(ifa.ifa_ifu)
            } else {
                None
            };
            (
                ifa,
                socket_address(ifa.ifa_addr),
                socket_address(ifa.ifa_netmask),
                peer,
            )
        };
        if let Some(addr) = addr {
            out.push(HostAddress {
                addr,
                prefix_len: netmask.map(prefix_len_of_mask),
                peer: peer.filter(|p| p.is_ipv4() == addr.is_ipv4()),
            });
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: the list getifaddrs returned, freed once; no reference into it outlives this.
    unsafe { libc::freeifaddrs(list) };
    Ok(out)
}

/// The leading one bits of a netmask.
fn prefix_len_of_mask(mask: IpAddr) -> u8 {
    match mask {
        IpAddr::V4(m) => m.to_bits().leading_ones() as u8,
        IpAddr::V6(m) => m.to_bits().leading_ones() as u8,
    }
}

/// The IPv4 or IPv6 address in `sa`, if it holds one.
///
/// # Safety
/// `sa` is null or points at a socket address valid for the size its family implies.
unsafe fn socket_address(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: the caller's contract; the family decides which structure it is.
    unsafe {
        match i32::from((*sa).sa_family) {
            libc::AF_INET => {
                let sin = &*sa.cast::<libc::sockaddr_in>();
                Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                    sin.sin_addr.s_addr,
                ))))
            }
            libc::AF_INET6 => {
                let sin6 = &*sa.cast::<libc::sockaddr_in6>();
                Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "refused_tests.rs"]
mod tests;
