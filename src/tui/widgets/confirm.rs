//! The ASK dialog. It holds one approval request (keyed by its request id) and, on a key, emits
//! one decision naming that id; the app delivers it to the TaskController. It shows the tool, the whole command
//! wrapped (scrollable, never cut), the class with every reason, what it needs, the paths it
//! writes, the working directory, and for write_file/patch the diff of what will be written.
//! Invariant: no key answers until the person has not typed for `GUARD` since the dialog opened
//! (every key in that time starts the wait again), so keys typed for the composer, however long
//! the person goes on typing, cannot approve a call they have not seen.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::harness::command_policy::{ApprovalDecision, SaveScope};
use crate::tools::approval::ApprovalId;
use crate::tui::diff::FileDiff;
use crate::tui::theme::Theme;
use crate::tui::widgets::{diff_lines, wrap};

/// Keys this soon after the dialog opened, or after the previous key while it waits, are
/// ignored.
pub const GUARD: Duration = Duration::from_millis(300);

/// What the dialog asks about (the `approval_requested` event, plus what the app knows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalView {
    pub request_id: ApprovalId,
    pub call_id: String,
    pub tool: String,
    pub command: String,
    pub class: String,
    pub asking_for: Vec<String>,
    pub reasons: Vec<String>,
    pub writes: Vec<String>,
    pub network: bool,
    pub cwd: String,
    /// The tool's own preview of a file change, as a diff.
    pub diff: Option<FileDiff>,
    /// The allow rules "always" may keep, narrowest first (empty: none can name this call).
    pub always: Vec<String>,
}

/// The decision the dialog emits: `y` once; `s` this exact command for the session (a session
/// rule where one can name it, else a grant of this exact text and class); `a` opens the
/// "always" chooser, which shows the rule before it is kept and asks where: this workspace,
/// every workspace, or the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub request_id: ApprovalId,
    pub call_id: String,
    pub decision: ApprovalDecision,
}

#[derive(Debug, Clone)]
pub struct Confirm {
    pub view: ApprovalView,
    pub opened: Instant,
    /// Until a key has been taken: when the wait for a quiet `GUARD` last started (the opening,
    /// then each ignored key).
    quiet_since: Option<Instant>,
    pub scroll: u16,
    /// `m` was pressed: the message being typed.
    pub message: Option<String>,
    /// `a` was pressed: which of `view.always` is shown (0, the narrowest, first).
    pub choosing: Option<usize>,
}

impl Confirm {
    pub fn new(view: ApprovalView, now: Instant) -> Self {
        Confirm {
            view,
            opened: now,
            quiet_since: Some(now),
            scroll: 0,
            message: None,
            choosing: None,
        }
    }

    /// Handle a key that arrived `at`. `Some` is the decision.
    pub fn key(&mut self, key: KeyEvent, at: Instant) -> Option<Decided> {
        if let Some(since) = self.quiet_since {
            if at.saturating_duration_since(since) < GUARD {
                self.quiet_since = Some(since.max(at));
                return None;
            }
            self.quiet_since = None;
        }
        let decided = |decision| {
            Some(Decided {
                request_id: self.view.request_id,
                call_id: self.view.call_id.clone(),
                decision,
            })
        };
        if let Some(msg) = &mut self.message {
            match key.code {
                KeyCode::Enter => {
                    let m = std::mem::take(msg);
                    return decided(ApprovalDecision::Deny(Some(m)));
                }
                KeyCode::Esc => self.message = None,
                KeyCode::Backspace => {
                    msg.pop();
                }
                KeyCode::Char(c) => msg.push(c),
                _ => {}
            }
            return None;
        }
        if let Some(i) = self.choosing {
            let always = |scope| {
                decided(ApprovalDecision::Always {
                    rule: self.view.always[i].clone(),
                    scope,
                })
            };
            match key.code {
                KeyCode::Char('w') | KeyCode::Enter => return always(SaveScope::Workspace),
                KeyCode::Char('g') => return always(SaveScope::Global),
                KeyCode::Char('s') => return always(SaveScope::Session),
                KeyCode::Right | KeyCode::Char('l') | KeyCode::Tab => {
                    self.choosing = Some((i + 1).min(self.view.always.len() - 1));
                }
                KeyCode::Left | KeyCode::Char('h') | KeyCode::BackTab => {
                    self.choosing = Some(i.saturating_sub(1));
                }
                KeyCode::Esc => self.choosing = None,
                _ => {}
            }
            return None;
        }
        // DANGEROUS is refused before anyone is asked; should such a request ever reach the
        // dialog, it can only be declined.
        if self.dangerous() && matches!(key.code, KeyCode::Char('y' | 's' | 'a')) {
            return None;
        }
        match key.code {
            KeyCode::Char('y') => decided(ApprovalDecision::Approve),
            KeyCode::Char('s') => match self.view.always.first() {
                // The session grant is a rule: the exact command, for this session.
                Some(exact) => decided(ApprovalDecision::Always {
                    rule: exact.clone(),
                    scope: SaveScope::Session,
                }),
                None => decided(ApprovalDecision::ApproveForSession),
            },
            KeyCode::Char('a') if !self.view.always.is_empty() => {
                self.choosing = Some(0);
                None
            }
            KeyCode::Char('n') | KeyCode::Esc => decided(ApprovalDecision::Deny(None)),
            KeyCode::Char('m') => {
                self.message = Some(String::new());
                None
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.scroll = self.scroll.saturating_add(1);
                None
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.scroll = self.scroll.saturating_sub(1);
                None
            }
            KeyCode::PageDown => {
                self.scroll = self.scroll.saturating_add(10);
                None
            }
            KeyCode::PageUp => {
                self.scroll = self.scroll.saturating_sub(10);
                None
            }
            _ => None,
        }
    }

    /// The request is DANGEROUS: there is nothing to allow.
    fn dangerous(&self) -> bool {
        self.view.class == "DANGEROUS"
    }

    /// The key hints, generated from the bindings above.
    pub fn hints(&self) -> Vec<(&'static str, &'static str)> {
        if self.message.is_some() {
            return vec![("Enter", "deny with this message"), ("Esc", "back")];
        }
        if self.dangerous() {
            return vec![
                ("n/Esc", "deny: DANGEROUS is refused in every mode"),
                ("m", "deny with message"),
            ];
        }
        if self.choosing.is_some() {
            return vec![
                ("w/Enter", "keep for this workspace"),
                ("g", "for every workspace"),
                ("s", "for this session"),
                ("←→", "narrower/wider"),
                ("Esc", "back"),
            ];
        }
        let mut hints = vec![("y", "allow once"), ("s", "allow for session")];
        if !self.view.always.is_empty() {
            hints.push(("a", "always…"));
        }
        hints.extend([
            ("n/Esc", "deny"),
            ("m", "deny with message"),
            ("↑↓", "scroll"),
            ("PgUp/PgDn", "conversation"),
        ]);
        hints
    }

    /// The dialog's body lines at `width` (wrapped, nothing cut).
    pub fn body(&self, width: u16, theme: &Theme) -> Vec<Line<'static>> {
        let v = &self.view;
        let label = |s: &str| Span::styled(format!("{s:<10}"), theme.secondary());
        let mut lines: Vec<Line<'static>> = Vec::new();
        lines.push(Line::from(vec![
            label("tool"),
            Span::styled(v.tool.clone(), theme.accent().add_modifier(Modifier::BOLD)),
        ]));
        lines.push(Line::from(label("command")));
        for l in v.command.lines() {
            lines.extend(wrap::wrap_line(
                Line::styled(format!("  {l}"), theme.text().add_modifier(Modifier::BOLD)),
                width,
            ));
        }
        let class_style = if v.class == "DANGEROUS" {
            theme.danger()
        } else {
            theme.fg(theme.warning)
        };
        lines.push(Line::from(vec![
            label("class"),
            Span::styled(v.class.clone(), class_style),
        ]));
        for r in &v.reasons {
            lines.extend(wrap::wrap_line(
                Line::styled(format!("  - {r}"), theme.text()),
                width,
            ));
        }
        let mut needs = v.asking_for.clone();
        if v.network && !needs.iter().any(|n| n == "network") {
            needs.push("network".into());
        }
        lines.push(Line::from(vec![
            label("needs"),
            Span::styled(needs.join(", "), theme.fg(theme.warning)),
        ]));
        if !v.writes.is_empty() {
            lines.push(Line::from(label("writes")));
            for w in &v.writes {
                lines.extend(wrap::wrap_line(
                    Line::styled(format!("  {w}"), theme.text()),
                    width,
                ));
            }
        }
        lines.extend(wrap::wrap_line(
            Line::from(vec![label("in"), Span::styled(v.cwd.clone(), theme.text())]),
            width,
        ));
        if let Some(d) = &v.diff {
            lines.push(Line::default());
            lines.extend(diff_lines(d, width, theme));
        }
        if let Some(i) = self.choosing {
            lines.push(Line::default());
            let n = v.always.len();
            lines.extend(wrap::wrap_line(
                Line::from(vec![
                    Span::styled("always: ", theme.accent()),
                    Span::styled(
                        format!("allow {}", v.always[i]),
                        theme.text().add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(
                        format!(
                            "  ({} of {n}, {})",
                            i + 1,
                            if i == 0 { "exactly this" } else { "wider" }
                        ),
                        theme.hint(),
                    ),
                ]),
                width,
            ));
            lines.extend(wrap::wrap_line(
                Line::styled(
                    match v.always[i].starts_with("net:") {
                        // The egress proxy's question: a rule that names a host and port.
                        true => "  connections to this name and port, by any command".to_string(),
                        false => format!("  only commands no wider than this {} one", v.class),
                    },
                    theme.hint(),
                ),
                width,
            ));
        }
        if let Some(m) = &self.message {
            lines.push(Line::default());
            lines.extend(wrap::wrap_line(
                Line::from(vec![
                    Span::styled("message to the model: ", theme.accent()),
                    Span::styled(format!("{m}▏"), theme.text()),
                ]),
                width,
            ));
        }
        lines
    }
}

/// Rows the docked dialog takes at the bottom of a screen of `size` (width, height): what it
/// needs, at most three fifths of the screen, so the conversation above it (the output the
/// question is about) stays readable and scrollable.
pub fn dock_height(c: &Confirm, size: (u16, u16), theme: &Theme) -> u16 {
    let (w, h) = size;
    let inner_w = w.saturating_sub(2).max(1);
    let body = c.body(inner_w, theme).len() as u16;
    let hints = wrap::wrap_line(super::hint_line(&c.hints(), theme), inner_w).len() as u16;
    let most = (h.saturating_sub(2) * 3 / 5).max(6);
    (body + hints + 2).min(most).min(h.saturating_sub(2))
}

/// Renders the dialog docked in `area` (the whole width, above the status bar).
pub struct ConfirmWidget<'a> {
    pub confirm: &'a Confirm,
    pub theme: &'a Theme,
}

impl Widget for ConfirmWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let rect = area;
        let h = rect.height;
        let inner_w = rect.width.saturating_sub(2);
        let body = self.confirm.body(inner_w, t);
        let hints = wrap::wrap_line(super::hint_line(&self.confirm.hints(), t), inner_w);
        let hint_h = hints.len() as u16;
        Clear.render(rect, buf);
        let view_h = h.saturating_sub(2 + hint_h) as usize;
        let max_scroll = body.len().saturating_sub(view_h);
        let scroll = (self.confirm.scroll as usize).min(max_scroll);
        let more = if max_scroll > scroll {
            format!(" ↓ {} more lines (↑↓) ", body.len() - view_h - scroll)
        } else {
            String::new()
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.fg(t.warning))
            .title(Span::styled(
                " Spear asks: allow this call? ",
                t.fg(t.warning).add_modifier(Modifier::BOLD),
            ))
            .title_bottom(Line::styled(more, t.hint()));
        let inner = block.inner(rect);
        block.render(rect, buf);
        let shown: Vec<Line> = body.into_iter().skip(scroll).take(view_h).collect();
        let body_h = inner.height.saturating_sub(hint_h);
        Paragraph::new(shown).render(
            Rect {
                height: body_h,
                ..inner
            },
            buf,
        );
        Paragraph::new(hints).render(
            Rect {
                y: inner.y + body_h,
                height: inner.height - body_h,
                ..inner
            },
            buf,
        );
    }
}
