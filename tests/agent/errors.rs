//! Errors a person can act on: a refused or missing key, a wrong base URL or model, a model
//! without tools, an unreachable server, bad settings. Each names what to fix, and none ever
//! shows the API key, even when the server echoes it.

use secrecy::SecretString;
use spear::agent::provider::{OpenAiCompatible, ProviderError, ProviderSettings};

use crate::common::{Outcome, client, complete, request, settings_for};
use crate::support::chunks::text_answer;
use crate::support::mock_server::{MockServer, Reply};

const KEY: &str = "sk-proj-SECRET0123456789abcdef";

fn keyed(base_url: &str) -> OpenAiCompatible {
    let mut settings = settings_for(base_url);
    settings.api_key = Some(SecretString::from(KEY));
    settings.api_key_env = "OPENAI_API_KEY".into();
    OpenAiCompatible::new(settings).unwrap()
}

fn assert_no_key(outcome: &Outcome) {
    let error = outcome.error();
    assert!(
        !error.to_string().contains(KEY),
        "Display shows the key: {error}"
    );
    assert!(
        !format!("{error:?}").contains(KEY),
        "Debug shows the key: {error:?}"
    );
    for delta in &outcome.deltas {
        assert!(
            !format!("{delta:?}").contains(KEY),
            "a delta shows the key: {delta:?}"
        );
    }
}

#[tokio::test]
async fn unauthorized_names_url_model_and_variable_and_never_the_key() {
    // The server echoes the key it got, as some do ("Incorrect API key provided: ...").
    let echo = format!("Incorrect API key provided: {KEY}. You can find your API key at ...");
    let server = MockServer::start([Reply::error(401, &echo)]);
    let outcome = complete(&keyed(&server.base_url), &request()).await;
    let error = outcome.error();
    assert!(matches!(
        error,
        ProviderError::Unauthorized {
            status: 401,
            key_sent: true,
            ..
        }
    ));
    let text = error.to_string();
    for needle in [
        server.base_url.as_str(),
        "mock-model",
        "OPENAI_API_KEY",
        "Incorrect API key",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
    assert!(text.contains("[REDACTED]"), "{text}");
    assert_no_key(&outcome);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "positive control: the key was really sent"
    );
    assert_eq!(server.hits(), 1, "a refused key is not retried");
}

#[tokio::test]
async fn forbidden_without_a_key_says_none_was_sent() {
    let server = MockServer::start([Reply::error(403, "authentication required")]);
    let outcome = complete(&client(&server), &request()).await;
    let text = outcome.error().to_string();
    assert!(
        text.contains("without an API key") && text.contains("SPEAR_API_KEY"),
        "{text}"
    );
    assert!(text.contains("HTTP 403"), "{text}");
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn base_url_without_version_path_gets_the_v1_hint() {
    let server = MockServer::start([text_answer("never")]);
    let outcome = complete(&keyed(&server.origin), &request()).await;
    let error = outcome.error();
    assert!(matches!(error, ProviderError::NotFound { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains(&format!("{}/v1", server.origin)), "{text}");
    assert!(text.contains("mock-model"), "{text}");
    assert_eq!(server.requests()[0].path, "/chat/completions");
    assert_no_key(&outcome);
}

#[tokio::test]
async fn unknown_model_is_named() {
    let server = MockServer::start([Reply::error(
        404,
        "The model `gpt-9` does not exist or you do not have access to it.",
    )]);
    let outcome = complete(&client(&server), &request()).await;
    let text = outcome.error().to_string();
    assert!(
        text.contains("does not know the model `mock-model`"),
        "{text}"
    );
    assert!(text.contains(&server.base_url), "{text}");
    assert!(!text.contains("/v1/v1"), "{text}");
}

#[tokio::test]
async fn model_without_tools_is_a_clear_error_for_each_servers_wording() {
    let wordings = [
        (
            400,
            "registry.ollama.ai/library/gemma:2b does not support tools",
        ),
        (
            400,
            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
        ),
        (500, "tools param requires --jinja flag"),
        (422, "This model does not support function calling"),
    ];
    for (status, wording) in wordings {
        let server = MockServer::start([Reply::error(status, wording)]);
        let outcome = complete(&client(&server), &request()).await;
        let error = outcome.error();
        assert!(
            matches!(error, ProviderError::ToolsUnsupported { .. }),
            "{wording}: {error:?}"
        );
        let text = error.to_string();
        assert!(
            text.contains("mock-model") && text.contains(wording),
            "{text}"
        );
        assert_eq!(server.hits(), 1, "{wording}: not retried");
    }
}

#[tokio::test]
async fn other_client_errors_are_passed_on_with_the_servers_message() {
    let server = MockServer::start([Reply::error(400, "messages: must not be empty")]);
    let outcome = complete(&client(&server), &request()).await;
    let text = outcome.error().to_string();
    assert!(
        text.contains("HTTP 400") && text.contains("messages: must not be empty"),
        "{text}"
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn unreachable_base_url_is_retried_then_named() {
    // A port nothing listens on: bind one on 127.0.0.1, note it, close it.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let outcome = complete(&keyed(&base_url), &request()).await;
    let error = outcome.error();
    match error {
        ProviderError::Unreachable { attempts, .. } => assert_eq!(*attempts, 3),
        other => panic!("expected Unreachable, got {other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.contains(&base_url) && text.contains("running"),
        "{text}"
    );
    assert!(
        text.to_lowercase().contains("refused"),
        "the cause is named: {text}"
    );
    let attempts: Vec<u32> = outcome.retries().iter().map(|r| r.0).collect();
    assert_eq!(attempts, vec![2, 3], "each wait is reported");
    assert!(outcome.retries()[0].2.contains("cannot connect"));
    assert_no_key(&outcome);
}

#[test]
fn settings_and_client_never_debug_print_the_key() {
    let mut settings = ProviderSettings::new("https://api.example.invalid/v1", "m");
    settings.api_key = Some(SecretString::from(KEY));
    settings.extra_headers = vec![("api-key".into(), SecretString::from(KEY))];
    let shown = format!("{settings:?}");
    assert!(!shown.contains(KEY) && shown.contains("api-key"), "{shown}");
    let client = OpenAiCompatible::new(settings).unwrap();
    let shown = format!("{client:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(
        shown.contains("https://api.example.invalid/v1"),
        "positive control: {shown}"
    );
}

#[test]
fn unusable_settings_say_what_is_wrong() {
    let cases = [
        (ProviderSettings::new("localhost:11434/v1", "m"), "base URL"),
        (ProviderSettings::new("ftp://host/v1", "m"), "http://"),
        (
            ProviderSettings {
                extra_headers: vec![("bad header".into(), "v".into())],
                ..ProviderSettings::new("http://127.0.0.1:1/v1", "m")
            },
            "`bad header`",
        ),
        (
            ProviderSettings {
                api_key: Some(SecretString::from("line\nbreak")),
                ..ProviderSettings::new("http://127.0.0.1:1/v1", "m")
            },
            "SPEAR_API_KEY",
        ),
    ];
    for (settings, needle) in cases {
        let error = OpenAiCompatible::new(settings).unwrap_err();
        let text = error.to_string();
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
        assert!(!text.contains("line\nbreak"));
    }
}
