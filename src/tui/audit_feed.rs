//! Reading this workspace's audit log for the pane: the last page first (read backwards from the
//! end, so a log of a million records opens at once), older pages on demand, new records as
//! they are appended, and the chain check off the loop. Invariant: the feed never writes the
//! log and never holds more than the pages asked for.

use std::fs::File;

use crate::harness::audit::{self, AuditPaths, AuditRecord, reader};
use crate::tui::audit::ChainState;

/// A page of records (oldest first), how many lines did not parse, and whether the log's start
/// was reached.
#[derive(Debug, Default)]
pub struct Page {
    pub records: Vec<AuditRecord>,
    pub unreadable: usize,
    pub complete: bool,
}

pub struct AuditFeed {
    paths: AuditPaths,
    file: Option<File>,
    /// Complete lines read from the end so far.
    loaded: usize,
    /// Where following continues.
    offset: u64,
}

fn parse(lines: &[Vec<u8>]) -> (Vec<AuditRecord>, usize) {
    let mut bad = 0;
    let records = lines
        .iter()
        .filter_map(|l| match serde_json::from_slice::<AuditRecord>(l) {
            Ok(r) => Some(r),
            Err(_) => {
                bad += 1;
                None
            }
        })
        .collect();
    (records, bad)
}

impl AuditFeed {
    pub fn new(paths: AuditPaths) -> Self {
        AuditFeed {
            paths,
            file: None,
            loaded: 0,
            offset: 0,
        }
    }

    pub fn paths(&self) -> &AuditPaths {
        &self.paths
    }

    fn file(&mut self) -> Option<&File> {
        if self.file.is_none() {
            self.file = File::open(&self.paths.log).ok();
        }
        self.file.as_ref()
    }

    /// The next `n` older records (the last `n` on the first call).
    pub fn older(&mut self, n: usize) -> std::io::Result<Page> {
        let loaded = self.loaded;
        let Some(file) = self.file() else {
            return Ok(Page {
                complete: true,
                ..Page::default()
            });
        };
        let tail = reader::tail(file, loaded + n, &|_| true)?;
        let complete = tail.lines.len() < loaded + n;
        let fresh = tail.lines.len().saturating_sub(loaded);
        if loaded == 0 {
            self.offset = tail.end;
        }
        self.loaded = tail.lines.len();
        let (records, unreadable) = parse(&tail.lines[..fresh]);
        Ok(Page {
            records,
            unreadable,
            complete,
        })
    }

    /// Records appended since the last call (following the log).
    pub fn poll(&mut self) -> std::io::Result<Vec<AuditRecord>> {
        let offset = self.offset;
        let Some(file) = self.file() else {
            return Ok(Vec::new());
        };
        let (lines, next) = reader::lines_from(file, offset)?;
        let len = file.metadata()?.len();
        self.offset = next.min(len);
        self.loaded += lines.len();
        Ok(parse(&lines).0)
    }

    /// Check the whole chain (slow on a big log: run it off the loop).
    pub fn verify(paths: &AuditPaths) -> ChainState {
        if !paths.log.exists() {
            return ChainState::NoLog;
        }
        match audit::verify(&paths.log, &paths.head) {
            Ok(Ok(report)) => ChainState::Verified(report.records),
            Ok(Err(f)) => ChainState::Broken(format!("line {}: {}", f.line, f.problem)),
            Err(e) => ChainState::Broken(e.to_string()),
        }
    }
}
