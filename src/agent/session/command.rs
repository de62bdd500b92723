//! `!COMMAND`: the person's own command as a `terminal` call through the same router as the
//! model's calls (the same gates, dialog and audit), in the session's mode and network as they
//! are when it starts. Invariant: it ends with exactly one `done` event, cancelled or not, and
//! the task is marked ended before that event, so an op sent on hearing it finds no job running.

use std::sync::Arc;

use crate::agent::event::{AgentEvent, EventSink, StopReason};
use crate::agent::runtime::EventTap;
use crate::agent::task::TaskController;
use crate::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use crate::tools::router::turn::Turn;
use crate::tools::router::{ToolCall, ToolRouter};

/// Route `command` as call `call_id` (blocking: commands block, approvals wait).
pub(super) fn run_command(
    router: &ToolRouter,
    task: &TaskController,
    sink: &EventSink,
    call_id: String,
    command: String,
) {
    let view = ToolExposurePolicy::view(router.registry(), &ExposureSettings::default());
    let switches = task.switches();
    let mut turn = Turn::new(switches.mode, view, task.approver());
    turn.network = switches.network;
    turn.cancel = task.cancel_token();
    turn.output_tap = Some(Arc::new(EventTap(sink.clone())));
    turn.by_person = true;
    let call = ToolCall {
        id: call_id.clone(),
        name: "terminal".into(),
        arguments: serde_json::json!({ "command": command }),
    };
    match router.call(&mut turn, &call) {
        Ok(env) => sink.send(AgentEvent::ToolCallFinished {
            call_id,
            envelope: Box::new(env),
        }),
        Err(e) => sink.send(AgentEvent::Error {
            message: format!("the command could not be recorded: {e}"),
        }),
    }
    let reason = if task.is_cancelled() {
        StopReason::Cancelled
    } else {
        StopReason::Finished
    };
    task.end();
    sink.send(AgentEvent::Done {
        reason,
        tool_calls: 1,
        message: None,
    });
}
