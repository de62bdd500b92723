//! The search client behind `search_internet`: the configured backend, a SearXNG instance's
//! JSON API (`/search?q=...&format=json`) or the Brave Search API (`X-Subscription-Token`).
//! The backend is the person's own choice, so its address is not judged by the fetch policy;
//! what it returns is only text for the model. With no backend configured the answer names the
//! config keys that would set one.

use std::time::Duration;

use reqwest::Url;
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

/// The Brave Search API's web endpoint.
pub const BRAVE_ENDPOINT: &str = "https://api.search.brave.com/res/v1/web/search";
const RESPONSE_LIMIT: usize = 4 << 20;
const TIMEOUT: Duration = Duration::from_secs(20);

/// Where searches go.
#[derive(Debug, Clone)]
pub enum SearchBackend {
    /// A SearXNG instance, by its base URL (JSON output must be enabled in its settings).
    Searxng { url: String },
    /// The Brave Search API with a subscription key.
    Brave {
        key: SecretString,
        /// The API endpoint (the public one unless configured otherwise).
        endpoint: String,
    },
}

/// The message when no backend is configured.
pub const NOT_CONFIGURED: &str = "no search backend is configured. Set one under [web] in the \
    config: `searxng_url = \"http://localhost:8888\"` (a SearXNG instance with `json` in \
    search.formats), or `search_backend = \"brave\"` with the key in the environment variable \
    named by `brave_api_key_env` (default BRAVE_API_KEY); SPEAR_SEARXNG_URL and \
    SPEAR_BRAVE_API_KEY override them";

/// One hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// Ask `backend` for `max` hits on `query`.
pub fn search(backend: &SearchBackend, query: &str, max: u64) -> Result<Vec<Hit>, String> {
    let (url, headers) = request(backend, query, max)?;
    let body = std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?;
            rt.block_on(get_json(url.clone(), &headers))
        })
        .join()
        .unwrap_or_else(|_| Err("the search panicked".into()))
    })?;
    let hits = match backend {
        SearchBackend::Searxng { .. } => parse(&body, &["results"], "content"),
        SearchBackend::Brave { .. } => parse(&body, &["web", "results"], "description"),
    };
    Ok(hits.into_iter().take(max as usize).collect())
}

/// Request headers: names and values.
type Headers = Vec<(&'static str, String)>;

/// The request URL and headers for one search.
fn request(backend: &SearchBackend, query: &str, max: u64) -> Result<(Url, Headers), String> {
    match backend {
        SearchBackend::Searxng { url } => {
            let base = Url::parse(url.trim_end_matches('/'))
                .map_err(|_| format!("searxng_url `{url}` is not a URL"))?;
            let mut u = base
                .join(&format!("{}/search", base.path().trim_end_matches('/')))
                .map_err(|e| format!("searxng_url `{url}`: {e}"))?;
            u.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("format", "json");
            Ok((u, Vec::new()))
        }
        SearchBackend::Brave { key, endpoint } => {
            let mut u = Url::parse(endpoint)
                .map_err(|_| format!("the Brave endpoint `{endpoint}` is not a URL"))?;
            u.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("count", &max.to_string());
            let headers = vec![
                ("X-Subscription-Token", key.expose_secret().to_string()),
                ("Accept", "application/json".to_string()),
            ];
            Ok((u, headers))
        }
    }
}

async fn get_json(url: Url, headers: &[(&'static str, String)]) -> Result<Value, String> {
    let shown = {
        let mut u = url.clone();
        u.set_query(None);
        u.to_string()
    };
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!(
            "spear/",
            env!("CARGO_PKG_VERSION"),
            " (search_internet)"
        ))
        .build()
        .map_err(|e| e.to_string())?;
    let mut req = client.get(url);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| format!("the search backend at {shown} could not be reached: {e}"))?;
    let status = resp.status();
    if !status.is_success() {
        let hint = match status.as_u16() {
            401 | 403 => {
                " (for SearXNG: enable `json` in search.formats of its settings.yml; for Brave: \
                 check the API key)"
            }
            429 => " (rate limited: wait, or lower the number of searches)",
            _ => "",
        };
        return Err(format!(
            "the search backend at {shown} answered HTTP {status}{hint}"
        ));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > RESPONSE_LIMIT {
            return Err(format!(
                "the search backend sent more than {RESPONSE_LIMIT} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body)
        .map_err(|e| format!("the search backend at {shown} did not send JSON: {e}"))
}

/// Hits under `path` in `body`, leniently: a hit without a URL is skipped.
fn parse(body: &Value, path: &[&str], snippet_key: &str) -> Vec<Hit> {
    let mut v = body;
    for k in path {
        v = &v[*k];
    }
    let text = |h: &Value, k: &str| {
        h.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string()
    };
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|h| {
                    let url = text(h, "url");
                    (!url.is_empty()).then(|| Hit {
                        title: text(h, "title"),
                        url,
                        snippet: strip_tags(&text(h, snippet_key)),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Brave marks query words with `<strong>`: the model needs the words, not the markup.
fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_the_query_and_the_key_only_in_its_header() {
        let (u, h) = request(
            &SearchBackend::Searxng {
                url: "http://127.0.0.1:8888/searx/".into(),
            },
            "rebar lap length",
            5,
        )
        .unwrap();
        assert_eq!(
            u.as_str(),
            "http://127.0.0.1:8888/searx/search?q=rebar+lap+length&format=json"
        );
        assert!(h.is_empty());
        let (u, h) = request(
            &SearchBackend::Brave {
                key: SecretString::from("k-123"),
                endpoint: BRAVE_ENDPOINT.into(),
            },
            "a&b",
            3,
        )
        .unwrap();
        assert_eq!(u.query(), Some("q=a%26b&count=3"));
        assert!(h.contains(&("X-Subscription-Token", "k-123".to_string())));
    }

    #[test]
    fn both_shapes_parse_leniently() {
        let sx = serde_json::json!({"results": [
            {"url": "https://a.example/", "title": "A", "content": "alpha"},
            {"title": "no url"},
            {"url": "https://b.example/"}
        ]});
        let hits = parse(&sx, &["results"], "content");
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].snippet, "alpha");
        let brave = serde_json::json!({"web": {"results": [
            {"url": "https://c.example/", "title": "C", "description": "the <strong>c</strong> page"}
        ]}});
        let hits = parse(&brave, &["web", "results"], "description");
        assert_eq!(hits[0].snippet, "the c page");
        assert!(parse(&serde_json::json!({"x": 1}), &["results"], "content").is_empty());
    }
}
