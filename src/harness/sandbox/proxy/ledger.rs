//! What the proxy saw: one tally per connection, counted as it goes and folded, when the
//! connection ends (or is dropped at the run's end), into one line per host, port, kind and
//! outcome. Memory stays bounded by the destinations, not by the connections.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::harness::egress::NetConnection;

/// Lines kept at most for each outcome (reached, refused); past this, connections to new
/// destinations fold into one `(more)` line per outcome. Separate budgets: refusals a command
/// provokes on purpose cannot crowd out the hosts it reached.
const MAX_LINES: usize = 500;

/// Host, port, kind, and whether it was refused. The reason is not part of the key (a client
/// chooses much of its text): a line keeps the first reason it saw.
type Key = (String, u16, &'static str, bool);

#[derive(Default)]
pub struct Ledger {
    lines: Mutex<BTreeMap<Key, NetConnection>>,
}

impl Ledger {
    /// Start recording one connection.
    pub fn open(self: &Arc<Self>, host: &str, port: u16, kind: &'static str) -> Tally {
        Tally {
            ledger: self.clone(),
            host: host.to_string(),
            port,
            kind,
            refused: Mutex::new(None),
            address: Mutex::new(None),
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
        }
    }

    /// Every line, in order of host and port.
    pub fn summary(&self) -> Vec<NetConnection> {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.values().cloned().collect()
    }

    /// Every line so far, leaving the ledger empty (a long-lived process's connections are
    /// reported call by call).
    pub fn drain(&self) -> Vec<NetConnection> {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *lines).into_values().collect()
    }

    fn fold(&self, t: &Tally) {
        let address = *t.address.lock().unwrap_or_else(|p| p.into_inner());
        let mut refused = t.refused.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // Neither refused nor connected: the run ended while it was being decided (a question
        // still open). It reached nothing, and the record says so.
        if refused.is_none() && address.is_none() {
            refused = Some("never connected: the command ended before it was decided".into());
        }
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let mut key: Key = (t.host.clone(), t.port, t.kind, refused.is_some());
        let same_outcome = lines.keys().filter(|k| k.3 == key.3).count();
        if same_outcome >= MAX_LINES && !lines.contains_key(&key) {
            key = ("(more)".into(), 0, "", key.3);
        }
        let line = lines.entry(key.clone()).or_insert_with(|| NetConnection {
            host: key.0.clone(),
            port: key.1,
            kind: key.2.to_string(),
            refused: refused.clone(),
            address: None,
            count: 0,
            bytes_up: 0,
            bytes_down: 0,
        });
        line.count = line.count.saturating_add(1);
        line.bytes_up = line.bytes_up.saturating_add(t.up.load(Ordering::Relaxed));
        line.bytes_down = line
            .bytes_down
            .saturating_add(t.down.load(Ordering::Relaxed));
        if let Some(a) = address {
            line.address = Some(a.ip().to_string());
        }
    }
}

/// One connection being recorded; folded into its ledger when dropped.
pub struct Tally {
    ledger: Arc<Ledger>,
    host: String,
    port: u16,
    kind: &'static str,
    refused: Mutex<Option<String>>,
    address: Mutex<Option<SocketAddr>>,
    up: AtomicU64,
    down: AtomicU64,
}

impl Tally {
    /// The proxy refused it.
    pub fn refuse(&self, why: String) {
        *self.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }

    /// It was allowed, but no checked address answered.
    pub fn failed(&self, why: String) {
        self.refuse(why);
    }

    /// Connected to `at`.
    pub fn reached(&self, at: SocketAddr) {
        *self.address.lock().unwrap_or_else(|p| p.into_inner()) = Some(at);
    }

    pub fn add_up(&self, n: u64) {
        self.up.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_down(&self, n: u64) {
        self.down.fetch_add(n, Ordering::Relaxed);
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        self.ledger.fold(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_fold_into_one_line_per_destination_and_outcome() {
        let l = Arc::new(Ledger::default());
        for _ in 0..3 {
            let t = l.open("crates.io", 443, "CONNECT");
            t.reached("203.0.113.9:443".parse().unwrap());
            t.add_up(10);
            t.add_down(100);
        }
        let r = l.open("evil.example", 443, "CONNECT");
        r.refuse("not allowed".into());
        drop(r);
        let s = l.summary();
        assert_eq!(s.len(), 2);
        assert_eq!(
            (
                s[0].host.as_str(),
                s[0].count,
                s[0].bytes_up,
                s[0].bytes_down
            ),
            ("crates.io", 3, 30, 300)
        );
        assert_eq!(s[0].address.as_deref(), Some("203.0.113.9"));
        assert_eq!(s[1].refused.as_deref(), Some("not allowed"));
    }

    #[test]
    fn a_connection_dropped_before_its_decision_is_not_recorded_as_reached() {
        let l = Arc::new(Ledger::default());
        drop(l.open("asked.example", 443, "CONNECT"));
        let s = l.summary();
        assert!(
            s[0].refused
                .as_deref()
                .unwrap_or_default()
                .contains("never connected")
        );
    }

    #[test]
    fn lines_are_bounded_and_refusals_cannot_crowd_out_what_was_reached() {
        let l = Arc::new(Ledger::default());
        for i in 0..(MAX_LINES + 50) {
            let t = l.open(&format!("h{i}.example"), 443, "CONNECT");
            t.refuse(format!("refused, reason {i}"));
        }
        // The same destination refused for different reasons is one line.
        for i in 0..20 {
            l.open("?", 0, "?").refuse(format!("junk {i}"));
        }
        let up = l.open("upload.example", 443, "CONNECT");
        up.reached("203.0.113.9:443".parse().unwrap());
        up.add_up(1000);
        drop(up);
        let s = l.summary();
        assert_eq!(s.len(), MAX_LINES + 2, "{}", s.len());
        let more = s.iter().find(|c| c.host == "(more)").unwrap();
        assert_eq!(more.count, 50 + 20);
        assert!(more.refused.is_some());
        let reached = s.iter().find(|c| c.host == "upload.example").unwrap();
        assert_eq!((reached.bytes_up, reached.refused.as_deref()), (1000, None));
    }
}
