//! Keys, in order of who gets them: the ASK dialog (modal), a popup, the global bindings, then
//! the focused pane (composer, conversation, audit). Each pane's hints are generated from the
//! same table its keys are matched against. Invariant: while the dialog is open no key reaches
//! anything else, except the double Ctrl+C that quits (and so cancels).

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::harness::primitives::ExecutionMode;
use crate::tui::app::{App, CONNECT_HELP, Focus, QUIT_WINDOW, composer};
use crate::tui::audit::AuditAction;
use crate::tui::cells::{CellKind, NoticeKind, ToolCell};
use crate::tui::commands::{self, Input, SLASH, Slash};
use crate::tui::event::Effect;
use crate::tui::pager::PagerAction;
use crate::tui::theme::Theme;
use crate::tui::widgets::popup::Popup;

/// What a conversation key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CellAction {
    Up,
    Down,
    Whole,
    Fold,
    Copy,
    Top,
    Bottom,
    Composer,
}

/// The conversation pane's bindings: matched by `conversation_key`, shown as its hints.
const CONVERSATION: [(&[KeyCode], &str, &str, CellAction); 7] = [
    (
        &[KeyCode::Up, KeyCode::Char('k')],
        "↑↓",
        "cell",
        CellAction::Up,
    ),
    (
        &[KeyCode::Enter],
        "Enter",
        "whole output",
        CellAction::Whole,
    ),
    (&[KeyCode::Char('f')], "f", "fold", CellAction::Fold),
    (&[KeyCode::Char('y')], "y", "copy cell", CellAction::Copy),
    (&[KeyCode::Home], "Home/End", "top/bottom", CellAction::Top),
    (
        &[KeyCode::Tab, KeyCode::Esc, KeyCode::Char('i')],
        "Tab/Esc",
        "composer",
        CellAction::Composer,
    ),
    // Shown with Up above.
    (
        &[KeyCode::Down, KeyCode::Char('j')],
        "",
        "",
        CellAction::Down,
    ),
];

/// The conversation pane's hints, from its bindings (PgUp/PgDn are global).
pub fn conversation_hints() -> Vec<(&'static str, &'static str)> {
    let mut h: Vec<_> = CONVERSATION
        .iter()
        .filter(|(_, k, _, _)| !k.is_empty())
        .map(|(_, k, w, _)| (*k, *w))
        .collect();
    h.push(("PgUp/PgDn", "scroll"));
    h
}

/// Bindings of the composer.
pub const COMPOSER_KEYS: [(&str, &str); 8] = [
    ("Enter", "send"),
    ("Shift+Enter/Ctrl+J", "newline"),
    ("↑↓", "history"),
    ("Tab", "complete/cells"),
    ("Ctrl+O", "whole output"),
    ("Shift+Tab", "mode"),
    ("F2", "audit"),
    ("Ctrl+C×2", "quit"),
];

impl App {
    /// The focused pane's hints.
    pub fn hints(&self) -> Vec<(&'static str, &'static str)> {
        if let Some(c) = &self.confirm {
            return c.hints();
        }
        if self.pager.is_some() {
            return crate::tui::widgets::pager::PAGER_KEYS.to_vec();
        }
        let mut h: Vec<(&str, &str)> = match self.focus {
            Focus::Audit => self.audit.hints(),
            Focus::Conversation => conversation_hints(),
            Focus::Composer => {
                let mut keys = COMPOSER_KEYS.to_vec();
                // Without the keyboard protocol Shift+Enter arrives as a plain Enter: only Ctrl+J
                // is offered.
                if !self.keyboard_enhanced
                    && let Some(k) = keys.iter_mut().find(|k| k.1 == "newline")
                {
                    k.0 = "Ctrl+J";
                }
                keys
            }
        };
        if self.busy() {
            h.insert(0, ("Esc/Ctrl+C", "cancel turn"));
            // With a message queued and the box empty, Enter sends it now (with text in the
            // box it queues that too, as "send" says).
            let empty = self.composer.lines().iter().all(|l| l.trim().is_empty());
            if self.queued.is_some() && self.focus == Focus::Composer && empty {
                h.retain(|k| *k != ("Enter", "send"));
                h.insert(0, ("Enter", "send queued now"));
            }
        }
        if self.quit_armed.is_some() {
            h.insert(0, ("Ctrl+C", "again to quit"));
        }
        h
    }

    pub(crate) fn key(&mut self, key: KeyEvent, at: Instant, fx: &mut Vec<Effect>) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            // A running turn is stopped first, as Esc does (its open question goes with it);
            // only an idle screen quits, on a second press.
            if self.busy() {
                self.quit_armed = None;
                fx.push(Effect::Cancel);
                return self.notice(NoticeKind::Info, "cancelling the turn…");
            }
            if self
                .quit_armed
                .is_some_and(|t| at.saturating_duration_since(t) <= QUIT_WINDOW)
            {
                self.quit = true;
                fx.push(Effect::Quit);
            } else {
                self.quit_armed = Some(at);
            }
            return;
        }
        // The conversation scrolls under an open dialog (the output it asks about stays
        // readable); these keys answer nothing.
        let conversation = self.pager.is_none() && self.focus != Focus::Audit;
        match key.code {
            KeyCode::PageUp if conversation => return self.scroll_by(self.page() as i64),
            KeyCode::PageDown if conversation => {
                return self.scroll_by(-(self.page() as i64));
            }
            _ => {}
        }
        if let Some(c) = &mut self.confirm {
            if let Some(d) = c.key(key, at) {
                self.confirm = None;
                self.set_awaiting(&d.call_id, false);
                // The cell's clock measures the call, not the time the dialog was open.
                if let Some((t, _)) = self.cells.tool_mut(&d.call_id) {
                    t.started = at;
                }
                fx.push(Effect::Answer {
                    request_id: d.request_id,
                    decision: d.decision,
                });
            }
            return;
        }
        if let Some(p) = &mut self.pager {
            if p.key(key) == PagerAction::Close {
                self.pager = None;
            }
            return;
        }
        if self.popup.is_some() {
            self.popup_key(key, fx);
            return;
        }
        if ctrl && key.code == KeyCode::Char('o') {
            // The focused cell's whole output, else the last tool's.
            let last_tool = self
                .cells
                .items
                .iter()
                .rposition(|c| matches!(c.kind, CellKind::Tool(_)));
            let i = match self.focus {
                Focus::Conversation => self.focused_cell.or(last_tool),
                _ => last_tool,
            };
            if let Some(i) = i {
                self.open_whole(i);
            }
            return;
        }
        match key.code {
            KeyCode::F(2) => return self.open_audit(fx),
            KeyCode::BackTab => return self.cycle_mode(at, fx),
            KeyCode::Esc if self.busy() => {
                fx.push(Effect::Cancel);
                return self.notice(NoticeKind::Info, "cancelling the turn…");
            }
            _ => {}
        }
        match self.focus {
            Focus::Audit => match self.audit.key(key) {
                AuditAction::Close => self.open_audit(fx),
                AuditAction::LoadOlder => fx.push(Effect::AuditOlder),
                AuditAction::None => {}
            },
            Focus::Conversation => self.conversation_key(key, fx),
            Focus::Composer => self.composer_key(key, fx),
        }
    }

    /// Shift+Tab: SAFE to ASK and AUTO to SAFE on one press; ASK to AUTO, which drops every
    /// question, only on a second press within [`QUIT_WINDOW`] (or `/mode auto`), so a stray
    /// key never does it.
    fn cycle_mode(&mut self, at: Instant, fx: &mut Vec<Effect>) {
        let armed = self
            .auto_armed
            .take()
            .is_some_and(|t| at.saturating_duration_since(t) <= QUIT_WINDOW);
        match self.status.mode {
            ExecutionMode::Safe => self.set_mode(ExecutionMode::Ask, fx),
            ExecutionMode::Auto => self.set_mode(ExecutionMode::Safe, fx),
            ExecutionMode::Ask if armed => self.set_mode(ExecutionMode::Auto, fx),
            ExecutionMode::Ask => {
                self.auto_armed = Some(at);
                self.notice(
                    NoticeKind::Warning,
                    "Shift+Tab again within 2 s enters AUTO, where commands and writes run \
                     without asking (or type /mode auto)",
                );
            }
        }
    }

    fn popup_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        match (&mut self.popup, key.code) {
            (_, KeyCode::Esc | KeyCode::Char('q')) => self.popup = None,
            (Some(Popup::Sessions { list, selected }), KeyCode::Down) => {
                *selected = (*selected + 1).min(list.len().saturating_sub(1));
            }
            (Some(Popup::Sessions { selected, .. }), KeyCode::Up) => {
                *selected = selected.saturating_sub(1);
            }
            (Some(Popup::Sessions { list, selected }), KeyCode::Enter) => {
                if let Some(s) = list.get(*selected) {
                    fx.push(Effect::Resume(s.id.clone()));
                }
                self.popup = None;
            }
            (Some(Popup::Text { .. }), KeyCode::Enter) => self.popup = None,
            _ => {}
        }
    }

    fn conversation_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        let n = self.cells.len();
        let action = if key.code == KeyCode::End {
            Some(CellAction::Bottom)
        } else {
            CONVERSATION
                .iter()
                .find(|(keys, ..)| keys.contains(&key.code))
                .map(|(.., a)| *a)
        };
        match action {
            Some(CellAction::Up) => {
                let last = n.saturating_sub(1);
                self.focused_cell = Some(self.focused_cell.map_or(last, |i| i.saturating_sub(1)));
                self.follow_focus();
            }
            Some(CellAction::Down) => {
                self.focused_cell = self.focused_cell.map(|i| (i + 1).min(n.saturating_sub(1)));
                self.follow_focus();
            }
            // Enter shows more, never less: a folded cell unfolds, an unfolded one opens whole.
            Some(CellAction::Whole) => match self.focused_cell {
                Some(i) if self.cells.items.get(i).is_some_and(|c| c.folded) => {
                    if let Some(c) = self.cells.items.get_mut(i) {
                        c.folded = false;
                        c.touch();
                    }
                }
                Some(i) => self.open_whole(i),
                None => {}
            },
            Some(CellAction::Fold) => {
                if let Some(c) = self.focused_cell.and_then(|i| self.cells.items.get_mut(i)) {
                    c.folded = !c.folded;
                    c.touch();
                }
            }
            Some(CellAction::Copy) => {
                if let Some(c) = self.focused_cell.and_then(|i| self.cells.items.get(i)) {
                    fx.push(Effect::Copy(c.plain_text()));
                    // Said on the status line for a moment, not added to the conversation.
                    self.flash = Some(("copied the cell to the clipboard (OSC 52)", self.now));
                }
            }
            Some(CellAction::Top) => self.scroll_by(i64::MAX / 4),
            Some(CellAction::Bottom) => self.scroll_to_bottom(),
            Some(CellAction::Composer) => self.focus = Focus::Composer,
            None => {}
        }
    }

    fn composer_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let text = self.composer.lines().join("\n");
        match key.code {
            KeyCode::Enter if shift || key.modifiers.contains(KeyModifiers::ALT) => {
                self.composer.insert_newline()
            }
            KeyCode::Char('j') if ctrl => self.composer.insert_newline(),
            // Readline's kill-line (tui-textarea's default is undo).
            KeyCode::Char('u') if ctrl => {
                self.composer.delete_line_by_head();
            }
            // An empty Enter while a message waits for the turn: stop the turn, so the message
            // goes now (it is sent when the turn ends).
            KeyCode::Enter if text.trim().is_empty() && self.busy() && self.queued.is_some() => {
                fx.push(Effect::Cancel);
                self.notice(
                    NoticeKind::Info,
                    "stopping the turn: the queued message goes when it has ended",
                );
            }
            KeyCode::Enter => {
                self.composer = composer();
                self.history_pos = None;
                let text = self.unfold_pastes(&text);
                self.send(&text, fx);
            }
            KeyCode::Tab => match commands::complete(&text).first() {
                Some(c) => {
                    self.composer = composer();
                    self.composer.insert_str(format!("{c} "));
                }
                None => {
                    self.focus = Focus::Conversation;
                    self.focused_cell = self.cells.len().checked_sub(1);
                    self.follow_focus();
                }
            },
            KeyCode::Up if text.is_empty() && self.queued.is_some() => {
                let q = self.queued.take().unwrap_or_default();
                self.composer.insert_str(q);
            }
            KeyCode::Up if self.composer.cursor().0 == 0 && !self.history.is_empty() => {
                let i = self
                    .history_pos
                    .map_or(self.history.len() - 1, |i| i.saturating_sub(1));
                self.recall(i);
            }
            KeyCode::Down
                if self.history_pos.is_some()
                    && self.composer.cursor().0 + 1 >= self.composer.lines().len() =>
            {
                match self.history_pos {
                    Some(i) if i + 1 < self.history.len() => self.recall(i + 1),
                    _ => {
                        self.history_pos = None;
                        self.composer = composer();
                    }
                }
            }
            KeyCode::Home | KeyCode::End if text.is_empty() => {
                if key.code == KeyCode::Home {
                    self.scroll_by(i64::MAX / 4);
                } else {
                    self.scroll_to_bottom();
                }
            }
            _ => {
                self.composer.input(key);
            }
        }
    }

    fn recall(&mut self, i: usize) {
        self.history_pos = Some(i);
        self.composer = composer();
        self.composer.insert_str(&self.history[i]);
    }

    pub(crate) fn send(&mut self, text: &str, fx: &mut Vec<Effect>) {
        let input = match commands::parse(text) {
            Ok(Some(i)) => i,
            Ok(None) => return,
            Err(why) => return self.notice(NoticeKind::Error, why),
        };
        if self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_string());
        }
        self.scroll_to_bottom();
        match input {
            // Kept, not dropped: sent when the turn ends.
            Input::Prompt(_) | Input::Command(_) if self.busy() => {
                self.queued = Some(match self.queued.take() {
                    Some(q) => format!("{q}\n{text}"),
                    None => text.to_string(),
                });
            }
            Input::Prompt(p) if !self.has_model => {
                self.cells.push(CellKind::User(p));
                self.notice(NoticeKind::Warning, CONNECT_HELP);
            }
            Input::Prompt(p) => {
                self.cells.push(CellKind::User(p.clone()));
                let mut sent = std::mem::take(&mut self.pending_context).join("\n");
                if !sent.is_empty() {
                    sent.push('\n');
                }
                sent.push_str(&p);
                self.status.busy = true;
                fx.push(Effect::Submit(sent));
            }
            Input::Command(command) => {
                let call_id = self.call_id();
                let args = serde_json::json!({ "command": command });
                let mut cell = ToolCell::new(&call_id, "terminal", args, self.now);
                cell.by_person = true;
                self.cells.push(CellKind::Tool(Box::new(cell)));
                self.status.busy = true;
                fx.push(Effect::RunCommand { call_id, command });
            }
            Input::Slash(s) => self.slash(s, fx),
        }
    }

    fn slash(&mut self, s: Slash, fx: &mut Vec<Effect>) {
        match s {
            Slash::Help => {
                let mut lines: Vec<String> = SLASH
                    .iter()
                    .map(|(n, a, h)| {
                        let args = if a.is_empty() {
                            String::new()
                        } else {
                            format!(" {}", a.join("|"))
                        };
                        format!("{n}{args}  {h}")
                    })
                    .collect();
                lines.push(String::new());
                lines.push(
                    "!COMMAND  run a command through the harness (policy, dialog, audit)".into(),
                );
                for (k, what) in COMPOSER_KEYS.iter().chain(conversation_hints().iter()) {
                    lines.push(format!("{k:<20} {what}"));
                }
                lines.push("Esc                  cancel the running turn".into());
                // On a screen too small for all of it, the help opens where it scrolls.
                if crate::tui::widgets::popup::text_fits(&lines, self.size) {
                    self.popup = Some(Popup::Text {
                        title: " help ".into(),
                        lines,
                    });
                } else {
                    self.open_text_pager("help", &lines.join("\n"));
                }
            }
            Slash::Mode(m) => self.set_mode(m, fx),
            Slash::Network(on) => self.set_network(on, fx),
            Slash::Audit => self.open_audit(fx),
            Slash::Compact if self.has_model && !self.busy() => fx.push(Effect::Compact),
            Slash::Compact => self.notice(
                NoticeKind::Warning,
                "/compact needs a model and no running turn",
            ),
            Slash::Undo { turn, force } if !self.busy() => fx.push(Effect::Undo { turn, force }),
            Slash::Undo { .. } => self.notice(
                NoticeKind::Info,
                "/undo waits until the turn ends (Esc stops it)",
            ),
            Slash::Rewind {
                request,
                what,
                force,
            } if !self.busy() => fx.push(Effect::Rewind {
                request,
                what,
                force,
            }),
            Slash::Rewind { .. } => self.notice(
                NoticeKind::Info,
                "/rewind waits until the turn ends (Esc stops it)",
            ),
            Slash::New if !self.busy() => fx.push(Effect::NewSession),
            Slash::Resume if !self.busy() => fx.push(Effect::ListSessions),
            Slash::New | Slash::Resume => self.notice(
                NoticeKind::Warning,
                "a turn is running: Esc cancels it first",
            ),
            Slash::Model(Some(name)) if !self.busy() => fx.push(Effect::Model(name)),
            Slash::Model(Some(_)) => self.notice(
                NoticeKind::Warning,
                "a turn is running: Esc cancels it first",
            ),
            Slash::Model(None) => {
                let current = match &self.status.model {
                    Some((p, m)) => format!("provider {p}, model {m}"),
                    None => "no model configured".into(),
                };
                let lines = vec![
                    current,
                    String::new(),
                    "`/model NAME` switches the model for the next requests (same provider, conversation kept). Another provider: SPEAR_BASE_URL / SPEAR_MODEL or the config's [providers] (README \"Connect a model\"), then restart Spear.".into(),
                ];
                self.popup = Some(Popup::Text {
                    title: " model ".into(),
                    lines,
                });
            }
            Slash::Standard(arg) if !self.busy() => fx.push(Effect::Standard(arg)),
            // The session refuses a restart during a turn, saying so.
            Slash::Mcp(arg) => fx.push(Effect::Mcp(arg)),
            Slash::Standard(_) => self.notice(
                NoticeKind::Warning,
                "a turn is running: Esc cancels it first",
            ),
            Slash::Theme(name) => match Theme::load(&name, self.theme.monochrome) {
                Ok(t) => {
                    self.set_theme(t);
                    fx.push(Effect::KeepTheme(name));
                }
                Err(e) => self.notice(NoticeKind::Error, e.to_string()),
            },
            Slash::Quit => {
                self.quit = true;
                fx.push(Effect::Quit);
            }
        }
    }
}
