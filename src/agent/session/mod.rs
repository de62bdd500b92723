//! The session: the actor every front end drives (`actor`, with its ops and events in `ops`),
//! over the runtime and the transcript (`agent::transcript`) it records in. The screen and `spear run`
//! send ops and read events; none of them touches the `AgentRuntime` itself.

mod actor;
mod command;
mod mcp;
mod ops;
mod standards;

pub use actor::{
    ModelFactory, ModelInfo, SessionActor, SessionHandle, SessionParts, SessionStreams,
};
pub use ops::{AppliesFrom, Change, OpKind, RewindWhat, SessionEvent, SessionOp};
pub use standards::Standards;

/// How long a front end waits, when it ends, for its session's task to end (the servers it
/// started stopped and confirmed gone) before it leaves anyway.
pub const SESSION_END_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
