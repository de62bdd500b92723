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
    /// The standard engaged, if any.
    pub standard: Option<String>,
    pub tokens: u64,
    pub busy: bool,
    /// Paths the session changed that `/undo` can take back.
    pub undoable: usize,
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
        let model = match &i.model {
            Some((p, m)) => (format!("{p}/{m}"), t.text()),
            None => ("no model".to_string(), t.fg(t.warning)),
        };
        let (sb, sb_style) = match &i.sandbox {
            SandboxHealth::Checking => ("sandbox …".to_string(), t.secondary()),
            SandboxHealth::Ok => ("sandbox ok".to_string(), t.fg(t.added)),
            SandboxHealth::Degraded(w) => (format!("sandbox degraded: {w}"), t.fg(t.warning)),
            SandboxHealth::Down(w) => (format!("sandbox DOWN: {w}"), t.danger()),
        };
        let net = match i.network {
            true => ("net on".to_string(), t.fg(t.warning)),
            false => ("net off".to_string(), t.secondary()),
        };
        // Segments after the mode and the model, in display order, each with how long it is
        // kept when the bar is too narrow (the lowest goes first); the workspace is shortened
        // from the left before anything is given up.
        let mut segments: Vec<(String, ratatui::style::Style, u8)> = vec![
            (i.workspace.clone(), t.secondary(), WORKSPACE),
            (sb, sb_style, 4),
            (net.0, net.1, 2),
            (
                i.standard
                    .as_ref()
                    .map(|s| format!("std {s}"))
                    .unwrap_or_default(),
                t.accent(),
                3,
            ),
            (format!("{} tok", i.tokens), t.secondary(), 0),
        ];
        if i.undoable > 0 {
            let s = if i.undoable == 1 { "" } else { "s" };
            segments.push((
                format!("{} change{s} to undo", i.undoable),
                t.secondary(),
                1,
            ));
        }
        if i.busy {
            segments.push(("working".to_string(), t.accent(), 3));
        }
        let width = usize::from(area.width);
        let fixed = mode.chars().count() + 1 + model.0.chars().count();
        let total = |segs: &[(String, ratatui::style::Style, u8)]| {
            fixed
                + segs
                    .iter()
                    .filter(|(s, _, _)| !s.is_empty())
                    .map(|(s, _, _)| s.chars().count() + 3)
                    .sum::<usize>()
        };
        // Shorten the workspace when that is enough (at least 8 characters of it left);
        // otherwise give up the segment kept least long and try again.
        while total(&segments) > width {
            if let Some(ws) = segments.iter().position(|seg| seg.2 == WORKSPACE) {
                let others = total(&segments) - (segments[ws].0.chars().count() + 3);
                let room = width.saturating_sub(others + 3);
                if room >= 8 {
                    segments[ws].0 = shorten_left(&segments[ws].0, room);
                    break;
                }
            }
            let Some(lowest) = (0..segments.len()).min_by_key(|k| segments[*k].2) else {
                break;
            };
            segments.remove(lowest);
        }
        let mut spans = vec![
            Span::styled(mode, t.mode_badge(i.mode)),
            Span::raw(" "),
            Span::styled(model.0, model.1),
        ];
        for (text, style, _) in segments.into_iter().filter(|(s, _, _)| !s.is_empty()) {
            spans.push(sep());
            spans.push(Span::styled(text, style));
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

/// How long the workspace is kept: after the token count, before everything else.
const WORKSPACE: u8 = 1;

/// `text` in at most `room` characters, keeping its end (a path's last components), with `…`
/// where the start was cut; empty when not even a few characters fit.
fn shorten_left(text: &str, room: usize) -> String {
    let n = text.chars().count();
    if n <= room {
        return text.to_string();
    }
    if room < 8 {
        return String::new();
    }
    let tail: String = text.chars().skip(n - (room - 1)).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(width: u16, info: &StatusInfo) -> String {
        let theme = Theme::named("dark").unwrap();
        let area = Rect::new(0, 0, width, 2);
        let mut buf = Buffer::empty(area);
        StatusBar {
            info,
            hints: &[],
            theme: &theme,
        }
        .render(area, &mut buf);
        (0..width)
            .map(|x| buf[(x, 0)].symbol().to_string())
            .collect::<String>()
            .trim_end()
            .to_string()
    }

    fn info() -> StatusInfo {
        StatusInfo {
            mode: ExecutionMode::Ask,
            model: Some(("default".into(), "mock".into())),
            workspace: "/home/someone/projects/a-rather-long-project-name".into(),
            sandbox: SandboxHealth::Ok,
            network: false,
            undoable: 0,
            standard: None,
            tokens: 12_345,
            busy: true,
        }
    }

    #[test]
    fn a_wide_bar_shows_every_segment_whole() {
        let line = bar(140, &info());
        for part in [
            "ASK",
            "default/mock",
            "a-rather-long-project-name",
            "sandbox ok",
            "net off",
            "12345 tok",
            "working",
        ] {
            assert!(line.contains(part), "{part} missing: {line}");
        }
    }

    #[test]
    fn a_narrow_bar_shortens_the_workspace_then_gives_up_whole_segments_never_cutting_one() {
        for width in [100u16, 80, 60, 40, 30] {
            let line = bar(width, &info());
            assert!(
                line.chars().count() <= usize::from(width),
                "{width}: {line}"
            );
            // Whatever is shown is shown whole (the workspace may lose its start).
            for part in line.split(" │ ").skip(1) {
                assert!(
                    ["sandbox ok", "net off", "12345 tok", "working"].contains(&part)
                        || part.starts_with('…')
                        || part == info().workspace,
                    "{width}: a cut segment `{part}` in {line}"
                );
            }
            assert!(
                line.contains("ASK") && line.contains("default/mock"),
                "{width}: {line}"
            );
        }
        // The sandbox's health outlives the other segments.
        assert!(
            bar(40, &info()).contains("sandbox ok"),
            "{}",
            bar(40, &info())
        );
    }

    #[test]
    fn an_engaged_standard_is_shown_in_the_status_bar() {
        let mut i = info();
        i.standard = Some("fire-code".into());
        let wide = bar(120, &i);
        assert!(wide.contains("│ std fire-code │"), "{wide}");
        assert!(!bar(80, &info()).contains("std "));
    }
}
