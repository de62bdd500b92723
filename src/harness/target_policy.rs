//! The refusal that attaches to a file, not to a tool: generated output and snapshot or
//! third-party copies are refused to every writer (write_file, patch, delete_file and each write a
//! terminal command makes). The decision is taken on the path as written and on the file it
//! reaches, so neither a link nor a `..` changes it; the reason names the rule and the file.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::harness::command_policy::CommandAssessment;
use crate::harness::workspace::{Access, Workspace, WorkspacePath};

/// Who wants to write. Every writer gets the same answer; the name is for the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Writer {
    WriteFile,
    Patch,
    DeleteFile,
    /// A write a terminal command makes, as `classify` reports it.
    Command,
}

impl Writer {
    pub fn as_str(self) -> &'static str {
        match self {
            Writer::WriteFile => "write_file",
            Writer::Patch => "patch",
            Writer::DeleteFile => "delete_file",
            Writer::Command => "terminal",
        }
    }
}

/// The rule a refused target falls under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetRule {
    /// A `generated/` or `build/tmp/` path component (configurable).
    GeneratedPath,
    /// The file's first lines say it is generated.
    GeneratedHeader,
    /// `vendor/`, `third_party/`, `third-party/`, `node_modules/` (configurable).
    ThirdParty,
    /// `.snapshots/`, `__snapshots__/` (configurable).
    Snapshot,
    /// Anything inside a `.git` directory, a `.git` file (a gitdir link), and the control
    /// files of a directory laid out as a git directory: each can make a later git command run
    /// a program or read another repository's config. Not configurable.
    GitControl,
    /// An existing regular file with more than one hard link: the same inode may be a file
    /// outside the workspace, which a write in place would change. Deleting one name is fine.
    HardLink,
    /// A file that configures or instructs a coding agent (Spear's `.spear/` rules and hooks,
    /// `AGENTS.md`, `.claude/`, `.codex/`, `.vscode/tasks.json` …): an agent, Spear included,
    /// obeys what a write put there with the person's authority. Not configurable.
    AgentConfig,
}

/// Directories whose contents configure coding agents, at any depth of a workspace: Spear's
/// own (`.spear/`: rules and hooks), the cross-agent `.agents/`, and its peers' (Claude Code,
/// Codex, Gemini CLI, Cursor).
pub const AGENT_DIRS: &[&str] = &[
    ".spear", ".agents", ".claude", ".codex", ".gemini", ".cursor",
];

/// Files that instruct or configure coding agents, at any depth: instructions an agent reads
/// as the person's (`AGENTS.md`, `CLAUDE.md`, `GEMINI.md`, Cursor's and Windsurf's rules, Copilot's
/// instructions), MCP servers an agent starts (`.mcp.json`), and editor tasks that run when the
/// folder is opened (`.vscode/tasks.json`; `.vscode/settings.json` names programs the editor
/// runs). Each is a path of components.
pub const AGENT_FILES: &[&[&str]] = &[
    &["AGENTS.md"],
    &["CLAUDE.md"],
    &["GEMINI.md"],
    &[".mcp.json"],
    &[".cursorrules"],
    &[".windsurfrules"],
    &[".github", "copilot-instructions.md"],
    &[".vscode", "tasks.json"],
    &[".vscode", "settings.json"],
];

/// The agent configuration `comps` (a path's components) is or lies in, if any.
fn agent_config(comps: &[String]) -> Option<String> {
    if let Some(d) = comps.iter().find(|c| AGENT_DIRS.contains(&c.as_str())) {
        return Some(format!("{d}/"));
    }
    AGENT_FILES.iter().find_map(|f| {
        (comps.len() >= f.len() && comps[comps.len() - f.len()..].iter().eq(f.iter()))
            .then(|| f.join("/"))
    })
}

impl TargetRule {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetRule::GeneratedPath => "generated_path",
            TargetRule::GeneratedHeader => "generated_header",
            TargetRule::ThirdParty => "third_party",
            TargetRule::Snapshot => "snapshot",
            TargetRule::GitControl => "git_control",
            TargetRule::HardLink => "hard_link",
            TargetRule::AgentConfig => "agent_config",
        }
    }

    fn what(self) -> &'static str {
        match self {
            TargetRule::GeneratedPath | TargetRule::GeneratedHeader => {
                "generated output; change its source and regenerate it instead"
            }
            TargetRule::ThirdParty => "a third-party copy; change it upstream instead",
            TargetRule::Snapshot => "a snapshot; update it with the project's snapshot tool",
            TargetRule::HardLink => {
                "the same file as another name that may lie outside the workspace; writing it \
                 would change that file too (a terminal command) or split the two silently (a \
                 file tool). If the workspace copy should be its own, break the link yourself \
                 (`cp --remove-destination FILE FILE`) and try again"
            }
            TargetRule::AgentConfig => {
                "a file that configures or instructs coding agents (Spear's `.spear/` rules and \
                 hooks, AGENTS.md, CLAUDE.md, .claude/, .codex/, .mcp.json, .vscode/tasks.json \
                 …): an agent, Spear included, would obey what was written there with your \
                 authority, so Spear refuses to change it in every mode. If you mean it, edit it \
                 yourself outside Spear"
            }
            TargetRule::GitControl => {
                "part of a git repository's control files (config, hooks, commondir, gitdir \
                 files, info/, modules/, worktrees/), which can make a later git command run a \
                 program, inside Spear or in your own shell; Spear refuses to change them in \
                 every mode. If you mean it, make the change yourself outside Spear (for \
                 example `git config KEY VALUE`, or your editor)"
            }
        }
    }
}

impl fmt::Display for TargetRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A write the target policy refuses.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize)]
#[error("{reason}")]
pub struct TargetRefusal {
    pub rule: TargetRule,
    pub writer: Writer,
    /// The target exactly as the writer named it.
    pub written: PathBuf,
    /// The file it reaches, when that could be resolved.
    pub resolved: Option<PathBuf>,
    /// What matched: the path component (`vendor/`) or the header line.
    pub matched: String,
    pub reason: String,
}

/// Configuration (from the config file's `[target_policy]` table). Directory entries may hold
/// several components (`build/tmp`), matched as consecutive path components.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TargetPolicyConfig {
    pub generated_dirs: Vec<String>,
    pub third_party_dirs: Vec<String>,
    pub snapshot_dirs: Vec<String>,
    /// Regular expressions; a match in the file's first lines makes it generated.
    pub header_patterns: Vec<String>,
    /// How many leading lines are looked at (within the first 4 KiB).
    pub header_lines: usize,
}

impl Default for TargetPolicyConfig {
    fn default() -> Self {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        TargetPolicyConfig {
            generated_dirs: owned(&["generated", "build/tmp"]),
            third_party_dirs: owned(&["vendor", "third_party", "third-party", "node_modules"]),
            snapshot_dirs: owned(&[".snapshots", "__snapshots__"]),
            // The most specific first, so the reason quotes the marker the file really uses.
            header_patterns: owned(&[
                r"Code generated .* DO NOT EDIT\.",
                r"@generated",
                r"DO NOT EDIT",
                r"(?i)this file is automatically generated",
            ]),
            header_lines: 10,
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, Error)]
pub enum TargetPolicyError {
    #[error("target policy header pattern {pattern:?}: {source}")]
    Pattern {
        pattern: String,
        #[source]
        source: regex::Error,
    },
}

/// How much of a file's start is read to look for a generated header.
const HEADER_BYTES: u64 = 4096;

/// The policy, compiled. Immutable once built.
#[derive(Debug, Clone)]
pub struct TargetPolicy {
    dirs: Vec<(TargetRule, Vec<String>)>,
    headers: HeaderPatterns,
    header_lines: usize,
}

/// Header regexes, compiled when a header is first looked at. Compiling the defaults took about
/// a third of a `spear exec -- true` process's own instructions, though most commands write
/// no existing file and never need them.
#[derive(Debug, Clone)]
struct HeaderPatterns {
    patterns: Vec<String>,
    compiled: OnceLock<Vec<Regex>>,
}

impl HeaderPatterns {
    /// Patterns already known to compile (`TargetPolicy::new` checked them, or they are the
    /// defaults, which a unit test pins); one that did not would be left out, so a typo could
    /// never disable the path rules.
    fn lazy(patterns: Vec<String>) -> Self {
        HeaderPatterns {
            patterns,
            compiled: OnceLock::new(),
        }
    }

    fn get(&self) -> &[Regex] {
        self.compiled.get_or_init(|| {
            self.patterns
                .iter()
                .filter_map(|p| Regex::new(p).ok())
                .collect()
        })
    }

    fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

impl Default for TargetPolicy {
    fn default() -> Self {
        let config = TargetPolicyConfig::default();
        TargetPolicy {
            dirs: dir_rules(&config),
            headers: HeaderPatterns::lazy(config.header_patterns),
            header_lines: config.header_lines,
        }
    }
}

/// The directory rules of a configuration, each entry split into its components.
fn dir_rules(config: &TargetPolicyConfig) -> Vec<(TargetRule, Vec<String>)> {
    [
        (TargetRule::GeneratedPath, &config.generated_dirs),
        (TargetRule::ThirdParty, &config.third_party_dirs),
        (TargetRule::Snapshot, &config.snapshot_dirs),
    ]
    .into_iter()
    .flat_map(|(rule, list)| {
        list.iter().filter_map(move |d| {
            let comps: Vec<String> = d
                .split('/')
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect();
            (!comps.is_empty()).then_some((rule, comps))
        })
    })
    .collect()
}

impl TargetPolicy {
    pub fn new(config: TargetPolicyConfig) -> Result<Self, TargetPolicyError> {
        let compiled = config
            .header_patterns
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|source| TargetPolicyError::Pattern {
                    pattern: p.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TargetPolicy {
            dirs: dir_rules(&config),
            headers: HeaderPatterns {
                patterns: config.header_patterns,
                compiled: OnceLock::from(compiled),
            },
            header_lines: config.header_lines,
        })
    }

    /// May `writer` write (or delete) `written`? Decided on the path as written, on the file it
    /// resolves to, and on that file's header.
    pub fn check_write(
        &self,
        ws: &Workspace,
        writer: Writer,
        written: impl AsRef<Path>,
    ) -> Result<(), TargetRefusal> {
        let written = written.as_ref();
        let refuse = |rule, resolved: Option<&Path>, matched: String| {
            refusal(rule, writer, written, resolved, matched)
        };
        let as_written = in_root_components(ws, written);
        if let Some(m) = git_control(&as_written) {
            return Err(refuse(TargetRule::GitControl, None, m));
        }
        if let Some(m) = agent_config(&as_written) {
            return Err(refuse(TargetRule::AgentConfig, None, m));
        }
        if let Some((rule, m)) = self.path_rule(&as_written) {
            return Err(refuse(rule, None, m));
        }
        match ws.resolve(written, Access::Read) {
            Ok(p) => self
                .check_resolved_inner(ws, &p)
                .and_then(|()| match writer {
                    Writer::DeleteFile => Ok(()),
                    _ => hard_linked(p.resolved()),
                })
                .map_err(|(rule, m)| refuse(rule, Some(p.resolved()), m)),
            // Outside the roots the workspace refuses it anyway; still judge where it leads.
            Err(r) => match r.resolved.as_deref() {
                Some(res) => {
                    let comps = in_root_components(ws, res);
                    match (git_control(&comps), agent_config(&comps)) {
                        (Some(m), _) => Err(refuse(TargetRule::GitControl, Some(res), m)),
                        (None, Some(m)) => Err(refuse(TargetRule::AgentConfig, Some(res), m)),
                        (None, None) => match self.path_rule(&comps) {
                            Some((rule, m)) => Err(refuse(rule, Some(res), m)),
                            None => Ok(()),
                        },
                    }
                }
                None => Ok(()),
            },
        }
    }

    /// Every write a command makes, as `classify` reported it (relative to the project root, the
    /// command's working directory). The first refused target is the answer.
    pub fn check_command_writes(
        &self,
        ws: &Workspace,
        assessment: &CommandAssessment,
    ) -> Result<(), TargetRefusal> {
        assessment
            .writes
            .iter()
            .try_for_each(|w| self.check_write(ws, Writer::Command, w))
    }

    fn check_resolved_inner(
        &self,
        ws: &Workspace,
        p: &WorkspacePath,
    ) -> Result<(), (TargetRule, String)> {
        let comps = components(p.relative());
        if let Some(m) = git_control(&comps).or_else(|| bare_git_dir(p.resolved(), ws)) {
            return Err((TargetRule::GitControl, m));
        }
        if let Some(m) = agent_config(&comps) {
            return Err((TargetRule::AgentConfig, m));
        }
        if let Some(hit) = self.path_rule(&comps) {
            return Err(hit);
        }
        if !p.exists() || self.headers.is_empty() {
            return Ok(());
        }
        // A directory or unreadable file has no header to speak of; the path rules still held.
        let Ok(head) = ws.read_prefix(p, HEADER_BYTES) else {
            return Ok(());
        };
        match self.generated_header(&head) {
            Some(quoted) => Err((TargetRule::GeneratedHeader, quoted)),
            None => Ok(()),
        }
    }

    /// The header line (trimmed, at most 80 characters) that says a file beginning with `head`
    /// is generated, if one does.
    fn generated_header(&self, head: &[u8]) -> Option<String> {
        let text = String::from_utf8_lossy(head);
        text.lines()
            .take(self.header_lines)
            .find(|line| self.headers.get().iter().any(|re| re.is_match(line)))
            .map(|line| line.trim().chars().take(80).collect())
    }

    /// Why the existing regular file `rel` (workspace-relative) must be held read-only for
    /// commands, as the person should be told: its header says it is generated. Read through the
    /// workspace's confined resolver; a file that cannot be read has no header to speak of.
    pub fn held_for_commands(&self, ws: &Workspace, rel: &Path) -> Option<String> {
        if self.headers.is_empty() {
            return None;
        }
        let p = ws.resolve(rel, Access::Read).ok()?;
        let head = ws.read_prefix(&p, HEADER_BYTES).ok()?;
        self.generated_header(&head).map(|line| {
            format!(
                "it is generated (its header says `{line}`), so commands get it read-only. A \
                 tool that regenerates it fails here with \"Read-only file system\": run the \
                 generator in your own shell, outside Spear"
            )
        })
    }

    /// The first directory rule whose components appear consecutively in `comps`.
    /// The directories under `root` that this policy protects (`vendor/`, `generated/`,
    /// agents' configuration directories …),
    /// relative to `root`, for the sandbox to bind read-only. The walk never follows links,
    /// skips `.git`, does not descend into a protected directory, and stops after `budget`
    /// entries (a huge tree is protected by the gates in front of the sandbox regardless).
    pub fn protected_dirs(&self, root: &Path, budget: usize) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![PathBuf::new()];
        let mut seen = 0usize;
        while let Some(rel) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > budget {
                    return found;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if !kind.is_dir() || entry.file_name() == ".git" {
                    continue;
                }
                let child = rel.join(entry.file_name());
                let comps = components(&child);
                if self.path_rule(&comps).is_some() || agent_config(&comps).is_some() {
                    found.push(child);
                } else {
                    stack.push(child);
                }
            }
        }
        found
    }

    fn path_rule(&self, comps: &[String]) -> Option<(TargetRule, String)> {
        self.dirs.iter().find_map(|(rule, seq)| {
            comps
                .windows(seq.len())
                .any(|w| w == seq.as_slice())
                .then(|| (*rule, format!("{}/", seq.join("/"))))
        })
    }
}

/// An existing regular file with other hard links (checked without following a final link).
fn hard_linked(p: &Path) -> Result<(), (TargetRule, String)> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_file() && m.nlink() > 1 => Err((
            TargetRule::HardLink,
            format!("it has {} hard links", m.nlink()),
        )),
        _ => Ok(()),
    }
}

/// A path inside a `.git` directory, or a `.git` entry itself (the directory, or a gitdir
/// file that points the repository elsewhere), at any depth.
fn git_control(comps: &[String]) -> Option<String> {
    comps
        .iter()
        .position(|c| c == ".git")
        .map(|i| match comps.get(i + 1) {
            Some(next) => format!(".git/{next}"),
            None => ".git".to_string(),
        })
}

/// The nearest directory at or above `target` (inside the workspace) that git would take for a
/// git directory (a `HEAD` file beside `objects/` and `refs/`): writing anything in it could
/// give a bare repository a config or hooks.
fn bare_git_dir(target: &Path, ws: &Workspace) -> Option<String> {
    let root = ws
        .roots()
        .iter()
        .map(|r| r.path())
        .find(|r| target.starts_with(r))?;
    let mut dir = target.parent();
    while let Some(d) = dir {
        if !d.starts_with(root) {
            break;
        }
        let is_git_dir =
            d.join("HEAD").is_file() && d.join("objects").is_dir() && d.join("refs").is_dir();
        if is_git_dir {
            let rel = d.strip_prefix(root).unwrap_or(d);
            return Some(format!("{}/ (laid out as a git directory)", rel.display()));
        }
        dir = d.parent();
    }
    None
}

fn refusal(
    rule: TargetRule,
    writer: Writer,
    written: &Path,
    resolved: Option<&Path>,
    matched: String,
) -> TargetRefusal {
    let how = match rule {
        TargetRule::GeneratedHeader => format!("its header says `{matched}`"),
        TargetRule::GitControl | TargetRule::AgentConfig => format!("`{matched}`"),
        TargetRule::HardLink => matched.clone(),
        _ => format!("path component `{matched}`"),
    };
    let reached = match resolved {
        Some(r) if r != written => format!(" (it reaches `{}`)", r.display()),
        _ => String::new(),
    };
    let reason = format!(
        "{} may not write `{}`{reached}: rule {} ({how}): the file is {}",
        writer.as_str(),
        written.display(),
        rule.as_str(),
        rule.what()
    );
    TargetRefusal {
        rule,
        writer,
        written: written.to_path_buf(),
        resolved: resolved.map(Path::to_path_buf),
        matched,
        reason,
    }
}

/// Components of `p` below the root holding it (as written, `..` kept), or all of them for an
/// absolute path outside every root. A project that itself lives under `vendor/` is not refused.
fn in_root_components(ws: &Workspace, p: &Path) -> Vec<String> {
    let inner = ws
        .roots()
        .iter()
        .filter_map(|r| p.strip_prefix(r.path()).ok())
        .min_by_key(|rest| rest.components().count());
    components(inner.unwrap_or(p))
}

fn components(p: &Path) -> Vec<String> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn protected_dirs_are_found_without_following_links() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for d in [
            "src/generated/x",
            "vendor/a",
            "web/node_modules/b",
            "build/tmp",
            "ok/deep",
            ".git/vendor",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("vendor")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let mut got = super::TargetPolicy::default().protected_dirs(root, 10_000);
        got.sort();
        let want: Vec<std::path::PathBuf> =
            ["build/tmp", "src/generated", "vendor", "web/node_modules"]
                .iter()
                .map(Into::into)
                .collect();
        assert_eq!(got, want);
    }

    use super::*;

    #[test]
    fn default_configuration_compiles_completely() {
        let config = TargetPolicyConfig::default();
        let strict = TargetPolicy::new(config.clone()).unwrap();
        assert_eq!(strict.headers.get().len(), config.header_patterns.len());
        assert_eq!(
            TargetPolicy::default().headers.get().len(),
            strict.headers.get().len()
        );
        assert_eq!(strict.dirs.len(), 8);
    }

    #[test]
    fn bad_pattern_is_a_typed_error() {
        let config = TargetPolicyConfig {
            header_patterns: vec!["(".into()],
            ..TargetPolicyConfig::default()
        };
        assert!(matches!(
            TargetPolicy::new(config),
            Err(TargetPolicyError::Pattern { .. })
        ));
    }

    #[test]
    fn config_reads_from_toml_with_defaults_for_missing_keys() {
        let c: TargetPolicyConfig = toml::from_str("third_party_dirs = [\"external\"]").unwrap();
        assert_eq!(c.third_party_dirs, vec!["external"]);
        assert_eq!(
            c.generated_dirs,
            TargetPolicyConfig::default().generated_dirs
        );
    }
}
