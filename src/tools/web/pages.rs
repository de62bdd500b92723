//! A PDF's pages handed to the model in slices: at most `PAGES_PER_SLICE` pages and
//! `SLICE_CHARS` characters at a time (one page at least, however long), each slice naming the
//! range that continues it, so the model asks for that range instead of fetching the same URL
//! again. The last slice names none.

use std::fmt;

/// Pages in one slice when the call names no range.
pub const PAGES_PER_SLICE: usize = 12;
/// Characters of page text in one slice: under the envelope's preview, so a slice is seen whole.
pub const SLICE_CHARS: usize = 40_000;

/// An inclusive, 1-based range of pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRange {
    pub first: usize,
    pub last: usize,
}

impl fmt::Display for PageRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.first == self.last {
            true => write!(f, "{}", self.first),
            false => write!(f, "{}-{}", self.first, self.last),
        }
    }
}

impl PageRange {
    /// `"13-24"`, `"7"` or `"13-"` (to the end); pages count from 1.
    pub fn parse(text: &str) -> Result<PageRange, String> {
        let t = text.trim();
        let bad = || {
            format!(
                "`{text}` is not a page range; write pages as \"13-24\", \"7\" or \"13-\" \
                 (counting from 1)"
            )
        };
        let num = |s: &str| s.trim().parse::<usize>().ok().filter(|n| *n >= 1);
        let (first, last) = match t.split_once('-') {
            Some((a, "")) => (num(a).ok_or_else(bad)?, usize::MAX),
            Some((a, b)) => (num(a).ok_or_else(bad)?, num(b).ok_or_else(bad)?),
            None => {
                let n = num(t).ok_or_else(bad)?;
                (n, n)
            }
        };
        if last < first {
            return Err(format!(
                "`{text}`: the range ends before it starts; write \"{last}-{first}\""
            ));
        }
        Ok(PageRange { first, last })
    }
}

/// One slice of a document's pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The pages in this slice.
    pub shown: PageRange,
    pub total: usize,
    /// The range to ask for next; `None` on the last slice.
    pub next: Option<PageRange>,
    /// The pages' text, each under a `--- page N ---` line.
    pub text: String,
}

/// The slice of `pages` that `requested` asks for (the first pages when `None`).
pub fn slice(pages: &[String], requested: Option<PageRange>) -> Result<Slice, String> {
    let total = pages.len();
    let want = requested.unwrap_or(PageRange {
        first: 1,
        last: PAGES_PER_SLICE,
    });
    if want.first > total {
        return Err(format!(
            "the document has {total} page(s); page {} does not exist (ask for pages 1-{total} or \
             part of them)",
            want.first
        ));
    }
    let limit = want
        .last
        .min(total)
        .min(want.first.saturating_add(PAGES_PER_SLICE - 1));
    let mut text = String::new();
    let mut chars = 0usize;
    let mut last = want.first;
    for n in want.first..=limit {
        let page = &pages[n - 1];
        let len = page.chars().count();
        // One page always; further pages only while the slice stays readable whole.
        if n > want.first && chars + len > SLICE_CHARS {
            break;
        }
        text.push_str(&format!("--- page {n} ---\n"));
        text.push_str(page.trim_end());
        text.push('\n');
        chars += len;
        last = n;
    }
    let next = (last < total).then(|| PageRange {
        first: last + 1,
        last: (last + PAGES_PER_SLICE).min(total),
    });
    Ok(Slice {
        shown: PageRange {
            first: want.first,
            last,
        },
        total,
        next,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(n: usize, len: usize) -> Vec<String> {
        (1..=n)
            .map(|k| format!("p{k} {}", "x".repeat(len)))
            .collect()
    }

    #[test]
    fn ranges_parse_and_bad_ones_say_how_to_write_them() {
        assert_eq!(
            PageRange::parse("13-24").unwrap(),
            PageRange {
                first: 13,
                last: 24
            }
        );
        assert_eq!(
            PageRange::parse(" 7 ").unwrap(),
            PageRange { first: 7, last: 7 }
        );
        assert_eq!(PageRange::parse("5-").unwrap().last, usize::MAX);
        for bad in ["", "0", "a-b", "3-x", "-4", "0-3"] {
            assert!(
                PageRange::parse(bad).unwrap_err().contains("13-24"),
                "{bad}"
            );
        }
        assert!(PageRange::parse("9-3").unwrap_err().contains("3-9"));
        assert_eq!(
            PageRange {
                first: 13,
                last: 24
            }
            .to_string(),
            "13-24"
        );
        assert_eq!(PageRange { first: 4, last: 4 }.to_string(), "4");
    }

    #[test]
    fn slices_walk_the_document_each_naming_the_next() {
        let doc = pages(30, 10);
        let a = slice(&doc, None).unwrap();
        assert_eq!((a.shown.first, a.shown.last, a.total), (1, 12, 30));
        assert_eq!(
            a.next,
            Some(PageRange {
                first: 13,
                last: 24
            })
        );
        assert!(a.text.starts_with("--- page 1 ---\np1 "));
        let b = slice(&doc, a.next).unwrap();
        assert_eq!(
            b.next,
            Some(PageRange {
                first: 25,
                last: 30
            })
        );
        let c = slice(&doc, b.next).unwrap();
        assert_eq!((c.shown.first, c.shown.last, c.next), (25, 30, None));
        assert!(
            slice(
                &doc,
                Some(PageRange {
                    first: 31,
                    last: 31
                })
            )
            .is_err()
        );
        // A range past the end stops at the end.
        let d = slice(
            &doc,
            Some(PageRange {
                first: 29,
                last: 90,
            }),
        )
        .unwrap();
        assert_eq!((d.shown.last, d.next), (30, None));
    }

    #[test]
    fn long_pages_shrink_the_slice_but_never_below_one_page() {
        let doc = pages(5, SLICE_CHARS / 2);
        let a = slice(&doc, None).unwrap();
        assert_eq!(a.shown, PageRange { first: 1, last: 1 });
        assert_eq!(a.next, Some(PageRange { first: 2, last: 5 }));
        let huge = pages(2, SLICE_CHARS * 2);
        assert_eq!(slice(&huge, None).unwrap().shown.last, 1);
    }
}
