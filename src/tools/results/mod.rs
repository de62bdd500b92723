//! The ResultStore: large output kept whole on disk outside the workspace (`store`), streamed in
//! within its caps (`writer`), and shown to the model as a bounded preview (`preview`). The
//! invariant, kept by `store` and `writer` together: one result and all results stay within
//! their byte budgets at every moment, not only once an output ends.

pub mod preview;
pub mod store;
pub mod writer;

pub use preview::{StoreReport, StoredOutput};
pub use store::{
    PREVIEW_CHARS, ResultIndex, ResultStore, SCHEME, StoreError, StoreLimits, workspace_state_dir,
};
pub use writer::ResultWriter;
