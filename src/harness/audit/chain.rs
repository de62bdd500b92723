//! The hash chain. A line is `{record…,"hash":"<sha256 of everything before ,"hash">"}`; each
//! record's `prev` is the previous line's hash and its `seq` counts lines from 1. A head file
//! keeps the last `seq` and hash, so records removed from the end are detected as well.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::AuditError;
use super::record::AuditRecord;

/// `prev` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

const HASH_KEY: &str = ",\"hash\":\"";

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The line for `record` (newline included) and its hash.
pub(crate) fn seal(record: &AuditRecord) -> Result<(Vec<u8>, String), AuditError> {
    let json = serde_json::to_string(record).map_err(AuditError::Encode)?;
    // The serialised object ends with `}`; the hash goes in front of it.
    let body = json.strip_suffix('}').unwrap_or(&json);
    let hash = sha256_hex(body.as_bytes());
    let line = format!("{body}{HASH_KEY}{hash}\"}}\n");
    Ok((line.into_bytes(), hash))
}

/// A complete line (without its newline), checked against its own hash and decoded.
pub(crate) fn open_line(line: &[u8]) -> Result<(AuditRecord, String), String> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?;
    let idx = text
        .rfind(HASH_KEY)
        .ok_or_else(|| "no hash field".to_string())?;
    let (body, tail) = text.split_at(idx);
    let hash = tail
        .strip_prefix(HASH_KEY)
        .and_then(|t| t.strip_suffix("\"}"))
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| "malformed hash field".to_string())?;
    if sha256_hex(body.as_bytes()) != hash {
        return Err("its hash does not match its content (the line was edited)".into());
    }
    let record: AuditRecord = serde_json::from_str(&format!("{body}}}"))
        .map_err(|e| format!("not an audit record: {e}"))?;
    Ok((record, hash.to_string()))
}

/// The head file's content: fixed width, so it is rewritten in place with one write.
pub(crate) fn head_line(seq: u64, hash: &str) -> String {
    format!("{seq:020} {hash}\n")
}

fn parse_head(text: &str) -> Option<(u64, String)> {
    let (seq, hash) = text.trim_end().split_once(' ')?;
    Some((seq.parse().ok()?, hash.to_string()))
}

/// A log that verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub records: u64,
    /// The last line is incomplete (a writer was killed mid-write): its 1-based line number and
    /// length. Every record before it verified; the next writer sets it aside.
    pub torn_line: Option<(u64, u64)>,
    /// The head names an earlier record than the last (`head_lag` records earlier).
    pub head_lagging: bool,
    /// How many records the log holds past the one the head names: one when a writer was
    /// killed between the two writes; more when the machine stopped before the head reached
    /// the disk (each record is on disk before its head is written, the head is not forced
    /// there after it). A head is never ahead of a log nobody cut.
    pub head_lag: u64,
}

/// The first thing wrong with a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyFailure {
    /// 1-based line number of the first bad line.
    pub line: u64,
    pub problem: String,
}

/// Check every line, the chain between them, and the end of the log against the head.
pub fn verify(log: &Path, head: &Path) -> Result<Result<VerifyReport, VerifyFailure>, AuditError> {
    let head_text = match std::fs::read_to_string(head) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(AuditError::io("read", head, e)),
    };
    let head_entry = head_text.as_deref().map(parse_head);
    let head_seq = match &head_entry {
        Some(Some((seq, _))) => Some(*seq),
        _ => None,
    };
    let file = File::open(log).map_err(|e| AuditError::io("open", log, e))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut buf = Vec::new();
    let (mut line_no, mut prev_hash, mut at_head) = (0u64, GENESIS.to_string(), None);
    let mut torn_line = None;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| AuditError::io("read", log, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.last() != Some(&b'\n') {
            torn_line = Some((line_no, n as u64));
            break;
        }
        let fail = |problem: String| {
            Ok(Err(VerifyFailure {
                line: line_no,
                problem,
            }))
        };
        let (record, hash) = match open_line(&buf[..n - 1]) {
            Ok(x) => x,
            Err(problem) => return fail(problem),
        };
        if record.seq != line_no {
            return fail(format!(
                "holds record {} where record {line_no} belongs (a line was inserted, deleted or moved)",
                record.seq
            ));
        }
        if record.prev != prev_hash {
            return fail(
                "does not follow the line before it (a line was inserted, deleted or moved)".into(),
            );
        }
        if head_seq == Some(line_no) {
            at_head = Some(hash.clone());
        }
        prev_hash = hash;
    }
    let records = torn_line.map_or(line_no, |(l, _)| l - 1);
    let head_lag = match head_entry {
        None if records == 0 => 0,
        None => {
            return Ok(Err(VerifyFailure {
                line: records + 1,
                problem: "the head file is missing, so removal of records from the end cannot be ruled out".into(),
            }));
        }
        Some(None) => {
            return Ok(Err(VerifyFailure {
                line: records + 1,
                problem: "the head file is unreadable".into(),
            }));
        }
        Some(Some((seq, hash))) => {
            if seq > records {
                return Ok(Err(VerifyFailure {
                    line: records + 1,
                    problem: format!(
                        "missing: the log ends after record {records} but the head says record {seq} was written (records were removed from the end)"
                    ),
                }));
            }
            let names_a_record = seq > 0 && at_head.as_deref() == Some(hash.as_str());
            if names_a_record || (seq == 0 && records == 0 && hash == GENESIS) {
                records - seq
            } else {
                return Ok(Err(VerifyFailure {
                    line: seq.max(1),
                    problem: format!("does not match the head (record {seq}, hash {hash})"),
                }));
            }
        }
    };
    Ok(Ok(VerifyReport {
        records,
        torn_line,
        head_lagging: head_lag > 0,
        head_lag,
    }))
}
