//! The widgets: pure renderers from state to a buffer, each pinned by snapshots. Shared pieces
//! live here: key-hint lines (generated from a pane's own bindings) and diff lines with line
//! numbers and a +/- gutter. Invariant: no widget mutates state or names a colour; every style
//! comes from the `Theme` by role.

pub mod audit_pane;
pub mod cell;
pub mod confirm;
pub mod conversation;
pub mod pager;
pub mod popup;
pub mod status_bar;
pub mod wrap;

use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use crate::tui::diff::{DiffTag, FileDiff};
use crate::tui::theme::Theme;

/// `key action · key action …` from a pane's bindings.
pub fn hint_line(hints: &[(&str, &str)], theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    for (i, (key, what)) in hints.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", theme.hint()));
        }
        spans.push(Span::styled(
            key.to_string(),
            theme.accent().add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::styled(format!(" {what}"), theme.hint()));
    }
    Line::from(spans)
}

/// A file diff as lines: a header, then `old new ±text` rows, wrapped to `width`.
pub fn diff_lines(d: &FileDiff, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let head = if d.creates {
        format!("{} (new file) +{}", d.path, d.added)
    } else {
        format!("{} +{} -{}", d.path, d.added, d.removed)
    };
    out.push(Line::styled(head, theme.accent()));
    let num = |n: Option<usize>| n.map_or("    ".to_string(), |n| format!("{n:>4}"));
    for l in &d.lines {
        let (sign, style) = match l.tag {
            DiffTag::Added => ("+", theme.fg(theme.added)),
            DiffTag::Removed => ("-", theme.fg(theme.removed)),
            DiffTag::Context => (" ", theme.text()),
            DiffTag::Gap => {
                out.push(Line::styled("     ⋯", theme.hint()));
                continue;
            }
        };
        let line = Line::from(vec![
            Span::styled(
                format!("{} {} ", num(l.old_no), num(l.new_no)),
                theme.hint(),
            ),
            Span::styled(format!("{sign} {}", l.text), style),
        ]);
        out.extend(wrap::wrap_line(line, width));
    }
    out
}

/// A `w` x `h` rectangle centred in `area` (clipped to it).
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let (w, h) = (w.min(area.width), h.min(area.height));
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}
