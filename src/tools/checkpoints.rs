//! The session's checkpoints as the router takes them: one just before and one just after
//! every call that may change the working tree (a file tool's write, `fetch_url`'s `save_as`,
//! any command not READ_ONLY), for every front end, under the session the audit log names.

use crate::harness::audit::{CheckpointRef, MAX_CHANGED_LISTED};
use crate::harness::checkpoint::{Checkpoints, Taken};
use crate::tools::observer::SessionLabel;

/// The checkpoints of the workspace, bound to the session whose calls they are.
#[derive(Debug, Clone)]
pub struct SessionCheckpoints {
    inner: Checkpoints,
    session: SessionLabel,
}

impl SessionCheckpoints {
    /// Bind `inner` to `session`, and start the session's first checkpoint in the background.
    pub fn new(inner: Checkpoints, session: SessionLabel) -> Self {
        inner.start_in_background();
        SessionCheckpoints { inner, session }
    }

    pub fn checkpoints(&self) -> &Checkpoints {
        &self.inner
    }

    /// The session the checkpoints are logged under now.
    pub fn session(&self) -> String {
        self.session.get()
    }

    /// The checkpoint before a call; `Err` says why none could be taken.
    pub(crate) fn before(
        &self,
        turn: u64,
        call: &str,
        tool: &str,
        target: Option<&str>,
    ) -> Result<Taken, String> {
        self.inner
            .before_call(&self.session.get(), turn, call, tool, target)
            .map_err(|e| e.to_string())
    }

    /// Close `taken` with the checkpoint after the call; what the call's record says of it.
    pub(crate) fn after(&self, taken: Taken) -> CheckpointRef {
        let uncovered: Vec<String> = taken
            .uncovered
            .iter()
            .take(MAX_CHANGED_LISTED)
            .map(|(p, why)| format!("{p} ({why})"))
            .collect();
        let (turn, before) = (taken.record.turn, taken.record.before.clone());
        let failed = self.inner.after_call(taken).err().map(|e| e.to_string());
        CheckpointRef {
            turn,
            before,
            uncovered,
            failed,
        }
    }

    /// What a call's record says when no checkpoint could be taken before it.
    pub(crate) fn failed(why: String) -> CheckpointRef {
        CheckpointRef {
            turn: 0,
            before: String::new(),
            uncovered: Vec::new(),
            failed: Some(why),
        }
    }
}
