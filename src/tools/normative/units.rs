//! Splitting a standard's text into addressable units: numbered clauses (`4.2.1`) and headings
//! where the document has them, pages for a paged document without either, and numbered parts
//! of a bare text as the last resort. Invariant: every line of the text belongs to exactly one
//! unit, in order, and no two units share a reference (a repeat, such as a table of contents
//! entry, is told apart by a suffix).

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// One addressable part of a standard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    /// How the unit is cited: a clause number (`4.2.1`), a heading's text, `page 3`, `part 2`.
    pub reference: String,
    /// The clause's or heading's title (empty for pages and parts).
    pub title: String,
    pub text: String,
    /// The first and last page the unit spans, in a paged document (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<(u32, u32)>,
}

/// A line and the page it is on (None in a document without pages).
pub type Line<'a> = (Option<u32>, &'a str);

/// Characters of a structureless text per `part N` unit.
const PART_CHARS: usize = 2_000;

/// `4.2.1 Title`, `4.2.1. Title`, `§ 4.2 Title`, `Clause 4 Title`: a multi-level number always
/// starts a clause; a single-level one only before a capitalised title (a "1. do this" list
/// item in running text is no clause, and neither is "2024 edition").
static CLAUSE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^\s{0,3}(?:(?:Clause|Section|§)\s*)?(?P<num>\d{1,3}(?:\.\d{1,3}){1,6}|\d{1,2}|[A-Z]\.\d{1,3}(?:\.\d{1,3}){0,5})\.?\s+(?P<title>\S.*)$",
    )
    .ok()
});

static HEADING: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^\s{0,3}#{1,6}\s+(?P<text>.*?)\s*#*\s*$").ok());

/// The clause number and title a line opens, if it opens one.
pub fn clause_start(line: &str) -> Option<(String, String)> {
    let caps = CLAUSE.as_ref()?.captures(line)?;
    let num = caps.name("num")?.as_str();
    let title = caps.name("title")?.as_str().trim();
    let single_level = !num.contains('.');
    if single_level && !title.chars().next().is_some_and(char::is_uppercase) {
        return None;
    }
    // A single-level number before a long sentence is a list item, not a clause heading.
    if single_level && title.len() > 80 {
        return None;
    }
    Some((num.to_string(), title.to_string()))
}

/// A Markdown heading's text, if the line is one.
fn heading(line: &str) -> Option<String> {
    let caps = HEADING.as_ref()?.captures(line)?;
    let text = caps.name("text")?.as_str().trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// Where a unit starts: its reference and title.
fn unit_start(line: &str, markdown: bool) -> Option<(String, String)> {
    if markdown && let Some(h) = heading(line) {
        let plain = h.replace(['*', '_', '`'], "");
        return Some(clause_start(&plain).unwrap_or_else(|| (plain.clone(), plain)));
    }
    clause_start(line)
}

struct Builder {
    units: Vec<Unit>,
    seen: HashMap<String, usize>,
}

impl Builder {
    fn open(&mut self, reference: String, title: String, page: Option<u32>) {
        let n = self.seen.entry(reference.to_lowercase()).or_insert(0);
        *n += 1;
        let reference = if *n == 1 {
            reference
        } else {
            format!("{reference} ({n})")
        };
        self.units.push(Unit {
            reference,
            title,
            text: String::new(),
            pages: page.map(|p| (p, p)),
        });
    }

    fn push_line(&mut self, page: Option<u32>, line: &str) {
        if let Some(u) = self.units.last_mut() {
            u.text.push_str(line);
            u.text.push('\n');
            if let (Some(p), Some((_, last))) = (page, u.pages.as_mut()) {
                *last = (*last).max(p);
            }
        }
    }
}

/// Split `lines` into units. `markdown` makes `#` headings start units too.
pub fn split(lines: &[Line<'_>], markdown: bool) -> Vec<Unit> {
    let mut b = Builder {
        units: Vec::new(),
        seen: HashMap::new(),
    };
    let mut in_fence = false;
    for &(page, line) in lines {
        if markdown && line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        let start = (!in_fence).then(|| unit_start(line, markdown)).flatten();
        match start {
            Some((reference, title)) => {
                b.open(reference, title, page);
                b.push_line(page, line);
            }
            None => {
                if b.units.is_empty() {
                    if line.trim().is_empty() {
                        continue;
                    }
                    b.open("preamble".into(), String::new(), page);
                }
                b.push_line(page, line);
            }
        }
    }
    let structured = b.units.iter().any(|u| u.reference != "preamble");
    if structured {
        return b.units;
    }
    if lines.iter().any(|(p, _)| p.is_some()) {
        return by_page(lines);
    }
    by_parts(lines)
}

/// One unit per page.
fn by_page(lines: &[Line<'_>]) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    for &(page, line) in lines {
        let p = page.unwrap_or(1);
        if units.last().and_then(|u| u.pages).map(|(f, _)| f) != Some(p) {
            units.push(Unit {
                reference: format!("page {p}"),
                title: String::new(),
                text: String::new(),
                pages: Some((p, p)),
            });
        }
        if let Some(u) = units.last_mut() {
            u.text.push_str(line);
            u.text.push('\n');
        }
    }
    units.retain(|u| !u.text.trim().is_empty());
    units
}

/// Parts of about `PART_CHARS`, cut at blank lines where possible.
fn by_parts(lines: &[Line<'_>]) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, units: &mut Vec<Unit>| {
        if !current.trim().is_empty() {
            units.push(Unit {
                reference: format!("part {}", units.len() + 1),
                title: String::new(),
                text: std::mem::take(current),
                pages: None,
            });
        }
        current.clear();
    };
    for &(_, line) in lines {
        current.push_str(line);
        current.push('\n');
        let long = current.len() >= PART_CHARS;
        if (long && line.trim().is_empty()) || current.len() >= PART_CHARS * 2 {
            flush(&mut current, &mut units);
        }
    }
    flush(&mut current, &mut units);
    units
}

/// The lines of a text without pages.
pub fn lines_of(text: &str) -> Vec<Line<'_>> {
    text.lines().map(|l| (None, l)).collect()
}

/// The lines of paged text (page N is `pages[N-1]`).
pub fn lines_of_pages(pages: &[String]) -> Vec<Line<'_>> {
    pages
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
            p.lines().map(move |l| (Some(n), l))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clause_starts_must_and_must_not_match() {
        for (line, num) in [
            ("4.2.1 Fire doors shall close", "4.2.1"),
            ("4.2. Doors", "4.2"),
            ("  12.3 Scope", "12.3"),
            ("§ 5.1 Surfaces", "5.1"),
            ("Clause 4 Requirements", "4"),
            ("4 Requirements", "4"),
            ("A.2 Informative annex", "A.2"),
        ] {
            assert_eq!(
                clause_start(line).map(|c| c.0).as_deref(),
                Some(num),
                "{line}"
            );
        }
        for line in [
            "1. do this first",
            "2024 edition of the code",
            "3 people must be present when the door is tested and the result written down in the log book of the site",
            "The value 4.2 applies",
            "",
        ] {
            assert_eq!(clause_start(line), None, "{line}");
        }
    }

    #[test]
    fn markdown_headings_and_clauses_make_units_and_repeats_are_told_apart() {
        let md = "Intro text\n# 1 Scope\nThis applies.\n## 4.2 Fire doors\nDoors shall close.\n\
                  ```\n4.3 Not a clause inside a fence\n```\n## Notes\nA note.\n## 4.2 Fire doors\nAgain.\n";
        let units = split(&lines_of(md), true);
        let refs: Vec<&str> = units.iter().map(|u| u.reference.as_str()).collect();
        assert_eq!(refs, ["preamble", "1", "4.2", "Notes", "4.2 (2)"]);
        assert_eq!(units[2].title, "Fire doors");
        assert!(units[2].text.contains("4.3 Not a clause"));
        let joined: String = units.iter().map(|u| u.text.as_str()).collect();
        assert_eq!(joined, md);
    }

    #[test]
    fn pages_without_clauses_become_page_units_and_clauses_keep_their_pages() {
        let pages = vec!["plain words\n".to_string(), "more words\n".to_string()];
        let units = split(&lines_of_pages(&pages), false);
        assert_eq!(units.len(), 2);
        assert_eq!(units[1].reference, "page 2");
        let pages = vec![
            "4.1 Exits\nshall be\n".to_string(),
            "marked\n4.2 Doors\nclose\n".to_string(),
        ];
        let units = split(&lines_of_pages(&pages), false);
        assert_eq!(units[0].pages, Some((1, 2)));
        assert_eq!(units[1].pages, Some((2, 2)));
    }

    #[test]
    fn a_bare_text_is_cut_into_parts() {
        let text = format!("{}\n\n", "word ".repeat(100)).repeat(20);
        let units = split(&lines_of(&text), false);
        assert!(units.len() > 2, "{}", units.len());
        assert!(units.iter().all(|u| u.reference.starts_with("part ")));
        assert_eq!(units.concat_len(), text.len());
    }

    trait Len {
        fn concat_len(&self) -> usize;
    }
    impl Len for Vec<Unit> {
        fn concat_len(&self) -> usize {
            self.iter().map(|u| u.text.len()).sum()
        }
    }
}
