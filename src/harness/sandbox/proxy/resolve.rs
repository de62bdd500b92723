//! How the egress proxy looks a name up: the system's resolver, or (tests only) a fixed table
//! that writes down every name it was asked for, so a test can prove a name was never looked up.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;

/// A lookup in flight.
pub type Lookup = Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>;

/// Looks names up for the proxy.
pub trait Resolve: Send + Sync {
    fn lookup(&self, name: &str, port: u16) -> Lookup;
}

/// The system's resolver (`getaddrinfo`, as every other program on the host).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn lookup(&self, name: &str, port: u16) -> Lookup {
        // Fully qualified: no search domain of the host's is tried after a name that does
        // not exist (it could name an internal host).
        let name = format!("{}.", name.trim_end_matches('.'));
        Box::pin(async move {
            let mut out: Vec<IpAddr> = Vec::new();
            for a in tokio::net::lookup_host((name.as_str(), port)).await? {
                if !out.contains(&a.ip()) {
                    out.push(a.ip());
                }
            }
            Ok(out)
        })
    }
}

/// Tests only: the variables a `test-hooks` build of the binary reads (no release build has
/// them): a resolver table `name=addr,...;name=...`, the file each lookup is logged to, and the
/// exact `addr:port`s (comma-separated) the proxy may reach although refused.
#[cfg(any(test, feature = "test-hooks"))]
pub const RESOLVE_VAR: &str = "SPEAR_TEST_EGRESS_RESOLVE";
#[cfg(any(test, feature = "test-hooks"))]
pub const LOOKUPS_VAR: &str = "SPEAR_TEST_EGRESS_LOOKUPS";
#[cfg(any(test, feature = "test-hooks"))]
pub const EXEMPT_VAR: &str = "SPEAR_TEST_EGRESS_EXEMPT";

/// Tests only: names answered from a table; every name asked for is appended to `log`.
#[cfg(any(test, feature = "test-hooks"))]
#[derive(Debug, Clone, Default)]
pub struct TableResolver {
    pub table: Vec<(String, Vec<IpAddr>)>,
    pub log: Option<std::path::PathBuf>,
}

#[cfg(any(test, feature = "test-hooks"))]
impl TableResolver {
    /// From `name=addr[,addr...];name=...` (what `SPEAR_TEST_EGRESS_RESOLVE` holds).
    pub fn from_spec(spec: &str, log: Option<std::path::PathBuf>) -> TableResolver {
        let table = spec
            .split(';')
            .filter_map(|e| e.split_once('='))
            .map(|(n, addrs)| {
                let addrs = addrs
                    .split(',')
                    .filter_map(|a| a.trim().parse().ok())
                    .collect();
                (n.trim().to_ascii_lowercase(), addrs)
            })
            .collect();
        TableResolver { table, log }
    }
}

#[cfg(any(test, feature = "test-hooks"))]
impl Resolve for TableResolver {
    fn lookup(&self, name: &str, _port: u16) -> Lookup {
        if let Some(log) = &self.log {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
            {
                let _ = writeln!(f, "{name}");
            }
        }
        let found = self
            .table
            .iter()
            .find(|(n, _)| n == name.trim_end_matches('.'))
            .map(|(_, a)| a.clone());
        Box::pin(async move {
            found.ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such name (test resolver)")
            })
        })
    }
}
