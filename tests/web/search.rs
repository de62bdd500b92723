//! `search_internet` against loopback stand-ins for SearXNG and the Brave API, and without any
//! backend configured.

use secrecy::SecretString;
use serde_json::json;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::host::web::{SearchBackend, WebSettings};

use crate::server::{Route, WebServer};
use crate::support::{Project, call, loopback_only, no_approver, normative_turn};

fn search(
    settings: WebSettings,
    args: serde_json::Value,
) -> spear::tools::envelope::ToolResultEnvelope {
    let p = Project::new();
    let router = p.router(true, settings);
    let mut turn = normative_turn(&router, ExecutionMode::Safe, no_approver());
    call(&router, &mut turn, "search_internet", args)
}

#[test]
fn searxng_results_come_back_as_a_numbered_list_in_safe_mode() {
    let s = WebServer::start("127.0.0.1");
    let body = json!({"results": [
        {"url": "https://codes.example/g.pdf", "title": "Code-G", "content": "the complete code"},
        {"url": "https://codes.example/h.html", "title": "Code-H", "content": "another"},
        {"url": "https://codes.example/i.html", "title": "Code-I", "content": "a third"}
    ]});
    s.route(
        "/searx/search",
        Route::Fixed(200, "application/json", body.to_string().into_bytes()),
    );
    let settings = WebSettings {
        search: Some(SearchBackend::Searxng {
            url: s.url("/searx"),
        }),
        ..loopback_only()
    };
    let env = search(settings, json!({"query": "Code-G pdf", "max_results": 2}));
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert!(
        env.stdout.starts_with("2 result(s) for `Code-G pdf`"),
        "{}",
        env.stdout
    );
    assert!(
        env.stdout
            .contains("1. Code-G\n   https://codes.example/g.pdf\n   the complete code")
    );
    assert!(!env.stdout.contains("Code-I"), "max_results is kept");
    let q = s.headers("/searx/search").unwrap();
    assert_eq!(q["x-test-query"], "q=Code-G+pdf&format=json");
}

#[test]
fn brave_gets_its_key_in_the_subscription_header() {
    let s = WebServer::start("127.0.0.1");
    let body = json!({"web": {"results": [
        {"url": "https://b.example/", "title": "B", "description": "the <strong>b</strong> page"}
    ]}});
    s.route(
        "/brave",
        Route::Fixed(200, "application/json", body.to_string().into_bytes()),
    );
    let settings = WebSettings {
        search: Some(SearchBackend::Brave {
            key: SecretString::from("test-key-9"),
            endpoint: s.url("/brave"),
        }),
        ..loopback_only()
    };
    let env = search(settings, json!({"query": "b"}));
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert!(env.stdout.contains("the b page"), "{}", env.stdout);
    let h = s.headers("/brave").unwrap();
    assert_eq!(h["x-subscription-token"], "test-key-9");
    assert_eq!(h["x-test-query"], "q=b&count=8");
    assert!(!env.stdout.contains("test-key-9"));
}

#[test]
fn a_backend_that_refuses_json_says_how_to_enable_it() {
    let s = WebServer::start("127.0.0.1");
    s.route(
        "/search",
        Route::Fixed(403, "text/html", b"forbidden".to_vec()),
    );
    let settings = WebSettings {
        search: Some(SearchBackend::Searxng {
            url: s.origin.clone(),
        }),
        ..loopback_only()
    };
    let env = search(settings, json!({"query": "x"}));
    assert_eq!(env.status, ToolStatus::Failed);
    assert!(env.reason.unwrap().contains("search.formats"));
}

#[test]
fn with_no_backend_the_error_names_the_config_keys() {
    let env = search(loopback_only(), json!({"query": "anything"}));
    assert_eq!(env.status, ToolStatus::Failed);
    let why = env.reason.unwrap();
    for key in [
        "[web]",
        "searxng_url",
        "search_backend",
        "brave_api_key_env",
        "SPEAR_SEARXNG_URL",
        "SPEAR_BRAVE_API_KEY",
    ] {
        assert!(why.contains(key), "{key} missing from: {why}");
    }
}
