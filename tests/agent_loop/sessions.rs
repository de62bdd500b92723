//! Sessions: the transcript is written as the task goes (readable while an approval waits),
//! holds previews and no deltas, resumes into the same conversation, survives a crash mid-call,
//! and lists only this workspace's sessions.

use std::io::Write;

use spear::agent::event::{AgentEvent, StopReason};
use spear::agent::model::ChatMessage;
use spear::agent::transcript::{SessionError, SessionStore};
use spear::harness::command_policy::ApprovalDecision;
use spear::harness::primitives::ExecutionMode;

use crate::support::*;

fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transcript_is_written_as_the_task_goes_and_resumes() {
    let f = Fixture::new();
    let store = SessionStore::open_in(&f.state, &f.project).unwrap();
    let writer = store.create("local", "scripted", "ASK").unwrap();
    let id = writer.id().to_string();
    let path = writer.path().to_path_buf();
    let model = ScriptedModel::new(vec![
        calls(&[("w1", "write_file", r#"{"path":"a.txt","content":"hello"}"#)]),
        text("Wrote a.txt."),
        text("Second request answered."),
    ]);
    let mut rt = f.runtime(model.clone()).with_session(writer);
    let (task, mut rx) = task(ExecutionMode::Ask);
    let watcher = async {
        let mut on_disk_while_waiting = Vec::new();
        while let Some(e) = rx.recv().await {
            if let AgentEvent::ApprovalRequested { request } = &e {
                // Mid-task: what happened so far is already on disk.
                on_disk_while_waiting = records(&path);
                task.answer(request.id, ApprovalDecision::Approve).unwrap();
            }
            if matches!(e, AgentEvent::Done { .. }) {
                break;
            }
        }
        on_disk_while_waiting
    };
    let (outcome, mid) = tokio::join!(rt.run_task("write a.txt", &task), watcher);
    assert_eq!(outcome.reason, StopReason::Finished);
    let mid_types: Vec<&str> = mid.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(
        mid_types,
        ["session", "message", "message", "event"],
        "{mid:?}"
    );
    assert_eq!(mid[3]["event"]["type"], "tool_call_started");
    let all = records(&path);
    assert!(all.iter().all(|r| !matches!(
        r["event"]["type"].as_str(),
        Some("text_delta" | "reasoning_delta" | "output_chunk")
    )));
    let finished = all
        .iter()
        .find(|r| r["event"]["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(finished["event"]["envelope"]["status"], "ok");
    assert_eq!(finished["event"]["envelope"]["stdout"], "");
    assert_eq!(all.last().unwrap()["event"]["type"], "done");
    assert_eq!(all[0]["id"], id.as_str());
    assert_eq!(all[0]["model"], "scripted");

    // Resume: the same conversation, and the next request builds on it.
    let (loaded, writer) = store.resume(&id).unwrap();
    assert_eq!(loaded.messages, rt.conversation());
    let mut again = f
        .runtime(model.clone())
        .with_conversation(loaded.messages)
        .with_session(writer);
    let (outcome, _) = run(&mut again, "and now?", ExecutionMode::Ask).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    let last = model.requests().pop().unwrap();
    let users: Vec<&str> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["write a.txt", "and now?"]);
    assert!(records(&path).iter().any(|r| r["type"] == "resumed"));
    assert_eq!(store.load(&id).unwrap().messages, again.conversation());
}

#[test]
fn a_session_cut_by_a_crash_mid_call_loads_with_the_call_answered() {
    let f = Fixture::new();
    let store = SessionStore::open_in(&f.state, &f.project).unwrap();
    let w = store.create("local", "m", "AUTO").unwrap();
    let path = w.path().to_path_buf();
    let id = w.id().to_string();
    drop(w);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let lines = [
        r#"{"type":"message","message":{"role":"user","content":"build it"}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","name":"terminal","arguments":"{\"command\":\"make\"}"}]}}"#,
        r#"{"type":"event","event":{"type":"tool_call_started","call_id":"c1","name":"terminal","arguments":{}}}"#,
        r#"{"type":"message","message":{"role":"tool","tool_c"#,
    ];
    file.write_all(lines.join("\n").as_bytes()).unwrap();
    let s = store.load(&id).unwrap();
    assert_eq!(s.messages.len(), 3);
    assert!(
        matches!(&s.messages[2], ChatMessage::Tool { tool_call_id, content }
        if tool_call_id == "c1" && content.starts_with("[cancelled]"))
    );
    assert!(s.torn.is_some(), "the torn line is reported");
    // Resumed, written to, and resumed again: the torn line was cut off, not glued onto the
    // next record (which would make the file unreadable from there on).
    let (_, mut w) = store.resume(&id).unwrap();
    w.write(&spear::agent::transcript::SessionRecord::Message {
        message: &ChatMessage::User {
            content: "go on".into(),
        },
    })
    .unwrap();
    drop(w);
    let again = store.load(&id).unwrap();
    assert_eq!(again.torn, None);
    assert_eq!(again.messages.len(), 4, "{:?}", again.messages);
    let (_, _w) = store.resume(&id).unwrap();
}

#[test]
fn sessions_list_only_this_workspace_and_bad_ids_are_refused() {
    let f = Fixture::new();
    let other = f.project.parent().unwrap().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let mine = SessionStore::open_in(&f.state, &f.project).unwrap();
    let theirs = SessionStore::open_in(&f.state, &other).unwrap();
    let a = mine.create("p", "m1", "ASK").unwrap().id().to_string();
    theirs.create("p", "m2", "ASK").unwrap();
    let list = mine.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, a);
    assert_eq!(list[0].model, "m1");
    assert!(matches!(mine.load("../x"), Err(SessionError::BadId(_))));
    assert!(matches!(
        mine.load("20990101T000000-0000"),
        Err(SessionError::NotFound { .. })
    ));
}

#[test]
fn sessions_started_in_the_same_second_get_distinct_ids() {
    let f = Fixture::new();
    let store = SessionStore::open_in(&f.state, &f.project).unwrap();
    let ids: std::collections::BTreeSet<String> = (0..40)
        .map(|_| store.create("p", "m", "ASK").unwrap().id().to_string())
        .collect();
    assert_eq!(ids.len(), 40);
    assert_eq!(store.list().unwrap().len(), 40);
}
