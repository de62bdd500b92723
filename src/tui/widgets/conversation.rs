//! The conversation pane: the cells from the bottom up, scrolled by a count of lines from the
//! end. Only the cells that reach the screen are laid out; every cell's height is cached per
//! width and cell version, so a frame of a long session costs what is visible. Invariant: the
//! cache is a memo of `cell::lines(..).len()`, never a source of truth: a stale entry (other
//! width, other version) is recomputed.

use std::cell::RefCell;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::cells::{Cell, Cells};
use crate::tui::theme::Theme;
use crate::tui::widgets::cell;

/// Cached heights: (width, version, height) per cell.
#[derive(Debug, Default)]
pub struct HeightCache {
    entries: RefCell<Vec<Option<(u16, u64, usize)>>>,
}

impl HeightCache {
    pub fn height(&self, i: usize, c: &Cell, width: u16, theme: &Theme, now: Instant) -> usize {
        let mut e = self.entries.borrow_mut();
        if e.len() <= i {
            e.resize(i + 1, None);
        }
        if let Some((w, v, h)) = e[i]
            && w == width
            && v == c.version
        {
            return h;
        }
        let h = cell::lines(c, width, theme, now).len();
        e[i] = Some((width, c.version, h));
        h
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
        let mut lines: Vec<Line<'static>> = Vec::with_capacity(covered);
        for i in first..self.cells.len() {
            let mark = if self.focused == Some(i) { "▌" } else { " " };
            for l in cell::lines(&self.cells.items[i], w, self.theme, self.now) {
                let mut spans = vec![Span::styled(mark, self.theme.accent())];
                spans.push(Span::raw(" "));
                spans.extend(l.spans);
                lines.push(Line::from(spans));
            }
        }
        // Lines past the bottom of the view are the scrolled-away ones.
        let end = lines.len().saturating_sub(self.scroll.min(lines.len()));
        let start = end.saturating_sub(h);
        need = end - start;
        let shown: Vec<Line> = lines.drain(start..end).collect();
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
