//! The coding core's six tools: read_file, search_files, patch, write_file, delete_file,
//! terminal. They reach the harness only through `SpearHost`, and every mutation goes through
//! the router's gates and the same `CommandPolicy::authorize` as a shell command.

pub(crate) mod patch;
pub(crate) mod patch_diff;
pub(crate) mod patch_edits;
pub(crate) mod read_file;
pub(crate) mod search_files;
pub(crate) mod terminal;
pub(crate) mod write_file;

use std::sync::Arc;

use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::tools::spec::{Surface, ToolSpec};

/// The names of the coding surface, in the spec's order.
pub const CODING_TOOLS: [&str; 6] = [
    "read_file",
    "search_files",
    "patch",
    "write_file",
    "delete_file",
    "terminal",
];

/// The six specs.
pub fn specs() -> Vec<ToolSpec> {
    use crate::harness::primitives::ExecutionMode::{Ask, Auto};
    let spec = |name: &str, description: &str, schema| {
        ToolSpec::new(name, description, schema, Surface::Coding)
    };
    vec![
        spec(
            "read_file",
            "Read a text file of the workspace with line numbers, a window at a time \
             (offset/limit), or a stored output (path result://ID).",
            read_file::schema(),
        )
        .read_only(),
        spec(
            "search_files",
            "Search the project's files for text (or a regex with regex=true), honouring \
             .gitignore; optional path and glob narrow it.",
            search_files::schema(),
        )
        .read_only(),
        spec(
            "patch",
            "Change an existing file: exact edits [{old, new, replace_all?}] (each old must match \
             once) or a unified diff of this file.",
            patch::schema(),
        )
        .modes(&[Ask, Auto]),
        spec(
            "write_file",
            "Write a whole file (created with its parent directories if missing).",
            write_file::write_schema(),
        )
        .modes(&[Ask, Auto]),
        spec(
            "delete_file",
            "Delete one file.",
            write_file::delete_schema(),
        )
        .modes(&[Ask, Auto]),
        spec(
            "terminal",
            "Run a bash command in the project's sandbox (timeout in seconds: default 180, at \
             most 600). Long output is cut; the whole is kept as result://ID. Host commands \
             answered by Spear: spear-capability list|describe NAME|run NAME ARGS, \
             spear-knowledge search QUERY|show ID (type them alone).",
            terminal::schema(),
        )
        // Each command is classified and authorized on its own; read-only ones run in SAFE.
        .modes(&crate::harness::primitives::ExecutionMode::ALL),
    ]
}

/// Register the six tools.
pub fn register(registry: &mut ToolRegistry) -> Result<(), RegistryError> {
    for spec in specs() {
        let handler: Arc<dyn crate::tools::handler::ToolHandler> = match spec.name.as_str() {
            "read_file" => Arc::new(read_file::ReadFile),
            "search_files" => Arc::new(search_files::SearchFiles),
            "patch" => Arc::new(patch::Patch),
            "write_file" => Arc::new(write_file::WriteFile),
            "delete_file" => Arc::new(write_file::DeleteFile),
            _ => Arc::new(terminal::Terminal),
        };
        registry.register(spec, handler)?;
    }
    Ok(())
}
