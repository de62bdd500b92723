//! Which addresses `fetch_url` may connect to: every address a host resolves to is checked
//! against the same table of non-internet ranges the sandbox's network path refuses (loopback,
//! private, link-local and cloud metadata, CGNAT, documentation, multicast, and IPv6 forms that
//! embed IPv4), unless the configuration allows private addresses or names a prefix as an
//! exception. Pure: no lookup happens here.

use std::net::IpAddr;

use crate::harness::sandbox::netns::IpPrefix;
use crate::harness::sandbox::netns::refused::range_refusing;

/// What may be reached besides the public internet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    /// `[web] allow_private_addresses`: every refused range is allowed (a local server).
    pub allow_private: bool,
    /// `[web] allow_addresses`: addresses or prefixes allowed although refused by default.
    pub allow: Vec<IpPrefix>,
}

impl AddressPolicy {
    /// Why `addr` may not be reached, or `None` when it may.
    pub fn refusal(&self, addr: IpAddr) -> Option<&'static str> {
        if self.allow_private || self.allow.iter().any(|p| p.contains(addr)) {
            return None;
        }
        range_refusing(addr)
    }

    /// The addresses of `resolved` that may be reached (in their order), or, when none may,
    /// the first refused one with its reason.
    pub fn allowed(&self, resolved: &[IpAddr]) -> Result<Vec<IpAddr>, (IpAddr, &'static str)> {
        let mut ok = Vec::new();
        let mut first_refused = None;
        for &a in resolved {
            match self.refusal(a) {
                None => ok.push(a),
                Some(why) => {
                    first_refused.get_or_insert((a, why));
                }
            }
        }
        match (ok.is_empty(), first_refused) {
            (true, Some(r)) => Err(r),
            _ => Ok(ok),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_special_ranges_are_refused_and_the_internet_is_not() {
        let p = AddressPolicy::default();
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "172.17.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "0.0.0.0",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
            "fe80::1",
            "64:ff9b::a9fe:a9fe",
            "224.0.0.1",
        ] {
            assert!(p.refusal(ip(a)).is_some(), "{a} must be refused");
        }
        for a in ["93.184.215.14", "1.1.1.1", "2606:4700:4700::1111"] {
            assert_eq!(p.refusal(ip(a)), None, "{a} is the internet");
        }
        assert!(
            p.refusal(ip("169.254.169.254"))
                .unwrap()
                .contains("metadata")
        );
    }

    #[test]
    fn an_exception_allows_exactly_its_prefix() {
        let p = AddressPolicy {
            allow_private: false,
            allow: vec!["127.0.0.1".parse().unwrap()],
        };
        assert_eq!(p.refusal(ip("127.0.0.1")), None);
        assert!(p.refusal(ip("127.0.0.2")).is_some());
        assert!(p.refusal(ip("10.0.0.1")).is_some());
        let all = AddressPolicy {
            allow_private: true,
            allow: Vec::new(),
        };
        assert_eq!(all.refusal(ip("169.254.169.254")), None);
    }

    #[test]
    fn only_the_allowed_addresses_of_a_name_are_kept() {
        let p = AddressPolicy::default();
        assert_eq!(
            p.allowed(&[ip("10.0.0.1"), ip("1.1.1.1")]).unwrap(),
            vec![ip("1.1.1.1")]
        );
        let (a, why) = p.allowed(&[ip("10.0.0.1"), ip("127.0.0.1")]).unwrap_err();
        assert_eq!(a, ip("10.0.0.1"));
        assert!(why.contains("private"));
    }
}
