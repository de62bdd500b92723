//! `search_internet {query, max_results?}`: the plan (nothing to gate, nothing written) and the
//! action, which asks the session's search backend (`host::web::search`) and renders its hits
//! for the model. With no backend configured the answer names the config keys that would set one.

use serde_json::Value;

use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use crate::tools::host::SpearHost;
use crate::tools::host::web::search::{Hit, NOT_CONFIGURED, search};
use crate::tools::refusal::Refusal;

/// Results one search returns unless asked for fewer.
pub const DEFAULT_RESULTS: u64 = 8;
pub const MAX_RESULTS: u64 = 20;
pub struct SearchInternet;

impl ToolHandler for SearchInternet {
    fn plan(&self, args: &Value, host: &SpearHost) -> Result<Plan, Refusal> {
        let query = args["query"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string();
        // The query goes to a search service: no known secret goes with it.
        if let Some(refusal) = host.secret_out(&query) {
            return Err(refusal);
        }
        let max = args
            .get("max_results")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_RESULTS)
            .clamp(1, MAX_RESULTS);
        Ok(search_plan(query, max))
    }
}

/// The plan of one search: nothing to gate, nothing written.
pub fn search_plan(query: String, max: u64) -> Plan {
    Plan {
        targets: Vec::new(),
        command: None,
        audit_target: Some(query.clone()),
        action: Box::new(SearchAction { query, max }),
    }
}

struct SearchAction {
    query: String,
    max: u64,
}

impl Action for SearchAction {
    fn run(self: Box<Self>, host: &SpearHost, _ctx: &RunContext<'_>) -> ActionOutcome {
        let Some(backend) = host.web().settings().search.clone() else {
            return ToolResult::failed(NOT_CONFIGURED).into();
        };
        match search(&backend, &self.query, self.max) {
            Ok(hits) => ToolResult::ok(render(&self.query, &hits)).into(),
            Err(e) => ToolResult::refused(ToolStatus::Failed, e).into(),
        }
    }
}

fn render(query: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("No results for `{query}`.\n");
    }
    let mut out = format!("{} result(s) for `{query}`:\n", hits.len());
    for (i, h) in hits.iter().enumerate() {
        out.push_str(&format!("{}. {}\n   {}\n", i + 1, h.title, h.url));
        if !h.snippet.is_empty() {
            out.push_str(&format!("   {}\n", h.snippet));
        }
    }
    out.push_str("Read one with fetch_url.\n");
    out
}
