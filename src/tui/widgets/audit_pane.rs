//! The audit pane: this workspace's records, newest at the bottom, one escaped summary line
//! each, coloured by decision; a title with the filters and counts; a warning line when the
//! chain does not verify; an opened record shown field by field.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use crate::harness::audit::Decision;
use crate::harness::audit::display::escape_controls;
use crate::tui::audit::{AuditView, ChainState};
use crate::tui::theme::Theme;
use crate::tui::widgets::wrap;

pub struct AuditPane<'a> {
    pub view: &'a AuditView,
    pub theme: &'a Theme,
}

impl Widget for AuditPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (v, t) = (self.view, self.theme);
        let visible = v.visible();
        let mut title = format!(
            " audit: {} of {} loaded{} ",
            visible.len(),
            v.records.len(),
            if v.complete { "" } else { " (↑ loads older)" }
        );
        let f = v.filter_text();
        if !f.is_empty() {
            title.push_str(&format!("[{f}] "));
        }
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(t.accent())
            .title(Span::styled(title, t.accent().add_modifier(Modifier::BOLD)));
        let inner = block.inner(area);
        block.render(area, buf);
        let mut top: Vec<Line> = Vec::new();
        match &v.chain {
            ChainState::Broken(why) => top.push(Line::styled(
                format!(
                    "⚠ the audit chain does not verify: {}",
                    escape_controls(why)
                ),
                t.danger(),
            )),
            ChainState::Checking => top.push(Line::styled("checking the chain…", t.hint())),
            ChainState::Verified(n) => top.push(Line::styled(
                format!("chain verified ({n} records)"),
                t.hint(),
            )),
            ChainState::NoLog => top.push(Line::styled(
                "no audit log yet for this workspace",
                t.hint(),
            )),
        }
        if v.unreadable > 0 {
            top.push(Line::styled(
                format!("{} unreadable lines skipped", v.unreadable),
                t.fg(t.warning),
            ));
        }
        if v.searching {
            top.push(Line::styled(format!("search: {}▏", v.search), t.accent()));
        }
        if let Some(r) = &v.opened {
            let mut lines = top;
            let json = serde_json::to_value(r).unwrap_or_default();
            if let Some(obj) = json.as_object() {
                for (k, val) in obj {
                    let text = match val {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    lines.extend(wrap::wrap_line(
                        Line::from(vec![
                            Span::styled(format!("{k:<18}"), t.secondary()),
                            Span::styled(escape_controls(&text).into_owned(), t.text()),
                        ]),
                        inner.width,
                    ));
                }
            }
            Paragraph::new(lines).render(inner, buf);
            return;
        }
        let rows = (inner.height as usize).saturating_sub(top.len());
        let n = visible.len();
        let sel = v.selected.min(n.saturating_sub(1));
        // Keep the selection on screen: the window ends at the newest unless it must move.
        let end = n.saturating_sub(sel.saturating_sub(rows.saturating_sub(1)));
        let start = end.saturating_sub(rows);
        let mut lines = top;
        if n == 0 {
            lines.push(Line::styled(
                if v.records.is_empty() {
                    "no records"
                } else {
                    "no record matches the filters"
                },
                t.secondary(),
            ));
        }
        for (i, r) in visible[start..end].iter().enumerate() {
            let style = match r.decision {
                Decision::Allowed | Decision::Approved => t.fg(t.added),
                Decision::Denied | Decision::Refused => t.fg(t.danger),
                _ => t.fg(t.warning),
            };
            let label = format!("{:<9}", r.decision.label());
            let mut line = Line::styled(r.summary(&label), style);
            if start + i + 1 + sel == n {
                line = line.patch_style(t.accent().add_modifier(Modifier::REVERSED));
            }
            lines.push(line);
        }
        Paragraph::new(lines).render(inner, buf);
    }
}
