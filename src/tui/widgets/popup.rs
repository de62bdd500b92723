//! Popups over the conversation: help (generated from the bindings and the slash commands), the
//! session list for /resume, and plain text (the /model answer). A popup shows and selects;
//! the app acts on what was chosen.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::agent::transcript::SessionSummary;
use crate::tui::theme::Theme;
use crate::tui::widgets::wrap;

#[derive(Debug, Clone)]
pub enum Popup {
    Text {
        title: String,
        lines: Vec<String>,
    },
    Sessions {
        list: Vec<SessionSummary>,
        selected: usize,
    },
}

pub struct PopupWidget<'a> {
    pub popup: &'a Popup,
    pub theme: &'a Theme,
}

/// The width a popup takes on a screen `width` columns wide.
fn text_width(width: u16) -> u16 {
    width.saturating_sub(6).clamp(20, 100).min(width)
}

/// Whether a text popup of `lines` fits a screen of `size` whole (its frame included), as it
/// would be wrapped there; one that does not is shown where it can scroll.
pub fn text_fits(lines: &[String], size: (u16, u16)) -> bool {
    let inner = text_width(size.0).saturating_sub(2);
    let rows: usize = lines
        .iter()
        .map(|l| wrap::wrap_line(Line::raw(l.clone()), inner).len())
        .sum();
    rows + 2 <= usize::from(size.1)
}

impl Widget for PopupWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let w = text_width(area.width);
        let (title, lines): (String, Vec<Line>) = match self.popup {
            Popup::Text { title, lines } => (
                title.clone(),
                lines
                    .iter()
                    .flat_map(|l| {
                        wrap::wrap_line(Line::styled(l.clone(), t.text()), w.saturating_sub(2))
                    })
                    .collect(),
            ),
            Popup::Sessions { list, selected } => {
                let mut v: Vec<Line> = Vec::new();
                if list.is_empty() {
                    v.push(Line::styled(
                        "no sessions for this workspace yet",
                        t.secondary(),
                    ));
                }
                for (i, s) in list.iter().enumerate() {
                    let mut line = Line::from(vec![
                        Span::styled(
                            format!("{}  ", s.updated.get(..16).unwrap_or(&s.updated)),
                            t.secondary(),
                        ),
                        Span::styled(format!("{:<5} ", s.mode), t.secondary()),
                        Span::styled(s.title.clone(), t.text()),
                        Span::styled(format!("  ({} messages)", s.messages), t.hint()),
                    ]);
                    if i == *selected {
                        line = line.patch_style(t.accent().add_modifier(Modifier::REVERSED));
                    }
                    v.push(line);
                }
                v.push(Line::styled(
                    "↑↓ select · Enter reopen · Esc close",
                    t.hint(),
                ));
                (" sessions ".to_string(), v)
            }
        };
        let h = (lines.len() as u16 + 2).min(area.height);
        let rect = super::centered(area, w, h);
        Clear.render(rect, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.accent())
            .title(Span::styled(title, t.accent().add_modifier(Modifier::BOLD)));
        Paragraph::new(lines).block(block).render(rect, buf);
    }
}
