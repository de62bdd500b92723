//! Exact search-and-replace edits on a file's bytes (so non-UTF-8 files keep every other byte).
//! Each `old` must match exactly once unless `replace_all`; a CRLF file is matched with the
//! edit's newlines taken as CRLF. A miss is answered with the nearest text in the file (by line
//! similarity) and its first difference; an ambiguous match lists where it matched.

use memchr::memmem;

/// One edit, as the model gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub old: String,
    pub new: String,
    pub replace_all: bool,
}

/// The file mostly ends its lines with CRLF.
pub fn is_crlf(content: &[u8]) -> bool {
    let crlf = memmem::find_iter(content, b"\r\n").count();
    let lf = memchr::memchr_iter(b'\n', content).count();
    crlf > 0 && crlf * 2 >= lf
}

/// Line number (1-based) of a byte offset.
pub fn line_of(content: &[u8], offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &content[..offset.min(content.len())]).count() + 1
}

/// Apply `edits` in order. `Err` is the message for the model.
pub fn apply_edits(content: &[u8], edits: &[Edit], path: &str) -> Result<Vec<u8>, String> {
    let crlf = is_crlf(content);
    let mut cur = content.to_vec();
    for (i, e) in edits.iter().enumerate() {
        let n = i + 1;
        if e.old.is_empty() {
            return Err(format!(
                "edit {n}: `old` is empty; use write_file to create a file"
            ));
        }
        let adapt = |s: &str| {
            if crlf && !s.contains('\r') {
                s.replace('\n', "\r\n")
            } else {
                s.to_string()
            }
        };
        let (mut old, mut new) = (adapt(&e.old), adapt(&e.new));
        let mut hits: Vec<usize> = memmem::find_iter(&cur, old.as_bytes()).collect();
        if hits.is_empty() && old != e.old {
            // A mixed file: the edit may aim at a part that uses bare LF.
            (old, new) = (e.old.clone(), e.new.clone());
            hits = memmem::find_iter(&cur, old.as_bytes()).collect();
        }
        if old == new {
            return Err(format!(
                "edit {n}: `old` and `new` are the same; nothing to change"
            ));
        }
        match hits.len() {
            0 => return Err(format!("edit {n}: {}", miss_message(&cur, &e.old, path))),
            1 => {}
            k if !e.replace_all => {
                let lines: Vec<String> =
                    hits.iter().map(|h| line_of(&cur, *h).to_string()).collect();
                return Err(format!(
                    "edit {n}: `old` matches {k} places in `{path}` (lines {}); include more \
                     surrounding lines so it matches once, or set replace_all",
                    lines.join(", ")
                ));
            }
            _ => {}
        }
        let mut out = Vec::with_capacity(cur.len() + new.len());
        let mut last = 0;
        for h in hits {
            // `find_iter` hits do not overlap, so each replacement starts past the last one.
            out.extend_from_slice(&cur[last..h]);
            out.extend_from_slice(new.as_bytes());
            last = h + old.len();
        }
        out.extend_from_slice(&cur[last..]);
        cur = out;
    }
    Ok(cur)
}

fn bigrams(s: &str) -> Vec<(char, char)> {
    let c: Vec<char> = s.chars().collect();
    let mut v: Vec<(char, char)> = c.windows(2).map(|w| (w[0], w[1])).collect();
    v.sort_unstable();
    v
}

/// Similarity of two lines in [0, 1] (Dice coefficient on character bigrams).
pub fn line_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let (ta, tb) = (a.trim(), b.trim());
    if ta == tb {
        return 0.95;
    }
    let (x, y) = (bigrams(ta), bigrams(tb));
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    0.9 * (2 * common) as f64 / (x.len() + y.len()) as f64
}

/// The window of file lines most like `want`: (first line index, score).
pub fn nearest(file: &[String], want: &[String]) -> Option<(usize, f64)> {
    // Bounded work on huge inputs: compare at most 50 lines of `want` over 50,000 lines.
    let want = &want[..want.len().min(50)];
    let file = &file[..file.len().min(50_000)];
    if want.is_empty() || file.len() < want.len() {
        return None;
    }
    (0..=file.len() - want.len())
        .map(|i| {
            let s: f64 = want
                .iter()
                .enumerate()
                .map(|(j, w)| line_similarity(&file[i + j], w))
                .sum();
            (i, s / want.len() as f64)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
}

/// Lines of text, lossily decoded, without their terminators.
pub fn text_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect()
}

/// The message for text that is not in the file: the nearest match and its first difference.
pub fn miss_message(content: &[u8], old: &str, path: &str) -> String {
    let file = text_lines(content);
    let want = text_lines(old.as_bytes());
    let want: Vec<String> = match want.last() {
        Some(l) if l.is_empty() && want.len() > 1 => want[..want.len() - 1].to_vec(),
        _ => want,
    };
    let mut msg = format!("`old` was not found in `{path}`.");
    let Some((at, score)) = nearest(&file, &want).filter(|(_, s)| *s >= 0.3) else {
        msg.push_str(" Nothing in the file resembles it; read the file again before editing.");
        return msg;
    };
    let end = (at + want.len()).min(file.len());
    msg.push_str(&format!(
        " The nearest text is at lines {}-{} ({:.0}% similar):\n",
        at + 1,
        end,
        score * 100.0
    ));
    for (k, line) in file[at..end].iter().enumerate() {
        msg.push_str(&format!("{:>6}\t{line}\n", at + 1 + k));
    }
    if let Some((k, (have, w))) = file[at..end]
        .iter()
        .zip(&want)
        .enumerate()
        .find(|(_, (h, w))| h != w)
    {
        let hint = if have.trim() == w.trim() {
            " (only whitespace differs)"
        } else {
            ""
        };
        msg.push_str(&format!(
            "First difference, line {}{hint}: the edit has `{w}` but the file has `{have}`.\n",
            at + 1 + k
        ));
    }
    msg.push_str("Copy the text exactly as the file has it.");
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> Edit {
        Edit {
            old: old.into(),
            new: new.into(),
            replace_all: false,
        }
    }

    #[test]
    fn exact_once_replace_all_and_crlf() {
        assert_eq!(
            apply_edits(b"a b a", &[edit("b", "c")], "f").unwrap(),
            b"a c a"
        );
        let e = apply_edits(b"a b a", &[edit("a", "x")], "f").unwrap_err();
        assert!(
            e.contains("matches 2 places") && e.contains("lines 1, 1"),
            "{e}"
        );
        let all = Edit {
            replace_all: true,
            ..edit("a", "x")
        };
        assert_eq!(apply_edits(b"a b a", &[all], "f").unwrap(), b"x b x");
        let crlf = b"one\r\ntwo\r\nthree\r\n";
        assert_eq!(
            apply_edits(crlf, &[edit("one\ntwo\n", "1\n2\n")], "f").unwrap(),
            b"1\r\n2\r\nthree\r\n"
        );
    }

    #[test]
    fn a_miss_shows_the_nearest_text_and_its_first_difference() {
        let file = b"fn main() {\n    let x = compute(1, 2);\n    println!(\"{x}\");\n}\n";
        let e = apply_edits(
            file,
            &[edit(
                "    let x = compute(1, 3);\n    println!(\"{x}\");",
                "",
            )],
            "m.rs",
        )
        .unwrap_err();
        assert!(e.contains("nearest text is at lines 2-3"), "{e}");
        assert!(
            e.contains("the edit has `    let x = compute(1, 3);`"),
            "{e}"
        );
        let e = apply_edits(file, &[edit("zzzz qqqq", "y")], "m.rs").unwrap_err();
        assert!(e.contains("Nothing in the file resembles it"), "{e}");
    }
}
