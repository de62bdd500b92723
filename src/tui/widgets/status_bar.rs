//! The status bar: the mode in its own colour (AUTO reversed, bold and underlined, so it cannot
//! be mistaken), provider and model, workspace, sandbox health from the cached preflight,
//! network on or off, tokens used; and below it the focused pane's key hints.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::harness::primitives::ExecutionMode;
use crate::tui::theme::Theme;
use crate::tui::widgets::hint_line;

/// The sandbox as the preflight found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxHealth {
    Checking,
    Ok,
    Degraded(String),
    Down(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusInfo {
    pub mode: ExecutionMode,
    /// `None`: no model configured.
    pub model: Option<(String, String)>,
    pub workspace: String,
    pub sandbox: SandboxHealth,
    pub network: bool,
    pub tokens: u64,
    pub busy: bool,
}

pub struct StatusBar<'a> {
    pub info: &'a StatusInfo,
    pub hints: &'a [(&'a str, &'a str)],
    pub theme: &'a Theme,
}

impl Widget for StatusBar<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (i, t) = (self.info, self.theme);
        let sep = || Span::styled(" │ ", t.hint());
        let mode = match i.mode {
            ExecutionMode::Auto => " AUTO: runs without asking ".to_string(),
            m => format!(" {} ", m.as_str().to_uppercase()),
        };
        let mut spans = vec![Span::styled(mode, t.mode_badge(i.mode)), Span::raw(" ")];
        match &i.model {
            Some((p, m)) => spans.push(Span::styled(format!("{p}/{m}"), t.text())),
            None => spans.push(Span::styled("no model", t.fg(t.warning))),
        }
        spans.push(sep());
        spans.push(Span::styled(i.workspace.clone(), t.secondary()));
        spans.push(sep());
        let (sb, style) = match &i.sandbox {
            SandboxHealth::Checking => ("sandbox …".to_string(), t.secondary()),
            SandboxHealth::Ok => ("sandbox ok".to_string(), t.fg(t.added)),
            SandboxHealth::Degraded(w) => (format!("sandbox degraded: {w}"), t.fg(t.warning)),
            SandboxHealth::Down(w) => (format!("sandbox DOWN: {w}"), t.danger()),
        };
        spans.push(Span::styled(sb, style));
        spans.push(sep());
        spans.push(Span::styled(
            if i.network { "net on" } else { "net off" },
            if i.network {
                t.fg(t.warning)
            } else {
                t.secondary()
            },
        ));
        spans.push(sep());
        spans.push(Span::styled(format!("{} tok", i.tokens), t.secondary()));
        if i.busy {
            spans.push(sep());
            spans.push(Span::styled("working", t.accent()));
        }
        // As many hints as fit whole; the rest are in /help.
        let mut used = 0usize;
        let fitting: Vec<(&str, &str)> = self
            .hints
            .iter()
            .copied()
            .take_while(|(k, w)| {
                used += k.chars().count() + w.chars().count() + 4;
                used <= usize::from(area.width)
            })
            .collect();
        let rows = vec![Line::from(spans), hint_line(&fitting, t)];
        Paragraph::new(rows).render(area, buf);
    }
}
