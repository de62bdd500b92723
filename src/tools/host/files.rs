//! A file tool's reads through SpearHost, shared by the coding tools and `fetch_url`'s save: the
//! current content of a resolved path (absent is an answer, not an error), the name a changed
//! file is reported under, and a filesystem error as the `ToolResult` the model is given.

use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::harness::workspace::{FsError, WorkspacePath};
use crate::tools::host::SpearHost;

/// The path a changed file is reported under: relative to its root.
pub fn reported(p: &WorkspacePath) -> String {
    p.relative().display().to_string()
}

/// A file operation's error as a result. A FIFO, socket or device is refused as
/// `invalid_path`: the path is one no file tool may use, and saying so ends the matter.
pub fn fs_failure(e: FsError) -> ToolResult {
    match e {
        FsError::NotFound(p) => ToolResult::refused(
            ToolStatus::NotFound,
            format!("`{}` does not exist", p.display()),
        ),
        e @ FsError::NotRegular { .. } => ToolResult::refused(
            ToolStatus::InvalidPath,
            format!("{e}; inspect it with `ls -l` or `stat` in the terminal"),
        ),
        other => ToolResult::failed(other.to_string()),
    }
}

/// The current content of `p`, or `None` when it does not exist.
pub fn current(host: &SpearHost, p: &WorkspacePath) -> Result<Option<Vec<u8>>, ToolResult> {
    match host.read(p) {
        Ok(b) => Ok(Some(b)),
        Err(FsError::NotFound(_)) => Ok(None),
        Err(e) => Err(fs_failure(e)),
    }
}
