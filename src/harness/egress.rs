//! Network by name: what a command granted the network may reach through the egress proxy.
//! The person's `[network] allow` and `deny` entries (and named presets) as host patterns, the
//! path a grant takes (the proxy, or slirp4netns's whole network for `network = "full"`), and
//! the opaque decider the proxy asks about a name neither list holds. Pure: no lookup, no
//! connection happens here. Invariants: a `deny` entry always wins over `allow`; a pattern
//! never matches an IP literal unless it is that literal; a wildcard never matches its apex.

use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

use thiserror::Error;

/// The named presets: the hosts a language's package tooling needs, no shared-CDN wildcard
/// (`*.cloudfront.net`, `*.fastly.net` and the like would let anything on those CDNs in).
pub const PRESETS: &[(&str, &[&str])] = &[
    (
        "rust",
        &[
            "crates.io",
            "index.crates.io",
            "static.crates.io",
            "static.rust-lang.org",
        ],
    ),
    ("python", &["pypi.org", "files.pythonhosted.org"]),
    ("node", &["registry.npmjs.org", "registry.yarnpkg.com"]),
    (
        "git-hosts",
        &[
            "github.com",
            "codeload.github.com",
            "objects.githubusercontent.com",
            "raw.githubusercontent.com",
            "gitlab.com",
            "bitbucket.org",
            "codeberg.org",
        ],
    ),
];

/// The ports a pattern allows when it names none.
pub const DEFAULT_PORTS: &[u16] = &[443, 80];

/// Which way a network grant goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkPath {
    /// Through Spear's egress proxy, by name (the default).
    #[default]
    Proxy,
    /// slirp4netns: every internet address, no name check, no per-connection record.
    Full,
}

/// What a pattern matches by host.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    /// Exactly this name (lowercase, no trailing dot).
    Name(String),
    /// Any name ending in `.SUFFIX` (never `SUFFIX` itself).
    Below(String),
    /// Exactly this address, written as an IP literal.
    Address(IpAddr),
}

/// One `allow` or `deny` entry: `crates.io`, `*.crates.io`, `example.com:8443`, `203.0.113.7`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostMatch,
    /// `None`: the default ports (443, 80) for `allow`; every port for `deny`.
    port: Option<u16>,
    /// The entry as written, for messages.
    written: String,
}

/// Why an entry cannot be read.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PatternError {
    #[error("`{0}` is empty")]
    Empty(String),
    #[error(
        "`{0}` is not a host name: use letters, digits, `-` and `.`, optionally `*.` in front \
         and `:PORT` behind (for example `*.crates.io` or `example.com:8443`)"
    )]
    BadHost(String),
    #[error("`{0}` has a port that is not a number from 1 to 65535")]
    BadPort(String),
    #[error(
        "`{0}` is a wildcard over a top-level name: name the domain (`*.example.com`), never a \
         whole suffix"
    )]
    WildTopLevel(String),
    #[error("no preset is called `{0}`; the presets are rust, python, node and git-hosts")]
    UnknownPreset(String),
}

impl HostPattern {
    /// Read one entry.
    pub fn parse(entry: &str) -> Result<HostPattern, PatternError> {
        let written = entry.trim().to_string();
        if written.is_empty() {
            return Err(PatternError::Empty(entry.to_string()));
        }
        let (host, port) = split_port(&written)?;
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse() {
            return Ok(HostPattern {
                host: HostMatch::Address(ip),
                port,
                written,
            });
        }
        let (wild, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, host.clone()),
        };
        if !is_host_name(&name) {
            return Err(PatternError::BadHost(written));
        }
        if wild && !name.contains('.') {
            return Err(PatternError::WildTopLevel(written));
        }
        Ok(HostPattern {
            host: if wild {
                HostMatch::Below(name)
            } else {
                HostMatch::Name(name)
            },
            port,
            written,
        })
    }

    /// Whether this pattern covers `host` (already normalised) at all, whatever the port.
    fn covers_host(&self, host: &Host) -> bool {
        match (&self.host, host) {
            (HostMatch::Name(n), Host::Name(h)) => n == h,
            (HostMatch::Below(suffix), Host::Name(h)) => is_below(h, suffix),
            (HostMatch::Address(a), Host::Address(b)) => a == b,
            _ => false,
        }
    }

    /// Whether an `allow` entry lets `host:port` through.
    fn allows(&self, host: &Host, port: u16) -> bool {
        self.covers_host(host)
            && match self.port {
                Some(p) => p == port,
                None => DEFAULT_PORTS.contains(&port),
            }
    }

    /// Whether a `deny` entry refuses `host:port` (no port written: every port).
    fn denies(&self, host: &Host, port: u16) -> bool {
        self.covers_host(host) && self.port.is_none_or(|p| p == port)
    }

    /// The entry as the person wrote it.
    pub fn as_written(&self) -> &str {
        &self.written
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

/// Whether `name` lies strictly below the domain `suffix` (`a.example.com` below `example.com`;
/// neither `example.com` itself nor `badexample.com`). What `*.SUFFIX` means, in `[network]`
/// and in a `net:` rule alike.
pub fn is_below(name: &str, suffix: &str) -> bool {
    name.strip_suffix(suffix)
        .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
}

/// `host[:port]`, `[v6]:port` or a bare IPv6 literal.
fn split_port(written: &str) -> Result<(&str, Option<u16>), PatternError> {
    let parse_port = |p: &str| match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(PatternError::BadPort(written.to_string())),
    };
    if let Some(rest) = written.strip_prefix('[') {
        let Some((addr, tail)) = rest.split_once(']') else {
            return Err(PatternError::BadHost(written.to_string()));
        };
        return match tail.strip_prefix(':') {
            Some(p) => Ok((addr, parse_port(p)?)),
            None if tail.is_empty() => Ok((addr, None)),
            None => Err(PatternError::BadHost(written.to_string())),
        };
    }
    // More than one colon: a bare IPv6 address, which has no port.
    if written.matches(':').count() > 1 {
        return Ok((written, None));
    }
    match written.split_once(':') {
        Some((h, p)) => Ok((h, parse_port(p)?)),
        None => Ok((written, None)),
    }
}

/// A DNS name as a proxy request may carry it: labels of letters, digits, `-` and `_`, not
/// starting or ending with `-`, at most 253 characters.
fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// Whether the last label is a number (`1572395790`, `0x7f.1`, `127.1`): resolvers read such a
/// "name" as an address, so it is not taken for a name (a deny entry naming the address would
/// not see it).
fn numeric_tail(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    last.bytes().all(|b| b.is_ascii_digit())
        || (last.starts_with("0x") && last[2..].bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A host a command asked the proxy for, normalised: a lowercase name without a trailing dot,
/// or an address written as an IP literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Name(String),
    Address(IpAddr),
}

impl Host {
    /// Read the host part of a proxy request (`Example.COM.`, `[::1]`, `10.0.0.1`); `None` when
    /// it is neither a name nor an address.
    pub fn parse(text: &str) -> Option<Host> {
        let trimmed = text.trim_end_matches('.');
        let bare = trimmed.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse() {
            return Some(Host::Address(ip));
        }
        let name = trimmed.to_ascii_lowercase();
        (is_host_name(&name) && !numeric_tail(&name)).then_some(Host::Name(name))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Address(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Host::Address(a) => write!(f, "{a}"),
        }
    }
}

/// What the lists say about one host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameVerdict {
    /// An `allow` entry (or preset) holds it, and no `deny` entry does.
    Allowed,
    /// This `deny` entry holds it.
    Denied(String),
    /// Neither list holds it: asked in ASK, refused otherwise.
    Unlisted,
}

/// The person's `allow` and `deny` entries, presets expanded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostRules {
    allow: Vec<HostPattern>,
    deny: Vec<HostPattern>,
    /// The presets named, for reports.
    presets: Vec<String>,
}

impl HostRules {
    /// The rules from `presets` (names from [`PRESETS`]) and the entries as written.
    pub fn new(
        presets: &[String],
        allow: &[String],
        deny: &[String],
    ) -> Result<HostRules, PatternError> {
        let mut rules = HostRules::default();
        for name in presets {
            let (_, hosts) = PRESETS
                .iter()
                .find(|(n, _)| *n == name.as_str())
                .ok_or_else(|| PatternError::UnknownPreset(name.clone()))?;
            for h in *hosts {
                rules.allow.push(HostPattern::parse(h)?);
            }
            rules.presets.push(name.clone());
        }
        for a in allow {
            rules.allow.push(HostPattern::parse(a)?);
        }
        for d in deny {
            rules.deny.push(HostPattern::parse(d)?);
        }
        Ok(rules)
    }

    /// What the lists say about `host:port`; `deny` is read first and wins.
    pub fn verdict(&self, host: &Host, port: u16) -> NameVerdict {
        if let Some(d) = self.deny.iter().find(|d| d.denies(host, port)) {
            return NameVerdict::Denied(d.written.clone());
        }
        if self.allow.iter().any(|a| a.allows(host, port)) {
            NameVerdict::Allowed
        } else {
            NameVerdict::Unlisted
        }
    }

    /// Every allow entry (presets expanded), as written.
    pub fn allowed(&self) -> impl Iterator<Item = &str> {
        self.allow.iter().map(|p| p.written.as_str())
    }

    /// Every deny entry, as written.
    pub fn denied(&self) -> impl Iterator<Item = &str> {
        self.deny.iter().map(|p| p.written.as_str())
    }

    /// The presets named.
    pub fn presets(&self) -> &[String] {
        &self.presets
    }
}

/// The answer about a connection to a name neither list holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressAnswer {
    Allow,
    /// Refused; the string says by whom, for the record ("no one was asked (AUTO)").
    Deny(&'static str),
}

/// The future a decider answers with.
pub type EgressQuestion = Pin<Box<dyn Future<Output = EgressAnswer> + Send>>;

/// Asked by the proxy, while the command runs, about a connection to `host:port` that neither
/// list decides. It is opaque to the proxy: it may ask a person, remember an answer, or refuse.
/// `command` is the command line the connection belongs to, as the person should be shown it.
pub trait EgressDecider: Send + Sync {
    fn decide(&self, command: &str, host: &Host, port: u16) -> EgressQuestion;

    /// Why a name the lists allow is refused all the same (the person's own deny rule), or
    /// `None`. Asked before any lookup, without waiting.
    fn vetoes(&self, _host: &Host, _port: u16) -> Option<&'static str> {
        None
    }
}

/// The decider of a run no one can be asked in: every unlisted name is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct RefuseUnlisted;

impl EgressDecider for RefuseUnlisted {
    fn decide(&self, _command: &str, _host: &Host, _port: u16) -> EgressQuestion {
        Box::pin(async { EgressAnswer::Deny("not in [network] allow, and no one is asked here") })
    }
}

/// What a command granted the network may reach: the path, the lists, and who is asked about
/// the rest. Compared and serialised by path and lists (the decider has no value of its own).
#[derive(Clone)]
pub struct Egress {
    pub path: NetworkPath,
    pub rules: Arc<HostRules>,
    pub decider: Arc<dyn EgressDecider>,
}

impl Egress {
    /// The proxy with `rules`, refusing what they do not allow.
    pub fn by_name(rules: Arc<HostRules>) -> Egress {
        Egress {
            path: NetworkPath::Proxy,
            rules,
            decider: Arc::new(RefuseUnlisted),
        }
    }

    /// The same egress, asking `decider` about unlisted names.
    pub fn asking(mut self, decider: Arc<dyn EgressDecider>) -> Egress {
        self.decider = decider;
        self
    }
}

impl Default for Egress {
    /// Fail closed: the proxy with empty lists, refusing every name.
    fn default() -> Self {
        Egress::by_name(Arc::new(HostRules::default()))
    }
}

impl fmt::Debug for Egress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Egress")
            .field("path", &self.path)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Egress {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.rules == other.rules
    }
}

impl Eq for Egress {}

impl serde::Serialize for Egress {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Egress", 3)?;
        st.serialize_field("path", &self.path)?;
        st.serialize_field("allow", &self.rules.allowed().collect::<Vec<_>>())?;
        st.serialize_field("deny", &self.rules.denied().collect::<Vec<_>>())?;
        st.end()
    }
}

/// One connection a command asked the egress proxy for: where to, what became of it, and the
/// bytes it carried each way.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetConnection {
    /// The name (or listed address) asked for, as the proxy read it.
    pub host: String,
    pub port: u16,
    /// `CONNECT` (TLS, not decrypted) or `HTTP` (plain, forwarded).
    pub kind: String,
    /// Reached, or refused and why (the address refused, the list entry, the person's no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The address the connection was pinned to, once one was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// How many connections this line stands for (same host, port, kind and outcome).
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default)]
    pub bytes_up: u64,
    #[serde(default)]
    pub bytes_down: u64,
}

fn one() -> u32 {
    1
}

impl NetConnection {
    /// `host:port`, an IPv6 literal bracketed.
    pub fn target(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> HostRules {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        HostRules::new(&[], &s(allow), &s(deny)).unwrap()
    }

    fn host(h: &str) -> Host {
        Host::parse(h).unwrap()
    }

    #[test]
    fn names_match_exactly_and_wildcards_only_below_their_domain() {
        let r = rules(&["crates.io", "*.crates.io"], &[]);
        assert_eq!(r.verdict(&host("crates.io"), 443), NameVerdict::Allowed);
        assert_eq!(
            r.verdict(&host("INDEX.Crates.IO."), 443),
            NameVerdict::Allowed
        );
        assert_eq!(r.verdict(&host("a.b.crates.io"), 80), NameVerdict::Allowed);
        for other in [
            "evilcrates.io",
            "crates.io.evil.example",
            "xcrates.io",
            "io",
        ] {
            assert_eq!(
                r.verdict(&host(other), 443),
                NameVerdict::Unlisted,
                "{other}"
            );
        }
        let only_below = rules(&["*.example.com"], &[]);
        assert_eq!(
            only_below.verdict(&host("example.com"), 443),
            NameVerdict::Unlisted
        );
    }

    #[test]
    fn ports_are_443_and_80_unless_an_entry_names_one() {
        let r = rules(&["crates.io", "git.example.com:8443"], &[]);
        assert_eq!(r.verdict(&host("crates.io"), 22), NameVerdict::Unlisted);
        assert_eq!(r.verdict(&host("crates.io"), 8443), NameVerdict::Unlisted);
        assert_eq!(r.verdict(&host("crates.io"), 80), NameVerdict::Allowed);
        assert_eq!(
            r.verdict(&host("git.example.com"), 8443),
            NameVerdict::Allowed
        );
        assert_eq!(
            r.verdict(&host("git.example.com"), 443),
            NameVerdict::Unlisted
        );
    }

    #[test]
    fn deny_wins_and_covers_every_port_unless_it_names_one() {
        let r = rules(&["*.example.com"], &["secret.example.com"]);
        assert_eq!(
            r.verdict(&host("secret.example.com"), 443),
            NameVerdict::Denied("secret.example.com".into())
        );
        assert_eq!(
            r.verdict(&host("www.example.com"), 443),
            NameVerdict::Allowed
        );
        let port = rules(&["*.example.com"], &["*.example.com:80"]);
        assert!(matches!(
            port.verdict(&host("a.example.com"), 80),
            NameVerdict::Denied(_)
        ));
        assert_eq!(
            port.verdict(&host("a.example.com"), 443),
            NameVerdict::Allowed
        );
    }

    #[test]
    fn ip_literals_pass_only_when_listed_as_themselves() {
        let r = rules(&["*.example.com", "203.0.113.7"], &[]);
        assert_eq!(r.verdict(&host("203.0.113.7"), 443), NameVerdict::Allowed);
        assert_eq!(r.verdict(&host("203.0.113.8"), 443), NameVerdict::Unlisted);
        assert_eq!(r.verdict(&host("[::1]"), 443), NameVerdict::Unlisted);
        let v6 = rules(&["[2001:db8::1]:8443"], &[]);
        assert_eq!(
            v6.verdict(&host("[2001:db8::1]"), 8443),
            NameVerdict::Allowed
        );
    }

    #[test]
    fn bad_entries_are_refused_with_a_reason() {
        for (bad, says) in [
            ("", "empty"),
            ("*.com", "top-level"),
            ("*", "not a host name"),
            ("exa mple.com", "not a host name"),
            ("example.com:0", "port"),
            ("example.com:http", "port"),
            ("-bad.example.com", "not a host name"),
            ("ex*ample.com", "not a host name"),
        ] {
            let e = HostPattern::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let e = HostRules::new(&["ruby".into()], &[], &[]).unwrap_err();
        assert!(e.to_string().contains("rust, python, node and git-hosts"));
    }

    #[test]
    fn every_preset_reads_and_has_no_wildcard() {
        for (name, hosts) in PRESETS {
            let r = HostRules::new(&[name.to_string()], &[], &[]).unwrap();
            assert_eq!(r.allowed().count(), hosts.len());
            assert!(hosts.iter().all(|h| !h.contains('*')), "{name}");
        }
        let rust = HostRules::new(&["rust".into()], &[], &[]).unwrap();
        assert_eq!(
            rust.verdict(&host("index.crates.io"), 443),
            NameVerdict::Allowed
        );
        assert_eq!(
            rust.verdict(&host("evil.example"), 443),
            NameVerdict::Unlisted
        );
    }

    #[test]
    fn hosts_that_are_neither_name_nor_address_do_not_parse() {
        for bad in [
            "",
            "a b",
            "exa\u{0}mple.com",
            "x/y",
            "a..b",
            "@evil",
            "1572395790",
            "0x7f.1",
            "127.1",
            "10.0.0.1.1",
        ] {
            assert!(Host::parse(bad).is_none(), "{bad:?}");
        }
        assert_eq!(
            Host::parse("203.0.113.7."),
            Some(Host::Address("203.0.113.7".parse().unwrap()))
        );
        assert!(Host::parse("x.0x7f").is_none());
        assert_eq!(
            Host::parse("a.b-1.example"),
            Some(Host::Name("a.b-1.example".into()))
        );
    }
}
