//! The normative runtime's lookups: `standard.list`, `standard.search {query, standard?}`,
//! `standard.read {standard, clause | pages}` and `search_corpus {query}`. They read only the
//! standards library in the state directory, never a working tree, so they are offered to a
//! purely normative question and run in every mode. Invariant: every hit names its citation
//! (`NAME §4.2.1`, `NAME p. 3`) and how to read it, so findings can be quoted by reference.

use std::sync::{Arc, PoisonError, RwLock};

use serde_json::{Value, json};

use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use crate::tools::host::SpearHost;
use crate::tools::normative::error::StandardError;
use crate::tools::normative::library::{Hit, StandardsLibrary};
use crate::tools::normative::read::{Reading, read_clause, read_pages};
use crate::tools::refusal::Refusal;

pub const DEFAULT_HITS: u64 = 8;
pub const MAX_HITS: u64 = 50;

/// The standard the session has engaged, shared by the runtime (which sets it) and the tools
/// (`standard.search` without `standard` searches it).
#[derive(Debug, Clone, Default)]
pub struct EngagedStandard(Arc<RwLock<Option<String>>>);

impl EngagedStandard {
    pub fn get(&self) -> Option<String> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn set(&self, name: Option<String>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = name;
    }
}

pub fn list_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "properties": {}})
}

pub fn search_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["query"],
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "Words to find"},
            "standard": {"type": "string", "minLength": 1,
                         "description": "A standard's name (default: the engaged standard)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HITS}
        }
    })
}

pub fn read_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["standard"],
        "properties": {
            "standard": {"type": "string", "minLength": 1},
            "clause": {"type": "string", "minLength": 1,
                       "description": "A clause reference as hits cite it, e.g. 4.2.1 (with its subclauses)"},
            "pages": {"type": "string", "minLength": 1, "description": "Pages of a paged standard: 3, 3-5 or 3-"}
        }
    })
}

pub fn corpus_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["query"],
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HITS}
        }
    })
}

/// Which lookup a handler performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    List,
    Search,
    Read,
    Corpus,
}

/// One handler for the four lookups: each call is a pure read of the library.
pub struct StandardTool {
    pub lookup: Lookup,
    pub library: Arc<StandardsLibrary>,
    pub engaged: EngagedStandard,
}

impl ToolHandler for StandardTool {
    fn plan(&self, args: &Value, _host: &SpearHost) -> Result<Plan, Refusal> {
        let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_HITS)
            .min(MAX_HITS) as usize;
        let request = match self.lookup {
            Lookup::List => Request::List,
            Lookup::Search => Request::Search {
                query: text("query").unwrap_or_default(),
                standard: text("standard").or_else(|| self.engaged.get()),
                limit,
            },
            Lookup::Corpus => Request::Search {
                query: text("query").unwrap_or_default(),
                standard: None,
                limit,
            },
            Lookup::Read => {
                let standard = text("standard").unwrap_or_default();
                match (text("clause"), text("pages")) {
                    (Some(c), None) => Request::Clause(standard, c),
                    (None, Some(p)) => Request::Pages(standard, p),
                    _ => {
                        return Err(crate::tools::refusal::invalid_arguments(
                            "give exactly one of `clause` (e.g. \"4.2.1\") or `pages` (e.g. \"3-5\")",
                        ));
                    }
                }
            }
        };
        let audit_target = match &request {
            Request::List => None,
            Request::Search { query, .. } => Some(query.clone()),
            Request::Clause(s, c) => Some(format!("{s} {c}")),
            Request::Pages(s, p) => Some(format!("{s} pages {p}")),
        };
        Ok(Plan {
            targets: Vec::new(),
            command: None,
            audit_target,
            action: Box::new(LookupAction {
                request,
                library: self.library.clone(),
                engaged: self.engaged.get(),
            }),
        })
    }
}

enum Request {
    List,
    Search {
        query: String,
        standard: Option<String>,
        limit: usize,
    },
    Clause(String, String),
    Pages(String, String),
}

struct LookupAction {
    request: Request,
    library: Arc<StandardsLibrary>,
    engaged: Option<String>,
}

impl Action for LookupAction {
    fn run(self: Box<Self>, _host: &SpearHost, _ctx: &RunContext<'_>) -> ActionOutcome {
        let lib = &self.library;
        let result = match &self.request {
            Request::List => lib.list().map(|l| list_text(&l, self.engaged.as_deref())),
            Request::Search {
                query,
                standard,
                limit,
            } => {
                let names: Vec<String> = standard.iter().cloned().collect();
                lib.search(&names, query, *limit)
                    .map(|hits| hits_text(&hits, query, standard.as_deref()))
            }
            Request::Clause(s, c) => lib
                .load(s)
                .and_then(|st| read_clause(&st, c))
                .map(reading_text),
            Request::Pages(s, p) => lib
                .load(s)
                .and_then(|st| read_pages(&st, p))
                .map(reading_text),
        };
        match result {
            Ok(text) => ToolResult::ok(text).into(),
            Err(e) => failure(&e).into(),
        }
    }
}

/// A lookup that found nothing is `not_found`; a bad argument or a broken library `failed`.
fn failure(e: &StandardError) -> ToolResult {
    let status = match e {
        StandardError::NotFound { .. } | StandardError::NoClause { .. } => ToolStatus::NotFound,
        _ => ToolStatus::Failed,
    };
    ToolResult::refused(status, e.to_string())
}

fn list_text(
    list: &[crate::tools::normative::library::StandardMeta],
    engaged: Option<&str>,
) -> String {
    if list.is_empty() {
        return "The standards library is empty (`spear standard add FILE` adds one).\n".into();
    }
    let mut out = String::new();
    for m in list {
        let mark = if engaged == Some(m.name.as_str()) {
            " (engaged)"
        } else {
            ""
        };
        let pages = if m.pages > 0 {
            format!(", {} pages", m.pages)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{}{mark}: {} units{pages}, {} from {}\n",
            m.name,
            m.units,
            m.kind.as_str(),
            m.source
        ));
    }
    out
}

fn hits_text(hits: &[Hit], query: &str, standard: Option<&str>) -> String {
    let scope = standard.map_or_else(|| "the library".to_string(), str::to_string);
    if hits.is_empty() {
        return format!("No clause of {scope} matches \"{query}\". Try other words.\n");
    }
    let mut out = format!(
        "{} hits for \"{query}\" in {scope}, best first:\n",
        hits.len()
    );
    for (i, h) in hits.iter().enumerate() {
        let pages = match h.pages {
            Some((a, b)) if a == b => format!(" (p. {a})"),
            Some((a, b)) => format!(" (pp. {a}-{b})"),
            None => String::new(),
        };
        let title = if h.title.is_empty() || h.title == h.reference {
            String::new()
        } else {
            format!(" {}", h.title)
        };
        out.push_str(&format!(
            "{}. [{}]{title}{pages} score {:.2}\n   {}\n",
            i + 1,
            h.citation(),
            h.score,
            h.excerpt
        ));
    }
    out.push_str(
        "Read one whole with standard.read {\"standard\", \"clause\"} (or \"pages\" for a page hit).\n",
    );
    out
}

fn reading_text(r: Reading) -> String {
    match r.continues {
        Some(next) => format!("{}[cut here: continue with {next}]\n", r.text),
        None => r.text,
    }
}
