//! The normative runtime: the standards library (units, a BM25 index, atomic storage) and the
//! tools a session with a standard engaged is offered: the lookups `standard.list`,
//! `standard.search`, `standard.read` and `search_corpus`, which reach no working tree, and the
//! runtime's own file and command tools (`workspace.read_file`, `workspace.search_files`,
//! `workspace.terminal`), which do and are therefore withheld from a purely normative question.
//! Every one is on the normative surface: the coding core never sees them. The web pair is
//! registered by `tools::web` on the same surface.

pub(crate) mod error;
pub mod extract;
pub mod index;
pub mod library;
pub mod read;
pub(crate) mod tools;
pub(crate) mod units;

use std::sync::Arc;

use crate::tools::coding::{read_file, search_files, terminal};
use crate::tools::handler::ToolHandler;
use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::tools::spec::{Surface, ToolSpec};

pub use error::StandardError;
pub use library::StandardsLibrary;
pub use tools::EngagedStandard;

/// The lookups, which reach no working tree.
pub const LOOKUP_TOOLS: [&str; 4] = [
    "search_corpus",
    "standard.list",
    "standard.read",
    "standard.search",
];

/// The runtime's file and command tools, which reach the working tree.
pub const WORKSPACE_TOOLS: [&str; 3] = [
    "workspace.read_file",
    "workspace.search_files",
    "workspace.terminal",
];

/// The normative runtime's specs (the web pair aside).
pub fn specs() -> Vec<ToolSpec> {
    let spec = |name: &str, description: &str, schema| {
        ToolSpec::new(name, description, schema, Surface::Normative)
    };
    vec![
        spec(
            "standard.list",
            "List the standards in the library (name, units, pages, source); the engaged one is marked.",
            tools::list_schema(),
        )
        .read_only()
        .off_the_working_tree(),
        spec(
            "standard.search",
            "Ranked full-text search of one standard (default: the engaged one). Each hit cites its \
             clause (NAME §4.2.1) or page (NAME p. 3) with an excerpt.",
            tools::search_schema(),
        )
        .read_only()
        .off_the_working_tree(),
        spec(
            "standard.read",
            "Read a standard by clause (the clause and its subclauses, e.g. clause \"4.2\") or by \
             pages (\"3-5\"). A long read is cut and names what continues it.",
            tools::read_schema(),
        )
        .read_only()
        .off_the_working_tree(),
        spec(
            "search_corpus",
            "Ranked full-text search across every standard in the library; hits cite standard and clause.",
            tools::corpus_schema(),
        )
        .read_only()
        .off_the_working_tree(),
        spec(
            "workspace.read_file",
            "Read a text file of the project with line numbers (offset/limit), or result://ID.",
            read_file::schema(),
        )
        .read_only(),
        spec(
            "workspace.search_files",
            "Search the project's files for text (regex=true for a regex), honouring .gitignore.",
            search_files::schema(),
        )
        .read_only(),
        spec(
            "workspace.terminal",
            "Run a read-only bash command in the project's sandbox to inspect it (ls, grep, git \
             log...); a command that would change anything is refused (timeout default 180 s, at \
             most 600).",
            terminal::schema(),
        )
        .read_only(),
    ]
}

/// Register the normative runtime's tools over `library`.
pub fn register(
    registry: &mut ToolRegistry,
    library: Arc<StandardsLibrary>,
    engaged: EngagedStandard,
) -> Result<(), RegistryError> {
    for spec in specs() {
        let lookup = |lookup| -> Arc<dyn ToolHandler> {
            Arc::new(tools::StandardTool {
                lookup,
                library: library.clone(),
                engaged: engaged.clone(),
            })
        };
        let handler: Arc<dyn ToolHandler> = match spec.name.as_str() {
            "standard.list" => lookup(tools::Lookup::List),
            "standard.search" => lookup(tools::Lookup::Search),
            "standard.read" => lookup(tools::Lookup::Read),
            "search_corpus" => lookup(tools::Lookup::Corpus),
            "workspace.read_file" => Arc::new(read_file::ReadFile),
            "workspace.search_files" => Arc::new(search_files::SearchFiles),
            _ => Arc::new(ReadOnlyTerminal),
        };
        registry.register(spec, handler)?;
    }
    Ok(())
}

/// The normative runtime's command tool: the coding terminal, for commands the classifier
/// finds READ_ONLY alone. The runtime inspects a project to answer what a standard requires of
/// it; changing the project is the coding core's work, in a MIXED request's implementation pass.
struct ReadOnlyTerminal;

impl ToolHandler for ReadOnlyTerminal {
    fn plan(
        &self,
        args: &serde_json::Value,
        host: &crate::tools::host::SpearHost,
    ) -> Result<crate::tools::handler::Plan, crate::tools::refusal::Refusal> {
        use crate::harness::command_policy::CommandClass;
        let plan = terminal::Terminal.plan(args, host)?;
        match &plan.command {
            Some(a) if a.class != CommandClass::ReadOnly => {
                Err(crate::tools::refusal::Refusal::new(
                    crate::tools::refusal::Gate::Authorization,
                    "normative_read_only",
                    crate::harness::primitives::ToolResult::denied(format!(
                        "the normative runtime runs read-only commands only, and `{}` is {}: \
                         {}. To change the project, ask for the change together with what the \
                         standard requires (a MIXED request runs an implementation pass with the \
                         coding tools), or disengage the standard (`/standard off`)",
                        a.command,
                        a.class,
                        a.reasons.join("; ")
                    )),
                ))
            }
            _ => Ok(plan),
        }
    }
}
