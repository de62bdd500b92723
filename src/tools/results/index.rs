//! How a stored output is addressed and found again: the `result://` scheme and the
//! `ResultIndex` written next to each output (`ID.idx`), whose sparse line starts let a page be
//! found by one seek. The index says what was kept; it never holds output bytes.

use serde::{Deserialize, Serialize};

/// The scheme of stored results.
pub const SCHEME: &str = "result://";
/// Every this many lines the index records where a line starts, so a page is found by a seek.
pub(crate) const LINE_STRIDE: u64 = 1024;

/// What is known about a stored output; written next to it as `ID.idx`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultIndex {
    /// The whole output as it was produced.
    pub total_bytes: u64,
    pub total_lines: u64,
    /// The stored text: the whole output, or its head, a marker line and its tail.
    pub stored_bytes: u64,
    #[serde(default)]
    pub stored_lines: u64,
    /// Bytes of the output not kept (from its middle), and what was kept either side.
    #[serde(default)]
    pub dropped_bytes: u64,
    #[serde(default)]
    pub head_bytes: u64,
    #[serde(default)]
    pub tail_bytes: u64,
    /// `starts[k]` is the byte offset in the stored text of line `k * LINE_STRIDE + 1`.
    pub starts: Vec<u64>,
}

impl ResultIndex {
    /// Lines of the stored text (an index written before the cap existed counts the output's).
    pub fn lines_stored(&self) -> u64 {
        if self.stored_lines == 0 && self.stored_bytes == self.total_bytes {
            self.total_lines
        } else {
            self.stored_lines
        }
    }
}
