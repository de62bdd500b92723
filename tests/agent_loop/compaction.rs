//! The context budget: over the window, older tool outputs are replaced by `result://`
//! references that still read back whole; when that is not enough, the earlier conversation is
//! summarised by the model; `/compact` does both on demand.

use std::sync::Arc;

use spear::agent::context::ELIDED;
use spear::agent::event::{AgentEvent, StopReason};
use spear::agent::model::ChatMessage;
use spear::agent::runtime::AgentRuntime;
use spear::harness::primitives::ExecutionMode;

use crate::support::*;

fn compactions(events: &[AgentEvent]) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Compacted {
                how,
                tokens_before,
                tokens_after,
            } => {
                assert!(tokens_after < tokens_before, "{e:?}");
                Some(*how)
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn over_the_window_old_outputs_become_references_that_read_back_whole() {
    let f = Fixture::new();
    let big: String = (0..200)
        .map(|i| format!("line {i} of the big file\n"))
        .collect();
    f.write("big.txt", &big);
    let medium: String = (0..60).map(|i| format!("medium {i}\n")).collect();
    f.write("medium.txt", &medium);
    let ref_call = r#"{"path":"RESULT"}"#;
    let script = || {
        ScriptedModel::new(vec![
            calls(&[("r1", "read_file", r#"{"path":"big.txt"}"#)]),
            calls(&[("r2", "read_file", r#"{"path":"medium.txt"}"#)]),
            text("done"),
        ])
    };
    // Measure the requests without a window, then set one between the second and the third:
    // the big output fits while it is the latest, and must go once the medium one comes.
    let dry = script();
    let mut rt = f.runtime(dry.clone());
    run(&mut rt, "read both", ExecutionMode::Safe).await;
    let sizes: Vec<u64> = dry
        .requests()
        .iter()
        .map(|r| spear::agent::context::estimate_tokens(&r.messages, &r.tools))
        .collect();
    assert!(sizes[2] > sizes[1] + 100, "{sizes:?}");
    let model = script();
    let mut opts = f.options();
    opts.response_max_tokens = 500;
    opts.context_window = Some((sizes[1] + sizes[2]) / 2 + 500);
    let mut rt = AgentRuntime::new(model.clone(), f.router(), opts);
    let (outcome, events) = run(&mut rt, "read both", ExecutionMode::Safe).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    assert_eq!(compactions(&events), ["tool_outputs"]);
    let reqs = model.requests();
    // Positive control: the second request still carried the whole output (latest exchange).
    assert!(reqs[1].messages.iter().any(
        |m| matches!(m, ChatMessage::Tool { content, .. } if content.contains("line 199 of"))
    ));
    // The third carried a reference instead.
    let elided = reqs[2]
        .messages
        .iter()
        .find_map(|m| match m {
            ChatMessage::Tool {
                tool_call_id,
                content,
            } if tool_call_id == "r1" => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(elided.starts_with(ELIDED), "{elided}");
    assert!(!elided.contains("line 199 of"));
    let uri = elided
        .split_whitespace()
        .find(|w| w.starts_with("result://"))
        .unwrap()
        .trim_end_matches([';', ','])
        .to_string();
    // The reference reads back the whole output through the same tool.
    let router = f.router();
    let view =
        spear::tools::exposure::ToolExposurePolicy::view(router.registry(), &Default::default());
    let mut turn = spear::tools::router::turn::Turn::new(
        ExecutionMode::Safe,
        view,
        Arc::new(spear::harness::command_policy::NoApprover),
    );
    let call = spear::tools::router::ToolCall {
        id: "x".into(),
        name: "read_file".into(),
        arguments: serde_json::from_str(&ref_call.replace("RESULT", &uri)).unwrap(),
    };
    let env = router.call(&mut turn, &call).unwrap();
    assert!(
        env.preview.contains("line 199 of the big file"),
        "{}",
        env.preview
    );
}

#[tokio::test]
async fn when_references_are_not_enough_the_earlier_conversation_is_summarised() {
    let f = Fixture::new();
    let long_answer = "The parser reads tokens one by one. ".repeat(350); // ~12 KB
    let model = ScriptedModel::new(vec![
        text(&long_answer),
        // The summary request (no tools) comes before the second request's answer.
        text("SUMMARY: the user asked for a parser refactor; nothing was changed yet."),
        text("Second answer."),
    ]);
    let mut opts = f.options();
    opts.context_window = Some(4000);
    opts.response_max_tokens = 500;
    let mut rt = AgentRuntime::new(model.clone(), f.router(), opts);
    let (first, _) = run(&mut rt, "Please refactor the parser.", ExecutionMode::Safe).await;
    assert_eq!(first.reason, StopReason::Finished);
    let (second, events) = run(&mut rt, "and now the lexer", ExecutionMode::Safe).await;
    assert_eq!(second.reason, StopReason::Finished);
    assert_eq!(compactions(&events), ["summary"]);
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    // The summary request: no tools, the earlier conversation as text.
    assert!(reqs[1].tools.is_empty());
    assert!(matches!(&reqs[1].messages[1], ChatMessage::User { content }
        if content.contains("Please refactor the parser") && content.contains("reads tokens one by one")));
    // The answered request: the summary, then the current request, and no long text.
    let convo = &reqs[2].messages[1..];
    assert!(
        matches!(&convo[0], ChatMessage::User { content } if content.contains("SUMMARY: the user asked"))
    );
    assert!(matches!(&convo[1], ChatMessage::User { content } if content == "and now the lexer"));
    assert_eq!(convo.len(), 2, "{convo:?}");
}

#[tokio::test]
async fn compact_on_demand_shortens_even_under_the_window() {
    let f = Fixture::new();
    let model = ScriptedModel::new(vec![
        text("An answer."),
        text("SUMMARY: one question, one answer."),
    ]);
    let mut rt = f.runtime(model.clone());
    run(&mut rt, "a question", ExecutionMode::Safe).await;
    run_compact(&mut rt).await;
    assert_eq!(rt.conversation().len(), 1);
    assert!(
        matches!(&rt.conversation()[0], ChatMessage::User { content } if content.contains("SUMMARY: one question"))
    );
}

async fn run_compact(rt: &mut AgentRuntime<ScriptedModel>) {
    let (t, mut rx) = task(ExecutionMode::Safe);
    rt.compact(&t).await.unwrap_or_else(|e| panic!("{e}"));
    let _ = drain(&mut rx);
}

#[tokio::test]
async fn a_server_that_says_the_context_overflowed_gets_one_shortened_retry() {
    let f = Fixture::new();
    let big: String = (0..300).map(|i| format!("row {i} of the data\n")).collect();
    f.write("data.txt", &big);
    let model =
        ScriptedModel::new(vec![
        calls(&[("r1", "read_file", r#"{"path":"data.txt"}"#)]),
        calls(&[("r2", "read_file", r#"{"path":"data.txt","offset":1,"limit":1}"#)]),
        Step::Fail(
            "http://127.0.0.1:9/v1 rejected the request for model `m` (HTTP 400): This model's \
             maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
                .into(),
        ),
        text("SUMMARY: the data file was read."),
        text("The data has 300 rows."),
    ]);
    // No window configured: only the server's error says it overflowed.
    let mut rt = f.runtime(model.clone());
    let (outcome, events) = run(&mut rt, "how many rows?", ExecutionMode::Safe).await;
    assert_eq!(outcome.reason, StopReason::Finished, "{events:?}");
    assert_eq!(compactions(&events), ["tool_outputs", "summary"]);
    let reqs = model.requests();
    assert_eq!(reqs.len(), 5);
    // The retried request no longer carries the first whole output.
    let retried = &reqs[4].messages;
    assert!(
        !retried.iter().any(
            |m| matches!(m, ChatMessage::Tool { content, .. } if content.contains("row 299 of"))
        )
    );
    assert!(retried.iter().any(
        |m| matches!(m, ChatMessage::User { content } if content.contains("SUMMARY: the data file"))
    ));
    // A different error is not retried.
    let model = ScriptedModel::new(vec![Step::Fail("HTTP 500: internal error".into())]);
    let mut rt = f.runtime(model.clone());
    let (outcome, _) = run(&mut rt, "again", ExecutionMode::Safe).await;
    assert_eq!(outcome.reason, StopReason::Error);
    assert_eq!(model.requests().len(), 1);
}
