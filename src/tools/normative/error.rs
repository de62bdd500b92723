//! `StandardError`: what can go wrong in the standards library, each saying what was wrong and
//! how to put it right.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StandardError {
    #[error("standards library: cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{0}` is not a standard name: use 1 to 64 letters, digits, `.`, `_` or `-`, not starting with `.` (pass --name NAME)"
    )]
    BadName(String),
    #[error(
        "no standard named `{name}` in the library ({known}); `spear standard add FILE` adds one"
    )]
    NotFound { name: String, known: String },
    #[error("{origin} is refused: {reason}")]
    NoText { origin: String, reason: String },
    #[error("{origin} cannot be read as a standard: {why}")]
    Unsupported { origin: String, why: String },
    #[error("{origin} holds no text to index")]
    Empty { origin: String },
    #[error("the library file {path} is damaged ({why}); add the standard again to rebuild it")]
    Corrupt { path: PathBuf, why: String },
    #[error(
        "{standard} has no clause `{clause}`{nearby}; standard.search finds clauses by their words"
    )]
    NoClause {
        standard: String,
        clause: String,
        nearby: String,
    },
    #[error("{standard} has no pages (it was added from {kind} text); read it by clause instead")]
    NoPages { standard: String, kind: String },
    #[error("pages `{given}`: {why}")]
    BadPages { given: String, why: String },
    #[error("cannot fetch {url}: {why}")]
    Fetch { url: String, why: String },
}
