//! `spear standard add URL`: the document fetched by the web pair's own GET
//! (`tools::host::web::http::get`): every hop resolved and checked against the `[web]` address
//! policy, the connection pinned to the checked addresses, bounded redirects, size and time. The
//! standards library asks for a larger body than a page fetch (a standard runs long).

use anyhow::Context;
use spear::tools::host::web::http;
use spear::tools::normative::StandardsLibrary;
use spear::tools::normative::extract;
use spear::tools::normative::library::{AddOutcome, StandardMeta, default_name};

/// The largest document a standard is added from.
pub const MAX_BYTES: u64 = 128 << 20;

/// Fetch `url` and add it under `name` (default: the URL's last path segment). `allow_private`
/// lets this one fetch reach a local server, as `[web] allow_private_addresses` does always.
pub fn add_url(
    lib: &StandardsLibrary,
    url: &str,
    name: Option<&str>,
    allow_private: bool,
) -> anyhow::Result<(AddOutcome, StandardMeta)> {
    let web = super::common::harness_settings()?.web;
    let mut policy = web.addresses.clone();
    policy.allow_private |= allow_private;
    let mut limits = web.limits.clone();
    limits.max_bytes = limits.max_bytes.max(MAX_BYTES);
    limits.timeout = limits.timeout.max(std::time::Duration::from_secs(120));
    let fetched = http::get(url, &policy, &limits).with_context(|| {
        if allow_private {
            String::from("the fetch failed")
        } else {
            String::from("the fetch failed (--allow-private reads a local server on purpose)")
        }
    })?;
    let kind = extract::detect(
        fetched.url.as_str(),
        fetched.content_type.as_deref(),
        &fetched.body,
    )?;
    let name = name.map_or_else(|| default_name(fetched.url.path()), str::to_string);
    Ok(lib.add(&name, url, kind, &fetched.body)?)
}
