//! What a front end asks of a session (`SessionOp`) and what the session tells it back
//! (`SessionEvent`), besides the `AgentEvent` stream of its turns. Invariant: every op a front
//! end sends is answered by at least one event when it changes nothing it asked for (a refusal
//! names the op and says why), so a front end never waits on a silent no.

use crate::agent::model::ChatMessage;
use crate::agent::runtime::TaskOutcome;
use crate::agent::transcript::{LoadedSession, SessionSummary};
use crate::harness::command_policy::ApprovalDecision;
use crate::harness::primitives::ExecutionMode;
use crate::tools::approval::ApprovalId;

/// One thing a front end asks of the session. Any op is accepted at any time; what happens to
/// it during a running turn is [`SessionActor`](super::SessionActor)'s rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionOp {
    /// A request for the model (a turn).
    Submit(String),
    /// `!COMMAND`: one command through the router as a `terminal` call, made by the person.
    RunCommand {
        call_id: String,
        command: String,
    },
    /// The answer to the pending approval request `request_id`.
    Answer {
        request_id: ApprovalId,
        decision: ApprovalDecision,
    },
    /// Stop the running turn: the stream is dropped, a running command killed, a pending
    /// approval answered `cancelled`.
    Cancel,
    SetMode(ExecutionMode),
    SetNetwork(bool),
    /// Answer the next requests with another model of the same provider.
    SetModel(String),
    /// `None`: list the standards library; `Some("off")`: engage none; `Some(NAME)`: engage it.
    Standard(Option<String>),
    Compact,
    /// Start a new session (an empty conversation).
    New,
    Resume(String),
    ListSessions,
    /// `/undo`: take back the session's last turn (or `turn` and later ones); `force` also
    /// overwrites what someone else changed since, and restores what can be when some paths
    /// cannot be.
    Undo {
        turn: Option<u32>,
        force: bool,
    },
    /// `/rewind`: list the requests (`request: None`), or go back to just before request
    /// `request`: the files (the calls since taken back, as `/undo` does), the conversation,
    /// or both.
    Rewind {
        request: Option<usize>,
        what: RewindWhat,
        force: bool,
    },
    /// `/mcp`: the person's MCP servers, where each stands and its tools (`None`), or end
    /// server NAME and start it again (`Some(NAME)`, `/mcp restart NAME`).
    Mcp(Option<String>),
    /// End the session: a running turn is cancelled and the actor stops.
    Quit,
}

/// What a rewind takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindWhat {
    Both,
    Files,
    Conversation,
}

impl RewindWhat {
    pub fn files(self) -> bool {
        self != RewindWhat::Conversation
    }

    pub fn conversation(self) -> bool {
        self != RewindWhat::Files
    }
}

/// Which op a refusal answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Submit,
    RunCommand,
    Answer,
    Cancel,
    SetModel,
    Standard,
    Compact,
    New,
    Resume,
    Undo,
    Rewind,
    Mcp,
}

impl OpKind {
    /// How the person typed it, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Submit => "the request",
            OpKind::RunCommand => "the command",
            OpKind::Answer => "the answer",
            OpKind::Cancel => "the cancel",
            OpKind::SetModel => "/model",
            OpKind::Standard => "/standard",
            OpKind::Compact => "/compact",
            OpKind::New => "/new",
            OpKind::Resume => "/resume",
            OpKind::Undo => "/undo",
            OpKind::Rewind => "/rewind",
            OpKind::Mcp => "/mcp restart",
        }
    }
}

/// A setting that applies to calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Mode(ExecutionMode),
    Network(bool),
}

/// When a change takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppliesFrom {
    /// It narrows what calls may do: from the running turn's next call.
    NextCall,
    /// It widens what calls may do, or no turn runs: from the next turn.
    NextTurn,
}

/// What the session tells its front end besides the turns' `AgentEvent`s.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// A mode or network change was taken, and from when it applies.
    Applied {
        change: Change,
        from: AppliesFrom,
    },
    /// An op was refused; nothing it asked for changed.
    Refused {
        op: OpKind,
        reason: String,
    },
    /// A session began: by the first request (`by_request`) or by `/new`.
    Started {
        id: String,
        by_request: bool,
    },
    /// A session was reopened with its conversation.
    Loaded(Box<LoadedSession>),
    /// `/rewind` took the conversation back to just before request `request` (whose words
    /// are `text`); from here on it is `messages`.
    Rewound {
        request: usize,
        text: String,
        messages: Vec<ChatMessage>,
    },
    Sessions(Vec<SessionSummary>),
    ModelChanged {
        provider: String,
        model: String,
    },
    /// `/standard` engaged a standard (or none), said in `note`.
    StandardChanged {
        name: Option<String>,
        note: String,
    },
    /// Something the session did, for the person to read.
    Note(String),
    /// Paths the session changed that `/undo` can take back (after each turn and each undo).
    Undoable(usize),
    /// Something the session could not do, for the person to read.
    Failed(String),
    /// A turn (a request, `!COMMAND` or `/compact`) ended; the next may start. `outcome` is the
    /// request's, when it was one; `notes` are what its system prompt says was cut.
    TurnEnded {
        outcome: Option<TaskOutcome>,
        notes: Vec<String>,
    },
}

impl SessionEvent {
    /// The line a person reads for an applied change (the screen and `spear run` say the same).
    pub fn applied_line(change: Change, from: AppliesFrom) -> String {
        let what = match change {
            Change::Mode(m) => format!("{m} mode"),
            Change::Network(true) => "network on for commands that need it".into(),
            Change::Network(false) => "network off".into(),
        };
        let when = match from {
            AppliesFrom::NextCall => "from the running turn's next call",
            AppliesFrom::NextTurn => "from the next request",
        };
        format!("{what}: applies {when}")
    }
}
