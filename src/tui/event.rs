//! What the loop feeds `update`, and what `update` asks the loop to do. Terminal input, agent
//! events, audit records, background results and the frame tick all become one `Event`; every
//! side effect (send a prompt, run a command, answer an approval, cancel, quit...) comes back as
//! an `Effect` the loop performs. Invariant: `update` itself touches no terminal, file or task,
//! so it can be driven by tests without any of them.

use std::time::Instant;

use crossterm::event::KeyEvent;

use crate::agent::event::AgentEvent;
use crate::agent::session::SessionEvent;
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
    /// The terminal reported that Spear's window gained (`true`) or lost the focus.
    Focus(bool),
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
    /// What the session actor said (changes applied or refused, sessions, models, standards).
    Session(SessionEvent),
    /// Something the loop could not do, for the person to read.
    Failed(String),
    /// SIGTERM or SIGHUP: leave as `/quit` does, so the terminal is given back as it was.
    Terminate,
    /// Something the loop did, for the person to read.
    Note(String),
    Tick(Instant),
}

impl Event {
    /// A short name for the event, for a test probe counting what the loop handled: a key's
    /// code, an agent event's wire type (with its call id), a session event's variant.
    pub fn label(&self) -> String {
        match self {
            Event::Key { key, .. } => format!("key {:?}", key.code),
            Event::Agent(a) => {
                let v = serde_json::to_value(a).unwrap_or_default();
                let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or("?");
                match v.get("call_id").and_then(|c| c.as_str()) {
                    Some(id) => format!("agent {kind} {id}"),
                    None => format!("agent {kind}"),
                }
            }
            Event::Session(s) => {
                let d = format!("{s:?}");
                let name = d.split(['(', ' ', '{']).next().unwrap_or("?").to_string();
                format!("session {name}")
            }
            Event::Tick(_) => "tick".into(),
            other => {
                let d = format!("{other:?}");
                d.split(['(', ' ', '{']).next().unwrap_or("?").to_string()
            }
        }
    }
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
    /// `/mcp`: list the MCP servers, or restart one.
    Mcp(Option<String>),
    Compact,
    NewSession,
    ListSessions,
    /// `/undo [N] [force]`.
    Undo {
        turn: Option<u32>,
        force: bool,
    },
    /// `/rewind [N] [files|conversation] [force]`.
    Rewind {
        request: Option<usize>,
        what: crate::agent::session::RewindWhat,
        force: bool,
    },
    Resume(String),
    /// Start (or stop) feeding the audit pane.
    AuditOpen,
    AuditOlder,
    /// Copy to the terminal's clipboard (OSC 52).
    Copy(String),
    /// Keep the theme the person chose (`/theme NAME`) for the next runs.
    KeepTheme(String),
    /// Call the person back (a question opened, or a turn ended, while Spear's window may not
    /// have the focus): the bell, and a desktop notification where one is shown.
    CallBack(crate::tui::notify::CallBack),
}
