//! The model `spear run` talks to: the streaming client built from the resolved settings.

use anyhow::Context;
use spear::agent::provider::{OpenAiCompatible, ProviderSettings};
use spear::config::Settings;

pub fn build(settings: &Settings) -> anyhow::Result<OpenAiCompatible> {
    let p = &settings.provider;
    let mut s = ProviderSettings::new(p.base_url.clone(), p.model.clone());
    s.api_key = p.api_key.clone();
    s.api_key_env = p.api_key_env.clone();
    s.extra_headers = p.headers.clone();
    s.context_window = p.context_window;
    OpenAiCompatible::new(s).with_context(|| format!("provider `{}`", p.name))
}
