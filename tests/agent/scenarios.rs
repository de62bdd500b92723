//! Scripted server scenarios over real HTTP: text, one/three/interleaved tool calls, 1-byte
//! fragments, usage, `length`, an error or a dropped connection mid-stream, 429 and 5xx
//! retries, and a slow server cancelled.

use std::time::Duration;

use serde_json::json;
use spear::agent::model::{FinishReason, StreamDelta, ToolCallRequest, Usage};
use spear::agent::provider::ProviderError;

use crate::common::{call, client, complete, request};
use crate::support::chunks::{
    call_args, call_start, chunk, finish, role, sse_body, sse_events, text, text_answer,
    tool_calls_answer, usage,
};
use crate::support::mock_server::{MockServer, Reply, StreamEnd};

#[tokio::test]
async fn text_only() {
    let server = MockServer::start([text_answer("Hello, workspace! Nothing to do.")]);
    let outcome = complete(&client(&server), &request()).await;
    let response = outcome.response();
    assert_eq!(response.content, "Hello, workspace! Nothing to do.");
    assert_eq!(outcome.streamed_text(), response.content);
    assert!(response.tool_calls.is_empty() && response.reasoning.is_empty());
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert!(!response.truncated());
}

#[tokio::test]
async fn one_tool_call() {
    let args = json!({"path": "src/main.rs"});
    let server = MockServer::start([tool_calls_answer(&[("call_1", "read_file", args.clone())])]);
    let outcome = complete(&client(&server), &request()).await;
    let response = outcome.response();
    assert_eq!(response.tool_calls, vec![call("call_1", "read_file", args)]);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.content, "");
}

#[tokio::test]
async fn three_tool_calls() {
    let calls = [
        ("call_a", "read_file", json!({"path": "a.rs"})),
        (
            "call_b",
            "search_files",
            json!({"pattern": "fn main", "path": "."}),
        ),
        ("call_c", "terminal", json!({"command": "cargo test -q"})),
    ];
    let server = MockServer::start([tool_calls_answer(&calls)]);
    let outcome = complete(&client(&server), &request()).await;
    let expected: Vec<ToolCallRequest> = calls
        .iter()
        .map(|(id, name, args)| call(id, name, args.clone()))
        .collect();
    assert_eq!(outcome.response().tool_calls, expected);
    let started: Vec<(usize, String)> = outcome
        .deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::ToolCallStarted { index, id, .. } => Some((*index, id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        vec![
            (0, "call_a".into()),
            (1, "call_b".into()),
            (2, "call_c".into())
        ]
    );
}

#[tokio::test]
async fn interleaved_tool_calls_are_kept_apart_by_index() {
    let body = sse_body(&[
        role(),
        call_start(0, "call_x", "read_file"),
        call_start(1, "call_y", "terminal"),
        call_args(1, r#"{"comm"#),
        call_args(0, r#"{"pa"#),
        call_args(1, r#"and":"ls"}"#),
        call_args(0, r#"th":"x.rs"}"#),
        finish("tool_calls"),
    ]);
    let server = MockServer::start([Reply::sse(body)]);
    let outcome = complete(&client(&server), &request()).await;
    assert_eq!(
        outcome.response().tool_calls,
        vec![
            call("call_x", "read_file", json!({"path": "x.rs"})),
            call("call_y", "terminal", json!({"command": "ls"})),
        ]
    );
}

#[tokio::test]
async fn one_byte_fragments_over_one_byte_chunks() {
    let arguments = r#"{"path":"ünïcode/😊.rs"}"#;
    let mut chunks = vec![
        role(),
        text("Let me look."),
        call_start(0, "call_1", "read_file"),
    ];
    chunks.extend(arguments.chars().map(|c| call_args(0, &c.to_string())));
    chunks.push(finish("tool_calls"));
    let server = MockServer::start([Reply::sse(sse_body(&chunks)).split(&[1])]);
    let outcome = complete(&client(&server), &request()).await;
    let response = outcome.response();
    assert_eq!(response.content, "Let me look.");
    assert_eq!(response.tool_calls[0].arguments, arguments);
    let fragments = outcome
        .deltas
        .iter()
        .filter(|d| matches!(d, StreamDelta::ToolCallArguments { .. }))
        .count();
    assert_eq!(
        fragments,
        arguments.chars().count(),
        "one delta per fragment"
    );
}

#[tokio::test]
async fn usage_chunk_with_empty_choices() {
    let body = sse_body(&[role(), text("ok"), finish("stop"), usage(120, 3)]);
    let server = MockServer::start([Reply::sse(body)]);
    let outcome = complete(&client(&server), &request()).await;
    let expected = Usage {
        prompt_tokens: Some(120),
        completion_tokens: Some(3),
        total_tokens: Some(123),
    };
    assert_eq!(outcome.response().usage, Some(expected));
    assert!(outcome.deltas.contains(&StreamDelta::Usage(expected)));
    assert_eq!(
        server.requests()[0].body["stream_options"],
        json!({"include_usage": true})
    );
}

#[tokio::test]
async fn length_is_reported_as_truncated() {
    let body = sse_body(&[role(), text("The answer is cut"), finish("length")]);
    let server = MockServer::start([Reply::sse(body)]);
    let outcome = complete(&client(&server), &request()).await;
    assert_eq!(outcome.response().finish_reason, FinishReason::Length);
    assert!(outcome.response().truncated());
    assert_eq!(server.requests()[0].body["max_tokens"], json!(256));
}

#[tokio::test]
async fn error_object_mid_stream_names_the_servers_message() {
    let mut body = sse_events(&[role(), text("Part of an ans")]);
    body.push_str(r#"data: {"error":{"message":"upstream model overloaded","code":502}}"#);
    body.push_str("\n\n");
    let server = MockServer::start([Reply::sse(body)]);
    let outcome = complete(&client(&server), &request()).await;
    assert_eq!(outcome.streamed_text(), "Part of an ans");
    let error = outcome.error();
    assert!(matches!(error, ProviderError::InStream { .. }), "{error:?}");
    assert!(
        error.to_string().contains("upstream model overloaded"),
        "{error}"
    );
    assert_eq!(server.hits(), 1, "never retried once the answer began");
}

#[tokio::test]
async fn connection_dropped_mid_stream_is_a_broken_stream_not_a_retry() {
    let body = sse_events(&[
        role(),
        text("I will now"),
        call_start(0, "call_1", "terminal"),
    ]);
    let server = MockServer::start([
        Reply::sse(body).ending(StreamEnd::Abort),
        text_answer("must not be asked for"),
    ]);
    let outcome = complete(&client(&server), &request()).await;
    assert_eq!(outcome.streamed_text(), "I will now");
    let error = outcome.error();
    assert!(
        matches!(error, ProviderError::StreamBroken { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains(&server.base_url), "{error}");
    assert_eq!(server.hits(), 1, "a stream that started is never retried");
    assert!(outcome.retries().is_empty());
}

#[tokio::test]
async fn rate_limited_then_success_honours_retry_after() {
    let server = MockServer::start([
        Reply::error(429, "Rate limit reached, retry in 1s").with_header("retry-after", "1"),
        text_answer("after the wait"),
    ]);
    let outcome = complete(&client(&server), &request()).await;
    assert_eq!(outcome.response().content, "after the wait");
    let retries = outcome.retries();
    assert_eq!(retries.len(), 1, "{retries:?}");
    let (attempt, delay_ms, why) = &retries[0];
    assert_eq!(
        (*attempt, *delay_ms),
        (2, 1000),
        "the second attempt, after Retry-After"
    );
    assert!(
        why.contains("429") && why.contains("Rate limit reached"),
        "{why}"
    );
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn retry_after_as_an_http_date_in_the_past_means_now() {
    let server = MockServer::start([
        Reply::error(503, "busy").with_header("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"),
        text_answer("ok"),
    ]);
    let outcome = complete(&client(&server), &request()).await;
    assert_eq!(outcome.response().content, "ok");
    assert_eq!(outcome.retries()[0].1, 0);
}

#[tokio::test]
async fn server_error_three_times_gives_up_after_the_bounded_attempts() {
    let server = MockServer::start([
        Reply::error(500, "internal error one"),
        Reply::error(502, "bad gateway two"),
        Reply::error(500, "internal error three"),
        text_answer("a fourth attempt must not happen"),
    ]);
    let outcome = complete(&client(&server), &request()).await;
    let error = outcome.error();
    match error {
        ProviderError::GaveUp {
            status, attempts, ..
        } => assert_eq!((*status, *attempts), (500, 3)),
        other => panic!("expected GaveUp, got {other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.contains("3 attempts") && text.contains("internal error three"),
        "{text}"
    );
    assert!(text.contains(&server.base_url), "{text}");
    assert_eq!(server.hits(), 3, "max_attempts is 3");
    let attempts: Vec<u32> = outcome.retries().iter().map(|r| r.0).collect();
    assert_eq!(attempts, vec![2, 3]);
}

#[tokio::test]
async fn dropping_the_future_closes_the_connection_of_a_slow_server() {
    let body = sse_events(&[role(), text("thinking slowly")]);
    let server =
        MockServer::start([Reply::sse(body).ending(StreamEnd::Hang(Duration::from_millis(10)))]);
    let client = client(&server);
    let request = request();
    let (first_text, got_text) = tokio::sync::oneshot::channel::<()>();
    let mut first_text = Some(first_text);
    let mut on_delta = move |delta: StreamDelta| {
        if matches!(delta, StreamDelta::Text(_))
            && let Some(tx) = first_text.take()
        {
            let _ = tx.send(());
        }
    };
    let completion = client.complete_request(&request, &mut on_delta);
    tokio::select! {
        result = completion => panic!("a hanging server cannot complete: {result:?}"),
        _ = got_text => {}
    }
    // The completion future was dropped when select! returned: the server must see its
    // response body go away (the connection closed), without waiting for any timeout.
    server.wait_closed(1, Duration::from_secs(10)).await;
    assert_eq!(server.hits(), 1);
}

/// An unknown chunk shape in the middle of a normal stream changes nothing.
#[tokio::test]
async fn unknown_chunks_and_fields_are_ignored() {
    let body = sse_body(&[
        role(),
        json!({"object": "keepalive", "provider": "x"}),
        chunk(json!({"content": "fine", "audio": {"id": 1}}), None),
        finish("stop"),
    ]);
    let server = MockServer::start([Reply::sse(body)]);
    assert_eq!(
        complete(&client(&server), &request())
            .await
            .response()
            .content,
        "fine"
    );
}
