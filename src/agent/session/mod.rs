//! Sessions: the transcript each conversation is recorded in (`store`), and the actor every
//! front end drives (`actor`, with its ops and events in `ops`). The screen and `spear run`
//! send ops and read events; none of them touches the `AgentRuntime` itself.

mod actor;
mod ops;
mod store;

pub use actor::{
    ModelFactory, ModelInfo, SessionActor, SessionHandle, SessionParts, SessionStreams, Standards,
};
pub use ops::{AppliesFrom, Change, OpKind, SessionEvent, SessionOp};
pub use store::{
    LoadedSession, SessionError, SessionMeta, SessionRecord, SessionStore, SessionSummary,
    SessionWriter, now_rfc3339, repair,
};
