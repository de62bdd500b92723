//! What the model and the person are told about one stored output: the bounded head-and-tail
//! preview (at most `PREVIEW_CHARS`, collected as the output streams, whatever its size), the
//! marker where it was cut, and the `StoreReport` of what the store's limits kept and dropped.

use serde::Serialize;

use crate::tools::lines::{utf8_prefix, utf8_suffix};
use crate::tools::result_store::{PREVIEW_CHARS, ResultIndex, SCHEME};

/// What the store's limits did to one output (all zero but `cap_bytes` when nothing was hit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct StoreReport {
    /// Bytes of the output kept from its start and from its end.
    pub kept_head_bytes: u64,
    pub kept_tail_bytes: u64,
    /// Bytes of the output not kept (from its middle).
    pub dropped_bytes: u64,
    /// The most this output could keep: the per-result cap, or less when the results that may
    /// not be evicted (this turn's) left less of the total budget.
    pub cap_bytes: u64,
    pub per_result_cap_bytes: u64,
    pub total_budget_bytes: u64,
    /// Older results evicted to keep the store within its total budget, and their size.
    pub evicted_results: u64,
    pub evicted_bytes: u64,
}

impl StoreReport {
    /// A limit was hit: the person and the model should be told.
    pub fn hit(&self) -> bool {
        self.dropped_bytes > 0 || self.evicted_results > 0
    }

    /// One sentence per limit that was hit.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.dropped_bytes > 0 && self.kept_head_bytes + self.kept_tail_bytes == 0 {
            parts.push(format!(
                "none of the output could be stored: the results of this turn (never evicted) \
                 fill the result store's total budget of {} bytes; only the preview remains",
                self.total_budget_bytes
            ));
        } else if self.dropped_bytes > 0 {
            let why = if self.cap_bytes < self.per_result_cap_bytes {
                format!(
                    "the store's total budget left room for {} bytes (results of this turn are \
                     never evicted; the per-result cap is {} bytes)",
                    self.cap_bytes, self.per_result_cap_bytes
                )
            } else {
                format!("the per-result cap is {} bytes", self.cap_bytes)
            };
            parts.push(format!(
                "the stored output keeps its first {} and its last {} bytes; {} bytes in \
                 between were dropped ({why})",
                self.kept_head_bytes, self.kept_tail_bytes, self.dropped_bytes
            ));
        }
        if self.evicted_results > 0 {
            parts.push(format!(
                "{} older stored results ({} bytes) were evicted to keep the result store \
                 within its total budget; their result:// ids are gone",
                self.evicted_results, self.evicted_bytes
            ));
        }
        parts.join("; ")
    }
}

/// A finished stored output and its bounded preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOutput {
    pub id: String,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub stored_bytes: u64,
    /// What the model is shown: the whole output when it fits, else head, marker, tail.
    pub preview: String,
    pub shown_bytes: u64,
    pub shown_lines: u64,
    pub truncated: bool,
    /// The output is in the store (false only when the store had no room at all for it).
    pub kept: bool,
    pub report: StoreReport,
}

impl StoredOutput {
    pub fn uri(&self) -> String {
        format!("{SCHEME}{}", self.id)
    }

    /// The `result://` id to give out: only for output cut from the preview that was kept.
    pub fn addressable_uri(&self) -> Option<String> {
        (self.truncated && self.kept).then(|| self.uri())
    }
}

/// The first and last bytes of an output, kept in memory as it streams.
#[derive(Debug)]
pub(crate) struct PreviewBuffer {
    head: Vec<u8>,
    /// The last bytes after the head; kept between `half` and `2 * half` bytes long.
    tail: Vec<u8>,
    half: usize,
}

/// The facts the preview's marker states.
pub(crate) struct Facts<'a> {
    pub id: &'a str,
    pub total: u64,
    pub cap: u64,
    pub kept: bool,
    pub report: StoreReport,
}

impl PreviewBuffer {
    pub fn new() -> Self {
        PreviewBuffer {
            head: Vec::new(),
            tail: Vec::new(),
            half: PREVIEW_CHARS / 2,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        if self.head.len() < self.half {
            let take = rest.len().min(self.half - self.head.len());
            self.head.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
        }
        if rest.len() >= self.half {
            self.tail.clear();
            self.tail.extend_from_slice(&rest[rest.len() - self.half..]);
        } else {
            self.tail.extend_from_slice(rest);
            if self.tail.len() > 2 * self.half {
                let cut = self.tail.len() - self.half;
                self.tail.drain(..cut);
            }
        }
    }

    /// The output whole when it fits the preview, else head, a marker saying what was cut and
    /// where the rest is, and tail.
    pub fn build(&self, f: &Facts<'_>, index: &ResultIndex) -> StoredOutput {
        let tail_len = self.tail.len().min(self.half);
        let tail = &self.tail[self.tail.len() - tail_len..];
        let truncated = f.total > (self.head.len() + tail_len) as u64;
        let (preview, shown_bytes, shown_lines) = if !truncated {
            let mut all = self.head.clone();
            all.extend_from_slice(tail);
            let n = memchr::memchr_iter(b'\n', &all).count() as u64;
            (
                String::from_utf8_lossy(&all).into_owned(),
                all.len() as u64,
                n.max(index.total_lines.min(1)),
            )
        } else {
            let head = utf8_prefix(&self.head);
            let tail = utf8_suffix(tail);
            let shown = (head.len() + tail.len()) as u64;
            let head_lines = memchr::memchr_iter(b'\n', head).count() as u64;
            let tail_lines = memchr::memchr_iter(b'\n', tail).count() as u64 + 1;
            let marker = format!(
                "\n[… {} bytes ({} lines) cut here; {} …]\n",
                f.total - shown,
                index.total_lines.saturating_sub(head_lines + tail_lines),
                where_the_rest_is(f, index)
            );
            let text = format!(
                "{}{marker}{}",
                String::from_utf8_lossy(head),
                String::from_utf8_lossy(tail)
            );
            (text, shown, head_lines + tail_lines)
        };
        StoredOutput {
            id: f.id.to_string(),
            total_bytes: index.total_bytes,
            total_lines: index.total_lines,
            stored_bytes: index.stored_bytes,
            preview,
            shown_bytes,
            shown_lines,
            truncated,
            kept: f.kept,
            report: f.report,
        }
    }
}

fn where_the_rest_is(f: &Facts<'_>, index: &ResultIndex) -> String {
    let (id, lines) = (f.id, index.total_lines);
    if !f.kept {
        return format!(
            "the result store had no room left for this output ({} bytes, {lines} lines): the \
             results of this turn fill its budget, so nothing beyond this preview was kept",
            f.total
        );
    }
    let what = if f.report.dropped_bytes > 0 {
        format!(
            "the output ({} bytes, {lines} lines) was larger than one stored result may keep \
             ({} bytes), so {SCHEME}{id} keeps its first {} and its last {} bytes ({} lines, a \
             marker line where the middle was dropped)",
            f.total,
            f.cap,
            f.report.kept_head_bytes,
            f.report.kept_tail_bytes,
            index.lines_stored()
        )
    } else {
        format!(
            "the whole output ({} bytes, {lines} lines) is stored as {SCHEME}{id}",
            f.total
        )
    };
    format!(
        "{what}: read it with read_file {{\"path\": \"{SCHEME}{id}\", \"offset\": LINE, \
         \"limit\": N}}"
    )
}
