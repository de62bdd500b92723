//! The router observer that shows a pending change: in its `before` hook (gates passed, action
//! prepared, nothing written yet) it computes the diff a write_file or patch call will make and
//! sends it to the TUI's loop. Invariant: the diff is taken before the write, from the file as
//! it is, so it cannot race the call it describes; a failed send changes nothing in the call.

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use crate::tools::host::SpearHost;
use crate::tools::observer::{CallStart, ObserverError, ToolObserver};
use crate::tui::diff;
use crate::tui::event::Event;

pub struct PreviewObserver {
    host: Arc<SpearHost>,
    tx: UnboundedSender<Event>,
}

impl PreviewObserver {
    pub fn new(host: Arc<SpearHost>, tx: UnboundedSender<Event>) -> Self {
        PreviewObserver { host, tx }
    }
}

impl ToolObserver for PreviewObserver {
    fn before(&self, call: &CallStart<'_>) -> Result<(), ObserverError> {
        if let Some(d) = diff::planned(&self.host, call.tool, call.arguments) {
            let _ = self.tx.send(Event::Preview {
                call_id: call.call_id.to_string(),
                diff: d,
            });
        }
        Ok(())
    }
}
