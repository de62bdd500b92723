//! The router observer that shows a pending change: in its `before` hook (gates passed, action
//! prepared, nothing written yet) it turns the tool's own preview of a file change into the
//! diff the screen draws and sends it to the TUI's loop. Invariant: it reads no file and parses
//! no argument; what it sends is exactly what the tool computed and will write. A failed send
//! changes nothing in the call.

use tokio::sync::mpsc::UnboundedSender;

use crate::tools::observer::{CallStart, ObserverError, ToolObserver};
use crate::tui::diff::FileDiff;
use crate::tui::event::Event;

pub struct PreviewObserver {
    tx: UnboundedSender<Event>,
}

impl PreviewObserver {
    pub fn new(tx: UnboundedSender<Event>) -> Self {
        PreviewObserver { tx }
    }
}

impl ToolObserver for PreviewObserver {
    fn before(&self, call: &CallStart<'_>) -> Result<(), ObserverError> {
        if let Some(change) = call.preview.and_then(|p| p.file_change()) {
            let _ = self.tx.send(Event::Preview {
                call_id: call.call_id.to_string(),
                diff: FileDiff::from_change(change),
            });
        }
        Ok(())
    }
}
