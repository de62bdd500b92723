//! `spear standard add URL`: one HTTP(S) GET, in Spear's own process, bounded in size, time and
//! redirects. Invariant: every hop's host is resolved first and refused when any address it
//! resolves to is loopback, private, link-local, metadata or another range that is not the
//! internet (the network path's own table), and the connection goes to exactly the addresses
//! that were checked, so a DNS answer cannot change between the check and the connection.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use spear::harness::netns::refused::REFUSED_RANGES;
use spear::tools::normative::StandardsLibrary;
use spear::tools::normative::extract;
use spear::tools::normative::library::{AddOutcome, StandardMeta, default_name};

/// The largest document fetched.
pub const MAX_BYTES: usize = 64 << 20;
const MAX_REDIRECTS: usize = 5;
const TIMEOUT: Duration = Duration::from_secs(60);

/// Fetch `url` and add it under `name` (default: the URL's last path segment).
pub fn add_url(
    lib: &StandardsLibrary,
    url: &str,
    name: Option<&str>,
    allow_private: bool,
) -> anyhow::Result<(AddOutcome, StandardMeta)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (bytes, content_type, final_url) = rt.block_on(fetch(url, allow_private))?;
    let kind = extract::detect(&final_url, content_type.as_deref(), &bytes)?;
    let name = name.map_or_else(|| default_name(url), str::to_string);
    Ok(lib.add(&name, url, kind, &bytes)?)
}

/// Why `addr` may not be fetched, if it may not.
pub fn refusal(addr: std::net::IpAddr) -> Option<&'static str> {
    REFUSED_RANGES
        .iter()
        .find(|r| r.prefix.contains(addr))
        .map(|r| r.why)
}

async fn fetch(
    url: &str,
    allow_private: bool,
) -> anyhow::Result<(Vec<u8>, Option<String>, String)> {
    let mut current = reqwest::Url::parse(url).with_context(|| format!("`{url}` is not a URL"))?;
    for _ in 0..=MAX_REDIRECTS {
        if !matches!(current.scheme(), "http" | "https") {
            bail!("{current}: only http and https URLs are fetched");
        }
        let host = current
            .host_str()
            .with_context(|| format!("{current} names no host"))?
            .trim_matches(['[', ']'])
            .to_string();
        let port = current.port_or_known_default().unwrap_or(443);
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
            .await
            .with_context(|| format!("cannot resolve {host}"))?
            .collect();
        if addrs.is_empty() {
            bail!("{host} resolves to no address");
        }
        if !allow_private {
            for a in &addrs {
                if let Some(why) = refusal(a.ip()) {
                    bail!(
                        "{current} is refused: {host} resolves to {}, {why}. Pass \
                         --allow-private to fetch from a local server on purpose.",
                        a.ip()
                    );
                }
            }
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .resolve_to_addrs(&host, &addrs)
            .build()
            .context("cannot build the HTTP client")?;
        let mut resp = client
            .get(current.clone())
            .send()
            .await
            .with_context(|| format!("cannot fetch {current}"))?;
        let status = resp.status();
        if status.is_redirection() {
            let next = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .with_context(|| format!("{current} redirects ({status}) without a Location"))?;
            current = current
                .join(next)
                .with_context(|| format!("{current} redirects to `{next}`, which is no URL"))?;
            continue;
        }
        if !status.is_success() {
            bail!("{current} answered {status}");
        }
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .with_context(|| format!("reading {current}"))?
        {
            if body.len() + chunk.len() > MAX_BYTES {
                bail!("{current} is larger than {} MiB", MAX_BYTES >> 20);
            }
            body.extend_from_slice(&chunk);
        }
        return Ok((body, content_type, current.to_string()));
    }
    bail!("{url} redirects more than {MAX_REDIRECTS} times")
}
