//! The conversation pane: the cells from the bottom up, scrolled by a count of lines from the
//! end. Only the cells that reach the screen are laid out; every cell's height is cached per
//! width and cell version, so a frame of a long session costs what is visible. An answer's
//! Markdown is laid out incrementally: the lines of its finished part (every complete line
//! outside an open code fence) are kept, and a new chunk lays out only what it finished and
//! the open tail, so a streamed chunk costs the same at the end of a long answer as at its
//! start. Invariant: the cache is a memo of `cell::lines(..)`, never a source of truth: a
//! stale entry (other width, other version, a text that is not the kept one continued) is
//! recomputed.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::cells::{Cell, CellKind, Cells};
use crate::tui::markdown;
use crate::tui::theme::Theme;
use crate::tui::widgets::{cell, wrap};

/// An answer's laid-out lines: `head` (the header and the finished part, kept across chunks)
/// then `tail` (the open part and the blank line after the cell).
#[derive(Debug, Clone)]
struct Answer {
    width: u16,
    version: u64,
    streaming: bool,
    /// The text whose lines `head` holds after the header.
    done: String,
    header_len: usize,
    head: Rc<Vec<Line<'static>>>,
    tail: Rc<Vec<Line<'static>>>,
}

#[derive(Debug, Clone)]
enum Entry {
    /// (width, version, height) of a cell laid out each time it is drawn.
    Height(u16, u64, usize),
    Answer(Answer),
}

/// A cell's lines as the widget takes them.
enum Laid {
    Owned(Vec<Line<'static>>),
    Answer(Rc<Vec<Line<'static>>>, Rc<Vec<Line<'static>>>),
}

impl Laid {
    fn len(&self) -> usize {
        match self {
            Laid::Owned(v) => v.len(),
            Laid::Answer(h, t) => h.len() + t.len(),
        }
    }

    /// Lines `from..to`, cloned (only those drawn).
    fn slice(&self, from: usize, to: usize) -> Vec<Line<'static>> {
        match self {
            Laid::Owned(v) => v[from..to].to_vec(),
            Laid::Answer(h, t) => {
                let mut out = Vec::with_capacity(to - from);
                let split = h.len();
                if from < split {
                    out.extend_from_slice(&h[from..to.min(split)]);
                }
                if to > split {
                    out.extend_from_slice(&t[from.max(split) - split..to - split]);
                }
                out
            }
        }
    }
}

/// Cached layouts: heights for most cells, the incremental lines of answers.
#[derive(Debug, Default)]
pub struct HeightCache {
    entries: RefCell<Vec<Option<Entry>>>,
}

/// Where an answer's text can be cut so both sides lay out as the whole does: after the last
/// complete line of `text` at which no code fence is open and which is not a table row (a
/// table's columns depend on all its rows) (the text given starts outside both).
fn settled(text: &str) -> usize {
    let mut open = false;
    let mut safe = 0;
    let mut start = 0;
    for (i, _) in text.match_indices('\n') {
        let line = &text[start..i];
        if line.trim_start().starts_with("```") {
            open = !open;
        }
        start = i + 1;
        if !open && !markdown::table_row(line) {
            safe = start;
        }
    }
    safe
}

/// `src` (a run of whole lines, or the open tail) as wrapped Markdown lines.
fn markdown_lines(src: &str, inner: u16, theme: &Theme) -> Vec<Line<'static>> {
    wrap::wrap_all(markdown::render(src, theme), inner)
}

impl Answer {
    fn new(text: &str, width: u16, streaming: bool, theme: &Theme) -> Self {
        let header = wrap::wrap_line(
            cell::assistant_header(text, streaming, false, theme),
            width.saturating_sub(2).max(1),
        );
        Answer {
            width,
            version: u64::MAX,
            streaming,
            done: String::new(),
            header_len: header.len(),
            head: Rc::new(header),
            tail: Rc::new(Vec::new()),
        }
    }

    /// Bring the layout up to `text`: lay out only what the new text finished, and the tail.
    fn update(&mut self, text: &str, version: u64, theme: &Theme) {
        let inner = self.width.saturating_sub(2).max(1);
        let rest = &text[self.done.len()..];
        let cut = settled(rest);
        if cut > 0 {
            // Whole lines ending outside a fence: alone they lay out as in the whole text.
            let finished = &rest[..cut - 1];
            Rc::make_mut(&mut self.head).extend(markdown_lines(finished, inner, theme));
            self.done.push_str(&rest[..cut]);
        }
        let mut tail = markdown_lines(&text[self.done.len()..], inner, theme);
        tail.push(Line::default());
        self.tail = Rc::new(tail);
        self.version = version;
    }

    /// The stream ended (or began again): the header changes, the laid-out body stays.
    fn restyle(&mut self, text: &str, streaming: bool, theme: &Theme) {
        let header = Answer::new(text, self.width, streaming, theme);
        let head = Rc::make_mut(&mut self.head);
        head.splice(0..self.header_len, header.head.iter().cloned());
        self.header_len = header.header_len;
        self.streaming = streaming;
        self.version = u64::MAX;
    }
}

impl HeightCache {
    /// The lines of cell `i` (an unfolded answer from its incremental layout, any other cell
    /// laid out now), its height recorded.
    fn laid(&self, i: usize, c: &Cell, width: u16, theme: &Theme, now: Instant) -> Laid {
        let mut e = self.entries.borrow_mut();
        if e.len() <= i {
            e.resize(i + 1, None);
        }
        match &c.kind {
            CellKind::Assistant { text, streaming } if !c.folded => {
                let mut a = match e[i].take() {
                    Some(Entry::Answer(a)) if a.width == width && text.starts_with(&a.done) => a,
                    _ => Answer::new(text, width, *streaming, theme),
                };
                if a.streaming != *streaming {
                    a.restyle(text, *streaming, theme);
                }
                if a.version != c.version {
                    a.update(text, c.version, theme);
                }
                let laid = Laid::Answer(Rc::clone(&a.head), Rc::clone(&a.tail));
                e[i] = Some(Entry::Answer(a));
                laid
            }
            _ => {
                let lines = cell::lines(c, width, theme, now);
                e[i] = Some(Entry::Height(width, c.version, lines.len()));
                Laid::Owned(lines)
            }
        }
    }

    pub fn height(&self, i: usize, c: &Cell, width: u16, theme: &Theme, now: Instant) -> usize {
        {
            let e = self.entries.borrow();
            match e.get(i).and_then(Option::as_ref) {
                Some(Entry::Height(w, v, h)) if *w == width && *v == c.version => return *h,
                Some(Entry::Answer(a))
                    if a.width == width && a.version == c.version && !c.folded =>
                {
                    return a.head.len() + a.tail.len();
                }
                _ => {}
            }
        }
        self.laid(i, c, width, theme, now).len()
    }

    /// Total height of every cell (for Home and the scroll indicator); cached after the first.
    pub fn total(&self, cells: &Cells, width: u16, theme: &Theme, now: Instant) -> usize {
        (0..cells.len())
            .map(|i| self.height(i, &cells.items[i], width, theme, now))
            .sum()
    }

    /// `scroll` (lines up from the bottom) kept within the content: only the cells from the end
    /// up to the scroll position are measured, never the whole session unless it is scrolled
    /// to the top.
    pub fn clamp_scroll(
        &self,
        cells: &Cells,
        width: u16,
        theme: &Theme,
        now: Instant,
        scroll: usize,
        page: usize,
    ) -> usize {
        let mut covered = 0usize;
        for i in (0..cells.len()).rev() {
            covered += self.height(i, &cells.items[i], width, theme, now);
            if covered >= scroll + page {
                return scroll;
            }
        }
        scroll.min(covered.saturating_sub(page))
    }

    pub fn clear(&self) {
        self.entries.borrow_mut().clear();
    }
}

pub struct ConversationWidget<'a> {
    pub cells: &'a Cells,
    pub cache: &'a HeightCache,
    /// Lines scrolled up from the bottom.
    pub scroll: usize,
    pub focused: Option<usize>,
    pub theme: &'a Theme,
    pub now: Instant,
    /// Output arrived below a scrolled-up view: a marker on its last row says so.
    pub unseen: bool,
}

impl Widget for ConversationWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 || area.width < 3 {
            return;
        }
        let (w, h) = (area.width, area.height as usize);
        // Walk up from the last cell until the screen and the scroll are covered.
        let mut need = h + self.scroll;
        let mut first = self.cells.len();
        let mut covered = 0usize;
        while first > 0 && covered < need {
            first -= 1;
            covered += self
                .cache
                .height(first, &self.cells.items[first], w, self.theme, self.now);
        }
        // Of the lines of cells `first..`, the last `h` above the scroll are drawn; only those
        // are cloned.
        let end = covered.saturating_sub(self.scroll.min(covered));
        let start = end.saturating_sub(h);
        let mut shown: Vec<Line> = Vec::with_capacity(end - start);
        let mut at = 0usize;
        for i in first..self.cells.len() {
            if at >= end {
                break;
            }
            let laid = self
                .cache
                .laid(i, &self.cells.items[i], w, self.theme, self.now);
            let n = laid.len();
            let (from, to) = (start.max(at), end.min(at + n));
            if from < to {
                let mark = if self.focused == Some(i) { "▌" } else { " " };
                for l in laid.slice(from - at, to - at) {
                    let mut spans = vec![Span::styled(mark, self.theme.accent())];
                    spans.push(Span::raw(" "));
                    // A line's own style (a notice's, a refusal's colour) is under each of
                    // its spans: it must survive the gutter being put in front.
                    let base = l.style;
                    spans.extend(l.spans.into_iter().map(|mut s| {
                        s.style = base.patch(s.style);
                        s
                    }));
                    shown.push(Line::from(spans));
                }
            }
            at += n;
        }
        need = shown.len();
        // Short content sits at the top of the pane.
        Paragraph::new(shown).render(
            Rect {
                height: need as u16,
                ..area
            },
            buf,
        );
        if self.unseen && self.scroll > 0 {
            let marker = Line::from(Span::styled(
                " ↓ new output below · End ",
                self.theme.accent().add_modifier(Modifier::REVERSED),
            ));
            let row = Rect {
                y: area.bottom() - 1,
                height: 1,
                ..area
            };
            Paragraph::new(marker)
                .alignment(ratatui::layout::Alignment::Right)
                .render(row, buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn answer(text: &str, streaming: bool) -> Cell {
        Cell::new(CellKind::Assistant {
            text: text.to_string(),
            streaming,
        })
    }

    fn text_of(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| format!("{l:?}")).collect()
    }

    /// Pieces an answer is made of, fences and their edges included.
    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "# Title\n",
            "some **bold** and `code` text ",
            "a [link](https://x.invalid) ",
            "\n",
            "\n\n",
            "- item\n",
            "1. first\n",
            "> quoted\n",
            "```rust\n",
            "```\n",
            "fn f() { let x = 1; }\n",
            "   ```\n",
            "word ",
            "a very long line that wraps more than once at forty columns or so, surely ",
            "é ü 漢字 ",
            "| a | b |\n",
            "|---|---|\n",
            "| long cell | x |\n",
        ])
    }

    proptest! {
        /// However the answer arrives, chunk by chunk with a frame after each, its lines are
        /// those of laying out the whole text at once, while it streams and when it ends.
        #[test]
        fn streamed_layout_is_the_whole_layout(
            pieces in prop::collection::vec(piece(), 1..40),
            cuts in prop::collection::vec(1usize..60, 1..20),
            width in 12u16..90,
        ) {
            let theme = Theme::named("dark").unwrap();
            let now = Instant::now();
            let text: String = pieces.concat();
            let cache = HeightCache::default();
            let mut c = answer("", true);
            let mut at = 0;
            let mut k = 0;
            while at < text.len() {
                let mut next = (at + cuts[k % cuts.len()]).min(text.len());
                while !text.is_char_boundary(next) {
                    next += 1;
                }
                k += 1;
                if let CellKind::Assistant { text: t, .. } = &mut c.kind {
                    t.push_str(&text[at..next]);
                }
                c.touch();
                at = next;
                let laid = cache.laid(0, &c, width, &theme, now);
                let got = laid.slice(0, laid.len());
                let want = cell::lines(&c, width, &theme, now);
                prop_assert_eq!(text_of(&got), text_of(&want));
                prop_assert_eq!(cache.height(0, &c, width, &theme, now), want.len());
            }
            // The stream ends: the header loses its mark, the body is kept.
            c.kind = CellKind::Assistant { text: text.clone(), streaming: false };
            c.touch();
            let laid = cache.laid(0, &c, width, &theme, now);
            prop_assert_eq!(
                text_of(&laid.slice(0, laid.len())),
                text_of(&cell::lines(&c, width, &theme, now))
            );
        }
    }

    #[test]
    fn a_drawn_slice_spans_the_kept_and_the_open_part() {
        let theme = Theme::named("dark").unwrap();
        let now = Instant::now();
        let cache = HeightCache::default();
        let c = answer("one\ntwo\nthr", true);
        let laid = cache.laid(0, &c, 40, &theme, now);
        // header, one, two | thr, blank
        assert_eq!(laid.len(), 5);
        let mid: Vec<String> = laid.slice(2, 4).iter().map(|l| l.to_string()).collect();
        assert_eq!(mid, ["two", "thr"]);
    }
}
