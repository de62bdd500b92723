//! `ToolSpec`: what a tool is to the model and to the router: its name, description, JSON schema,
//! the execution modes it may run in, the surface it belongs to, and whether it mutates. The
//! restrictive answer is the default: a spec that does not say otherwise mutates.

use serde::Serialize;
use serde_json::Value;

use crate::harness::primitives::ExecutionMode;

/// The two vocabularies the registry serves. A turn sees exactly one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// The coding core's six tools, when no standard is engaged.
    Coding,
    /// The normative runtime's tools (standard.*, its file and command tools, search_corpus, the
    /// web pair), when a standard is engaged.
    Normative,
}

/// One tool's contract.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments (the subset `schema::validate` understands).
    pub parameters: Value,
    /// Modes the tool may run in; a call in any other mode is refused before its handler runs.
    pub execution_modes: Vec<ExecutionMode>,
    pub surface: Surface,
    /// Whether a call may change anything. Defaults to true.
    pub mutates: bool,
    /// Whether `execution_modes` was declared; undeclared, it follows `mutates` (a mutating
    /// tool does not run in SAFE).
    #[serde(skip)]
    modes_declared: bool,
    /// The tool reaches a working tree (files, commands). A purely normative question is offered
    /// none of these.
    pub reaches_working_tree: bool,
    /// Offered only when the session has the web enabled (the web pair).
    pub needs_web: bool,
}

impl ToolSpec {
    /// A spec that mutates, reaches the working tree and runs in ASK and AUTO until told
    /// otherwise (`read_only` widens it to every mode, `modes` sets the modes).
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        surface: Surface,
    ) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
            execution_modes: vec![ExecutionMode::Ask, ExecutionMode::Auto],
            surface,
            mutates: true,
            modes_declared: false,
            reaches_working_tree: true,
            needs_web: false,
        }
    }

    /// The tool never changes anything.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.mutates = false;
        if !self.modes_declared {
            self.execution_modes = ExecutionMode::ALL.to_vec();
        }
        self
    }

    /// Restrict the modes the tool may run in.
    #[must_use]
    pub fn modes(mut self, modes: &[ExecutionMode]) -> Self {
        self.execution_modes = modes.to_vec();
        self.modes_declared = true;
        self
    }

    /// The tool touches no working tree (normative lookups, the web pair).
    #[must_use]
    pub fn off_the_working_tree(mut self) -> Self {
        self.reaches_working_tree = false;
        self
    }

    /// The tool needs the web switched on.
    #[must_use]
    pub fn needs_web(mut self) -> Self {
        self.needs_web = true;
        self
    }

    pub fn runs_in(&self, mode: ExecutionMode) -> bool {
        self.execution_modes.contains(&mode)
    }

    /// The name on the wire. OpenAI-compatible servers accept function names matching
    /// `^[a-zA-Z0-9_-]{1,64}$` only, so the spec's `standard.search` goes out as
    /// `standard_search`; people, the audit log and the TUI keep the spec's name.
    pub fn wire_name(&self) -> String {
        wire_name(&self.name)
    }

    /// The function declaration an OpenAI-compatible endpoint expects.
    pub fn to_function(&self) -> Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.wire_name(),
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }
}

/// `name` as OpenAI-compatible servers accept it: every character outside `[a-zA-Z0-9_-]`
/// becomes `_`.
pub fn wire_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_spec_mutates_and_stays_out_of_safe_until_told_otherwise() {
        let s = ToolSpec::new(
            "x",
            "d",
            serde_json::json!({"type": "object"}),
            Surface::Coding,
        );
        assert!(s.mutates && s.reaches_working_tree && !s.needs_web);
        assert!(!s.runs_in(ExecutionMode::Safe));
        assert!(s.runs_in(ExecutionMode::Ask) && s.runs_in(ExecutionMode::Auto));
        let everywhere = s.clone().read_only();
        assert!(ExecutionMode::ALL.iter().all(|m| everywhere.runs_in(*m)));
        // Declared modes stay as declared whatever is said after.
        let declared = s.clone().modes(&[ExecutionMode::Safe]).read_only();
        assert_eq!(declared.execution_modes, [ExecutionMode::Safe]);
        let r = s.read_only().modes(&[ExecutionMode::Auto]);
        assert!(!r.mutates && !r.runs_in(ExecutionMode::Safe));
        assert_eq!(r.to_function()["function"]["name"], "x");
    }

    #[test]
    fn dotted_names_go_out_in_the_wire_alphabet() {
        let s = ToolSpec::new(
            "standard.search",
            "d",
            serde_json::json!({}),
            Surface::Normative,
        );
        assert_eq!(s.wire_name(), "standard_search");
        assert_eq!(s.to_function()["function"]["name"], "standard_search");
        assert_eq!(wire_name("read_file"), "read_file");
    }
}
