//! Permission rules: `allow`, `ask` or `deny` for a parsed command, a file tool's paths, or
//! (reserved for MCP and egress) `mcp:SERVER.TOOL` and `net:HOST[:PORT]`; read from the
//! person's file, the project's `.spear/rules.toml` and the session's dialog.
//!
//! Invariants, which authorization relies on:
//! - Rules never widen what the class and mode permit: DANGEROUS and whatever the mode refuses
//!   are decided before any rule is read; an `allow` is consulted only where the mode would ask,
//!   and covers only commands no wider (class and capabilities) than the one it was saved from.
//! - A command is allowed by rules only when every segment is, each matched on its own: a line
//!   that is not a flat list of literal commands has no segments, so no allow speaks for it.
//! - `deny` wins over `ask` over `allow`. A deny or ask also speaks where its words stand in a
//!   line it cannot match exactly (behind a wrapper, in a subshell): that line is asked about.
//! - A project's `allow` counts only while the person trusts that file at that place with
//!   those bytes; its `deny` and `ask` always count.

mod book;
pub mod files;
pub mod rule;
pub mod trust;

pub use book::{Asked, Explanation, Part, PartDecision, RuleBook, Verdict};
pub use files::{RawRule, RulesError, project_rules_path, user_rules_path};
pub use rule::{Ceiling, CommandPattern, Origin, Rule, RuleAction, RuleRef, Subject};
pub use trust::TrustStore;

use std::path::Path;

/// The rules in force for the workspace at `root`: the person's file (`user_file`, if any), the
/// project's, and the trust records under `state_home`.
pub fn load(
    root: &Path,
    user_file: Option<&Path>,
    state_home: &Path,
) -> Result<RuleBook, RulesError> {
    let user = match user_file {
        Some(f) => files::read_rules(f, Origin::User)?.0,
        None => Vec::new(),
    };
    let project_file = project_rules_path(root);
    let (project, bytes) = files::read_rules(&project_file, Origin::Project)?;
    let trusted = !bytes.is_empty()
        && TrustStore::open_in(state_home).is_trusted(root, &project_file, &bytes)?;
    Ok(RuleBook::new(root, user_file, user, project, trusted))
}
