//! How the client meets servers that differ: the request it sends (path, headers, body), a
//! server that refuses `stream` or answers JSON anyway, and one that refuses `stream_options`
//! or `max_tokens`. Each adaptation happens once and is remembered by the client.

use serde_json::{Value, json};
use spear::agent::model::FinishReason;
use spear::agent::provider::OpenAiCompatible;

use crate::common::{call, client, complete, request, settings_for};
use crate::support::chunks::{completion, text_answer};
use crate::support::mock_server::{MockServer, Reply};

#[tokio::test]
async fn server_that_rejects_stream_gets_one_non_streamed_request() {
    let args = json!({"path": "README.md"});
    let server = MockServer::start([
        Reply::error(400, "Streaming is not supported by this endpoint"),
        Reply::json(
            200,
            &completion(
                Some("Reading."),
                &[("call_9", "read_file", args.clone())],
                "tool_calls",
            ),
        ),
        Reply::json(200, &completion(Some("Second."), &[], "stop")),
    ]);
    let client = client(&server);
    let outcome = complete(&client, &request()).await;
    let response = outcome.response();
    assert_eq!(response.content, "Reading.");
    assert_eq!(response.tool_calls, vec![call("call_9", "read_file", args)]);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        outcome.streamed_text(),
        "Reading.",
        "the whole text is still reported"
    );
    // The next request on this client does not ask to stream again.
    assert_eq!(
        complete(&client, &request()).await.response().content,
        "Second."
    );
    let streams: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.body["stream"].clone())
        .collect();
    assert_eq!(streams, vec![json!(true), json!(false), json!(false)]);
    assert!(server.requests()[1].body.get("stream_options").is_none());
    assert!(
        outcome.retries().is_empty(),
        "an adaptation is not a failure"
    );
}

#[tokio::test]
async fn server_that_ignores_stream_and_answers_json() {
    let server = MockServer::start([Reply::json(
        200,
        &completion(Some("Plain JSON."), &[], "stop"),
    )]);
    let outcome = complete(&client(&server), &request()).await;
    assert_eq!(outcome.response().content, "Plain JSON.");
    assert_eq!(
        outcome.response().usage.and_then(|u| u.total_tokens),
        Some(15)
    );
}

#[tokio::test]
async fn stream_options_refused_is_dropped_once_and_remembered() {
    let server = MockServer::start([
        Reply::error(
            400,
            "Extra parameters ['stream_options'] are not allowed when extra-parameters is not set",
        ),
        text_answer("one"),
        text_answer("two"),
    ]);
    let client = client(&server);
    assert_eq!(
        complete(&client, &request()).await.response().content,
        "one"
    );
    assert_eq!(
        complete(&client, &request()).await.response().content,
        "two"
    );
    let sent: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r.body.get("stream_options").is_some())
        .collect();
    assert_eq!(sent, vec![true, false, false]);
}

#[tokio::test]
async fn max_completion_tokens_is_used_when_max_tokens_is_refused() {
    let server = MockServer::start([
        Reply::error(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        ),
        text_answer("fine"),
    ]);
    let outcome = complete(&client(&server), &request()).await;
    assert_eq!(outcome.response().content, "fine");
    let second = &server.requests()[1].body;
    assert_eq!(second["max_completion_tokens"], json!(256));
    assert!(second.get("max_tokens").is_none());
}

#[tokio::test]
async fn the_request_is_chat_completions_with_tools_auth_and_extra_headers() {
    let server = MockServer::start([text_answer("hi"), text_answer("hi")]);
    let mut settings = settings_for(&format!("{}/", server.base_url));
    settings.api_key = Some("sk-test-key".into());
    settings.extra_headers = vec![("X-Title".into(), "spear-tests".into())];
    settings.max_tokens = Some(100);
    let client = OpenAiCompatible::new(settings).unwrap();
    complete(&client, &request()).await.response();
    let mut no_tools = request();
    no_tools.tools.clear();
    complete(&client, &no_tools).await.response();
    let requests = server.requests();
    let first = &requests[0];
    assert_eq!(
        (first.method.as_str(), first.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(first.header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(first.header("x-title"), Some("spear-tests"));
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert_eq!(
        first.body,
        json!({
            "model": "mock-model",
            "messages": [
                {"role": "system", "content": "You are a test."},
                {"role": "user", "content": "What is in the workspace?"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {
                "name": "read_file", "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
            "tool_choice": "auto",
            "max_tokens": 100,
        }),
        "the provider's cap (100) lowers the request's (256)"
    );
    let second = &requests[1].body;
    assert!(second.get("tools").is_none() && second.get("tool_choice").is_none());
}
