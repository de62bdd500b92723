//! The loop with a scripted model: text only, tool calls routed in order with their answers
//! sent back under the calls' ids, malformed arguments answered `invalid`, the tool-call limit,
//! and truncation reported to the person and the model.

use spear::agent::event::{AgentEvent, StopReason};
use spear::agent::model::{ChatMessage, FinishReason, ModelResponse, ToolCallRequest};
use spear::harness::primitives::{ExecutionMode, ToolStatus};

use crate::support::*;

#[tokio::test]
async fn a_text_answer_streams_and_ends_the_task() {
    let f = Fixture::new();
    let model = ScriptedModel::new(vec![text("Hello there, all done.")]);
    let mut rt = f.runtime(model.clone());
    let (outcome, events) = run(&mut rt, "say hello", ExecutionMode::Ask).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Hello there, all done.");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TextDelta { .. }))
            .count()
            > 1
    );
    assert_eq!(kinds(&events), ["usage", "done"]);
    // The request: Spear's system prompt first, then the objective; the six tools offered.
    let req = &model.requests()[0];
    let ChatMessage::System { content } = &req.messages[0] else {
        panic!("no system prompt: {:?}", req.messages[0])
    };
    assert!(
        content.contains("ASK") && content.contains("terminal"),
        "{content}"
    );
    assert_eq!(
        req.messages[1],
        ChatMessage::User {
            content: "say hello".into()
        }
    );
    let mut names: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "delete_file",
            "patch",
            "read_file",
            "search_files",
            "terminal",
            "write_file"
        ]
    );
    assert_eq!(req.max_tokens, 1000);
    assert_eq!(rt.conversation().len(), 2);
}

#[tokio::test]
async fn tool_calls_run_in_order_and_each_answer_carries_its_calls_id() {
    let f = Fixture::new();
    f.write("notes.txt", "alpha\nbeta\n");
    let rec = Recorder::default();
    let model = ScriptedModel::new(vec![
        calls(&[
            ("call_b", "read_file", r#"{"path":"notes.txt"}"#),
            ("call_a", "terminal", r#"{"command":"git status"}"#),
            ("call_c", "search_files", r#"{"pattern":"beta"}"#),
        ]),
        text("Read, ran and searched."),
    ]);
    let mut rt = f.recording_runtime(model.clone(), Box::new(rec.clone()));
    let (outcome, events) = run(&mut rt, "look around", ExecutionMode::Auto).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    assert_eq!(outcome.tool_calls, 3);
    assert_eq!(
        kinds(&events),
        [
            "tool_call_started",
            "tool_call_finished",
            "tool_call_started",
            "tool_call_finished",
            "tool_call_started",
            "tool_call_finished",
            "usage",
            "done"
        ]
    );
    let started: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallStarted { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["call_b", "call_a", "call_c"]);
    assert_eq!(*rec.ran.lock().unwrap(), ["git status"]);
    // The output of the command reached the person as it ran.
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::OutputChunk { call_id, text, .. } if call_id == "call_a" && text.contains("ran: git status"))));
    // The second request carries the assistant's calls, then one tool message per call, in
    // order, each naming its call.
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    let tail = &reqs[1].messages[2..];
    assert!(matches!(&tail[0], ChatMessage::Assistant { tool_calls, .. } if tool_calls.len() == 3));
    let answers: Vec<(&str, &str)> = tail[1..]
        .iter()
        .map(|m| match m {
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => (tool_call_id.as_str(), content.as_str()),
            other => panic!("expected a tool message, got {other:?}"),
        })
        .collect();
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0].0, "call_b");
    assert!(answers[0].1.contains("beta"), "{}", answers[0].1);
    assert_eq!(answers[1].0, "call_a");
    assert!(answers[1].1.contains("ran: git status"), "{}", answers[1].1);
    assert_eq!(answers[2].0, "call_c");
    assert!(answers[2].1.contains("notes.txt"), "{}", answers[2].1);
}

#[tokio::test]
async fn malformed_arguments_are_answered_invalid_and_the_loop_goes_on() {
    let f = Fixture::new();
    let model = ScriptedModel::new(vec![
        calls(&[
            ("c1", "read_file", r#"{"path": "a.txt""#),
            ("c2", "read_file", r#"["a.txt"]"#),
            // Sent JSON-encoded twice: read once more, then it is a good call.
            ("c3", "read_file", r#""{\"path\":\"a.txt\"}""#),
        ]),
        text("I will fix my call."),
    ]);
    f.write("a.txt", "content of a\n");
    let mut rt = f.runtime(model.clone());
    let (outcome, events) = run(&mut rt, "read a", ExecutionMode::Safe).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    let finished: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallFinished { envelope, .. } => Some(envelope.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 3);
    for env in &finished[..2] {
        assert_eq!(env.status, ToolStatus::Failed);
        let reason = env.reason.as_deref().unwrap();
        assert!(reason.starts_with("invalid arguments"), "{reason}");
    }
    assert!(
        finished[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("not valid JSON")
    );
    assert!(finished[1].reason.as_deref().unwrap().contains("an array"));
    assert_eq!(finished[2].status, ToolStatus::Ok);
    // The model is told, under the call's id.
    let second = &model.requests()[1].messages;
    assert!(second.iter().any(|m| matches!(m,
        ChatMessage::Tool { tool_call_id, content } if tool_call_id == "c1" && content.contains("invalid arguments"))));
    // A malformed call is a refusal like any other: audited.
    assert!(
        f.audit()
            .iter()
            .any(|r| r.refusal_rule.as_deref() == Some("invalid_arguments"))
    );
}

#[tokio::test]
async fn the_tool_call_limit_ends_the_request_and_answers_every_call() {
    let f = Fixture::new();
    let rec = Recorder::default();
    let model = ScriptedModel::new(vec![
        calls(&[
            ("c1", "terminal", r#"{"command":"ls"}"#),
            ("c2", "terminal", r#"{"command":"pwd"}"#),
            ("c3", "terminal", r#"{"command":"date"}"#),
        ]),
        text("never asked"),
    ]);
    let mut opts = f.options();
    opts.max_tool_calls = 2;
    let mut rt2 = spear::agent::runtime::AgentRuntime::new(
        model.clone(),
        f.recording_router(Box::new(rec.clone())),
        opts,
    );
    let (outcome, events) = run(&mut rt2, "list", ExecutionMode::Auto).await;
    assert_eq!(outcome.reason, StopReason::ToolCallLimit);
    assert_eq!(outcome.tool_calls, 2);
    assert_eq!(*rec.ran.lock().unwrap(), ["ls", "pwd"]);
    assert_eq!(model.requests().len(), 1, "no request after the limit");
    let done = events.last().unwrap();
    assert!(
        matches!(done, AgentEvent::Done { reason: StopReason::ToolCallLimit, message: Some(m), .. } if m.contains("limit of 2 tool calls"))
    );
    // The third call is still answered, so the conversation stays valid.
    assert!(rt2.conversation().iter().any(|m| matches!(m,
        ChatMessage::Tool { tool_call_id, content } if tool_call_id == "c3" && content.contains("not run"))));
}

#[tokio::test]
async fn a_response_cut_at_the_token_cap_is_reported_to_person_and_model() {
    let f = Fixture::new();
    let cut = |content: &str, calls: Vec<ToolCallRequest>| {
        Step::Respond(ModelResponse {
            content: content.into(),
            reasoning: String::new(),
            tool_calls: calls,
            finish_reason: FinishReason::Length,
            usage: None,
        })
    };
    let model = ScriptedModel::new(vec![
        cut(
            "",
            vec![ToolCallRequest {
                id: "w1".into(),
                name: "write_file".into(),
                arguments: r#"{"path":"big.txt","content":"aaaa"#.into(),
            }],
        ),
        cut("Here is the start of a long answ", Vec::new()),
    ]);
    let mut rt = f.runtime(model.clone());
    let (outcome, events) = run(&mut rt, "write a big file", ExecutionMode::Auto).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    let truncated = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::Truncated {
                    max_tokens: 1000,
                    ..
                }
            )
        })
        .count();
    assert_eq!(truncated, 2, "{events:?}");
    // The cut call is answered invalid, saying why.
    let env = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCallFinished { envelope, .. } => Some(envelope.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        env.reason.as_deref().unwrap().contains("truncated"),
        "{:?}",
        env.reason
    );
    assert!(!f.project.join("big.txt").exists());
    // The model's next request says its response was truncated.
    let second = &model.requests()[1].messages;
    assert!(matches!(second.last().unwrap(),
        ChatMessage::User { content } if content.contains("truncated")));
    // And the conversation keeps that note for the next request too.
    assert!(matches!(rt.conversation().last().unwrap(),
        ChatMessage::User { content } if content.contains("truncated")));
}

#[tokio::test]
async fn a_model_error_ends_the_task_with_its_message() {
    let f = Fixture::new();
    let model = ScriptedModel::new(vec![
        calls(&[("c1", "read_file", r#"{"path":"missing.txt"}"#)]),
        Step::Fail(
            "401 Unauthorized from http://127.0.0.1:9/v1 (model m): check the API key".into(),
        ),
    ]);
    let mut rt = f.runtime(model);
    let (outcome, events) = run(&mut rt, "read", ExecutionMode::Safe).await;
    assert_eq!(outcome.reason, StopReason::Error);
    assert_eq!(outcome.tool_calls, 1);
    let k = kinds(&events);
    assert_eq!(&k[k.len() - 2..], ["error", "done"]);
    assert!(
        matches!(&events[events.len() - 2], AgentEvent::Error { message } if message.contains("401 Unauthorized"))
    );
    // The conversation stays valid: the call that ran is answered.
    assert!(
        matches!(rt.conversation().last().unwrap(), ChatMessage::Tool { tool_call_id, .. } if tool_call_id == "c1")
    );
}
