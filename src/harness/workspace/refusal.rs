//! Why a path was refused. A refusal is a value the tool layer turns into an `invalid_path`
//! result; it always names the kind, the path as written, and a sentence a person can act on.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use thiserror::Error;

/// The rule a refused path broke. The wire spelling (`as_str`) is what the audit log records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathRefusalKind {
    /// Empty, or holds a NUL byte: no file can be named so.
    Invalid,
    /// A relative path whose `..` leaves every root.
    Traversal,
    /// An absolute host path outside every root (including the launch directory, unless allowed).
    HostAbsolute,
    /// The path is inside the roots as written, but resolving its links leaves them.
    SymlinkEscape,
    /// Resolving the path followed more links than the kernel would (a loop, or a very long chain).
    SymlinkLoop,
    /// The path goes into a project next to this one; `sibling` is that project's directory name.
    SiblingTarget { sibling: String },
    /// A write into a root that was added read-only.
    ReadOnlyRoot,
}

impl PathRefusalKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            PathRefusalKind::Invalid => "invalid",
            PathRefusalKind::Traversal => "traversal",
            PathRefusalKind::HostAbsolute => "host_absolute",
            PathRefusalKind::SymlinkEscape => "symlink_escape",
            PathRefusalKind::SymlinkLoop => "symlink_loop",
            PathRefusalKind::SiblingTarget { .. } => "sibling_target",
            PathRefusalKind::ReadOnlyRoot => "read_only_root",
        }
    }
}

impl fmt::Display for PathRefusalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A path `Workspace::resolve` would not hand out.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize)]
#[error("{kind}: {reason}")]
pub struct PathRefusal {
    pub kind: PathRefusalKind,
    /// The path exactly as the caller gave it.
    pub written: PathBuf,
    /// Where it led, when resolution got that far (symlink escapes, read-only roots).
    pub resolved: Option<PathBuf>,
    /// One sentence for the model and the person: what was refused and why.
    pub reason: String,
}

impl PathRefusal {
    pub(crate) fn new(
        kind: PathRefusalKind,
        written: &std::path::Path,
        resolved: Option<PathBuf>,
        reason: String,
    ) -> Self {
        PathRefusal {
            kind,
            written: written.to_path_buf(),
            resolved,
            reason,
        }
    }
}
