//! `[web]` resolved: whether the web pair is on, which addresses `fetch_url` may reach besides
//! the internet, its limits, and the search backend. Environment overrides: `SPEAR_WEB`
//! (1/0, true/false, on/off), `SPEAR_SEARXNG_URL`, `SPEAR_BRAVE_API_KEY`. The Brave key is read
//! from the environment only, as every key is.

use std::path::Path;
use std::time::Duration;

use secrecy::SecretString;
use toml::Spanned;

use super::file::{WebTable, place};
use super::{ConfigError, Env};
use crate::harness::sandbox::netns::IpPrefix;
use crate::tools::host::web::search::BRAVE_ENDPOINT;
use crate::tools::host::web::{FetchLimits, SearchBackend, WebSettings};

/// The variable the Brave key is read from unless `brave_api_key_env` names another.
pub const BRAVE_KEY_ENV: &str = "BRAVE_API_KEY";

/// `(enabled, settings)` from the table and the environment.
pub fn resolve(
    path: &Path,
    text: &str,
    t: &WebTable,
    env: &Env,
) -> Result<(bool, WebSettings), ConfigError> {
    let bad = |span: &std::ops::Range<usize>, problem: String, fix: &str| {
        ConfigError::invalid(path, &place(text, span), fix, problem)
    };
    let enabled = match env.get("SPEAR_WEB") {
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "on" | "yes" => true,
            "0" | "false" | "off" | "no" => false,
            other => {
                return Err(ConfigError::BadEnv {
                    var: "SPEAR_WEB".into(),
                    problem: format!("`{other}` is neither on nor off; write SPEAR_WEB=1 or 0"),
                });
            }
        },
        None => t.enabled.unwrap_or(false),
    };
    let mut settings = WebSettings::default();
    settings.addresses.allow_private = t.allow_private_addresses.unwrap_or(false);
    for entry in &t.allow_addresses {
        let p = entry.get_ref().trim().parse::<IpPrefix>().map_err(|e| {
            bad(
                &entry.span(),
                format!(
                    "`{}` is not an IP address or CIDR prefix: {e}",
                    entry.get_ref()
                ),
                "write addresses like \"127.0.0.1\" or prefixes like \"10.1.0.0/16\"",
            )
        })?;
        settings.addresses.allow.push(p);
    }
    settings.limits = limits(t, &bad)?;
    settings.search = backend(t, env, &bad)?;
    Ok((enabled, settings))
}

fn limits(
    t: &WebTable,
    bad: &impl Fn(&std::ops::Range<usize>, String, &str) -> ConfigError,
) -> Result<FetchLimits, ConfigError> {
    let mut l = FetchLimits::default();
    if let Some(v) = &t.max_bytes {
        l.max_bytes = positive(v, bad, "max_bytes")?;
    }
    if let Some(v) = &t.timeout_secs {
        l.timeout = Duration::from_secs(positive(v, bad, "timeout_secs")?);
    }
    if let Some(v) = &t.max_redirects {
        l.max_redirects = *v.get_ref();
    }
    Ok(l)
}

fn positive(
    v: &Spanned<u64>,
    bad: &impl Fn(&std::ops::Range<usize>, String, &str) -> ConfigError,
    key: &str,
) -> Result<u64, ConfigError> {
    match *v.get_ref() {
        0 => Err(bad(
            &v.span(),
            format!("{key} must be more than 0"),
            "write a positive number, or remove the line for the default",
        )),
        n => Ok(n),
    }
}

/// The search backend: `search_backend` when given, else SearXNG when a URL is set, else Brave
/// when a key is in the environment, else none.
fn backend(
    t: &WebTable,
    env: &Env,
    bad: &impl Fn(&std::ops::Range<usize>, String, &str) -> ConfigError,
) -> Result<Option<SearchBackend>, ConfigError> {
    let searxng = env
        .get("SPEAR_SEARXNG_URL")
        .or_else(|| {
            t.searxng_url
                .as_ref()
                .map(|u| u.get_ref().trim().to_string())
        })
        .filter(|u| !u.is_empty());
    let key_env = t
        .brave_api_key_env
        .as_ref()
        .map_or(BRAVE_KEY_ENV.to_string(), |k| {
            k.get_ref().trim().to_string()
        });
    let key = env
        .get("SPEAR_BRAVE_API_KEY")
        .or_else(|| env.get(&key_env))
        .map(|k| SecretString::from(k.trim().to_string()));
    let endpoint = t
        .brave_endpoint
        .as_ref()
        .map_or(BRAVE_ENDPOINT.to_string(), |e| {
            e.get_ref().trim().to_string()
        });
    let brave = |key: SecretString| SearchBackend::Brave {
        key,
        endpoint: endpoint.clone(),
    };
    let chosen = t.search_backend.as_ref();
    match chosen.map(|c| c.get_ref().trim().to_ascii_lowercase()) {
        Some(c) if c == "searxng" => match searxng {
            Some(url) => Ok(Some(SearchBackend::Searxng { url })),
            None => Err(bad(
                &chosen.map(Spanned::span).unwrap_or_default(),
                "search_backend is \"searxng\" but no SearXNG URL is set".into(),
                "add searxng_url = \"http://localhost:8888\" under [web] (or set \
                 SPEAR_SEARXNG_URL)",
            )),
        },
        // A missing key is not a reason to refuse to start: search_internet says what to set.
        Some(c) if c == "brave" => Ok(key.map(brave)),
        Some(other) => Err(bad(
            &chosen.map(Spanned::span).unwrap_or_default(),
            format!("`{other}` is not a search backend"),
            "write search_backend = \"searxng\" or \"brave\"",
        )),
        None => Ok(match (searxng, key) {
            (Some(url), _) => Some(SearchBackend::Searxng { url }),
            (None, Some(k)) => Some(brave(k)),
            (None, None) => None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(toml_text: &str, env: &[(&str, &str)]) -> Result<(bool, WebSettings), ConfigError> {
        let file = super::super::file::parse(Path::new("c.toml"), toml_text)?;
        resolve(
            Path::new("c.toml"),
            toml_text,
            &file.web,
            &Env::from_pairs(env.iter().copied()),
        )
    }

    /// The `[web]` lines of the commented defaults, uncommented, say what the defaults are.
    #[test]
    fn the_documented_defaults_are_the_defaults() {
        let text = super::super::DEFAULT_CONFIG;
        let start = text.find("[web]").unwrap();
        let end = start + text[start..].find("\n# Named providers").unwrap();
        let mut web = String::from("[web]\n");
        for line in text[start..end].lines() {
            if let Some(kv) = line.strip_prefix("# ").filter(|l| {
                l.split_once(" = ")
                    .is_some_and(|(k, _)| k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
            }) {
                web.push_str(kv);
                web.push('\n');
            }
        }
        assert!(web.lines().count() >= 10, "{web}");
        let (on, s) = resolved(&web, &[]).unwrap();
        assert!(!on);
        assert_eq!(s.limits, FetchLimits::default());
        assert!(!s.addresses.allow_private && s.addresses.allow.is_empty());
        assert!(matches!(s.search, Some(SearchBackend::Searxng { .. })));
    }

    #[test]
    fn off_by_default_and_switched_by_the_file_or_the_environment() {
        let (on, s) = resolved("", &[]).unwrap();
        assert!(!on && s.search.is_none() && !s.addresses.allow_private);
        assert!(resolved("[web]\nenabled = true\n", &[]).unwrap().0);
        assert!(
            !resolved("[web]\nenabled = true\n", &[("SPEAR_WEB", "0")])
                .unwrap()
                .0
        );
        assert!(resolved("", &[("SPEAR_WEB", "on")]).unwrap().0);
        let e = resolved("", &[("SPEAR_WEB", "maybe")]).unwrap_err();
        assert!(e.to_string().contains("SPEAR_WEB=1"), "{e}");
    }

    #[test]
    fn addresses_limits_and_their_errors() {
        let (_, s) = resolved(
            "[web]\nallow_private_addresses = true\nallow_addresses = [\"127.0.0.1\"]\n\
             max_bytes = 1000\ntimeout_secs = 3\nmax_redirects = 2\n",
            &[],
        )
        .unwrap();
        assert!(s.addresses.allow_private);
        assert_eq!(
            s.addresses.allow,
            vec!["127.0.0.1".parse::<IpPrefix>().unwrap()]
        );
        assert_eq!(
            (s.limits.max_bytes, s.limits.timeout, s.limits.max_redirects),
            (1000, Duration::from_secs(3), 2)
        );
        let e = resolved("[web]\nallow_addresses = [\"localhost\"]\n", &[]).unwrap_err();
        assert!(e.to_string().contains("web.allow_addresses"), "{e}");
        let e = resolved("[web]\ntimeout_secs = 0\n", &[]).unwrap_err();
        assert!(e.to_string().contains("more than 0"), "{e}");
    }

    #[test]
    fn the_backend_is_chosen_from_what_is_configured() {
        let (_, s) = resolved("[web]\nsearxng_url = \"http://127.0.0.1:8888\"\n", &[]).unwrap();
        assert!(
            matches!(s.search, Some(SearchBackend::Searxng { ref url }) if url == "http://127.0.0.1:8888")
        );
        let (_, s) = resolved("", &[("BRAVE_API_KEY", "k")]).unwrap();
        assert!(
            matches!(s.search, Some(SearchBackend::Brave { ref endpoint, .. }) if endpoint == BRAVE_ENDPOINT)
        );
        let (_, s) = resolved(
            "[web]\nbrave_api_key_env = \"MY_KEY\"\n",
            &[("MY_KEY", "k")],
        )
        .unwrap();
        assert!(matches!(s.search, Some(SearchBackend::Brave { .. })));
        let (_, s) = resolved("", &[("SPEAR_SEARXNG_URL", "http://s.example")]).unwrap();
        assert!(matches!(s.search, Some(SearchBackend::Searxng { .. })));
        let e = resolved("[web]\nsearch_backend = \"searxng\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("searxng_url"), "{e}");
        let e = resolved("[web]\nsearch_backend = \"bing\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("\"brave\""), "{e}");
        let (_, s) = resolved("[web]\nsearch_backend = \"brave\"\n", &[]).unwrap();
        assert!(s.search.is_none());
        // The key never shows in Debug output.
        let (_, s) = resolved("", &[("SPEAR_BRAVE_API_KEY", "secret-key-123")]).unwrap();
        assert!(!format!("{s:?}").contains("secret-key-123"));
    }
}
