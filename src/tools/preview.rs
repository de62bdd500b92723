//! `Preview`: what a call will do, as its tool computed it while preparing (after the gates,
//! before authorization): a file change with its content before and after, or a command with
//! its assessment. The screen, the line-mode prompt and the approval request all show this one
//! value. Invariant: a preview is built only by the tool that will act on it, from the file as
//! it is and with the tool's own edit code, so what a person approves is exactly what the tool
//! will write; no front end parses arguments or reads files to draw it.

use serde::Serialize;
use serde::ser::SerializeStruct;
use similar::{ChangeTag, TextDiff};

use crate::harness::command_policy::CommandAssessment;

/// A whole-file change: `before` is `None` for a file the call creates, `after` is `None` for
/// one it deletes. Contents are the files' text (invalid UTF-8 shown replaced).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path as the call wrote it.
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// What a prepared call will do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Preview {
    /// write_file, patch, delete_file.
    FileChange(FileChange),
    /// The terminal: the command and how the policy read it.
    Command { assessment: CommandAssessment },
    /// Anything else a tool can say in a line (a host command, a fetch).
    Note { text: String },
}

/// Lines of context kept around each change in a line diff.
pub const DIFF_CONTEXT: usize = 3;

/// A file change on the wire: the path and what happens to it, never the contents (an event
/// line or a JSON consumer gets the shape; the screen and the prompt get the diff).
impl Serialize for FileChange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (added, removed) = self.counts();
        let mut st = s.serialize_struct("FileChange", 5)?;
        st.serialize_field("path", &self.path)?;
        st.serialize_field("creates", &self.before.is_none())?;
        st.serialize_field("deletes", &self.after.is_none())?;
        st.serialize_field("added", &added)?;
        st.serialize_field("removed", &removed)?;
        st.end()
    }
}

impl FileChange {
    pub fn new(path: impl Into<String>, before: Option<&[u8]>, after: Option<&[u8]>) -> Self {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        FileChange {
            path: path.into(),
            before: before.map(text),
            after: after.map(text),
        }
    }

    /// Lines added and removed.
    pub fn counts(&self) -> (usize, usize) {
        let diff = self.diff();
        diff.iter_all_changes()
            .fold((0, 0), |(a, r), c| match c.tag() {
                ChangeTag::Insert => (a + 1, r),
                ChangeTag::Delete => (a, r + 1),
                ChangeTag::Equal => (a, r),
            })
    }

    fn diff(&self) -> TextDiff<'_, '_, str> {
        TextDiff::from_lines(
            self.before.as_deref().unwrap_or_default(),
            self.after.as_deref().unwrap_or_default(),
        )
    }

    /// The change as unified-diff lines (`@@` hunk headers, then ` `, `-` and `+` lines), each
    /// without its line ending.
    pub fn unified_lines(&self) -> Vec<String> {
        let diff = self.diff();
        let mut out = Vec::new();
        for hunk in diff
            .unified_diff()
            .context_radius(DIFF_CONTEXT)
            .iter_hunks()
        {
            out.push(hunk.header().to_string());
            for change in hunk.iter_changes() {
                let sign = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Insert => '+',
                    ChangeTag::Delete => '-',
                };
                let text = change.value().trim_end_matches(['\n', '\r']);
                out.push(format!("{sign}{text}"));
            }
        }
        out
    }

    /// What happens to the file, in a few words.
    pub fn verb(&self) -> &'static str {
        match (&self.before, &self.after) {
            (_, None) => "delete",
            (None, _) => "create",
            _ => "change",
        }
    }
}

impl Preview {
    /// The preview as one short text (observers that show a line, the audit-free notes).
    pub fn summary(&self) -> String {
        match self {
            Preview::FileChange(f) => {
                let (added, removed) = f.counts();
                format!("{} `{}` (+{added} -{removed})", f.verb(), f.path)
            }
            Preview::Command { assessment } => format!("$ {}", assessment.command),
            Preview::Note { text } => text.clone(),
        }
    }

    pub fn file_change(&self) -> Option<&FileChange> {
        match self {
            Preview::FileChange(f) => Some(f),
            _ => None,
        }
    }
}

/// `lines` cut to its first `head` and last `tail` lines; the count says how many were left
/// out between them (zero when nothing was).
pub fn head_and_tail(
    lines: &[String],
    head: usize,
    tail: usize,
) -> (Vec<String>, Vec<String>, usize) {
    if lines.len() <= head + tail {
        return (lines.to_vec(), Vec::new(), 0);
    }
    let omitted = lines.len() - head - tail;
    (
        lines[..head].to_vec(),
        lines[lines.len() - tail..].to_vec(),
        omitted,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_diffed_with_hunks_and_counted() {
        let f = FileChange::new("f", Some(b"a\nb\nc\n"), Some(b"a\nB\nc\n"));
        assert_eq!(f.counts(), (1, 1));
        assert_eq!(
            f.unified_lines(),
            vec!["@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]
        );
        assert_eq!(f.verb(), "change");
        let created = FileChange::new("n", None, Some(b"x\n"));
        assert_eq!((created.verb(), created.counts()), ("create", (1, 0)));
        let deleted = FileChange::new("d", Some(b"x\ny\n"), None);
        assert_eq!((deleted.verb(), deleted.counts()), ("delete", (0, 2)));
    }

    #[test]
    fn a_long_diff_keeps_a_head_and_a_tail_and_counts_the_rest() {
        let lines: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        let (h, t, n) = head_and_tail(&lines, 3, 2);
        assert_eq!(
            (h.len(), t, n),
            (3, vec!["8".to_string(), "9".to_string()], 5)
        );
        let (h, t, n) = head_and_tail(&lines[..4], 3, 2);
        assert_eq!((h.len(), t.len(), n), (4, 0, 0));
    }

    #[test]
    fn the_wire_form_carries_no_content() {
        let f = Preview::FileChange(FileChange::new("f", Some(b"secret\n"), Some(b"other\n")));
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "file_change", "path": "f", "creates": false,
                               "deletes": false, "added": 1, "removed": 1})
        );
    }
}
