//! The ResultStore: large output kept on disk outside the workspace (`store`), streamed in
//! within its caps (`writer`), and shown to the model as a bounded preview (`preview`). The
//! invariant, kept by `store` and `writer` together: one result and all results stay within
//! their byte budgets at every moment, not only once an output ends.

pub(crate) mod error;
pub(crate) mod index;
pub(crate) mod preview;
pub(crate) mod store;
pub(crate) mod writer;

pub use error::StoreError;
pub use index::{ResultIndex, SCHEME};
pub use preview::{PREVIEW_CHARS, StoreReport, StoredOutput};
pub use store::{ResultStore, StoreLimits, workspace_state_dir};
pub use writer::ResultWriter;
