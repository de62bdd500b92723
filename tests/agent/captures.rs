//! Every real capture in `shared/data/sse` replayed over real HTTP, cut into chunks at several
//! boundaries (one byte each, small, odd and varying sizes, whole), against its sidecar: text,
//! tool calls (names, parsed arguments, ids), finish reason, and the error object of a stream
//! that fails part-way.

use serde_json::Value;
use spear::agent::model::StreamDelta;
use spear::agent::provider::ProviderError;
use spear::agent::provider::assemble::finish_reason_from_wire;

use crate::common::{Outcome, captures, client, complete, request};
use crate::support::mock_server::{MockServer, Reply};

/// The ways each body is cut into HTTP chunks.
const SPLITS: &[&[usize]] = &[
    &[usize::MAX],
    &[1],
    &[7],
    &[64],
    &[3, 1, 17, 2, 251, 5, 1, 1, 90],
    &[4096],
];

#[tokio::test]
async fn every_capture_assembles_as_its_sidecar_says_however_it_is_chunked() {
    let captures = captures();
    assert_eq!(
        captures.len(),
        33,
        "expected the 33 captures of shared/data/sse"
    );
    let script = SPLITS.iter().flat_map(|split| {
        captures
            .iter()
            .map(move |(_, body, _)| Reply::sse(body.clone()).split(split))
    });
    let server = MockServer::start(script);
    let client = client(&server);
    let mut checked = 0;
    for split in SPLITS {
        for (name, body, sidecar) in &captures {
            let outcome = complete(&client, &request()).await;
            let label = format!("{name} cut in {split:?}");
            check(&label, body, sidecar, &outcome);
            checked += 1;
        }
    }
    assert_eq!(checked, 33 * SPLITS.len());
    assert_eq!(
        server.hits(),
        checked,
        "one request per replay: nothing was retried"
    );
}

fn check(label: &str, body: &[u8], sidecar: &Value, outcome: &Outcome) {
    let expect = &sidecar["expect"];
    assert_eq!(
        outcome.streamed_text(),
        expect["content"].as_str().unwrap(),
        "{label}: streamed text"
    );
    if let Some(error) = expect.get("error") {
        match &outcome.result {
            Err(ProviderError::InStream {
                error: got,
                message,
            }) => {
                assert_eq!(got, error, "{label}: the error object");
                let wanted = error["message"].as_str().unwrap();
                assert_eq!(
                    message, wanted,
                    "{label}: the error names the server's message"
                );
                assert!(
                    outcome.error().to_string().contains(wanted),
                    "{label}: the error's text"
                );
            }
            other => panic!("{label}: expected the in-stream error, got {other:?}"),
        }
        return;
    }
    let response = outcome.response();
    assert_eq!(
        response.content,
        expect["content"].as_str().unwrap(),
        "{label}: content"
    );
    assert_eq!(
        response.finish_reason,
        finish_reason_from_wire(expect["finish_reason"].as_str()),
        "{label}: finish reason"
    );
    let wanted = expect["tool_calls"].as_array().unwrap();
    let names: Vec<&str> = response
        .tool_calls
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let wanted_names: Vec<&str> = wanted.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, wanted_names, "{label}: tool call names");
    for (call, want) in response.tool_calls.iter().zip(wanted) {
        let parsed: Value = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|e| panic!("{label}: arguments of {} are not JSON ({e})", call.name));
        assert_eq!(
            parsed, want["arguments"],
            "{label}: arguments of {}",
            call.name
        );
    }
    let ids: Vec<&str> = response.tool_calls.iter().map(|c| c.id.as_str()).collect();
    match expect.get("tool_call_ids") {
        Some(wanted_ids) => {
            let wanted_ids: Vec<&str> = wanted_ids
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_str().unwrap())
                .collect();
            assert_eq!(ids, wanted_ids, "{label}: tool call ids");
        }
        None => {
            let mut unique = ids.clone();
            unique.sort();
            unique.dedup();
            assert!(
                ids.iter().all(|id| !id.is_empty()) && unique.len() == ids.len(),
                "{label}: invented ids must be non-empty and distinct: {ids:?}"
            );
        }
    }
    check_deltas(label, outcome);
    // The sidecar counts the characters of `reasoning_content` and `reasoning`; text that only
    // `reasoning_details` or Mistral's `thinking` parts carry is reasoning too.
    let counted = sidecar["detected"]["stats"]["reasoning_chars"]
        .as_u64()
        .unwrap_or(0);
    let body = String::from_utf8_lossy(body);
    let elsewhere =
        body.contains(r#""type":"thinking""#) || body.contains(r#""type":"reasoning.text""#);
    if counted > 0 {
        assert_eq!(
            response.reasoning.chars().count() as u64,
            counted,
            "{label}: reasoning, each piece counted once"
        );
    } else {
        assert_eq!(
            !response.reasoning.is_empty(),
            elsewhere,
            "{label}: reasoning"
        );
    }
    assert!(
        response.reasoning.is_empty() || !response.content.contains(response.reasoning.trim()),
        "{label}: reasoning is never content"
    );
}

/// The deltas tell the same story as the response: every call announced once with its final
/// id and name, and its argument fragments adding up to its arguments.
fn check_deltas(label: &str, outcome: &Outcome) {
    let response = outcome.response();
    let mut announced = Vec::new();
    let mut arguments = vec![String::new(); response.tool_calls.len()];
    let mut reasoning = String::new();
    for delta in &outcome.deltas {
        match delta {
            StreamDelta::ToolCallStarted { index, id, name } => {
                announced.push((*index, id.clone(), name.clone()))
            }
            StreamDelta::ToolCallArguments { index, fragment } => {
                arguments[*index].push_str(fragment)
            }
            StreamDelta::Reasoning(text) => reasoning.push_str(text),
            StreamDelta::Retrying { .. } => panic!("{label}: nothing may be retried"),
            _ => {}
        }
    }
    let expected: Vec<(usize, String, String)> = response
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| (i, c.id.clone(), c.name.clone()))
        .collect();
    assert_eq!(announced, expected, "{label}: ToolCallStarted deltas");
    for (call, streamed) in response.tool_calls.iter().zip(&arguments) {
        if !streamed.is_empty() {
            assert_eq!(&call.arguments, streamed, "{label}: argument fragments");
        }
    }
    assert_eq!(reasoning, response.reasoning, "{label}: reasoning deltas");
}
