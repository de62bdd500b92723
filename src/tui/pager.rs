//! The full-output view: a pager over any cell's whole text (a tool's stored `result://`
//! output, read from the ResultStore a page at a time, or text the cell holds), with search.
//! Invariant: the pager holds at most one window of lines (what is visible and a page either
//! side), each line cut at `MAX_LINE_BYTES`, so opening a 100 MB output costs one page, and a
//! search reads the output in bounded chunks rather than loading it.

use std::io::BufRead;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::harness::audit::display::escape_controls;
use crate::tools::lines::{CappedLine, display_line, read_line_capped};
use crate::tools::results::ResultStore;

/// Bytes of a line kept for drawing and search; the rest is marked as cut.
pub const MAX_LINE_BYTES: usize = 4096;
/// Lines read per step of a search (a search of a long output reads chunk by chunk).
const SEARCH_CHUNK: usize = 2048;

/// Where a pager's lines come from.
pub trait PageSource: Send {
    /// Lines in all.
    fn total(&self) -> u64;
    /// Up to `n` lines from line `start` (0-based), each cut at `MAX_LINE_BYTES`.
    fn read(&mut self, start: u64, n: usize) -> Result<Vec<String>, String>;
}

/// Text the screen already holds (a message, or an output kept whole in its envelope).
pub struct TextSource {
    lines: Vec<String>,
}

impl TextSource {
    pub fn new(text: &str) -> Self {
        TextSource {
            lines: text.lines().map(shown_line).collect(),
        }
    }
}

impl PageSource for TextSource {
    fn total(&self) -> u64 {
        self.lines.len() as u64
    }

    fn read(&mut self, start: u64, n: usize) -> Result<Vec<String>, String> {
        let start = (start as usize).min(self.lines.len());
        Ok(self.lines[start..(start + n).min(self.lines.len())].to_vec())
    }
}

/// A stored output (`result://ID`): each read seeks through the result's line index.
pub struct StoredSource {
    store: ResultStore,
    id: String,
    total: u64,
}

impl StoredSource {
    pub fn open(store: ResultStore, uri: &str) -> Result<Self, String> {
        let id = uri
            .strip_prefix(crate::tools::results::SCHEME)
            .unwrap_or(uri)
            .to_string();
        let index = store.index(&id).map_err(|e| e.to_string())?;
        Ok(StoredSource {
            store,
            id,
            total: index.lines_stored(),
        })
    }
}

impl PageSource for StoredSource {
    fn total(&self) -> u64 {
        self.total
    }

    fn read(&mut self, start: u64, n: usize) -> Result<Vec<String>, String> {
        let (mut reader, _) = self
            .store
            .open_at_line(&self.id, start + 1)
            .map_err(|e| e.to_string())?;
        read_lines(&mut reader, n).map_err(|e| format!("cannot read {}: {e}", self.id))
    }
}

fn read_lines(r: &mut impl BufRead, n: usize) -> std::io::Result<Vec<String>> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        match read_line_capped(r, MAX_LINE_BYTES)? {
            Some(line) => out.push(shown(&line)),
            None => break,
        }
    }
    Ok(out)
}

/// A line as the pager shows it: escapes (colours included) and other controls made visible
/// text, never sent to the terminal; tabs as spaces.
fn shown(line: &CappedLine) -> String {
    shown_line(&display_line(line))
}

fn shown_line(text: &str) -> String {
    let text: String = if text.len() > MAX_LINE_BYTES {
        let mut end = MAX_LINE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{} [… line cut]", &text[..end])
    } else {
        text.to_string()
    };
    let plain = strip_sgr(&text.replace('\t', "    "));
    escape_controls(&plain).into_owned()
}

/// Colour and style sequences (`ESC [ … m`) removed: they are output formatting, and the
/// pager draws plain text. Every other control is escaped afterwards.
fn strip_sgr(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after.find(|c: char| !(c.is_ascii_digit() || c == ';' || c == ':'));
        match end {
            Some(e) if after[e..].starts_with('m') => rest = &after[e + 1..],
            _ => {
                out.push('\x1b');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// What a key did to the pager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PagerAction {
    None,
    Close,
}

/// The search being typed, or the last one run.
#[derive(Debug, Clone, Default)]
struct Search {
    query: String,
    typing: bool,
    /// The line of the current match, and what the last search said.
    at: Option<u64>,
    note: Option<String>,
}

pub struct Pager {
    pub title: String,
    source: Box<dyn PageSource>,
    /// First line shown (0-based) and the columns scrolled right.
    pub top: u64,
    pub left: usize,
    /// Lines that fit, as the last draw found.
    pub height: usize,
    /// The cached window: its first line and its lines.
    window: (u64, Vec<String>),
    search: Search,
    pub error: Option<String>,
}

impl Pager {
    /// A pager at the top of `source`.
    pub fn new(title: impl Into<String>, source: Box<dyn PageSource>) -> Self {
        let mut p = Pager {
            title: title.into(),
            source,
            top: 0,
            left: 0,
            height: 20,
            window: (0, Vec::new()),
            search: Search::default(),
            error: None,
        };
        p.load();
        p
    }

    pub fn total(&self) -> u64 {
        self.source.total()
    }

    fn max_top(&self) -> u64 {
        self.total().saturating_sub(self.height as u64)
    }

    /// Make sure the window covers what is shown: read it again (a page either side) when not.
    fn load(&mut self) {
        let (start, lines) = &self.window;
        let want_end = (self.top + self.height as u64).min(self.total());
        if self.top >= *start && want_end <= start + lines.len() as u64 && !lines.is_empty() {
            return;
        }
        let from = self.top.saturating_sub(self.height as u64);
        match self.source.read(from, self.height * 3) {
            Ok(lines) => {
                self.window = (from, lines);
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// The lines to draw: from `top`, at most `height`.
    pub fn visible(&self) -> &[String] {
        let (start, lines) = &self.window;
        let from = (self.top.saturating_sub(*start) as usize).min(lines.len());
        &lines[from..(from + self.height).min(lines.len())]
    }

    /// Set the height the draw found, keeping the view in range.
    pub fn set_height(&mut self, height: usize) {
        self.height = height.max(1);
        self.top = self.top.min(self.max_top());
        self.load();
    }

    pub fn scroll_to(&mut self, top: u64) {
        self.top = top.min(self.max_top());
        self.load();
    }

    pub fn scroll_by(&mut self, delta: i64) {
        let top = if delta < 0 {
            self.top.saturating_sub(delta.unsigned_abs())
        } else {
            self.top.saturating_add(delta as u64)
        };
        self.scroll_to(top);
    }

    /// What is typed in the search line, when it is open.
    pub fn typing(&self) -> Option<&str> {
        self.search.typing.then_some(self.search.query.as_str())
    }

    /// The query highlighted in the lines (the last one run), and the case it matches with.
    pub fn highlight(&self) -> Option<&str> {
        (!self.search.typing && !self.search.query.is_empty()).then_some(&self.search.query)
    }

    pub fn search_note(&self) -> Option<&str> {
        self.search.note.as_deref()
    }

    pub fn current_match(&self) -> Option<u64> {
        self.search.at
    }

    pub fn key(&mut self, key: KeyEvent) -> PagerAction {
        if self.search.typing {
            self.search_key(key);
            return PagerAction::None;
        }
        let page = self.height.saturating_sub(1).max(1) as i64;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return PagerAction::Close,
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Enter => self.scroll_by(1),
            KeyCode::Up | KeyCode::Char('k') => self.scroll_by(-1),
            KeyCode::Char('d') if ctrl => self.scroll_by(page / 2),
            KeyCode::Char('u') if ctrl => self.scroll_by(-page / 2),
            KeyCode::PageDown | KeyCode::Char(' ') | KeyCode::Char('f') => self.scroll_by(page),
            KeyCode::PageUp | KeyCode::Char('b') => self.scroll_by(-page),
            KeyCode::Home | KeyCode::Char('g') => self.scroll_to(0),
            KeyCode::End | KeyCode::Char('G') => self.scroll_to(u64::MAX),
            KeyCode::Right | KeyCode::Char('l') => self.left += 8,
            KeyCode::Left | KeyCode::Char('h') => self.left = self.left.saturating_sub(8),
            KeyCode::Char('/') => {
                self.search.typing = true;
                self.search.query.clear();
                self.search.note = None;
            }
            KeyCode::Char('n') => self.find(true),
            KeyCode::Char('N') => self.find(false),
            _ => {}
        }
        PagerAction::None
    }

    fn search_key(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Esc => {
                self.search.typing = false;
                self.search.query.clear();
            }
            KeyCode::Enter => {
                self.search.typing = false;
                self.search.at = None;
                self.find(true);
            }
            KeyCode::Backspace => {
                self.search.query.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.search.query.push(c)
            }
            _ => {}
        }
    }

    /// The next (or previous) line holding the query, read chunk by chunk from the source;
    /// the view moves so the match is on its first line. Wraps around once.
    fn find(&mut self, forward: bool) {
        let q = self.search.query.clone();
        if q.is_empty() {
            return;
        }
        let total = self.total();
        if total == 0 {
            self.search.note = Some(format!("not found: {q}"));
            return;
        }
        let matcher = Matcher::new(&q);
        // Start after (or before) the current match, else at the first line shown.
        let from = match (self.search.at, forward) {
            (Some(at), true) => (at + 1) % total,
            (Some(at), false) => (at + total - 1) % total,
            (None, _) => self.top.min(total - 1),
        };
        match self.scan(&matcher, from, forward) {
            Ok(Some(line)) => {
                // Past the end (or the start) and round again to reach it.
                let wrapped = match self.search.at {
                    Some(at) if forward => line <= at,
                    Some(at) => line >= at,
                    None if forward => line < from,
                    None => line > from,
                };
                self.search.at = Some(line);
                self.search.note = wrapped.then(|| "search wrapped".to_string());
                self.scroll_to(line);
            }
            Ok(None) => {
                self.search.at = None;
                self.search.note = Some(format!("not found: {q}"));
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Lines `from` onward (or backward), wrapping once; the first that matches.
    fn scan(&mut self, m: &Matcher, from: u64, forward: bool) -> Result<Option<u64>, String> {
        let total = self.total();
        let chunk = SEARCH_CHUNK as u64;
        let mut seen = 0u64;
        let mut at = from;
        while seen < total {
            let (start, n) = if forward {
                (at, chunk.min(total - at))
            } else {
                let start = at.saturating_sub(chunk - 1);
                (start, at - start + 1)
            };
            let lines = self.source.read(start, n as usize)?;
            let hit = if forward {
                lines.iter().position(|l| m.matches(l))
            } else {
                lines.iter().rposition(|l| m.matches(l))
            };
            if let Some(i) = hit {
                return Ok(Some(start + i as u64));
            }
            seen += n;
            at = if forward {
                (start + n) % total
            } else if start == 0 {
                total - 1
            } else {
                start - 1
            };
        }
        Ok(None)
    }
}

/// Smart case: a query with no capital letter matches any case.
pub struct Matcher {
    query: String,
    fold: bool,
}

impl Matcher {
    pub fn new(query: &str) -> Self {
        let fold = !query.chars().any(char::is_uppercase);
        Matcher {
            query: if fold {
                query.to_lowercase()
            } else {
                query.to_string()
            },
            fold,
        }
    }

    pub fn matches(&self, line: &str) -> bool {
        self.find(line).is_some()
    }

    /// The byte range of the first match in `line`.
    pub fn find(&self, line: &str) -> Option<(usize, usize)> {
        if self.query.is_empty() {
            return None;
        }
        if !self.fold {
            return line.find(&self.query).map(|i| (i, i + self.query.len()));
        }
        // Lower-casing can change lengths; search on the lower-cased text and map back by
        // characters.
        let lower: Vec<(usize, char)> = line
            .char_indices()
            .flat_map(|(i, c)| c.to_lowercase().map(move |l| (i, l)))
            .collect();
        let q: Vec<char> = self.query.chars().collect();
        let pos = lower
            .windows(q.len())
            .position(|w| w.iter().map(|(_, c)| *c).eq(q.iter().copied()))?;
        let start = lower[pos].0;
        let last = lower[pos + q.len() - 1].0;
        let end = last + line[last..].chars().next().map_or(0, char::len_utf8);
        Some((start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventKind;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new_with_kind(c, KeyModifiers::NONE, KeyEventKind::Press)
    }

    /// A source that counts the lines it was asked for, to prove reads stay bounded.
    struct Counting {
        total: u64,
        asked: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }

    impl PageSource for Counting {
        fn total(&self) -> u64 {
            self.total
        }
        fn read(&mut self, start: u64, n: usize) -> Result<Vec<String>, String> {
            let end = (start + n as u64).min(self.total);
            self.asked
                .fetch_add(end - start, std::sync::atomic::Ordering::Relaxed);
            Ok((start..end).map(|i| format!("line {}", i + 1)).collect())
        }
    }

    fn counting(total: u64) -> (Pager, std::sync::Arc<std::sync::atomic::AtomicU64>) {
        let asked = std::sync::Arc::default();
        let src = Counting {
            total,
            asked: std::sync::Arc::clone(&asked),
        };
        (Pager::new("t", Box::new(src)), asked)
    }

    #[test]
    fn a_huge_output_is_read_a_window_at_a_time() {
        let (mut p, asked) = counting(10_000_000);
        p.set_height(30);
        assert_eq!(p.visible().first().map(String::as_str), Some("line 1"));
        p.key(key(KeyCode::End));
        assert_eq!(p.visible().len(), 30);
        assert_eq!(
            p.visible().last().map(String::as_str),
            Some("line 10000000")
        );
        p.key(key(KeyCode::PageUp));
        assert_eq!(p.top, 10_000_000 - 30 - 29);
        // Three windows at most: the first, the end, and none for a page inside the window.
        let read = asked.load(std::sync::atomic::Ordering::Relaxed);
        assert!(read <= 3 * 90 + 60, "read {read} lines");
    }

    #[test]
    fn search_finds_moves_wraps_and_says_not_found() {
        let text: String = (1..=3000)
            .map(|i| {
                if i % 1000 == 0 {
                    format!("Needle at {i}\n")
                } else {
                    format!("hay {i}\n")
                }
            })
            .collect();
        let mut p = Pager::new("t", Box::new(TextSource::new(&text)));
        p.set_height(10);
        for c in "/needle".chars() {
            p.key(key(KeyCode::Char(c)));
        }
        assert_eq!(p.typing(), Some("needle"));
        p.key(key(KeyCode::Enter));
        assert_eq!(p.current_match(), Some(999));
        assert_eq!(p.top, 999);
        p.key(key(KeyCode::Char('n')));
        assert_eq!(p.current_match(), Some(1999));
        p.key(key(KeyCode::Char('n')));
        p.key(key(KeyCode::Char('n')));
        assert_eq!(p.current_match(), Some(999), "wraps to the first");
        assert_eq!(p.search_note(), Some("search wrapped"));
        p.key(key(KeyCode::Char('N')));
        assert_eq!(p.current_match(), Some(2999), "backwards wraps to the last");
        // Smart case: a capital letter matches exactly.
        for c in "/NEEDLE".chars() {
            p.key(key(KeyCode::Char(c)));
        }
        p.key(key(KeyCode::Enter));
        assert_eq!(p.current_match(), None);
        assert_eq!(p.search_note(), Some("not found: NEEDLE"));
    }

    #[test]
    fn lines_are_plain_and_bounded() {
        let long = "x".repeat(MAX_LINE_BYTES * 3);
        let text = format!("\x1b[31mred\x1b[0m and \x1b]0;title\x07 tab\there\n{long}\n");
        let mut src = TextSource::new(&text);
        let lines = src.read(0, 5).unwrap();
        assert!(lines[0].starts_with("red and "), "{:?}", lines[0]);
        assert!(!lines[0].contains('\x1b') && !lines[0].contains('\x07'));
        assert!(lines[0].contains("tab    here"));
        assert!(lines[1].len() < MAX_LINE_BYTES + 64 && lines[1].ends_with("[… line cut]"));
    }

    #[test]
    fn the_matcher_maps_folded_matches_back_to_the_line() {
        let m = Matcher::new("straße");
        let line = "Die STRASSE und die Straße";
        let (s, e) = m.find(line).unwrap();
        assert_eq!(&line[s..e], "Straße");
        assert_eq!(Matcher::new("").find("x"), None);
    }
}
