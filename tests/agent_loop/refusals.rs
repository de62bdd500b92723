//! Refusals in the loop: SAFE denies a patch and the model is told why; a DANGEROUS command is
//! refused in AUTO, reported, and never reaches the executor; the same refused call asked for
//! again and again stops the request (audited); once a command reports the sandbox missing,
//! later writes in the request are declined.

use std::time::Duration;

use spear::agent::event::{AgentEvent, StopReason};
use spear::agent::model::ChatMessage;
use spear::harness::audit::Decision;
use spear::harness::command_policy::{CommandClass, ExecutionProfile};
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::executor::{CommandExecutor, ExecOutcome, OutputSink};
use spear::tools::refusal::Gate;

use crate::support::*;

fn envelopes(events: &[AgentEvent]) -> Vec<ToolResultEnvelope> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallFinished { envelope, .. } => Some((**envelope).clone()),
            _ => None,
        })
        .collect()
}

fn tool_message<'a>(messages: &'a [ChatMessage], id: &str) -> &'a str {
    messages
        .iter()
        .find_map(|m| match m {
            ChatMessage::Tool {
                tool_call_id,
                content,
            } if tool_call_id == id => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no tool message for {id}"))
}

#[tokio::test]
async fn in_safe_a_patch_is_denied_and_the_model_is_told_why() {
    let f = Fixture::new();
    f.write("src/lib.rs", "fn main() {}\n");
    let model = ScriptedModel::new(vec![
        calls(&[
            ("r1", "read_file", r#"{"path":"src/lib.rs"}"#),
            (
                "p1",
                "patch",
                r#"{"path":"src/lib.rs","edits":[{"old":"fn main() {}","new":"fn main() { todo!() }"}]}"#,
            ),
        ]),
        text("I cannot patch in SAFE mode; here is the change I would make."),
    ]);
    let mut rt = f.runtime(model.clone());
    let (outcome, events) = run(&mut rt, "fix main", ExecutionMode::Safe).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    let envs = envelopes(&events);
    // Positive control: the read in the same request worked.
    assert_eq!(envs[0].status, ToolStatus::Ok);
    assert_eq!(envs[1].status, ToolStatus::Denied);
    assert_eq!(f.read("src/lib.rs"), "fn main() {}\n");
    let told = tool_message(&model.requests()[1].messages, "p1").to_string();
    assert!(
        told.starts_with("[denied]") && told.contains("SAFE"),
        "{told}"
    );
    assert!(
        f.audit()
            .iter()
            .any(|r| r.tool == "patch" && r.decision == Decision::Refused)
    );
}

#[tokio::test]
async fn a_dangerous_command_is_refused_in_auto_reported_and_never_run() {
    let f = Fixture::new();
    let rec = Recorder::default();
    // Kept in Rust source and passed as data: never typed into a shell here.
    let dangerous = serde_json::json!({"command": "rm -rf --no-preserve-root /"}).to_string();
    let model = ScriptedModel::new(vec![
        calls(&[
            ("d1", "terminal", dangerous.as_str()),
            ("ok1", "terminal", r#"{"command":"git status"}"#),
        ]),
        text("That command was refused."),
    ]);
    let mut rt = f.recording_runtime(model.clone(), Box::new(rec.clone()));
    let (outcome, events) = run(&mut rt, "clean up", ExecutionMode::Auto).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    let envs = envelopes(&events);
    assert_eq!(envs[0].status, ToolStatus::Denied);
    assert_eq!(envs[0].class, Some(CommandClass::Dangerous));
    assert!(
        envs[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("refused in every mode")
    );
    // Positive control: the executor ran the harmless command, and only that.
    assert_eq!(*rec.ran.lock().unwrap(), ["git status"]);
    let told = tool_message(&model.requests()[1].messages, "d1").to_string();
    assert!(told.contains("refused in every mode"), "{told}");
    assert!(
        f.audit()
            .iter()
            .any(|r| r.class == Some(CommandClass::Dangerous) && r.decision == Decision::Denied)
    );
}

#[tokio::test]
async fn the_same_refusal_asked_for_again_and_again_stops_the_request() {
    let f = Fixture::new();
    // One refused write per response, spelled differently each time.
    let spellings = [
        "notes.md",
        "./notes.md",
        "notes.md",
        ".//notes.md",
        "./notes.md",
        "notes.md",
    ];
    let mut steps: Vec<Step> = spellings
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let args = serde_json::json!({"path": p, "content": "x"}).to_string();
            calls(&[(format!("w{i}").as_str(), "write_file", args.as_str())])
        })
        .collect();
    steps.push(text("never reached"));
    let model = ScriptedModel::new(steps);
    let mut rt = f.runtime(model.clone());
    let (outcome, events) = run(&mut rt, "write notes", ExecutionMode::Safe).await;
    assert_eq!(outcome.reason, StopReason::RepeatedRefusal);
    assert_eq!(outcome.tool_calls, 5);
    let message = outcome.message.unwrap();
    assert!(message.contains("refused 5 times"), "{message}");
    assert_eq!(model.requests().len(), 5, "no request after the stop");
    assert!(matches!(
        events.last().unwrap(),
        AgentEvent::Done {
            reason: StopReason::RepeatedRefusal,
            ..
        }
    ));
    assert!(
        f.audit()
            .iter()
            .any(|r| r.decision == Decision::RepeatedRefusalStopped)
    );
    assert!(!f.project.join("notes.md").exists());
}

/// Reports the sandbox missing for every command.
struct NoSandbox;

impl CommandExecutor for NoSandbox {
    fn run(
        &self,
        _: &str,
        _: &ExecutionProfile,
        _: Duration,
        _: &mut dyn OutputSink,
    ) -> ExecOutcome {
        ExecOutcome::sandbox_unavailable("bwrap was not found on PATH (install bubblewrap)")
    }
}

#[tokio::test]
async fn once_the_sandbox_is_down_later_writes_in_the_request_are_declined() {
    let f = Fixture::new();
    let model = ScriptedModel::new(vec![
        calls(&[("t1", "terminal", r#"{"command":"cargo build"}"#)]),
        calls(&[(
            "w1",
            "write_file",
            r#"{"path":"fix.rs","content":"fn f() {}"}"#,
        )]),
        text("The sandbox is down."),
    ]);
    let mut rt = f.recording_runtime(model.clone(), Box::new(NoSandbox));
    let (outcome, events) = run(&mut rt, "build and fix", ExecutionMode::Auto).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    let envs = envelopes(&events);
    assert!(envs[0].sandbox_unavailable);
    assert_eq!(envs[1].status, ToolStatus::Denied);
    assert_eq!(envs[1].gate, Some(Gate::SandboxDown));
    assert!(!f.project.join("fix.rs").exists());
}
