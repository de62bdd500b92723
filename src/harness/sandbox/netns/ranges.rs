//! IP prefixes and exact sets of addresses, for the network path's refusal table: parse
//! `192.168.1.10` or `10.1.0.0/16` (IPv6 alike), add and remove prefixes, and give back the fewest
//! CIDR prefixes covering the set. Pure arithmetic. Invariant: a `RangeSet` is a sorted list of
//! disjoint, non-adjacent inclusive ranges, so equal sets have equal values, and a prefix never
//! has a bit set past its length.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use thiserror::Error;

/// A CIDR prefix: an address whose bits past `len` are zero, and the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpPrefix {
    addr: IpAddr,
    len: u8,
}

/// Why a network exception could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PrefixParseError {
    #[error(
        "an empty network exception; write an address such as 192.168.1.10 or a prefix such as \
         10.1.0.0/16"
    )]
    Empty,
    #[error(
        "`{0}` is not an IPv4 or IPv6 address; write an address such as 192.168.1.10 or \
         fd00::1, optionally followed by /LENGTH"
    )]
    Address(String),
    #[error("`{text}`: the prefix length must be a number from 0 to {max} for this address")]
    Length { text: String, max: u8 },
    #[error(
        "`{text}` has address bits set past its first {len}; the network it names is \
         {network}, write that (or the single address without /{len})"
    )]
    HostBits {
        text: String,
        len: u8,
        network: IpPrefix,
    },
}

/// Bits in an address of `addr`'s family.
pub const fn width_of(addr: &IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// The address as a number (IPv4 in the low 32 bits).
pub const fn bits_of(addr: &IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => a.to_bits() as u128,
        IpAddr::V6(a) => a.to_bits(),
    }
}

/// The mask of the bits past the first `len` of a `width`-bit number.
const fn host_mask(width: u8, len: u8) -> u128 {
    let host = width - len;
    if host >= 128 {
        u128::MAX
    } else {
        (1u128 << host) - 1
    }
}

impl IpPrefix {
    /// A prefix from table data; fails to compile (in a `const`) when the length is too long or
    /// a host bit is set. Only for constants.
    pub(crate) const fn fixed(addr: IpAddr, len: u8) -> IpPrefix {
        let width = width_of(&addr);
        assert!(len <= width, "prefix length beyond the address");
        assert!(
            bits_of(&addr) & host_mask(width, len) == 0,
            "address bits set past the prefix length"
        );
        IpPrefix { addr, len }
    }

    /// A prefix, refused when a bit is set past `len`.
    pub fn new(addr: IpAddr, len: u8) -> Option<IpPrefix> {
        let width = width_of(&addr);
        (len <= width && bits_of(&addr) & host_mask(width, len) == 0)
            .then_some(IpPrefix { addr, len })
    }

    /// The single address `addr`.
    pub fn host(addr: IpAddr) -> IpPrefix {
        IpPrefix {
            addr,
            len: width_of(&addr),
        }
    }

    /// The network of `addr` at `len` bits (bits past `len` cleared).
    pub fn network_of(addr: IpAddr, len: u8) -> IpPrefix {
        let width = width_of(&addr);
        let len = len.min(width);
        let bits = bits_of(&addr) & !host_mask(width, len);
        IpPrefix {
            addr: addr_from_bits(width, bits),
            len,
        }
    }

    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    pub fn is_ipv4(&self) -> bool {
        self.addr.is_ipv4()
    }

    /// Bits in an address of this prefix's family.
    pub fn width(&self) -> u8 {
        width_of(&self.addr)
    }

    /// The first and last address of the prefix, as numbers.
    pub fn bounds(&self) -> (u128, u128) {
        let lo = bits_of(&self.addr);
        (lo, lo | host_mask(self.width(), self.len))
    }

    pub fn contains(&self, addr: IpAddr) -> bool {
        if addr.is_ipv4() != self.is_ipv4() {
            return false;
        }
        let (lo, hi) = self.bounds();
        (lo..=hi).contains(&bits_of(&addr))
    }
}

/// The address of the `width`-bit family whose number is `bits`.
pub fn addr_from_bits(width: u8, bits: u128) -> IpAddr {
    if width == 32 {
        IpAddr::V4(Ipv4Addr::from_bits(bits as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from_bits(bits))
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl FromStr for IpPrefix {
    type Err = PrefixParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        if text.is_empty() {
            return Err(PrefixParseError::Empty);
        }
        let (addr_text, len_text) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text, None),
        };
        let addr: IpAddr = addr_text
            .parse()
            .map_err(|_| PrefixParseError::Address(text.to_string()))?;
        let width = width_of(&addr);
        let len = match len_text {
            None => width,
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|n| *n <= width && l.bytes().all(|b| b.is_ascii_digit()))
                .ok_or(PrefixParseError::Length {
                    text: text.to_string(),
                    max: width,
                })?,
        };
        IpPrefix::new(addr, len).ok_or_else(|| PrefixParseError::HostBits {
            text: text.to_string(),
            len,
            network: IpPrefix::network_of(addr, len),
        })
    }
}

/// A set of `width`-bit numbers as sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSet {
    width: u8,
    ranges: Vec<(u128, u128)>,
}

impl RangeSet {
    pub fn new(width: u8) -> RangeSet {
        RangeSet {
            width,
            ranges: Vec::new(),
        }
    }

    pub fn ranges(&self) -> &[(u128, u128)] {
        &self.ranges
    }

    pub fn contains(&self, x: u128) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= x && x <= hi)
    }

    /// Add the prefix `bits/len`.
    pub fn add_prefix(&mut self, bits: u128, len: u8) {
        let lo = bits & !host_mask(self.width, len);
        self.add(lo, lo | host_mask(self.width, len));
    }

    /// Remove the prefix `bits/len`.
    pub fn remove_prefix(&mut self, bits: u128, len: u8) {
        let lo = bits & !host_mask(self.width, len);
        self.remove(lo, lo | host_mask(self.width, len));
    }

    /// Add `lo..=hi`, merging what overlaps or touches.
    pub fn add(&mut self, lo: u128, hi: u128) {
        self.ranges.push((lo, hi));
        self.ranges.sort_unstable();
        let mut merged: Vec<(u128, u128)> = Vec::with_capacity(self.ranges.len());
        for &(a, b) in &self.ranges {
            match merged.last_mut() {
                // `last.1 + 1 >= a`, written so that it cannot overflow at the top of the space.
                Some(last) if a <= last.1 || a - last.1 == 1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.ranges = merged;
    }

    /// Remove `lo..=hi`.
    pub fn remove(&mut self, lo: u128, hi: u128) {
        let mut kept = Vec::with_capacity(self.ranges.len() + 1);
        for &(a, b) in &self.ranges {
            if b < lo || a > hi {
                kept.push((a, b));
                continue;
            }
            // a < lo implies lo > 0, and b > hi implies hi < MAX: neither step overflows.
            if a < lo {
                kept.push((a, lo - 1));
            }
            if b > hi {
                kept.push((hi + 1, b));
            }
        }
        self.ranges = kept;
    }

    /// The fewest prefixes `(bits, len)` whose union is exactly this set, in address order.
    pub fn prefixes(&self) -> Vec<(u128, u8)> {
        let width = u32::from(self.width);
        let mut out = Vec::new();
        for &(lo, hi) in &self.ranges {
            let mut cur = lo;
            loop {
                // The largest block that starts aligned at `cur` and ends by `hi`.
                let align = if cur == 0 {
                    width
                } else {
                    cur.trailing_zeros().min(width)
                };
                let rest = hi - cur; // the block may hold rest + 1 numbers
                let fits = if rest == u128::MAX {
                    128
                } else {
                    127 - (rest + 1).leading_zeros()
                };
                let k = align.min(fits);
                out.push((cur, (width - k) as u8));
                let last = if k >= 128 {
                    u128::MAX
                } else {
                    cur | ((1u128 << k) - 1)
                };
                if last >= hi {
                    break;
                }
                cur = last + 1;
            }
        }
        out
    }
}

/// An exact set of IPv4 and IPv6 addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixSet {
    v4: RangeSet,
    v6: RangeSet,
}

impl Default for PrefixSet {
    fn default() -> Self {
        PrefixSet {
            v4: RangeSet::new(32),
            v6: RangeSet::new(128),
        }
    }
}

impl PrefixSet {
    fn family(&mut self, p: &IpPrefix) -> &mut RangeSet {
        if p.is_ipv4() {
            &mut self.v4
        } else {
            &mut self.v6
        }
    }

    pub fn insert(&mut self, p: IpPrefix) {
        self.family(&p).add_prefix(bits_of(&p.addr), p.len);
    }

    pub fn remove(&mut self, p: IpPrefix) {
        self.family(&p).remove_prefix(bits_of(&p.addr), p.len);
    }

    pub fn contains(&self, addr: IpAddr) -> bool {
        match addr {
            IpAddr::V4(_) => self.v4.contains(bits_of(&addr)),
            IpAddr::V6(_) => self.v6.contains(bits_of(&addr)),
        }
    }

    /// The fewest prefixes covering exactly this set: IPv4 first, each family in address order.
    pub fn prefixes(&self) -> Vec<IpPrefix> {
        let v4 = self.v4.prefixes().into_iter().map(|(b, l)| (32, b, l));
        let v6 = self.v6.prefixes().into_iter().map(|(b, l)| (128, b, l));
        v4.chain(v6)
            .map(|(w, bits, len)| IpPrefix {
                addr: addr_from_bits(w, bits),
                len,
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "ranges_tests.rs"]
mod tests;
