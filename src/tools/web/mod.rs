//! The web pair, run in Spear's own process rather than the sandbox: `search_internet` finds
//! pages through a configured backend, `fetch_url` reads one (HTML as Markdown, text as is, PDFs
//! in page slices) or saves it into the workspace with `save_as`. Reading works in every mode;
//! saving is a write and takes write_file's gates and authorization. Both are tools of the
//! normative surface, offered exactly when the web is enabled, and host commands of the coding
//! core (`spear-capability run NAME ...`), answered by SpearHost and never by a shell. The HTTP
//! client, the search backends and the session's `WebPair` are SpearHost's (`host::web`).

pub(crate) mod capability;
pub(crate) mod fetch_url;
pub(crate) mod pages;
pub(crate) mod search;

use std::sync::Arc;

use serde_json::json;

use crate::harness::primitives::ExecutionMode;
use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::tools::spec::{Surface, ToolSpec};

/// The web pair's names.
pub const WEB_TOOLS: [&str; 2] = ["fetch_url", "search_internet"];

/// The schema of `fetch_url`.
pub fn fetch_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["url"],
        "properties": {
            "url": {"type": "string", "minLength": 1, "description": "http or https URL"},
            "pages": {"type": "string", "description": "PDF pages to read, e.g. \"13-24\""},
            "save_as": {"type": "string", "minLength": 1,
                        "description": "Workspace path to save the fetched file to"}
        }
    })
}

/// The schema of `search_internet`.
pub fn search_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["query"],
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "max_results": {"type": "integer", "minimum": 1, "maximum": search::MAX_RESULTS}
        }
    })
}

/// The two specs: normative-surface tools that need the web and reach no working tree. Both
/// read in every mode; `fetch_url` with `save_as` names its target, which the router gates and
/// authorizes as a write.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "fetch_url",
            "Read a web page or document: HTML as Markdown, text as is, PDFs in page slices \
             (each slice names the `pages` range that continues it). `save_as` saves the file \
             into the workspace (a write).",
            fetch_schema(),
            Surface::Normative,
        )
        .modes(&ExecutionMode::ALL)
        .read_only()
        .off_the_working_tree()
        .needs_web(),
        ToolSpec::new(
            "search_internet",
            "Search the web; returns titles, URLs and snippets.",
            search_schema(),
            Surface::Normative,
        )
        .read_only()
        .off_the_working_tree()
        .needs_web(),
    ]
}

/// Register the web pair.
pub fn register(registry: &mut ToolRegistry) -> Result<(), RegistryError> {
    for spec in specs() {
        let handler: Arc<dyn crate::tools::handler::ToolHandler> = match spec.name.as_str() {
            "fetch_url" => Arc::new(fetch_url::FetchUrl),
            _ => Arc::new(search::SearchInternet),
        };
        registry.register(spec, handler)?;
    }
    Ok(())
}
