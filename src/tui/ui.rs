//! `draw`: the state in, a frame out. The conversation on top, the audit pane under it when
//! open, the composer, the status bar; the ASK dialog and popups over everything. Invariant:
//! `draw` changes nothing in `App` (the height cache it fills is a memo of pure functions).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Widget};

use crate::harness::audit::display::is_unsafe_char;
use crate::tui::app::{App, Focus};
use crate::tui::commands;
use crate::tui::widgets::audit_pane::AuditPane;
use crate::tui::widgets::confirm::{ConfirmWidget, dock_height};
use crate::tui::widgets::conversation::ConversationWidget;
use crate::tui::widgets::pager::PagerWidget;
use crate::tui::widgets::popup::PopupWidget;
use crate::tui::widgets::status_bar::StatusBar;

pub fn draw(app: &App, frame: &mut Frame) {
    let area = frame.area();
    // The composer draws its own cursor; the terminal's stays hidden.
    render(app, area, frame.buffer_mut());
}

fn regions(app: &App, area: Rect) -> [Rect; 4] {
    // The dialog docks where the composer is (which takes no key while it is open).
    let composer_h = match &app.confirm {
        Some(c) => dock_height(c, (area.width, area.height), &app.theme),
        None => (app.composer.lines().len() as u16).clamp(1, 6) + 2,
    };
    let audit_h = if app.audit_open {
        area.height * 2 / 5
    } else {
        0
    };
    let [conv, audit, comp, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(audit_h),
        Constraint::Length(composer_h),
        Constraint::Length(2),
    ])
    .areas(area);
    [conv, audit, comp, status]
}

/// Everything into `buf` (used by `draw` and by the snapshot tests).
pub fn render(app: &App, area: Rect, buf: &mut ratatui::buffer::Buffer) {
    let t = &app.theme;
    buf.set_style(area, Style::default().bg(t.background).fg(t.text));
    let [conv, audit, comp, status] = regions(app, area);
    ConversationWidget {
        cells: &app.cells,
        cache: &app.heights,
        scroll: app.scroll,
        focused: (app.focus == Focus::Conversation)
            .then_some(app.focused_cell)
            .flatten(),
        theme: t,
        now: app.now,
        unseen: app.unseen,
    }
    .render(conv, buf);
    if app.audit_open {
        AuditPane {
            view: &app.audit,
            theme: t,
        }
        .render(audit, buf);
    }
    if app.confirm.is_none() {
        render_composer(app, comp, buf);
    }
    let hints = match app.flash {
        Some((word, _)) if app.confirm.is_none() && app.pager.is_none() => vec![("✓", word)],
        _ => app.hints(),
    };
    StatusBar {
        info: &app.status,
        hints: &hints,
        theme: t,
    }
    .render(status, buf);
    if let Some(p) = &app.pager {
        // Over everything but the status bar, whose hints are the pager's keys.
        let over = Rect {
            height: area.height.saturating_sub(status.height),
            ..area
        };
        PagerWidget { pager: p, theme: t }.render(over, buf);
    }
    if let Some(p) = &app.popup {
        PopupWidget { popup: p, theme: t }.render(area, buf);
    }
    if let Some(c) = &app.confirm {
        ConfirmWidget {
            confirm: c,
            theme: t,
        }
        .render(comp, buf);
    }
    scrub(buf, area);
}

fn render_composer(app: &App, comp: Rect, buf: &mut ratatui::buffer::Buffer) {
    let t = &app.theme;
    let text = app.composer.lines().join("\n");
    let completions = commands::complete(&text);
    let title = match (&app.queued, completions.is_empty()) {
        (_, false) => format!(" Tab: {} ", completions.join("  ")),
        (Some(q), true) => {
            let first: String = q.lines().next().unwrap_or("").chars().take(40).collect();
            format!(" queued, sent when the turn ends: {first}… (↑ edits) ")
        }
        (None, true) => String::new(),
    };
    let border = if app.focus == Focus::Composer {
        t.fg(t.mode_color(app.status.mode))
    } else {
        t.hint()
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Span::styled(title, t.hint()));
    let inner = block.inner(comp);
    block.render(comp, buf);
    app.composer.render(inner, buf);
}

/// The last wall before the terminal: whatever text reached a cell (a file's name, a command's
/// output, a server's error), no character a terminal acts on or that reorders the line (ESC,
/// CR, a bidi override, a zero-width format character) is written. Each is replaced by `�` in
/// its cell when it was the cell's whole content, and dropped when it rode on a visible
/// character (ratatui joins zero-width characters to the cell before them). The views escape
/// such characters visibly where they take text in; this pass guarantees none is missed.
fn scrub(buf: &mut ratatui::buffer::Buffer, area: Rect) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let Some(cell) = buf.cell_mut((x, y)) else {
                continue;
            };
            let symbol = cell.symbol();
            if !symbol.chars().any(is_unsafe_char) {
                continue;
            }
            let clean: String = symbol.chars().filter(|c| !is_unsafe_char(*c)).collect();
            if clean.is_empty() {
                cell.set_symbol("\u{fffd}");
            } else {
                cell.set_symbol(&clean);
            }
        }
    }
}
