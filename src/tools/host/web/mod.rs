//! The session's web client, held by SpearHost and used by the web pair's tools: the address
//! policy every fetch is judged by, the HTTP fetch itself, the search backends, and `WebPair`,
//! the settings and the small cache of extracted PDFs one session keeps. It knows nothing of
//! tools, plans or the router; what a fetch may reach is decided here, in Spear's own process.

pub(crate) mod address;
pub mod http;
pub(crate) mod search;

use std::sync::{Arc, Mutex};

pub use address::AddressPolicy;
pub use http::FetchLimits;
pub use search::SearchBackend;

/// Everything the web pair is configured with (`[web]` in the config).
#[derive(Debug, Clone, Default)]
pub struct WebSettings {
    pub addresses: AddressPolicy,
    pub limits: FetchLimits,
    /// `None`: search_internet answers with the config keys that would set one.
    pub search: Option<SearchBackend>,
}

/// Documents this many recently read PDFs are kept extracted, so asking for the next slice does
/// not download and extract the file again.
const CACHED_DOCUMENTS: usize = 4;

/// The web pair for one session: its settings and its small cache of extracted PDFs.
#[derive(Debug, Default)]
pub struct WebPair {
    settings: WebSettings,
    cache: Mutex<Vec<(String, Arc<Vec<String>>)>>,
}

impl WebPair {
    pub fn new(settings: WebSettings) -> Self {
        WebPair {
            settings,
            cache: Mutex::new(Vec::new()),
        }
    }

    pub fn settings(&self) -> &WebSettings {
        &self.settings
    }

    /// The pages of the PDF last read from `url`, if it is still cached.
    pub(crate) fn cached(&self, url: &str) -> Option<Arc<Vec<String>>> {
        let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let i = c.iter().position(|(u, _)| u == url)?;
        let entry = c.remove(i);
        let pages = entry.1.clone();
        c.push(entry);
        Some(pages)
    }

    pub(crate) fn remember(&self, urls: &[&str], pages: Arc<Vec<String>>) {
        let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        for u in urls {
            c.retain(|(k, _)| k != u);
            c.push((u.to_string(), pages.clone()));
        }
        while c.len() > CACHED_DOCUMENTS * 2 {
            c.remove(0);
        }
    }
}
