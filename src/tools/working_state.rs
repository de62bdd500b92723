//! `WorkingState`: what this task changed, grounded in the files themselves. Each mutation a tool
//! really made records the path with the SHA-256 of its content before (the first time the task
//! touched it) and after (the latest), so the agent and the TUI can say what changed, and a file
//! changed and changed back is known to be unchanged. A terminal command's changes are recorded
//! too, from the workspace compared before and after it: their content before is not known
//! (`NOT_HASHED`), so such a path counts as changed until a tool sees it back as it began.

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

/// SHA-256 of some content, hex.
pub fn content_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Stands for content that existed but was not hashed: before a command changed it, or a
/// directory, a special file, or a file too large to read back.
pub const NOT_HASHED: &str = "not-hashed";

/// A change a command made, as the before/after comparison saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    Created,
    Modified,
    Deleted,
}

/// One path's change over the task. `None` means the file did not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathChange {
    pub before: Option<String>,
    pub after: Option<String>,
    /// How many mutations touched it.
    pub mutations: u32,
}

impl PathChange {
    pub fn is_net_change(&self) -> bool {
        self.before != self.after
    }
}

/// The task's grounded mutations, by path (relative to the project when inside it).
#[derive(Debug, Clone, Default, Serialize)]
pub struct WorkingState {
    changes: BTreeMap<String, PathChange>,
}

impl WorkingState {
    pub fn new() -> Self {
        Self::default()
    }

    /// A mutation of `path` from `before` to `after` content hashes.
    pub fn record(&mut self, path: &str, before: Option<String>, after: Option<String>) {
        let entry = self
            .changes
            .entry(path.to_string())
            .or_insert_with(|| PathChange {
                before,
                after: None,
                mutations: 0,
            });
        entry.after = after;
        entry.mutations += 1;
    }

    /// A change a command made to `path`; `after` is its content hash now (`None` if deleted).
    pub fn record_observed(&mut self, path: &str, kind: Observed, after: Option<String>) {
        let before = match kind {
            Observed::Created => None,
            Observed::Modified | Observed::Deleted => Some(NOT_HASHED.to_string()),
        };
        self.record(path, before, after);
    }

    pub fn get(&self, path: &str) -> Option<&PathChange> {
        self.changes.get(path)
    }

    /// Every path touched, with its change.
    pub fn all(&self) -> impl Iterator<Item = (&str, &PathChange)> {
        self.changes.iter().map(|(p, c)| (p.as_str(), c))
    }

    /// Changed paths (see `changed_paths`) that run code by design when the person next uses
    /// their tools, outside any sandbox (see `runs_code_by_design`).
    pub fn changed_code_running(&self) -> Vec<&str> {
        self.changed_paths()
            .into_iter()
            .filter(|p| runs_code_by_design(p))
            .collect()
    }

    /// Paths whose content differs from what the task started with.
    pub fn changed_paths(&self) -> Vec<&str> {
        self.all()
            .filter(|(_, c)| c.is_net_change())
            .map(|(p, _)| p)
            .collect()
    }
}

/// Files whose content runs as code, by design, when the person builds, tests, commits, loads
/// the directory in their shell or opens it in their editor: a change to one acts later, outside
/// the sandbox, with the person's authority. Decided on the workspace-relative path's words.
pub fn runs_code_by_design(path: &str) -> bool {
    const NAMES: &[&str] = &[
        "Makefile",
        "makefile",
        "GNUmakefile",
        "package.json",
        ".npmrc",
        ".yarnrc.yml",
        "setup.py",
        "setup.cfg",
        "pyproject.toml",
        "conftest.py",
        "noxfile.py",
        "tox.ini",
        "build.rs",
        "Cargo.toml",
        "CMakeLists.txt",
        "meson.build",
        "build.gradle",
        "build.gradle.kts",
        "settings.gradle",
        "settings.gradle.kts",
        "pom.xml",
        "Rakefile",
        "Gemfile",
        "justfile",
        "Justfile",
        "Taskfile.yml",
        ".envrc",
        ".pre-commit-config.yaml",
        ".gitattributes",
    ];
    const UNDER: &[&str] = &[
        ".vscode/",
        ".idea/",
        ".devcontainer/",
        ".github/workflows/",
        ".gitlab-ci",
        ".husky/",
        ".githooks/",
        ".cargo/",
    ];
    let name = path.rsplit('/').next().unwrap_or(path);
    NAMES.contains(&name)
        || name.ends_with(".mk")
        || UNDER
            .iter()
            .any(|u| path.starts_with(u) || path.contains(&format!("/{u}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_run_code_by_design_are_told_from_the_rest() {
        for yes in [
            "Makefile",
            "sub/Makefile",
            "rules.mk",
            "package.json",
            "web/package.json",
            ".pre-commit-config.yaml",
            ".vscode/tasks.json",
            "app/.vscode/settings.json",
            ".github/workflows/ci.yml",
            "build.rs",
            ".envrc",
            ".cargo/config.toml",
        ] {
            assert!(runs_code_by_design(yes), "{yes}");
        }
        for no in [
            "src/main.rs",
            "README.md",
            "docs/Makefile.md",
            "vscode/tasks.json",
            "x.json",
        ] {
            assert!(!runs_code_by_design(no), "{no}");
        }
        let mut ws = WorkingState::new();
        ws.record("Makefile", None, Some(content_hash(b"all:")));
        ws.record("src/a.rs", None, Some(content_hash(b"x")));
        ws.record(
            "package.json",
            Some(content_hash(b"{}")),
            Some(content_hash(b"{}")),
        );
        assert_eq!(ws.changed_code_running(), vec!["Makefile"]);
    }

    #[test]
    fn first_before_and_latest_after_are_kept() {
        let mut ws = WorkingState::new();
        let (a, b) = (content_hash(b"a"), content_hash(b"b"));
        ws.record("x", Some(a.clone()), Some(b.clone()));
        ws.record("x", Some(b.clone()), Some(a.clone()));
        ws.record("new", None, Some(b.clone()));
        ws.record("gone", Some(a.clone()), None);
        let x = ws.get("x").unwrap();
        assert_eq!((x.mutations, x.is_net_change()), (2, false));
        assert_eq!(ws.changed_paths(), vec!["gone", "new"]);
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn a_command_change_keeps_what_a_tool_saw_first() {
        let mut ws = WorkingState::new();
        let (a, b) = (content_hash(b"a"), content_hash(b"b"));
        ws.record("x", Some(a.clone()), Some(b.clone()));
        // A command then restores it: the task's net change is none.
        ws.record_observed("x", Observed::Modified, Some(a.clone()));
        ws.record_observed("made", Observed::Created, Some(b.clone()));
        ws.record_observed("gone", Observed::Deleted, None);
        ws.record_observed("edited", Observed::Modified, Some(b));
        assert!(!ws.get("x").unwrap().is_net_change());
        assert_eq!(ws.get("made").unwrap().before, None);
        assert_eq!(ws.get("gone").unwrap().before.as_deref(), Some(NOT_HASHED));
        assert_eq!(ws.changed_paths(), vec!["edited", "gone", "made"]);
    }
}
