//! A standard engaged, end to end against the scripted model: a MIXED request runs a normative
//! pass that cites a clause and an implementation pass that edits a file, with the findings
//! carried over and both passes in the transcript; a NORMATIVE request is offered no tool that
//! reaches the working tree, and a call to one is refused; an unsure request asks the model,
//! and a model that cannot answer leaves it MIXED.

use std::sync::Arc;

use spear::agent::event::{AgentEvent, StopReason};
use spear::agent::model::ChatMessage;
use spear::agent::request_class::ClassifiedBy;
use spear::agent::transcript::SessionStore;
use spear::harness::primitives::ExecutionMode;
use spear::tools::coding::CODING_TOOLS;
use spear::tools::exposure::{Pass, RequestClass};
use spear::tools::normative::extract::SourceKind;
use spear::tools::normative::{EngagedStandard, LOOKUP_TOOLS, StandardsLibrary};
use spear::tools::spec::wire_name;

use super::support::{Fixture, ScriptedModel, Step, calls, run, text};

const FIRE_CODE: &str = "# Fire Code\n\n## 4.2 Fire doors\nFire doors shall close by themselves \
within 30 seconds.\n\n## 4.3 Exit doors\nExit doors shall open outwards without a key.\n";

/// A runtime over the coding and normative tools with `fire-code` in the library and engaged.
fn engaged_runtime(
    f: &Fixture,
    model: Arc<ScriptedModel>,
) -> spear::agent::runtime::AgentRuntime<ScriptedModel> {
    let library = Arc::new(StandardsLibrary::open_in(&f.state).unwrap());
    library
        .add(
            "fire-code",
            "fire-code.md",
            SourceKind::Markdown,
            FIRE_CODE.as_bytes(),
        )
        .unwrap();
    let engaged = EngagedStandard::default();
    engaged.set(Some("fire-code".into()));
    drop(library);
    let router = f.router_engaged(engaged.clone());
    spear::agent::runtime::AgentRuntime::new(model, router, f.options()).with_standards(engaged)
}

fn wire(names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|n| wire_name(n)).collect();
    v.sort();
    v
}

fn offered(req: &spear::agent::model::ChatRequest) -> Vec<String> {
    let mut v: Vec<String> = req.tools.iter().map(|t| t.name.clone()).collect();
    v.sort();
    v
}

fn classified(events: &[AgentEvent]) -> (RequestClass, ClassifiedBy) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequestClassified { class, by, .. } => Some((*class, *by)),
            _ => None,
        })
        .expect("no request_classified event")
}

fn passes(events: &[AgentEvent]) -> Vec<(Pass, Vec<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::PassStarted { pass, tools, .. } => Some((*pass, tools.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_mixed_request_cites_a_clause_then_edits_a_file_and_the_transcript_shows_both_passes() {
    let f = Fixture::new();
    let store = SessionStore::open_in(&f.state, &f.project).unwrap();
    let writer = store.create("local", "scripted", "AUTO").unwrap();
    let transcript = writer.path().to_path_buf();
    let quote = "Fire doors shall close by themselves within 30 seconds.";
    let model = ScriptedModel::new(vec![
        calls(&[(
            "n1",
            "standard_read",
            r#"{"standard":"fire-code","clause":"4.2"}"#,
        )]),
        text(&format!("fire-code §4.2 requires: \"{quote}\"")),
        calls(&[(
            "i1",
            "write_file",
            r#"{"path":"src/door.rs","content":"/// fire-code §4.2\npub const CLOSE_WITHIN_SECS: u32 = 30;\n"}"#,
        )]),
        text("src/door.rs now enforces fire-code §4.2."),
    ]);
    let mut rt = engaged_runtime(&f, model.clone()).with_session(writer);
    let (outcome, events) = run(
        &mut rt,
        "Make src/door.rs enforce the closing time that clause 4.2 requires",
        ExecutionMode::Auto,
    )
    .await;
    assert_eq!(outcome.reason, StopReason::Finished, "{events:?}");
    assert_eq!(outcome.tool_calls, 2);
    assert_eq!(
        classified(&events),
        (RequestClass::Mixed, ClassifiedBy::Rules)
    );
    let p = passes(&events);
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(p[0].0, Pass::Normative);
    assert_eq!(p[0].1, {
        let mut l = LOOKUP_TOOLS.map(String::from).to_vec();
        l.sort();
        l
    });
    assert_eq!(p[1].0, Pass::Implementation);
    assert_eq!(p[1].1.len(), 6);

    // What the model was offered in each pass, by wire name: lookups only, then the core's six.
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        4,
        "the rules were sure: no classifying call"
    );
    for r in &requests[..2] {
        assert_eq!(offered(r), wire(&LOOKUP_TOOLS));
    }
    for r in &requests[2..] {
        assert_eq!(offered(r), wire(&CODING_TOOLS));
    }
    // The normative pass is told which tools it has; the implementation pass is not.
    let system = |r: &spear::agent::model::ChatRequest| match &r.messages[0] {
        ChatMessage::System { content } => content.clone(),
        other => panic!("{other:?}"),
    };
    assert!(system(&requests[0]).contains("your tools are exactly: search_corpus, standard_list"));
    assert!(!system(&requests[2]).contains("your tools are exactly"));
    // The normative pass read the clause through the router.
    let read = requests[1]
        .messages
        .iter()
        .find_map(|m| match m {
            ChatMessage::Tool {
                tool_call_id,
                content,
            } if tool_call_id == "n1" => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        read.contains("[fire-code §4.2]") && read.contains(quote),
        "{read}"
    );
    // The implementation pass was handed the findings: the reference and the quote.
    let handed = requests[2]
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ChatMessage::User { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        handed.starts_with("[Spear: implementation pass"),
        "{handed}"
    );
    assert!(
        handed.contains("fire-code §4.2") && handed.contains(quote),
        "{handed}"
    );
    assert!(
        f.read("src/door.rs")
            .contains("CLOSE_WITHIN_SECS: u32 = 30")
    );

    // The transcript keeps the classification, both passes, and each pass's call.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "event")
        .map(|l| &l["event"])
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k}: {kinds:?}"))
    };
    assert_eq!(events[at("request_classified")]["class"], "MIXED");
    let passes_at: Vec<usize> = kinds
        .iter()
        .enumerate()
        .filter(|(_, k)| **k == "pass_started")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(passes_at.len(), 2);
    assert_eq!(events[passes_at[0]]["pass"], "normative");
    assert_eq!(events[passes_at[1]]["pass"], "implementation");
    let finished: Vec<(usize, &str)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "tool_call_finished")
        .map(|(i, e)| (i, e["envelope"]["tool"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(finished.len(), 2, "{finished:?}");
    // The spec's names in the record, whatever the wire called them.
    assert_eq!(
        (finished[0].1, finished[1].1),
        ("standard.read", "write_file")
    );
    assert!(finished[0].0 > passes_at[0] && finished[0].0 < passes_at[1]);
    assert!(finished[1].0 > passes_at[1]);
}

#[tokio::test]
async fn a_normative_request_is_offered_no_working_tree_tool_and_calling_one_is_refused() {
    let f = Fixture::new();
    f.write("secret.txt", "not for a normative question");
    let model = ScriptedModel::new(vec![
        calls(&[
            ("x1", "write_file", r#"{"path":"made.txt","content":"x"}"#),
            ("x2", "workspace_read_file", r#"{"path":"secret.txt"}"#),
            (
                "x3",
                "workspace_terminal",
                r#"{"command":"cat secret.txt"}"#,
            ),
        ]),
        text("fire-code §4.3: exit doors open outwards without a key."),
    ]);
    let mut rt = engaged_runtime(&f, model.clone());
    let (outcome, events) = run(
        &mut rt,
        "What does the standard say about exit doors?",
        ExecutionMode::Auto,
    )
    .await;
    assert_eq!(outcome.reason, StopReason::Finished);
    assert_eq!(
        classified(&events),
        (RequestClass::Normative, ClassifiedBy::Rules)
    );
    let requests = model.requests();
    assert_eq!(offered(&requests[0]), wire(&LOOKUP_TOOLS));
    let refused: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallFinished { envelope, .. } => Some(format!(
                "{} {:?} {}",
                envelope.tool,
                envelope.gate,
                envelope.reason.clone().unwrap_or_default()
            )),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 3, "{refused:?}");
    for r in &refused {
        assert!(
            r.contains("RequestScope") && r.contains("not offered"),
            "{r}"
        );
    }
    assert!(!f.project.join("made.txt").exists());
    for m in &requests[1].messages {
        if let ChatMessage::Tool { content, .. } = m {
            assert!(
                !content.contains("not for a normative question"),
                "{content}"
            );
        }
    }
}

#[tokio::test]
async fn an_unsure_request_asks_the_model_and_a_failing_model_leaves_it_mixed() {
    let f = Fixture::new();
    let model = ScriptedModel::new(vec![text("NORMATIVE"), text("fire-code §4.2 says 30 s.")]);
    let mut rt = engaged_runtime(&f, model.clone());
    let (outcome, events) = run(&mut rt, "doors", ExecutionMode::Safe).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    assert_eq!(
        classified(&events),
        (RequestClass::Normative, ClassifiedBy::Model)
    );
    let requests = model.requests();
    assert!(requests[0].tools.is_empty() && requests[0].max_tokens <= 16);
    assert_eq!(offered(&requests[1]), wire(&LOOKUP_TOOLS));

    let f = Fixture::new();
    let model = ScriptedModel::new(vec![
        Step::Fail("the server is down".into()),
        text("normative answer"),
        text("implementation answer"),
    ]);
    let mut rt = engaged_runtime(&f, model.clone());
    let (outcome, events) = run(&mut rt, "doors", ExecutionMode::Safe).await;
    assert_eq!(outcome.reason, StopReason::Finished);
    assert_eq!(
        classified(&events),
        (RequestClass::Mixed, ClassifiedBy::Fallback)
    );
    let note = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequestClassified { note, .. } => note.clone(),
            _ => None,
        })
        .unwrap();
    assert!(
        note.contains("the server is down") && note.contains("both passes"),
        "{note}"
    );
    assert_eq!(passes(&events).len(), 2);
}

#[tokio::test]
async fn with_no_standard_engaged_nothing_is_classified_and_the_core_answers() {
    let f = Fixture::new();
    let model = ScriptedModel::new(vec![text("ok")]);
    let mut rt = engaged_runtime(&f, model.clone());
    rt.set_standard(None);
    let (_, events) = run(&mut rt, "What does the standard say?", ExecutionMode::Safe).await;
    assert!(
        events.iter().all(|e| e.normative_line().is_none()),
        "{events:?}"
    );
    assert_eq!(offered(&model.requests()[0]), wire(&CODING_TOOLS));
}
