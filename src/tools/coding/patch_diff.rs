//! Unified diffs for one file: hunks are parsed, then applied in order, each at its stated line
//! (shifted by earlier hunks) or, failing that, at the one place its old lines match. A hunk
//! matching several places and none at its stated line is ambiguous; one matching nowhere is
//! answered with the nearest text. Context lines keep the file's bytes; added lines take the
//! file's line ending; "\ No newline at end of file" is honoured.

use super::patch_edits::{is_crlf, nearest, text_lines};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Hunk {
    old_start: usize,
    header: String,
    /// (kind, text): kind is ' ', '-' or '+'.
    lines: Vec<(char, String)>,
    old_no_eol: bool,
    new_no_eol: bool,
}

/// `-L,N +L,N` of a hunk header: (old start, old count, new count).
fn header_numbers(line: &str) -> Option<(usize, usize, usize)> {
    let mut parts = line.trim_start_matches('@').split_whitespace();
    let range = |p: Option<&str>, sign: char| -> Option<(usize, usize)> {
        let r = p?.strip_prefix(sign)?;
        let mut it = r.splitn(2, ',');
        let start = it.next()?.parse().ok()?;
        let count = it.next().map_or(Some(1), |c| c.parse().ok())?;
        Some((start, count))
    };
    let (os, oc) = range(parts.next(), '-')?;
    let (_, nc) = range(parts.next(), '+')?;
    Some((os, oc, nc))
}

/// Hunks of a one-file unified diff. The header counts say where a hunk ends, so a removed line
/// that itself starts with `-- ` is not mistaken for a file header.
fn parse(diff: &str) -> Result<Vec<Hunk>, String> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut files = 0;
    let (mut old_left, mut new_left) = (0usize, 0usize);
    let mut last_kind = ' ';
    for line in diff.lines() {
        if line.starts_with('\\') {
            if let Some(h) = hunks.last_mut() {
                match last_kind {
                    '-' => h.old_no_eol = true,
                    '+' => h.new_no_eol = true,
                    _ => {
                        h.old_no_eol = true;
                        h.new_no_eol = true;
                    }
                }
            }
            continue;
        }
        if old_left == 0 && new_left == 0 {
            if line.starts_with("+++ ") {
                files += 1;
                if files > 1 {
                    return Err(
                        "the diff changes more than one file; send one patch per file".into(),
                    );
                }
            } else if line.starts_with("@@") {
                let (start, oc, nc) = header_numbers(line)
                    .ok_or_else(|| format!("hunk header `{line}` is not `@@ -L,N +L,N @@`"))?;
                hunks.push(Hunk {
                    old_start: start,
                    header: line.to_string(),
                    ..Hunk::default()
                });
                (old_left, new_left) = (oc, nc);
            }
            // Anything else between hunks (diff --git, index, ---) is a header.
            continue;
        }
        let (kind, text) = match line.chars().next() {
            Some(c @ (' ' | '-' | '+')) => (c, line[1..].to_string()),
            // Some tools strip the space of an empty context line.
            None => (' ', String::new()),
            Some(_) => {
                return Err(format!(
                    "line `{line}` in a hunk starts with none of ' ', '-', '+'"
                ));
            }
        };
        let short = || {
            format!(
                "hunk `{}` has more lines than its header says",
                hunks.last().map_or("", |h| h.header.as_str())
            )
        };
        match kind {
            ' ' => {
                old_left = old_left.checked_sub(1).ok_or_else(short)?;
                new_left = new_left.checked_sub(1).ok_or_else(short)?;
            }
            '-' => old_left = old_left.checked_sub(1).ok_or_else(short)?,
            _ => new_left = new_left.checked_sub(1).ok_or_else(short)?,
        }
        last_kind = kind;
        if let Some(h) = hunks.last_mut() {
            h.lines.push((kind, text));
        }
    }
    if old_left > 0 || new_left > 0 {
        return Err("the last hunk ends before its header's line counts are reached".into());
    }
    if hunks.is_empty() {
        return Err("the diff has no hunk (`@@ -L,N +L,N @@`)".into());
    }
    Ok(hunks)
}

fn split_keep(content: &[u8]) -> Vec<Vec<u8>> {
    content
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn key(line: &[u8]) -> &[u8] {
    let l = line.strip_suffix(b"\n").unwrap_or(line);
    l.strip_suffix(b"\r").unwrap_or(l)
}

/// Apply a unified diff to `content`.
pub fn apply_diff(content: &[u8], diff: &str, path: &str) -> Result<Vec<u8>, String> {
    let hunks = parse(diff)?;
    let eol: &[u8] = if is_crlf(content) { b"\r\n" } else { b"\n" };
    let mut lines = split_keep(content);
    let mut delta: isize = 0;
    let mut floor = 0usize;
    for (n, h) in hunks.iter().enumerate() {
        let n = n + 1;
        let old: Vec<&str> = h
            .lines
            .iter()
            .filter(|(k, _)| *k != '+')
            .map(|(_, t)| t.as_str())
            .collect();
        let hint = (h.old_start.saturating_sub(1) as isize + delta).max(0) as usize;
        let fits = |p: usize| {
            p + old.len() <= lines.len()
                && old
                    .iter()
                    .enumerate()
                    .all(|(j, o)| key(&lines[p + j]) == o.as_bytes())
        };
        let at = if old.is_empty() {
            hint.min(lines.len())
        } else if fits(hint) && hint >= floor {
            hint
        } else {
            let found: Vec<usize> = (floor..=lines.len().saturating_sub(old.len()))
                .filter(|p| fits(*p))
                .collect();
            match found.as_slice() {
                [one] => *one,
                [] => return Err(hunk_miss(n, h, &lines, &old, path)),
                many => {
                    let at: Vec<String> = many.iter().map(|p| (p + 1).to_string()).collect();
                    return Err(format!(
                        "hunk {n} ({}) does not match at its stated line but matches {} places \
                         (lines {}); it is ambiguous: give more context or the right line numbers",
                        h.header,
                        many.len(),
                        at.join(", ")
                    ));
                }
            }
        };
        let at_eof = at + old.len() == lines.len();
        let file_lacked_eol = lines.last().is_some_and(|l| !l.ends_with(b"\n"));
        let mut replacement: Vec<Vec<u8>> = Vec::new();
        let mut cursor = at;
        for (kind, text) in &h.lines {
            match kind {
                ' ' => {
                    replacement.push(lines[cursor].clone());
                    cursor += 1;
                }
                '-' => cursor += 1,
                _ => {
                    let mut l = text.as_bytes().to_vec();
                    l.extend_from_slice(eol);
                    replacement.push(l);
                }
            }
        }
        if at_eof && let Some(last) = replacement.last_mut() {
            let strip = h.new_no_eol || (!h.old_no_eol && file_lacked_eol);
            let body = key(last).len();
            if strip {
                last.truncate(body);
            } else if !last.ends_with(b"\n") {
                last.extend_from_slice(eol);
            }
        }
        let added = replacement.len();
        lines.splice(at..at + old.len(), replacement);
        delta += added as isize - old.len() as isize;
        floor = at + added;
    }
    Ok(lines.concat())
}

fn hunk_miss(n: usize, h: &Hunk, lines: &[Vec<u8>], old: &[&str], path: &str) -> String {
    let file = text_lines(&lines.concat());
    let want: Vec<String> = old.iter().map(|s| s.to_string()).collect();
    let mut msg = format!("hunk {n} ({}) does not match `{path}`.", h.header);
    match nearest(&file, &want).filter(|(_, s)| *s >= 0.3) {
        Some((at, score)) => {
            let end = (at + want.len()).min(file.len());
            msg.push_str(&format!(
                " The nearest text is at lines {}-{end} ({:.0}% similar):\n",
                at + 1,
                score * 100.0
            ));
            for (k, line) in file[at..end].iter().enumerate() {
                msg.push_str(&format!("{:>6}\t{line}\n", at + 1 + k));
            }
            msg.push_str(
                "Re-read the file and make the hunk's context and removed lines match it.",
            );
        }
        None => msg.push_str(" Nothing in the file resembles its context; re-read the file."),
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_with_offset_crlf_and_missing_final_newline() {
        let file = b"a\nb\nc\nd\n";
        let d = "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n";
        assert_eq!(apply_diff(file, d, "f").unwrap(), b"a\nb\nC\nd\n");
        // Stated at the wrong line, but it matches once.
        let d = "@@ -9,2 +9,2 @@\n b\n-c\n+C\n";
        assert_eq!(apply_diff(file, d, "f").unwrap(), b"a\nb\nC\nd\n");
        let crlf = b"a\r\nb\r\nc\r\n";
        assert_eq!(
            apply_diff(crlf, "@@ -2,1 +2,2 @@\n b\n+x\n", "f").unwrap(),
            b"a\r\nb\r\nx\r\nc\r\n"
        );
        let no_eol = b"a\nb";
        assert_eq!(
            apply_diff(no_eol, "@@ -2,1 +2,1 @@\n-b\n+B\n", "f").unwrap(),
            b"a\nB"
        );
        let d = "@@ -2,1 +2,1 @@\n-b\n\\ No newline at end of file\n+B\n";
        assert_eq!(apply_diff(no_eol, d, "f").unwrap(), b"a\nB\n");
    }

    #[test]
    fn ambiguous_and_missing_hunks_are_refused() {
        let file = b"x\ny\nx\ny\n";
        let e = apply_diff(file, "@@ -7,2 +7,2 @@\n x\n-y\n+z\n", "f").unwrap_err();
        assert!(
            e.contains("matches 2 places") && e.contains("lines 1, 3"),
            "{e}"
        );
        let e = apply_diff(b"alpha\nbeta\n", "@@ -1,1 +1,1 @@\n-alphx\n+a\n", "f").unwrap_err();
        assert!(e.contains("nearest text is at lines 1-1"), "{e}");
        assert!(
            apply_diff(b"a\n", "no hunks", "f")
                .unwrap_err()
                .contains("no hunk")
        );
    }
}
