//! What a write_file, patch or delete_file call will do to a file, as the screen draws it: the
//! tool's own preview (the file's content before and after, computed by the tool while it
//! prepared the call) diffed line by line with `similar`. Invariant: the screen never reads a
//! file or parses a call's arguments to draw a diff; it draws only what the tool computed.

use similar::{ChangeTag, TextDiff};

use crate::tools::preview::FileChange;

/// Lines of context kept around each change.
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffTag {
    Context,
    Added,
    Removed,
    /// A gap between hunks.
    Gap,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub tag: DiffTag,
    pub old_no: Option<usize>,
    pub new_no: Option<usize>,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    pub path: String,
    /// The file does not exist yet.
    pub creates: bool,
    pub lines: Vec<DiffLine>,
    pub added: usize,
    pub removed: usize,
}

impl FileDiff {
    /// The diff as text, one `+`/`-`/` ` line per line (what a copy of the cell carries and
    /// what its whole view shows).
    pub fn text(&self) -> String {
        let mut out = if self.creates {
            format!("+++ {} (new file)\n", self.path)
        } else {
            format!("--- {0}\n+++ {0}\n", self.path)
        };
        for l in &self.lines {
            let sign = match l.tag {
                DiffTag::Added => "+",
                DiffTag::Removed => "-",
                DiffTag::Context => " ",
                DiffTag::Gap => {
                    out.push_str("@@ ⋯ @@\n");
                    continue;
                }
            };
            out.push_str(sign);
            out.push_str(&l.text);
            out.push('\n');
        }
        out
    }

    /// The line diff of `before` (absent: a new file) against `after`.
    pub fn between(path: &str, before: Option<&[u8]>, after: &[u8]) -> FileDiff {
        let old = String::from_utf8_lossy(before.unwrap_or_default());
        let new = String::from_utf8_lossy(after);
        let diff = TextDiff::from_lines(old.as_ref(), new.as_ref());
        let mut lines = Vec::new();
        let (mut added, mut removed) = (0, 0);
        for (i, group) in diff.grouped_ops(CONTEXT).iter().enumerate() {
            if i > 0 {
                lines.push(DiffLine {
                    tag: DiffTag::Gap,
                    old_no: None,
                    new_no: None,
                    text: String::new(),
                });
            }
            for op in group {
                for change in diff.iter_changes(op) {
                    let tag = match change.tag() {
                        ChangeTag::Equal => DiffTag::Context,
                        ChangeTag::Insert => {
                            added += 1;
                            DiffTag::Added
                        }
                        ChangeTag::Delete => {
                            removed += 1;
                            DiffTag::Removed
                        }
                    };
                    lines.push(DiffLine {
                        tag,
                        old_no: change.old_index().map(|n| n + 1),
                        new_no: change.new_index().map(|n| n + 1),
                        text: change.value().trim_end_matches(['\n', '\r']).to_string(),
                    });
                }
            }
        }
        FileDiff {
            path: path.to_string(),
            creates: before.is_none(),
            lines,
            added,
            removed,
        }
    }

    /// The diff of a tool's preview of a file change (a deletion diffs against nothing).
    pub fn from_change(change: &FileChange) -> FileDiff {
        FileDiff::between(
            &change.path,
            change.before.as_deref().map(str::as_bytes),
            change.after.as_deref().unwrap_or_default().as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_preview_is_diffed_with_line_numbers() {
        let change = FileChange::new("f", Some(b"a\nb\nc\n"), Some(b"a\nB\nc\n"));
        let d = FileDiff::from_change(&change);
        assert_eq!((d.added, d.removed, d.creates), (1, 1, false));
        let removed = d.lines.iter().find(|l| l.tag == DiffTag::Removed).unwrap();
        assert_eq!((removed.old_no, removed.text.as_str()), (Some(2), "b"));
        let added = d.lines.iter().find(|l| l.tag == DiffTag::Added).unwrap();
        assert_eq!((added.new_no, added.text.as_str()), (Some(2), "B"));
        let created = FileDiff::from_change(&FileChange::new("n", None, Some(b"x\n")));
        assert_eq!((created.creates, created.added), (true, 1));
    }
}
