//! One HTTP(S) GET for `fetch_url`, with every connection going to an address that was checked:
//! the host is resolved here, each address judged by the `AddressPolicy`, and the client is
//! pinned to the allowed ones (reqwest's `resolve_to_addrs`, no proxy), so nothing resolves the
//! name a second time. Redirects are followed by hand, each hop resolved and checked afresh, at
//! most `max_redirects` of them. The body is read in chunks up to a size limit, all within one
//! deadline. Invariant: no byte is sent to an address the policy refuses.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use reqwest::Url;
use thiserror::Error;

use super::address::AddressPolicy;

/// Bounds on one fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchLimits {
    /// The whole fetch, redirects and body included.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub max_bytes: u64,
    pub max_redirects: u32,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_bytes: 32 << 20,
            max_redirects: 5,
        }
    }
}

/// A fetched body and where it came from.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL the body was read from, after redirects.
    pub url: Url,
    /// Every URL before it, in order.
    pub redirects: Vec<Url>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// Why a fetch gave no body.
#[derive(Debug, Error)]
pub enum FetchError {
    #[error("`{0}` is not a URL; write it whole, such as https://example.org/page")]
    BadUrl(String),
    #[error("`{0}`: only http and https URLs are fetched")]
    Scheme(String),
    #[error("`{url}`: the host `{host}` could not be resolved: {why}")]
    Resolve {
        url: String,
        host: String,
        why: String,
    },
    #[error(
        "refused to connect to {addr} for `{url}`{hop}: {why}. Addresses that are not the public \
         internet are refused by default; to read a local server, set `allow_private_addresses = \
         true` or add the address to `allow_addresses` under [web] in the config"
    )]
    Refused {
        url: String,
        addr: IpAddr,
        why: &'static str,
        /// Set when the refused URL was reached by a redirect.
        hop: String,
    },
    #[error("`{url}` redirected more than {max} times; the last redirect went to `{last}`")]
    TooManyRedirects { url: String, max: u32, last: String },
    #[error("`{url}` redirected with no usable Location header")]
    BadRedirect { url: String },
    #[error("`{url}` answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("`{url}` sent more than {limit} bytes; the body was not kept")]
    TooLarge { url: String, limit: u64 },
    #[error("`{url}` did not finish within {secs} s ({got} bytes received)")]
    Timeout { url: String, secs: u64, got: u64 },
    #[error("`{url}`: {why}")]
    Http { url: String, why: String },
}

/// GET `url` under `policy` and `limits`. Runs on a thread and runtime of its own, so it may be
/// called from any thread, inside an async runtime or not.
pub fn get(url: &str, policy: &AddressPolicy, limits: &FetchLimits) -> Result<Fetched, FetchError> {
    let parsed = Url::parse(url).map_err(|_| FetchError::BadUrl(url.to_string()))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| FetchError::Http {
                    url: url.to_string(),
                    why: format!("cannot start a runtime: {e}"),
                })?;
            rt.block_on(get_async(parsed, policy, limits))
        })
        .join()
        .unwrap_or_else(|_| {
            Err(FetchError::Http {
                url: url.to_string(),
                why: "the fetch panicked".into(),
            })
        })
    })
}

/// `get` on the caller's runtime.
pub async fn get_async(
    url: Url,
    policy: &AddressPolicy,
    limits: &FetchLimits,
) -> Result<Fetched, FetchError> {
    let deadline = Instant::now() + limits.timeout;
    let original = url.to_string();
    let mut current = url;
    let mut redirects: Vec<Url> = Vec::new();
    loop {
        let hop = match redirects.last() {
            Some(from) => format!(" (redirected from `{from}`)"),
            None => String::new(),
        };
        let response = within(
            deadline,
            limits,
            &current,
            0,
            one_hop(&current, policy, limits, hop),
        )
        .await??;
        let status = response.status();
        if status.is_redirection() {
            let next = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| current.join(l).ok())
                .ok_or_else(|| FetchError::BadRedirect {
                    url: current.to_string(),
                })?;
            if redirects.len() as u32 >= limits.max_redirects {
                return Err(FetchError::TooManyRedirects {
                    url: original,
                    max: limits.max_redirects,
                    last: next.to_string(),
                });
            }
            redirects.push(std::mem::replace(&mut current, next));
            continue;
        }
        if !status.is_success() {
            return Err(FetchError::Status {
                url: current.to_string(),
                status: status.as_u16(),
            });
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = read_body(response, &current, deadline, limits).await?;
        return Ok(Fetched {
            url: current,
            redirects,
            content_type,
            body,
        });
    }
}

/// `fut`, or a timeout error once `deadline` has passed.
async fn within<T>(
    deadline: Instant,
    limits: &FetchLimits,
    url: &Url,
    got: u64,
    fut: impl Future<Output = T>,
) -> Result<T, FetchError> {
    let left = deadline.saturating_duration_since(Instant::now());
    tokio::time::timeout(left, fut)
        .await
        .map_err(|_| FetchError::Timeout {
            url: url.to_string(),
            secs: limits.timeout.as_secs(),
            got,
        })
}

/// Resolve, check, pin and send one request (no redirect followed).
async fn one_hop(
    url: &Url,
    policy: &AddressPolicy,
    limits: &FetchLimits,
    hop: String,
) -> Result<reqwest::Response, FetchError> {
    let builder = pinned_builder(url, policy, hop)
        .await?
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(limits.connect_timeout)
        .user_agent(concat!("spear/", env!("CARGO_PKG_VERSION"), " (fetch_url)"));
    let client = builder.build().map_err(|e| FetchError::Http {
        url: url.to_string(),
        why: e.to_string(),
    })?;
    client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| FetchError::Http {
            url: url.to_string(),
            why: error_chain(&e),
        })
}

/// A client builder for `url` that can only reach an address `policy` lets it: the host is
/// resolved once here, every address checked (refused: `FetchError::Refused`, `hop` saying how
/// it was reached), and a name pinned to the addresses that passed; no proxy (it would make the
/// connection go somewhere other than the checked address). An IP literal is connected to as
/// written, and was checked as written.
pub async fn pinned_builder(
    url: &Url,
    policy: &AddressPolicy,
    hop: String,
) -> Result<reqwest::ClientBuilder, FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::Scheme(url.to_string()));
    }
    let host = url
        .host_str()
        .ok_or_else(|| FetchError::BadUrl(url.to_string()))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| FetchError::BadUrl(url.to_string()))?;
    let resolved = resolve(url, host, port).await?;
    let allowed = policy
        .allowed(&resolved)
        .map_err(|(addr, why)| FetchError::Refused {
            url: url.to_string(),
            addr,
            why,
            hop,
        })?;
    let pinned: Vec<SocketAddr> = allowed.iter().map(|a| SocketAddr::new(*a, port)).collect();
    let mut builder = reqwest::Client::builder().no_proxy();
    if ip_literal(host).is_none() {
        builder = builder.resolve_to_addrs(host, &pinned);
    }
    Ok(builder)
}

/// The address a URL's host is, when it is written as one (`[::1]` included).
fn ip_literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Every address `host` names: an IP literal is itself; a name is looked up once, here.
async fn resolve(url: &Url, host: &str, port: u16) -> Result<Vec<IpAddr>, FetchError> {
    if let Some(ip) = ip_literal(host) {
        return Ok(vec![ip]);
    }
    let found = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| FetchError::Resolve {
            url: url.to_string(),
            host: host.to_string(),
            why: e.to_string(),
        })?;
    let mut addrs: Vec<IpAddr> = Vec::new();
    for a in found {
        if !addrs.contains(&a.ip()) {
            addrs.push(a.ip());
        }
    }
    if addrs.is_empty() {
        return Err(FetchError::Resolve {
            url: url.to_string(),
            host: host.to_string(),
            why: "no addresses".into(),
        });
    }
    Ok(addrs)
}

/// The body, chunk by chunk, refused past `max_bytes` and cut off at the deadline.
async fn read_body(
    mut response: reqwest::Response,
    url: &Url,
    deadline: Instant,
    limits: &FetchLimits,
) -> Result<Vec<u8>, FetchError> {
    if let Some(len) = response.content_length()
        && len > limits.max_bytes
    {
        return Err(FetchError::TooLarge {
            url: url.to_string(),
            limit: limits.max_bytes,
        });
    }
    let mut body: Vec<u8> = Vec::new();
    loop {
        let got = body.len() as u64;
        let chunk = within(deadline, limits, url, got, response.chunk())
            .await?
            .map_err(|e| FetchError::Http {
                url: url.to_string(),
                why: error_chain(&e),
            })?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        if got + chunk.len() as u64 > limits.max_bytes {
            return Err(FetchError::TooLarge {
                url: url.to_string(),
                limit: limits.max_bytes,
            });
        }
        body.extend_from_slice(&chunk);
    }
}

/// An error with its causes (reqwest's own message is often just "error sending request").
/// An error with every source under it, `: `-joined (the words that say why are often the last).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
