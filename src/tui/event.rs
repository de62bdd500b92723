//! What the loop feeds `update`, and what `update` asks the loop to do. Terminal input, agent
//! events, audit records, background results and the frame tick all become one `Event`; every
//! side effect (send a prompt, run a command, answer an approval, cancel, quit...) comes back as
//! an `Effect` the loop performs. Invariant: `update` itself touches no terminal, file or task,
//! so it can be driven by tests without any of them.

use std::time::Instant;

use crossterm::event::KeyEvent;

use crate::agent::event::AgentEvent;
use crate::agent::session::{LoadedSession, SessionSummary};
use crate::harness::audit::AuditRecord;
use crate::harness::command_policy::ApprovalDecision;
use crate::harness::primitives::ExecutionMode;
use crate::tools::approval::ApprovalId;
use crate::tui::audit::ChainState;
use crate::tui::audit_feed::Page;
use crate::tui::diff::FileDiff;
use crate::tui::widgets::status_bar::SandboxHealth;

#[derive(Debug)]
pub enum Event {
    /// A key, with when the loop received it (the dialog's early-key guard compares it).
    Key {
        key: KeyEvent,
        at: Instant,
    },
    /// A bracketed paste, whole.
    Paste(String),
    /// Mouse wheel: lines, negative up.
    Scroll(i32),
    /// The terminal's new size (columns, rows).
    Resize(u16, u16),
    Agent(AgentEvent),
    /// The diff a write_file/patch/delete_file call will make, from the tool's own preview.
    Preview {
        call_id: String,
        diff: FileDiff,
    },
    Sandbox(SandboxHealth),
    AuditOlder(Page),
    AuditNew(Vec<AuditRecord>),
    AuditChain(ChainState),
    Sessions(Vec<SessionSummary>),
    /// A session was reopened (its conversation, shown as cells) or a new one began.
    SessionLoaded(Box<LoadedSession>),
    NewSession(String),
    /// Something the loop could not do, for the person to read.
    Failed(String),
    /// The router was rebuilt with the network on or off.
    Network(bool),
    /// Something the loop did, for the person to read.
    Note(String),
    /// `/standard` engaged a standard (or none), said in `note`.
    StandardChanged {
        name: Option<String>,
        note: String,
    },
    /// The next requests go to this provider and model.
    ModelChanged {
        provider: String,
        model: String,
    },
    Tick(Instant),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// A request for the model (with any `!COMMAND` results prepended).
    Submit(String),
    /// `!COMMAND` through the router (policy, dialog, audit).
    RunCommand {
        call_id: String,
        command: String,
    },
    /// Answer approval request `request_id` (`ApproveForSession`: the router keeps a grant).
    Answer {
        request_id: ApprovalId,
        decision: ApprovalDecision,
    },
    Cancel,
    Quit,
    Mode(ExecutionMode),
    Network(bool),
    /// Switch the model of the next requests.
    Model(String),
    /// `/standard`: list the library (`None`), engage NAME, or `off`.
    Standard(Option<String>),
    Compact,
    NewSession,
    ListSessions,
    Resume(String),
    /// Start (or stop) feeding the audit pane.
    AuditOpen,
    AuditOlder,
    /// Copy to the terminal's clipboard (OSC 52).
    Copy(String),
}
