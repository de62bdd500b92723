//! What a write_file or patch call will do to a file: the file's current content (read through
//! the workspace's resolution, as the tool would) against the result of applying the call with
//! the tool's own edit code, diffed line by line with `similar`. Invariant: the diff is never
//! built from the model's request text alone: a patch that does not apply says so instead.

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::harness::workspace::Access;
use crate::tools::coding::patch_diff::apply_diff;
use crate::tools::coding::patch_edits::{Edit, apply_edits};
use crate::tools::host::SpearHost;
use crate::tools::host::files::current;

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
    /// Why no diff could be made (the patch does not apply, the file cannot be read).
    pub problem: Option<String>,
}

impl FileDiff {
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
            problem: None,
        }
    }

    fn problem(path: &str, why: String) -> FileDiff {
        FileDiff {
            path: path.to_string(),
            creates: false,
            lines: Vec::new(),
            added: 0,
            removed: 0,
            problem: Some(why),
        }
    }
}

/// The diff a write_file or patch call would make, or `None` for other tools.
pub fn planned(host: &SpearHost, tool: &str, args: &Value) -> Option<FileDiff> {
    if tool != "write_file" && tool != "patch" {
        return None;
    }
    let path = args.get("path").and_then(Value::as_str)?;
    let resolved = match host.resolve(path, Access::Write) {
        Ok(p) => p,
        Err(e) => return Some(FileDiff::problem(path, e.to_string())),
    };
    let before = match current(host, &resolved) {
        Ok(b) => b,
        Err(r) => {
            let why = r.reason.unwrap_or_else(|| "the file cannot be read".into());
            return Some(FileDiff::problem(path, why));
        }
    };
    let after = match apply(tool, args, before.as_deref(), path) {
        Ok(a) => a,
        Err(why) => return Some(FileDiff::problem(path, why)),
    };
    Some(FileDiff::between(path, before.as_deref(), &after))
}

/// The file's content after the call, computed by the tool's own edit code.
pub fn apply(
    tool: &str,
    args: &Value,
    before: Option<&[u8]>,
    path: &str,
) -> Result<Vec<u8>, String> {
    if tool == "write_file" {
        return args
            .get("content")
            .and_then(Value::as_str)
            .map(|c| c.as_bytes().to_vec())
            .ok_or_else(|| "the call has no `content`".to_string());
    }
    let content = before.unwrap_or_default();
    if let Some(diff) = args.get("diff").and_then(Value::as_str) {
        return apply_diff(content, diff, path);
    }
    let edits: Vec<Edit> = args
        .get("edits")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| Edit {
                    old: e
                        .get("old")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .into(),
                    new: e
                        .get("new")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .into(),
                    replace_all: e
                        .get("replace_all")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                })
                .collect()
        })
        .ok_or_else(|| "the patch has neither `edits` nor `diff`".to_string())?;
    apply_edits(content, &edits, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_is_diffed_from_the_applied_result_with_line_numbers() {
        let before = b"a\nb\nc\n";
        let args = json!({"path": "f", "edits": [{"old": "b", "new": "B"}]});
        let after = apply("patch", &args, Some(before), "f").unwrap();
        let d = FileDiff::between("f", Some(before), &after);
        assert_eq!((d.added, d.removed), (1, 1));
        let removed = d.lines.iter().find(|l| l.tag == DiffTag::Removed).unwrap();
        assert_eq!((removed.old_no, removed.text.as_str()), (Some(2), "b"));
        let added = d.lines.iter().find(|l| l.tag == DiffTag::Added).unwrap();
        assert_eq!((added.new_no, added.text.as_str()), (Some(2), "B"));
    }

    #[test]
    fn an_edit_that_does_not_match_is_an_error_not_a_diff() {
        let args = json!({"path": "f", "edits": [{"old": "zzz", "new": "y"}]});
        assert!(apply("patch", &args, Some(b"a\n"), "f").is_err());
    }
}
