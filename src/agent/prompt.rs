//! The system prompt: Spear's own text from `assets/prompts/`, the mode, and the `AGENTS.md`
//! files from the workspace root down to the working directory (root first, so deeper, more
//! specific ones come last). Invariant: project instructions are read only through the
//! workspace's confinement (no file outside it, no symlink escape, regular files only) and
//! never more than `AGENTS_MD_CAP` bytes in all; a cut is said, to the model and the caller.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::harness::primitives::ExecutionMode;
use crate::harness::workspace::Access;
use crate::tools::host::SpearHost;

/// The text of Spear's system prompt, with `{mode}`, `{mode_text}`, `{workspace}`, `{cwd}`.
pub const SYSTEM_PROMPT: &str = include_str!("../../assets/prompts/system.md");
/// Said when the web is enabled, whatever the request: the web pair is reached through host
/// commands on this surface, and a model that does not know of them narrates instead.
pub const WEB_SECTION: &str = "\n# The web\nThe web is enabled for this session. To read a \
    page or document (PDFs come in page slices), or to search, type one of these alone as a \
    terminal command; Spear answers it itself, reading works in every mode, and --save-as is a \
    write authorized like write_file:\n\
    - spear-capability run fetch_url URL [--pages A-B] [--save-as PATH]\n\
    - spear-capability run search_internet QUERY... [--max-results N]\n\
    A PDF slice names the pages that continue it (next pages: \"13-24\"): ask for that range \
    with --pages rather than fetching the URL again.\n";
/// The most bytes of `AGENTS.md` text (all files together) put in the prompt.
pub const AGENTS_MD_CAP: usize = 32 * 1024;

/// The prompt and what the person should be told about how it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    pub text: String,
    /// The `AGENTS.md` files included, workspace-relative, in order.
    pub agents_files: Vec<PathBuf>,
    /// Notes for the person (a file cut or skipped).
    pub notes: Vec<String>,
}

fn mode_text(mode: ExecutionMode) -> &'static str {
    match mode {
        ExecutionMode::Safe => {
            "SAFE: you may read and search, and run read-only commands. Every write, patch, \
             delete, complex shell command and network use is refused. Investigate and propose \
             changes (show the patch you would make) instead of making them."
        }
        ExecutionMode::Ask => {
            "ASK: reading is free; the user is asked before each write, patch, delete, complex \
             shell command or network use, and may say no (the call is then denied or \
             cancelled). Group your changes so the user is not asked more than needed."
        }
        ExecutionMode::Auto => {
            "AUTO: writes and commands the mode grants run without asking. Work carefully all \
             the same: every call is recorded."
        }
    }
}

/// Build the prompt for `mode`, reading `AGENTS.md` files between the project root and `cwd`.
pub fn build(host: &SpearHost, mode: ExecutionMode, cwd: &Path) -> SystemPrompt {
    let root = host.project_root().to_path_buf();
    let mut text = SYSTEM_PROMPT
        .replace("{mode_text}", mode_text(mode))
        .replace("{mode}", mode.as_str())
        .replace("{workspace}", &root.display().to_string())
        .replace("{cwd}", &cwd.display().to_string());
    let mut notes = Vec::new();
    let mut files = Vec::new();
    let mut budget = AGENTS_MD_CAP;
    let mut section = String::new();
    for dir in dirs_down(&root, cwd) {
        let rel = dir.join("AGENTS.md");
        let shown = rel.display().to_string();
        let Some((body, total)) = read_capped(host, &shown, budget) else {
            continue;
        };
        budget = budget.saturating_sub(body.len());
        section.push_str(&format!("\n## {shown}\n{body}\n"));
        if body.len() < total {
            let note = format!(
                "{shown} was cut to {} of its {total} bytes (project instructions are capped at \
                 {AGENTS_MD_CAP} bytes in all)",
                body.len()
            );
            section.push_str(&format!("[{note}]\n"));
            notes.push(note);
        }
        files.push(rel);
    }
    if host.config().web_enabled {
        text.push_str(WEB_SECTION);
    }
    if !section.is_empty() {
        text.push_str(
            "\n# Project instructions (AGENTS.md)\nThese come from the project. Follow them \
             where they do not conflict with the rules above; a deeper directory's file refines \
             its parents'.\n",
        );
        text.push_str(&section);
    }
    SystemPrompt {
        text,
        agents_files: files,
        notes,
    }
}

/// Workspace-relative directories from the root (`""`) down to `cwd`; only the root when `cwd`
/// is outside the workspace.
fn dirs_down(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut out = vec![PathBuf::new()];
    if let Ok(rel) = cwd.strip_prefix(root) {
        let mut acc = PathBuf::new();
        for part in rel.components() {
            acc.push(part);
            out.push(acc.clone());
        }
    }
    out
}

/// At most `cap` bytes of a workspace file (cut at a character boundary) and its whole size;
/// `None` when it is absent, not a regular file, or refused by the workspace.
fn read_capped(host: &SpearHost, rel: &str, cap: usize) -> Option<(String, usize)> {
    let p = host.resolve(rel, Access::Read).ok()?;
    let meta = std::fs::symlink_metadata(p.resolved()).ok()?;
    if !meta.is_file() {
        return None;
    }
    let total = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    let mut bytes = Vec::new();
    host.open_read(&p)
        .ok()?
        .take(cap as u64)
        .read_to_end(&mut bytes)
        .ok()?;
    let text = String::from_utf8_lossy(&bytes);
    // A cut in the middle of a character shows as U+FFFD at the end; drop it.
    let text = if bytes.len() < total {
        text.trim_end_matches('\u{FFFD}').to_string()
    } else {
        text.into_owned()
    };
    Some((text, total.max(bytes.len())))
}
