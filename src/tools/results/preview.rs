//! What the model and the person are told about one stored output: the bounded head-and-tail
//! preview (at most `PREVIEW_CHARS`, collected as the output streams, whatever its size), the
//! marker where it was cut, and the `StoreReport` of what the store's limits kept and dropped.

use serde::Serialize;

use crate::tools::lines::{utf8_prefix, utf8_suffix};
use crate::tools::results::index::{ResultIndex, SCHEME};

/// The model sees at most this many characters of one output (head and tail together).
pub const PREVIEW_CHARS: usize = 50_000;
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

/// The first and last characters of an output, kept in memory as it streams.
///
/// The preview is counted in characters (the spec's 50,000, head and tail), but it is collected
/// as bytes: each side keeps enough bytes to hold `half` characters of any width, and the cut to
/// characters is made once, in `build`. A character as counted here is what lossy UTF-8 decoding
/// shows: one valid character, or one U+FFFD for an invalid sequence, so at most four bytes each.
#[derive(Debug)]
pub(crate) struct PreviewBuffer {
    head: Vec<u8>,
    /// The last bytes after the head; kept between `window` and `2 * window` bytes long.
    tail: Vec<u8>,
    /// Characters shown from each end.
    half: usize,
    /// Bytes kept for each end: enough for `half` characters of up to four bytes.
    window: usize,
}

/// The facts the preview's marker states.
pub(crate) struct Facts<'a> {
    pub id: &'a str,
    pub total: u64,
    pub cap: u64,
    pub kept: bool,
    pub report: StoreReport,
}

/// The most bytes one character takes in UTF-8 (and in lossy decoding of invalid bytes).
const MAX_CHAR_BYTES: usize = 4;

impl PreviewBuffer {
    pub fn new() -> Self {
        let half = PREVIEW_CHARS / 2;
        PreviewBuffer {
            head: Vec::new(),
            tail: Vec::new(),
            half,
            window: half * MAX_CHAR_BYTES,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        if self.head.len() < self.window {
            let take = rest.len().min(self.window - self.head.len());
            self.head.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
        }
        if rest.len() >= self.window {
            self.tail.clear();
            self.tail
                .extend_from_slice(&rest[rest.len() - self.window..]);
        } else {
            self.tail.extend_from_slice(rest);
            if self.tail.len() > 2 * self.window {
                let cut = self.tail.len() - self.window;
                self.tail.drain(..cut);
            }
        }
    }

    /// The output whole when it fits the preview, else head, a marker saying what was cut and
    /// where the rest is, and tail.
    pub fn build(&self, f: &Facts<'_>, index: &ResultIndex) -> StoredOutput {
        let tail_window = &self.tail[self.tail.len() - self.tail.len().min(self.window)..];
        // Nothing was dropped between head and tail: the kept bytes are the whole output.
        let whole = f.total == (self.head.len() + self.tail.len()) as u64;
        let mut all = Vec::new();
        let (head, tail) = if whole {
            all.extend_from_slice(&self.head);
            all.extend_from_slice(&self.tail);
            let head_end = char_prefix_len(&all, self.half);
            let tail_start = char_suffix_start(&all[head_end..], self.half) + head_end;
            (&all[..head_end], &all[tail_start..])
        } else {
            let head = utf8_prefix(&self.head);
            let head = &head[..char_prefix_len(head, self.half)];
            let tail = utf8_suffix(tail_window);
            (head, &tail[char_suffix_start(tail, self.half)..])
        };
        let shown = (head.len() + tail.len()) as u64;
        let truncated = f.total > shown;
        let (preview, shown_bytes, shown_lines) = if !truncated {
            let n = memchr::memchr_iter(b'\n', &all).count() as u64;
            (
                String::from_utf8_lossy(&all).into_owned(),
                shown,
                n.max(index.total_lines.min(1)),
            )
        } else {
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

/// The characters of `bytes` as lossy decoding shows them: (byte offset, byte length) of each
/// valid character and of each invalid sequence (one U+FFFD).
fn lossy_chars(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = 0usize;
    bytes.utf8_chunks().flat_map(move |chunk| {
        let start = at;
        let valid = chunk.valid();
        let invalid = chunk.invalid().len();
        at += valid.len() + invalid;
        valid
            .char_indices()
            .map(move |(i, c)| (start + i, c.len_utf8()))
            .chain((invalid > 0).then_some((start + valid.len(), invalid)))
    })
}

/// The byte length of the first `n` characters of `bytes`.
fn char_prefix_len(bytes: &[u8], n: usize) -> usize {
    lossy_chars(bytes)
        .nth(n)
        .map_or(bytes.len(), |(offset, _)| offset)
}

/// Where the last `n` characters of `bytes` start.
fn char_suffix_start(bytes: &[u8], n: usize) -> usize {
    let count = lossy_chars(bytes).count();
    if count <= n {
        return 0;
    }
    lossy_chars(bytes)
        .nth(count - n)
        .map_or(bytes.len(), |(offset, _)| offset)
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
