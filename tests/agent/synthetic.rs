//! SYNTHETIC streams: the variations of the issue's list that no capture in shared/data/sse
//! shows (its README: no CRLF, no `data:` without the space, no arguments as an object, no
//! repeated non-empty id), and edge cases of the assembly rules. Each is written out byte for
//! byte, labelled synthetic, and replayed over real HTTP whole and in 1-byte and odd chunks.

use serde_json::{Value, json};
use spear::agent::model::{FinishReason, ModelResponse, StreamDelta, ToolCallRequest};
use spear::agent::provider::ProviderError;

use crate::common::{Outcome, client, complete, request};
use crate::support::mock_server::{MockServer, Reply};

/// Stands for an id the client invented (the server sent none).
const INVENTED: &str = "<invented>";

const SPLITS: &[&[usize]] = &[&[usize::MAX], &[1], &[3, 11, 2]];

async fn replay(body: &str) -> Vec<Outcome> {
    let server = MockServer::start(SPLITS.iter().map(|s| Reply::sse(body).split(s)));
    let client = client(&server);
    let mut outcomes = Vec::new();
    for _ in SPLITS {
        outcomes.push(complete(&client, &request()).await);
    }
    outcomes
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn answer(content: &str, calls: Vec<ToolCallRequest>, finish: FinishReason) -> ModelResponse {
    ModelResponse {
        content: content.into(),
        reasoning: String::new(),
        tool_calls: calls,
        finish_reason: finish,
        usage: None,
    }
}

/// Every split gives `expected`; invented ids are distinct, and the ones announced.
async fn expect(body: &str, expected: ModelResponse) {
    for (outcome, split) in replay(body).await.iter().zip(SPLITS) {
        let mut got = outcome.response().clone();
        let announced: Vec<String> = outcome
            .deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::ToolCallStarted { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        let ids: Vec<String> = got.tool_calls.iter().map(|c| c.id.clone()).collect();
        assert_eq!(announced, ids, "cut in {split:?}: announced ids");
        for call in &mut got.tool_calls {
            if call.id.starts_with("call_spear_") {
                call.id = INVENTED.into();
            }
        }
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            ids.len(),
            "cut in {split:?}: ids are distinct"
        );
        assert_eq!(got, expected, "cut in {split:?}");
    }
}

fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

fn delta(delta: Value, finish: Option<&str>) -> Value {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn calls_delta(calls: Value) -> Value {
    delta(json!({"tool_calls": calls}), None)
}

/// SYNTHETIC: CRLF line endings throughout.
#[tokio::test]
async fn synthetic_crlf_line_endings() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n\
                data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\r\n\r\n\
                data: [DONE]\r\n\r\n";
    expect(body, answer("Hello", vec![], FinishReason::Stop)).await;
}

/// SYNTHETIC: bare CR line endings (the third line end the WHATWG rules allow).
#[tokio::test]
async fn synthetic_bare_cr_line_endings() {
    let body = ": hi\rdata: {\"choices\":[{\"delta\":{\"content\":\"A\"},\"finish_reason\":\"stop\"}]}\r\rdata: [DONE]\r\r";
    expect(body, answer("A", vec![], FinishReason::Stop)).await;
}

/// SYNTHETIC: `data:` with no space after the colon (TGI 2.0.1, per a code comment only).
#[tokio::test]
async fn synthetic_data_without_space() {
    let body = "data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\" spaced\"}}]}\n\n\
                data:{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                data:[DONE]\n\n";
    expect(body, answer(" spaced", vec![], FinishReason::Stop)).await;
}

/// SYNTHETIC: `arguments` sent as a JSON object instead of a string (TGI's older format).
#[tokio::test]
async fn synthetic_arguments_as_json_object() {
    let body = data(calls_delta(
        json!([{"index": 0, "id": "0", "type": "function",
        "function": {"name": "read_file", "arguments": {"path": "a.rs", "lines": [1, 2]}}}]),
    )) + &data(delta(json!({}), Some("tool_calls")))
        + "data: [DONE]\n\n";
    let response = answer(
        "",
        // Serialised again, so the text is compact and its keys sorted; the value is the same.
        vec![call("0", "read_file", r#"{"lines":[1,2],"path":"a.rs"}"#)],
        FinishReason::ToolCalls,
    );
    expect(&body, response).await;
}

/// SYNTHETIC: the same non-empty id repeated in every fragment, with and without `index`.
#[tokio::test]
async fn synthetic_same_id_in_every_fragment() {
    for index in [Some(0), None] {
        let fragment = |name: Option<&str>, args: &str| {
            let mut f =
                json!({"id": "call_r", "type": "function", "function": {"arguments": args}});
            if let Some(index) = index {
                f["index"] = json!(index);
            }
            if let Some(name) = name {
                f["function"]["name"] = json!(name);
            }
            data(calls_delta(json!([f])))
        };
        let body = fragment(Some("terminal"), "{\"command\"")
            + &fragment(Some("terminal"), ":\"ls\"}")
            + &data(delta(json!({}), Some("tool_calls")))
            + "data: [DONE]\n\n";
        let response = answer(
            "",
            vec![call("call_r", "terminal", r#"{"command":"ls"}"#)],
            FinishReason::ToolCalls,
        );
        expect(&body, response).await;
    }
}

/// SYNTHETIC: no `index`, the first fragment names the call, later ones carry only arguments.
#[tokio::test]
async fn synthetic_no_index_fragments_continue_the_last_call() {
    let body = data(calls_delta(
        json!([{"id": "c1", "function": {"name": "read_file", "arguments": "{\"pa"}}]),
    )) + &data(calls_delta(
        json!([{"function": {"arguments": "th\":\"x\"}"}}]),
    )) + &data(calls_delta(
        json!([{"function": {"name": "terminal", "arguments": "{}"}}]),
    )) + &data(delta(json!({}), Some("tool_calls")))
        + "data: [DONE]\n\n";
    let response = answer(
        "",
        vec![
            call("c1", "read_file", r#"{"path":"x"}"#),
            call(INVENTED, "terminal", "{}"),
        ],
        FinishReason::ToolCalls,
    );
    expect(&body, response).await;
}

/// SYNTHETIC: a fragment at a known `index` bringing a different id starts a new call (rule 4).
#[tokio::test]
async fn synthetic_new_id_at_the_same_index_starts_a_new_call() {
    let body = data(calls_delta(
        json!([{"index": 0, "id": "a", "function": {"name": "read_file", "arguments": "{}"}}]),
    )) + &data(calls_delta(
        json!([{"index": 0, "id": "b", "function": {"name": "read_file", "arguments": "{\"path\":"}}]),
    )) + &data(calls_delta(
        json!([{"index": 0, "id": "", "function": {"arguments": "\"z\"}"}}]),
    )) + "data: [DONE]\n\n";
    let response = answer(
        "",
        vec![
            call("a", "read_file", "{}"),
            call("b", "read_file", r#"{"path":"z"}"#),
        ],
        FinishReason::Missing,
    );
    expect(&body, response).await;
}

/// SYNTHETIC: two calls by index and no ids at all: both get distinct invented ids.
#[tokio::test]
async fn synthetic_calls_without_ids_get_invented_ones() {
    let body = data(calls_delta(json!([
            {"index": 0, "function": {"name": "read_file", "arguments": ""}},
            {"index": 1, "function": {"name": "read_file", "arguments": ""}}])))
        + &data(calls_delta(
            json!([{"index": 1, "function": {"arguments": "{\"path\":\"2\"}"}}]),
        ))
        + &data(delta(json!({}), Some("tool_calls")))
        + "data: [DONE]\n\n";
    let response = answer(
        "",
        vec![
            call(INVENTED, "read_file", "{}"),
            call(INVENTED, "read_file", r#"{"path":"2"}"#),
        ],
        FinishReason::ToolCalls,
    );
    expect(&body, response).await;
}

/// SYNTHETIC: one event's JSON spread over several `data:` lines, and keep-alive comments
/// and an `event: ping` name between everything.
#[tokio::test]
async fn synthetic_multi_line_data_and_comments_everywhere() {
    let body = ": OPENROUTER PROCESSING\n\nevent: ping\n: c\ndata: {\"choices\":[{\"index\":0,\n: c\ndata: \"delta\":{\"content\":\"multi\"}}]}\n\n\
                : c\n\n: c\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n: c\n\ndata: [DONE]\n\n";
    expect(body, answer("multi", vec![], FinishReason::Stop)).await;
}

/// SYNTHETIC: the stream ends without `[DONE]`, its last event without a blank line or even a
/// line end, and `finish_reason` is absent while calls were made.
#[tokio::test]
async fn synthetic_ends_without_done_mid_line() {
    let body = data(calls_delta(
        json!([{"index": 0, "id": "x", "function": {"name": "terminal", "arguments": "{\"command\":\"pwd\"}"}}]),
    )) + &format!("data: {}", delta(json!({"content": "tail"}), None));
    let response = answer(
        "tail",
        vec![call("x", "terminal", r#"{"command":"pwd"}"#)],
        FinishReason::Missing,
    );
    expect(&body, response).await;
}

/// SYNTHETIC: `length` while a call's arguments were still streaming: the call is kept with
/// what arrived (the loop answers it `invalid`) and the response is truncated.
#[tokio::test]
async fn synthetic_length_cuts_a_tool_call() {
    let body = data(calls_delta(
        json!([{"index": 0, "id": "x", "function": {"name": "write_file", "arguments": "{\"path\":\"a\",\"content\":\"lo"}}]),
    )) + &data(delta(json!({}), Some("length")))
        + "data: [DONE]\n\n";
    let response = answer(
        "",
        vec![call("x", "write_file", r#"{"path":"a","content":"lo"#)],
        FinishReason::Length,
    );
    expect(&body, response.clone()).await;
    assert!(response.truncated());
}

/// SYNTHETIC: everything after `[DONE]` is ignored, and a choice other than 0 never counts.
#[tokio::test]
async fn synthetic_other_choices_and_bytes_after_done_are_ignored() {
    let body = data(json!({"choices": [
            {"index": 1, "delta": {"content": "second choice"}},
            {"index": 0, "delta": {"content": "first"}, "finish_reason": "stop"}]}))
        + "data: [DONE]\n\ndata: {not json\n\n";
    expect(&body, answer("first", vec![], FinishReason::Stop)).await;
}

/// SYNTHETIC: an `event: error` whose data is not JSON, and an error object with no event
/// name: both end the answer with the server's words.
#[tokio::test]
async fn synthetic_error_events_in_other_shapes() {
    let cases = [
        (
            "event: error\ndata: upstream connection reset\n\n",
            "upstream connection reset",
        ),
        (
            "data: {\"error\":\"quota exceeded\",\"choices\":[]}\n\n",
            "quota exceeded",
        ),
    ];
    for (tail, message) in cases {
        let body = data(delta(json!({"content": "partial"}), None)) + tail;
        for outcome in replay(&body).await {
            assert_eq!(outcome.streamed_text(), "partial");
            match outcome.error() {
                ProviderError::InStream { message: got, .. } => assert_eq!(got, message),
                other => panic!("expected InStream, got {other:?}"),
            }
        }
    }
}

/// SYNTHETIC: a data line that is not JSON is an error naming what came, never skipped
/// silently (it could have held a tool call).
#[tokio::test]
async fn synthetic_chunk_that_is_not_json() {
    let body = data(delta(json!({"content": "ok"}), None)) + "data: {\"choices\": [tru\n\n";
    for outcome in replay(&body).await {
        let error = outcome.error();
        assert!(matches!(error, ProviderError::BadChunk { .. }), "{error:?}");
        assert!(error.to_string().contains("{\"choices\": [tru"), "{error}");
    }
}

/// SYNTHETIC: every finish reason (the captures show stop, tool_calls, length and none), with
/// calls present, in the chunk of the last call or on its own.
#[tokio::test]
async fn synthetic_every_finish_reason() {
    let cases = [
        (Some("stop"), FinishReason::Stop),
        (Some("tool_calls"), FinishReason::ToolCalls),
        (Some("length"), FinishReason::Length),
        (Some("content_filter"), FinishReason::ContentFilter),
        (Some("end_turn"), FinishReason::Other("end_turn".into())),
        (None, FinishReason::Missing),
    ];
    for (wire, expected) in cases {
        let body = data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "f", "function": {"name": "terminal", "arguments": "{}"}}]},
                "finish_reason": wire}]}))
            + &data(delta(json!({}), None))
            + "data: [DONE]\n\n";
        let response = answer("", vec![call("f", "terminal", "{}")], expected);
        expect(&body, response).await;
    }
}
