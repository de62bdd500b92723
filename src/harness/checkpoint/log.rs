//! A session's checkpoint log, `sessions/<session>.jsonl`: one line per call that may have
//! changed the tree (the manifests taken just before and just after it), and one per undo (a
//! marker: what it took back). Append-only; a torn last line (a crash mid-write) is reported and
//! skipped, never fatal.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::CheckpointError;

/// One call's checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The session's turn, counted from 1 in the order the session's turns changed anything.
    pub turn: u32,
    pub call: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// When the call began, in milliseconds since the epoch.
    pub at_ms: u64,
    /// The manifest taken just before the call.
    pub before: String,
    /// The manifest taken just after it (absent when Spear stopped before it could take one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Paths the `before` checkpoint could not take (so the call cannot be taken back there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncovered: Vec<String>,
}

/// What a session's log holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Call(CallRecord),
    /// A request of the person began (`text` is the SHA-256 of its words): a rewind to it
    /// takes back every call from then on.
    Request {
        at_ms: u64,
        text: String,
    },
    /// Turns `back_to_turn` and later were taken back (their calls no longer count).
    Undo {
        back_to_turn: u32,
        at_ms: u64,
        restored: usize,
        #[serde(default)]
        forced: bool,
    },
}

/// A session's log as read.
#[derive(Debug, Clone, Default)]
pub struct SessionLog {
    pub records: Vec<Record>,
    /// The torn last line, if one was skipped (its length).
    pub torn: Option<usize>,
}

impl SessionLog {
    /// Read `path` (absent: empty).
    pub fn read(path: &Path) -> Result<SessionLog, CheckpointError> {
        let text = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(SessionLog::default()),
            Err(e) => return Err(CheckpointError::io("read", path)(e)),
        };
        let mut log = SessionLog::default();
        let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
        let last = lines.len().saturating_sub(1);
        for (i, line) in lines.iter().enumerate() {
            if line.is_empty() {
                continue;
            }
            match serde_json::from_slice::<Record>(line) {
                Ok(r) => log.records.push(r),
                // Only the last line can be torn (one writer, whole lines): anything else is
                // damage that must not be papered over.
                Err(_) if i == last => log.torn = Some(line.len()),
                Err(e) => {
                    return Err(CheckpointError::Corrupt(format!(
                        "{} line {}: {e}",
                        path.display(),
                        i + 1
                    )));
                }
            }
        }
        Ok(log)
    }

    /// Append `r` to the log at `path` as one write of one line.
    pub fn append(path: &Path, r: &Record) -> Result<(), CheckpointError> {
        let mut line = serde_json::to_vec(r).map_err(CheckpointError::Encode)?;
        line.push(b'\n');
        let mut f = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(CheckpointError::io("open", path))?;
        // A torn line left by a crash (reported when the log was read) would glue onto this
        // one: it is cut off first, back to the last whole line.
        if let Some(whole) = whole_length(path) {
            f.set_len(whole)
                .map_err(CheckpointError::io("truncate", path))?;
        }
        f.write_all(&line)
            .and_then(|()| f.sync_data())
            .map_err(CheckpointError::io("append", path))
    }

    /// The calls that still count, in order: those no later undo took back.
    pub fn live_calls(&self) -> Vec<&CallRecord> {
        let mut live: Vec<&CallRecord> = Vec::new();
        for r in &self.records {
            match r {
                Record::Call(c) => live.push(c),
                Record::Undo { back_to_turn, .. } => live.retain(|c| c.turn < *back_to_turn),
                Record::Request { .. } => {}
            }
        }
        live
    }

    /// The first turn to take back to return to the moment request `text` (its SHA-256)
    /// began, where `later` requests of the same words were made after it: the earliest live
    /// call made since. `None` when nothing changed since, or the request is not on record.
    pub fn turn_since_request(&self, text: &str, later: usize) -> Option<u32> {
        let at = self
            .records
            .iter()
            .rev()
            .filter_map(|r| match r {
                Record::Request { at_ms, text: t } if t == text => Some(*at_ms),
                _ => None,
            })
            .nth(later)?;
        self.live_calls()
            .iter()
            .filter(|c| c.at_ms >= at)
            .map(|c| c.turn)
            .min()
    }

    /// The highest turn number used so far (undone turns included, so numbers never repeat).
    pub fn last_turn(&self) -> u32 {
        self.records
            .iter()
            .filter_map(|r| match r {
                Record::Call(c) => Some(c.turn),
                Record::Undo { .. } | Record::Request { .. } => None,
            })
            .max()
            .unwrap_or(0)
    }
}

/// The length of the log up to its last whole line, when something follows it.
fn whole_length(path: &Path) -> Option<u64> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return None;
    }
    Some(
        bytes
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i as u64 + 1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(turn: u32, id: &str) -> Record {
        Record::Call(CallRecord {
            turn,
            call: id.into(),
            tool: "terminal".into(),
            target: None,
            at_ms: 1,
            before: "m1".into(),
            after: Some("m2".into()),
            uncovered: Vec::new(),
        })
    }

    #[test]
    fn a_torn_tail_is_skipped_and_the_next_line_starts_fresh() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        SessionLog::append(&p, &call(1, "a")).unwrap();
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"kind\":\"call\",\"tur").unwrap();
        let log = SessionLog::read(&p).unwrap();
        assert_eq!(log.records.len(), 1);
        assert_eq!(log.torn, Some(19));
        SessionLog::append(&p, &call(2, "b")).unwrap();
        let log = SessionLog::read(&p).unwrap();
        assert_eq!(
            log.records.len(),
            2,
            "the torn line is skipped, the new one read"
        );
    }

    #[test]
    fn an_undo_takes_back_its_turns_and_later_ones() {
        let log = SessionLog {
            records: vec![
                call(1, "a"),
                call(2, "b"),
                call(3, "c"),
                Record::Undo {
                    back_to_turn: 2,
                    at_ms: 2,
                    restored: 1,
                    forced: false,
                },
                call(4, "d"),
            ],
            torn: None,
        };
        let live: Vec<&str> = log.live_calls().iter().map(|c| c.call.as_str()).collect();
        assert_eq!(live, ["a", "d"]);
        assert_eq!(log.last_turn(), 4);
    }
}
