//! `StoreError`: what went wrong in the ResultStore's machinery (I/O, a store inside the
//! workspace, an id that is not there), each naming the operation and the path it was about.

use std::io;
use std::path::{Path, PathBuf};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("result store {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the result store {0} lies inside the workspace; it must live in the state directory")]
    InsideWorkspace(PathBuf),
    #[error(
        "result://{0} is not in the result store: it was evicted to keep the store within its \
         budget, or it never existed"
    )]
    NotFound(String),
    #[error("`{0}` is not a result id")]
    BadId(String),
    #[error("stored result {0} has an unreadable index")]
    BadIndex(String),
}

pub(crate) fn io_err<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}
