//! The full-output view over the conversation: a header (what is shown, which lines of how
//! many), the visible lines only (scrolled right by the pager's column offset, the search's
//! matches marked), and a footer (the search being typed, what it found, or the keys).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use crate::tui::pager::{Matcher, Pager};
use crate::tui::theme::Theme;
use crate::tui::widgets::hint_line;

/// The pager's keys, for its footer and the help.
/// How to leave comes first: a narrow screen cuts the line's end.
pub const PAGER_KEYS: [(&str, &str); 6] = [
    ("q/Esc", "close"),
    ("↑↓/PgUp/PgDn", "scroll"),
    ("/", "search"),
    ("n/N", "next/prev"),
    ("g/G", "top/end"),
    ("←→", "sideways"),
];

pub struct PagerWidget<'a> {
    pub pager: &'a Pager,
    pub theme: &'a Theme,
}

/// Rows the pager's frame takes from its area (header and footer).
pub const FRAME_ROWS: u16 = 2;

impl Widget for PagerWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (p, t) = (self.pager, self.theme);
        if area.height < FRAME_ROWS + 1 {
            return;
        }
        Clear.render(area, buf);
        buf.set_style(area, t.text().bg(t.background));
        let total = p.total();
        let shown = p.visible();
        let range = if total == 0 {
            "empty".to_string()
        } else {
            format!(
                "lines {}–{} of {}",
                p.top + 1,
                p.top + shown.len() as u64,
                total
            )
        };
        let header = Line::from(vec![
            Span::styled(
                format!(" {} ", p.title),
                t.accent().add_modifier(Modifier::BOLD | Modifier::REVERSED),
            ),
            Span::styled(format!("  {range}"), t.secondary()),
        ]);
        let width = usize::from(area.width);
        let matcher = p.highlight().map(Matcher::new);
        let mut lines = vec![header];
        for (i, text) in shown.iter().enumerate() {
            let current = p.current_match() == Some(p.top + i as u64);
            lines.push(body_line(text, p.left, width, matcher.as_ref(), current, t));
        }
        let body = Rect {
            height: area.height - 1,
            ..area
        };
        Paragraph::new(lines).render(body, buf);
        let footer = match (p.typing(), &p.error, p.search_note()) {
            (Some(q), _, _) => Line::from(vec![
                Span::styled("/", t.accent().add_modifier(Modifier::BOLD)),
                Span::styled(q.to_string(), t.text()),
                Span::styled("▏ Enter find · Esc cancel", t.hint()),
            ]),
            (None, Some(e), _) => Line::styled(e.clone(), t.danger()),
            (None, None, Some(note)) => Line::styled(note.to_string(), t.fg(t.warning)),
            (None, None, None) => hint_line(&PAGER_KEYS, t),
        };
        let foot = Rect {
            y: area.bottom() - 1,
            height: 1,
            ..area
        };
        Paragraph::new(footer).render(foot, buf);
    }
}

/// One line from column `left`, at most `width` characters, the match marked.
fn body_line(
    text: &str,
    left: usize,
    width: usize,
    m: Option<&Matcher>,
    current: bool,
    t: &Theme,
) -> Line<'static> {
    let start = text.char_indices().nth(left).map_or(text.len(), |(i, _)| i);
    let end = text[start..]
        .char_indices()
        .nth(width)
        .map_or(text.len(), |(i, _)| start + i);
    let mut spans = Vec::new();
    let mut at = start;
    if let Some(m) = m {
        // Every match in the visible part.
        while at < end {
            let Some((s, e)) = m.find(&text[at..end]).map(|(s, e)| (at + s, at + e)) else {
                break;
            };
            if s > at {
                spans.push(Span::styled(text[at..s].to_string(), t.text()));
            }
            let style = if current {
                t.fg(t.warning)
                    .add_modifier(Modifier::REVERSED | Modifier::BOLD)
            } else {
                t.fg(t.warning).add_modifier(Modifier::REVERSED)
            };
            spans.push(Span::styled(text[s..e].to_string(), style));
            at = e.max(s + 1).min(end);
        }
    }
    if at < end {
        spans.push(Span::styled(text[at..end].to_string(), t.text()));
    }
    Line::from(spans)
}
