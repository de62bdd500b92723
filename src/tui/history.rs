//! The composer's prompt history, kept across runs: one file per workspace beside the audit
//! log (`$XDG_STATE_HOME/spear/history/<the audit log's id>.jsonl`, a JSON string a line, mode
//! 0600 in a 0700 directory), outside every workspace. Invariant: what is written is redacted
//! with the audit log's table of secret shapes, the file keeps at most `2 × MAX` lines (it is
//! rewritten atomically to the newest `MAX` past that), and a damaged line is skipped, never an
//! error for the screen.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::harness::audit::AuditPaths;
use crate::harness::secrets::redact_text;

/// The prompts a run starts with (the newest ones).
pub const MAX: usize = 500;

#[derive(Debug, Clone)]
pub struct PromptHistory {
    path: PathBuf,
    /// How many of the app's history entries are on disk already.
    saved: usize,
}

impl PromptHistory {
    /// The history of the workspace whose audit log is at `audit`.
    pub fn beside(audit: &AuditPaths) -> Self {
        let id = audit
            .log
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = audit
            .dir
            .parent()
            .map_or_else(|| audit.dir.join("history"), |p| p.join("history"));
        PromptHistory {
            path: dir.join(format!("{id}.jsonl")),
            saved: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The newest `MAX` prompts, oldest first (none when there is no file yet). The entries
    /// loaded count as saved.
    pub fn load(&mut self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let all: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<String>(l).ok())
            .collect();
        let kept = all[all.len().saturating_sub(MAX)..].to_vec();
        self.saved = kept.len();
        kept
    }

    /// Write the entries of `history` not yet on disk (the app's whole history, oldest first).
    /// A failure is returned for the caller to show once; the screen goes on without it.
    pub fn save_new(&mut self, history: &[String]) -> std::io::Result<()> {
        if history.len() <= self.saved {
            self.saved = self.saved.min(history.len());
            return Ok(());
        }
        let new = &history[self.saved..];
        self.saved = history.len();
        if let Some(dir) = self.path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let mut lines = String::new();
        for entry in new {
            let redacted = redact_text(entry);
            lines.push_str(
                &serde_json::to_string(redacted.as_ref()).map_err(std::io::Error::other)?,
            );
            lines.push('\n');
        }
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&self.path)?;
        f.write_all(lines.as_bytes())?;
        drop(f);
        self.compact()
    }

    /// Past `2 × MAX` lines, rewrite the file (atomically) with the newest `MAX`.
    fn compact(&self) -> std::io::Result<()> {
        let text = std::fs::read_to_string(&self.path)?;
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() <= 2 * MAX {
            return Ok(());
        }
        let keep = &lines[lines.len() - MAX..];
        let mut text = keep.join("\n");
        text.push('\n');
        write_private(&self.path, text.as_bytes())
    }
}

/// Write `bytes` as the whole of `path`, mode 0600, atomically.
pub(crate) fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::harness::atomic_file::write_private(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn history(dir: &Path) -> PromptHistory {
        PromptHistory::beside(&AuditPaths::new(dir, Path::new("/work/demo")))
    }

    #[test]
    fn prompts_survive_a_restart_redacted_private_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = history(dir.path());
        assert!(h.load().is_empty());
        let mut entries = vec![
            "first\nwith a second line".to_string(),
            "use the key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD".to_string(),
        ];
        h.save_new(&entries).unwrap();
        // Saved once: saving the same history again adds nothing.
        h.save_new(&entries).unwrap();
        let mode = std::fs::metadata(h.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = history(dir.path()).load();
        assert_eq!(again.len(), 2);
        assert_eq!(again[0], "first\nwith a second line");
        assert!(!again[1].contains("abcdefghijklmnop"), "{}", again[1]);
        // A damaged line is skipped.
        std::fs::OpenOptions::new()
            .append(true)
            .open(h.path())
            .unwrap()
            .write_all(b"{not json\n")
            .unwrap();
        assert_eq!(history(dir.path()).load().len(), 2);
        // Bounded: the file never keeps more than 2 x MAX lines, a run starts with MAX.
        for i in 0..(2 * MAX + 10) {
            entries.push(format!("p{i}"));
        }
        h.save_new(&entries).unwrap();
        let lines = std::fs::read_to_string(h.path()).unwrap().lines().count();
        assert!(lines <= 2 * MAX, "{lines}");
        let loaded = history(dir.path()).load();
        assert_eq!(loaded.len(), MAX);
        assert_eq!(loaded.last().unwrap(), &format!("p{}", 2 * MAX + 9));
        // Another workspace has its own.
        let other =
            PromptHistory::beside(&AuditPaths::new(dir.path(), Path::new("/elsewhere"))).load();
        assert!(other.is_empty());
    }
}
