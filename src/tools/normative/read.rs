//! Reading a standard by clause (the clause with its subclauses) or by pages, bounded: a read
//! that would exceed `MAX_READ_CHARS` stops at a unit or page boundary and names what continues
//! it, so the model asks for the next part instead of the same one again.

use crate::tools::normative::error::StandardError;
use crate::tools::normative::library::{Standard, cite};
use crate::tools::normative::units::Unit;

/// The most characters one read returns.
pub const MAX_READ_CHARS: usize = 24_000;

/// What a read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub text: String,
    /// What to ask for next when the read was cut (`clause: "4.3"`, `pages: "13-24"`).
    pub continues: Option<String>,
}

/// `§4.2`, `clause 4.2`, `4.2.` all mean `4.2`.
fn normalize_clause(clause: &str) -> String {
    let c = clause.trim();
    let c = c
        .strip_prefix("§")
        .or_else(|| c.strip_prefix("Clause "))
        .or_else(|| c.strip_prefix("clause "))
        .or_else(|| c.strip_prefix("Section "))
        .or_else(|| c.strip_prefix("section "))
        .unwrap_or(c);
    c.trim().trim_end_matches('.').to_string()
}

/// Is `child` inside clause `parent` (`4.2.1` in `4.2`)?
fn within(child: &str, parent: &str) -> bool {
    child
        .strip_prefix(parent)
        .is_some_and(|rest| rest.starts_with('.'))
}

fn render(standard: &Standard, u: &Unit) -> String {
    let pages = match u.pages {
        Some((a, b)) if a == b => format!(" (p. {a})"),
        Some((a, b)) => format!(" (pp. {a}-{b})"),
        None => String::new(),
    };
    format!(
        "[{}]{pages}\n{}\n",
        cite(&standard.meta.name, &u.reference),
        u.text.trim_end()
    )
}

/// Clause `clause` and its subclauses. Among repeats (a contents entry and the clause itself)
/// the longest is the clause.
pub fn read_clause(standard: &Standard, clause: &str) -> Result<Reading, StandardError> {
    let want = normalize_clause(clause);
    let lower = want.to_lowercase();
    let start = standard
        .units
        .iter()
        .enumerate()
        .filter(|(_, u)| {
            let r = u.reference.to_lowercase();
            r == lower
                || r.strip_prefix(&lower)
                    .is_some_and(|rest| rest.starts_with(" ("))
        })
        .max_by_key(|(i, u)| (u.text.len(), usize::MAX - i))
        .map(|(i, _)| i);
    let Some(start) = start else {
        return Err(StandardError::NoClause {
            standard: standard.meta.name.clone(),
            clause: want.clone(),
            nearby: nearby(standard, &want),
        });
    };
    let mut text = String::new();
    let mut continues = None;
    for u in standard.units[start..]
        .iter()
        .enumerate()
        .take_while(|(k, u)| *k == 0 || within(&u.reference, &standard.units[start].reference))
    {
        let piece = render(standard, u.1);
        if u.0 > 0 && text.len() + piece.len() > MAX_READ_CHARS {
            continues = Some(format!("clause: \"{}\"", u.1.reference));
            break;
        }
        text.push_str(&cut(&piece));
        text.push('\n');
    }
    Ok(Reading { text, continues })
}

/// At most `MAX_READ_CHARS` of one piece.
fn cut(piece: &str) -> String {
    if piece.len() <= MAX_READ_CHARS {
        return piece.to_string();
    }
    let mut end = MAX_READ_CHARS;
    while !piece.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… the rest of this unit is cut; read its subclauses or pages]\n",
        &piece[..end]
    )
}

/// References that share the wanted clause's first number, to say what exists.
fn nearby(standard: &Standard, want: &str) -> String {
    let head = want.split('.').next().unwrap_or(want);
    let mut refs: Vec<&str> = standard
        .units
        .iter()
        .map(|u| u.reference.as_str())
        .filter(|r| r.split('.').next() == Some(head))
        .take(12)
        .collect();
    if refs.is_empty() {
        refs = standard
            .units
            .iter()
            .map(|u| u.reference.as_str())
            .take(12)
            .collect();
    }
    if refs.is_empty() {
        String::new()
    } else {
        format!(" (it has: {})", refs.join(", "))
    }
}

/// Parse `3`, `3-5` or `3-` against `count` pages.
pub fn parse_pages(given: &str, count: usize) -> Result<(usize, usize), StandardError> {
    let bad = |why: String| StandardError::BadPages {
        given: given.to_string(),
        why,
    };
    let num = |s: &str| {
        s.trim().parse::<usize>().map_err(|_| {
            bad(format!(
                "`{}` is not a page number; write 3, 3-5 or 3-",
                s.trim()
            ))
        })
    };
    let (first, last) = match given.split_once('-') {
        Some((a, b)) if b.trim().is_empty() => (num(a)?, count),
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let n = num(given)?;
            (n, n)
        }
    };
    if first == 0 || first > last {
        return Err(bad("pages count from 1 and a range runs forward".into()));
    }
    if first > count {
        return Err(bad(format!("the document has {count} pages")));
    }
    Ok((first, last.min(count)))
}

/// Pages `given` (`3-5`), bounded; a cut read names the range that continues it.
pub fn read_pages(standard: &Standard, given: &str) -> Result<Reading, StandardError> {
    if standard.pages.is_empty() {
        return Err(StandardError::NoPages {
            standard: standard.meta.name.clone(),
            kind: standard.meta.kind.as_str().into(),
        });
    }
    let count = standard.pages.len();
    let (first, last) = parse_pages(given, count)?;
    let mut text = String::new();
    let mut continues = None;
    for n in first..=last {
        let page = standard.pages.get(n - 1).map(String::as_str).unwrap_or("");
        let piece = format!("[{} p. {n}]\n{}\n", standard.meta.name, page.trim_end());
        if n > first && text.len() + piece.len() > MAX_READ_CHARS {
            continues = Some(format!("pages: \"{n}-{last}\""));
            break;
        }
        text.push_str(&cut(&piece));
        text.push('\n');
    }
    if continues.is_none() && last < count {
        // Not cut, but the document goes on: say so, so "what next" is never a guess.
        text.push_str(&format!("[pages {}-{count} follow]\n", last + 1));
    }
    Ok(Reading { text, continues })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_ranges_parse_and_bad_ones_say_why() {
        assert_eq!(parse_pages("3", 9).unwrap(), (3, 3));
        assert_eq!(parse_pages("3-5", 9).unwrap(), (3, 5));
        assert_eq!(parse_pages("3-", 9).unwrap(), (3, 9));
        assert_eq!(parse_pages("8-20", 9).unwrap(), (8, 9));
        for bad in ["0", "5-3", "x", "10", "-"] {
            assert!(parse_pages(bad, 9).is_err(), "{bad}");
        }
    }

    #[test]
    fn clause_names_are_normalised_and_subclauses_are_within() {
        assert_eq!(normalize_clause("§ 4.2."), "4.2");
        assert_eq!(normalize_clause("clause 4.2"), "4.2");
        assert!(within("4.2.1", "4.2"));
        assert!(!within("4.20", "4.2"));
        assert!(!within("4.2", "4.2"));
    }
}
