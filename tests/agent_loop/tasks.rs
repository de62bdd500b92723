//! The task across its turns: approvals asked with the call's id and answered by request id
//! (yes, no, a stale answer refused and reported, and a cancel while one is pending), and cancellation mid-stream (the model's stream is dropped) and mid-command (the
//! sandboxed command is killed: seen running before, gone after).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use spear::agent::event::{AgentEvent, StopReason};
use spear::agent::task::AnswerError;
use spear::harness::command_policy::ApprovalDecision;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::approval::ApprovalId;

use crate::support::*;

/// Answers each approval with the next decision, collecting every event.
async fn answer_with(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
    task: &spear::agent::task::TaskController,
    mut answers: Vec<Option<ApprovalDecision>>,
) -> Vec<AgentEvent> {
    let mut seen = Vec::new();
    while let Some(e) = rx.recv().await {
        if let AgentEvent::ApprovalRequested { request } = &e {
            assert_eq!(task.pending_approval(), Some(request.id));
            let never_asked = ApprovalId(request.id.0 + 1_000_000);
            assert_eq!(
                task.answer(never_asked, ApprovalDecision::Approve),
                Err(AnswerError::NotPending(never_asked))
            );
            match answers.remove(0) {
                Some(d) => {
                    task.answer(request.id, d).unwrap();
                    // Answered: a second answer to it is refused, whatever it says.
                    assert_eq!(
                        task.answer(request.id, ApprovalDecision::Approve),
                        Err(AnswerError::NotPending(request.id))
                    );
                }
                None => task.cancel(),
            }
        }
        let done = matches!(e, AgentEvent::Done { .. });
        seen.push(e);
        if done {
            break;
        }
    }
    // A refusal this loop reported may have been queued behind `done`.
    while let Ok(e) = rx.try_recv() {
        seen.push(e);
    }
    seen
}

fn statuses(events: &[AgentEvent]) -> Vec<ToolStatus> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallFinished { envelope, .. } => Some(envelope.status),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_asked_by_call_id_and_answered_yes_or_no() {
    let f = Fixture::new();
    let model = ScriptedModel::new(vec![
        calls(&[
            (
                "w-yes",
                "write_file",
                r#"{"path":"yes.txt","content":"approved"}"#,
            ),
            (
                "w-no",
                "write_file",
                r#"{"path":"no.txt","content":"declined"}"#,
            ),
        ]),
        text("One written, one declined."),
    ]);
    let mut rt = f.runtime(model);
    let (task, mut rx) = task(ExecutionMode::Ask);
    let answers = vec![
        Some(ApprovalDecision::Approve),
        Some(ApprovalDecision::Deny(Some("not that one".into()))),
    ];
    let (outcome, events) = tokio::join!(
        rt.run_task("write two files", &task),
        answer_with(&mut rx, &task, answers)
    );
    assert_eq!(outcome.reason, StopReason::Finished);
    let asked: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalRequested { request } => {
                assert_eq!(request.targets.len(), 1);
                assert_eq!(request.tool, "write_file");
                // The request carries the tool's own preview: the file it creates.
                let change = request.preview.as_ref().and_then(|p| p.file_change());
                assert_eq!(change.map(|c| c.before.is_none()), Some(true));
                Some(request.call_id.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["w-yes", "w-no"]);
    // Each refused answer (one never asked, one already answered, per approval) was reported.
    let refused = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ApprovalAnswerRefused { .. }))
        .count();
    assert_eq!(refused, 4);
    assert_eq!(statuses(&events), [ToolStatus::Ok, ToolStatus::Denied]);
    assert_eq!(f.read("yes.txt"), "approved");
    assert!(!f.project.join("no.txt").exists());
    assert_eq!(task.pending_approval(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_an_approval_is_pending_cancels_it_and_the_task() {
    let f = Fixture::new();
    let model = ScriptedModel::new(vec![
        calls(&[
            ("w1", "write_file", r#"{"path":"a.txt","content":"x"}"#),
            ("w2", "write_file", r#"{"path":"b.txt","content":"y"}"#),
        ]),
        text("never asked"),
    ]);
    let mut rt = f.runtime(model.clone());
    let (task, mut rx) = task(ExecutionMode::Ask);
    let (outcome, events) = tokio::join!(
        rt.run_task("write", &task),
        answer_with(&mut rx, &task, vec![None])
    );
    assert_eq!(outcome.reason, StopReason::Cancelled);
    // The pending one was answered cancelled; the next never started.
    assert_eq!(statuses(&events), [ToolStatus::Cancelled]);
    assert!(!f.project.join("a.txt").exists() && !f.project.join("b.txt").exists());
    assert_eq!(model.requests().len(), 1);
    assert!(rt.conversation().iter().any(|m| matches!(m,
        spear::agent::model::ChatMessage::Tool { tool_call_id, content } if tool_call_id == "w2" && content.contains("cancelled"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_stream_drops_the_models_stream() {
    let f = Fixture::new();
    let dropped = Arc::new(AtomicBool::new(false));
    let model = ScriptedModel::new(vec![Step::Hang {
        text: "Let me think".into(),
        dropped: dropped.clone(),
    }]);
    let mut rt = f.runtime(model);
    let (task, mut rx) = task(ExecutionMode::Auto);
    let watcher = async {
        let mut seen = Vec::new();
        while let Some(e) = rx.recv().await {
            if matches!(&e, AgentEvent::TextDelta { text } if text == "Let me think") {
                // The stream is live here: not dropped yet.
                assert!(!dropped.load(Ordering::SeqCst));
                task.cancel();
            }
            let done = matches!(e, AgentEvent::Done { .. });
            seen.push(e);
            if done {
                break;
            }
        }
        seen
    };
    let (outcome, events) = tokio::join!(rt.run_task("think hard", &task), watcher);
    assert_eq!(outcome.reason, StopReason::Cancelled);
    assert!(dropped.load(Ordering::SeqCst), "the stream was not dropped");
    assert!(matches!(
        events.last().unwrap(),
        AgentEvent::Done {
            reason: StopReason::Cancelled,
            ..
        }
    ));
}

/// Processes whose command line is exactly `argv`.
fn processes_running(argv: &[&str]) -> usize {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_command_kills_the_sandboxed_command() {
    let f = Fixture::new();
    // A number no other process on the machine will have on its command line.
    let marker = format!("{}", 7_000_000 + std::process::id());
    let command = format!("echo started; exec sleep {marker}");
    let args = serde_json::json!({"command": command, "timeout": 600}).to_string();
    let model = ScriptedModel::new(vec![
        calls(&[("slow", "terminal", args.as_str())]),
        text("never asked"),
    ]);
    let mut rt = f.runtime(model);
    let (task, mut rx) = task(ExecutionMode::Auto);
    let watcher = async {
        let mut seen = Vec::new();
        let mut was_running = 0;
        while let Some(e) = rx.recv().await {
            if let AgentEvent::ToolCallFinished { envelope, .. } = &e
                && envelope.status != ToolStatus::Cancelled
            {
                panic!(
                    "the command did not run in the sandbox: {:?} {:?}; install bubblewrap",
                    envelope.status, envelope.reason
                );
            }
            if matches!(&e, AgentEvent::OutputChunk { text, .. } if text.contains("started")) {
                // `exec` replaces the shell; wait until the sleep is there (it is an event
                // the command itself causes, so poll /proc for it).
                for _ in 0..500 {
                    was_running = processes_running(&["sleep", &marker]);
                    if was_running > 0 {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                task.cancel();
            }
            let done = matches!(e, AgentEvent::Done { .. });
            seen.push(e);
            if done {
                break;
            }
        }
        (seen, was_running)
    };
    let (outcome, (events, was_running)) = tokio::join!(rt.run_task("wait", &task), watcher);
    assert_eq!(
        was_running, 1,
        "positive control: the sandboxed sleep was seen running"
    );
    assert_eq!(outcome.reason, StopReason::Cancelled);
    let env = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCallFinished { envelope, .. } => Some(envelope.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(env.status, ToolStatus::Cancelled);
    assert!(
        env.reason.as_deref().unwrap().contains("killed"),
        "{:?}",
        env.reason
    );
    assert_eq!(
        processes_running(&["sleep", &marker]),
        0,
        "the sandboxed command survived the cancel"
    );
}
