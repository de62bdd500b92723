//! `App`: the whole screen's state, and `update`, the only place it changes. Events come in
//! (keys, agent events, audit records, ticks); state changes; effects go out for the loop to
//! perform. Keys are handled in `app_keys`, agent events in `app_agent`. Invariant: `update`
//! performs no I/O, and a redraw is requested (`dirty`) exactly when something visible changed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ratatui_textarea::TextArea;

use crate::agent::event::AgentEvent;
use crate::agent::session::{AppliesFrom, Change, OpKind, SessionEvent};
use crate::harness::primitives::ExecutionMode;
use crate::tools::results::ResultStore;
use crate::tui::audit::AuditView;
use crate::tui::cells::{CellKind, Cells, NoticeKind};
use crate::tui::diff::FileDiff;
use crate::tui::event::{Effect, Event};
use crate::tui::notify::CallBack;
use crate::tui::pager::{PageSource, Pager, StoredSource, TextSource};
use crate::tui::theme::Theme;
use crate::tui::widgets::confirm::Confirm;
use crate::tui::widgets::conversation::HeightCache;
use crate::tui::widgets::popup::Popup;
use crate::tui::widgets::status_bar::StatusInfo;

/// Two Ctrl+C within this quit.
pub const QUIT_WINDOW: Duration = Duration::from_secs(2);
/// How long a passing word stays on the status line.
pub const FLASH: Duration = Duration::from_secs(3);

/// The README section a person without a model is pointed to.
pub const CONNECT_HELP: &str = "No model is configured, so Spear cannot answer prompts yet.\n\
    To connect one, see README \"Connect a model\": set SPEAR_BASE_URL (an OpenAI-compatible \
    server such as Ollama, llama.cpp or LM Studio), SPEAR_MODEL and, if it needs one, \
    SPEAR_API_KEY, or add a [providers] entry to the config file.\n\
    Without a model, !COMMAND runs a command through the harness (same policy, dialog and \
    audit) and F2 opens the audit pane.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Composer,
    Conversation,
    Audit,
}

/// What the app starts with.
#[derive(Debug, Clone)]
pub struct AppInit {
    pub status: StatusInfo,
    pub theme: Theme,
    pub cwd: String,
    /// The terminal answered the keyboard protocol query: Shift+Enter arrives as itself.
    pub keyboard_enhanced: bool,
    /// Why no model is configured, when none is.
    pub no_model: Option<String>,
    /// What the launch had to work around (a bad theme name...), shown first.
    pub warnings: Vec<String>,
    /// The workspace's stored outputs, read a page at a time by the whole-output view.
    pub results: Option<ResultStore>,
}

pub struct App {
    pub cells: Cells,
    pub heights: HeightCache,
    pub composer: TextArea<'static>,
    pub history: Vec<String>,
    pub history_pos: Option<usize>,
    pub status: StatusInfo,
    pub theme: Theme,
    pub confirm: Option<Confirm>,
    pub popup: Option<Popup>,
    /// The whole-output view, over the conversation while open.
    pub pager: Option<Pager>,
    results: Option<ResultStore>,
    pub focus: Focus,
    pub audit: AuditView,
    pub audit_open: bool,
    audit_started: bool,
    /// Lines scrolled up from the bottom of the conversation.
    pub scroll: usize,
    pub focused_cell: Option<usize>,
    pub quit_armed: Option<Instant>,
    /// When Shift+Tab was pressed in ASK: a second press within [`QUIT_WINDOW`] enters AUTO.
    pub auto_armed: Option<Instant>,
    pub quit: bool,
    /// Output arrived below the view while it was scrolled up (cleared at the bottom).
    pub unseen: bool,
    /// A passing word for the status line (what a copy did), and when it was said.
    pub flash: Option<(&'static str, Instant)>,
    /// Pastes folded in the composer: each marker and the text it stands for.
    pastes: Vec<(String, String)>,
    /// Whether the terminal said Spear's window has the focus (`None`: it never said, which
    /// counts as not focused, so the bell rings).
    pub window_focused: Option<bool>,
    /// What the person sent while a turn ran: sent when it ends (Up in an empty composer takes
    /// it back to edit; Esc ends the turn sooner).
    pub queued: Option<String>,
    /// `!COMMAND` results the model is told with the next prompt.
    pub pending_context: Vec<String>,
    pub previews: HashMap<String, FileDiff>,
    pub cwd: String,
    pub has_model: bool,
    /// See [`AppInit::keyboard_enhanced`]: the hints offer Shift+Enter only then.
    pub keyboard_enhanced: bool,
    pub now: Instant,
    pub size: (u16, u16),
    pub dirty: bool,
    next_call: u64,
}

impl App {
    pub fn new(init: AppInit, now: Instant) -> Self {
        let mut app = App {
            cells: Cells::default(),
            heights: HeightCache::default(),
            composer: composer(),
            history: Vec::new(),
            history_pos: None,
            status: init.status,
            theme: init.theme,
            confirm: None,
            popup: None,
            pager: None,
            results: init.results,
            focus: Focus::Composer,
            audit: AuditView::default(),
            audit_open: false,
            audit_started: false,
            scroll: 0,
            focused_cell: None,
            quit_armed: None,
            auto_armed: None,
            quit: false,
            unseen: false,
            flash: None,
            pastes: Vec::new(),
            queued: None,
            window_focused: None,
            pending_context: Vec::new(),
            previews: HashMap::new(),
            cwd: init.cwd,
            has_model: init.no_model.is_none(),
            keyboard_enhanced: init.keyboard_enhanced,
            now,
            size: (80, 24),
            dirty: true,
            next_call: 1,
        };
        for w in init.warnings {
            app.notice(NoticeKind::Warning, w);
        }
        if let Some(why) = init.no_model {
            app.notice(NoticeKind::Warning, format!("{CONNECT_HELP}\n({why})"));
        }
        app
    }

    pub fn notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        let before = self.anchor();
        self.cells.push(CellKind::Notice {
            kind,
            text: text.into(),
        });
        self.keep_anchor(before);
        self.dirty = true;
    }

    /// The conversation's height, when the view is scrolled up (what `keep_anchor` needs).
    fn anchor(&self) -> Option<usize> {
        (self.scroll > 0).then(|| self.content_height())
    }

    /// Scrolled up, the view stays on what the person reads while the conversation below it
    /// grows or shrinks, and a marker says there is new output.
    fn keep_anchor(&mut self, before: Option<usize>) {
        let Some(before) = before else { return };
        let after = self.content_height();
        if after > before {
            self.unseen = true;
        }
        self.scroll = (self.scroll + after).saturating_sub(before);
    }

    pub fn busy(&self) -> bool {
        self.status.busy
    }

    pub(crate) fn call_id(&mut self) -> String {
        let id = format!("you-{}", self.next_call);
        self.next_call += 1;
        id
    }

    /// The rows the conversation pane has (the screen less composer or docked dialog, status
    /// and borders).
    pub fn page(&self) -> usize {
        // As `ui::regions` lays the screen out: the composer (or the docked dialog), the audit
        // pane when open, the status bar.
        let below = match &self.confirm {
            Some(c) => crate::tui::widgets::confirm::dock_height(c, self.size, &self.theme),
            None => (self.composer.lines().len() as u16).clamp(1, 6) + 2,
        };
        let audit = if self.audit_open {
            self.size.1 * 2 / 5
        } else {
            0
        };
        usize::from(self.size.1.saturating_sub(below + audit + 2)).max(1)
    }

    pub fn update(&mut self, event: Event) -> Vec<Effect> {
        let mut fx = Vec::new();
        match event {
            Event::Key { key, at } => {
                self.now = self.now.max(at);
                self.key(key, at, &mut fx);
                self.dirty = true;
            }
            Event::Paste(text) => {
                // Terminals send a pasted line break as CR (xterm, tmux); the composer splits
                // lines on LF only, so every break is made an LF before it is inserted.
                let text = text.replace("\r\n", "\n").replace('\r', "\n");
                if self.pager.is_some() {
                    self.notice(
                        NoticeKind::Warning,
                        "the paste was not used: the whole-output view is open (q closes it)",
                    );
                    self.dirty = true;
                    return fx;
                }
                match self.confirm.as_mut().map(|c| &mut c.message) {
                    // Only the text of a denial's message takes a paste: a paste never
                    // answers a question the person may not have seen.
                    Some(Some(m)) => m.push_str(&text.replace('\n', " ")),
                    Some(None) => self.notice(
                        NoticeKind::Warning,
                        "the paste was not used: a question is open; answer it first",
                    ),
                    None => {
                        self.focus = Focus::Composer;
                        self.paste_into_composer(text);
                    }
                }
                self.dirty = true;
            }
            Event::Scroll(lines) => {
                // The wheel scrolls what is in front: the whole-output view when it is open.
                match &mut self.pager {
                    Some(p) => p.scroll_by(i64::from(lines)),
                    None => self.scroll_by(-(lines as i64)),
                }
                self.dirty = true;
            }
            Event::Resize(w, h) => {
                self.size = (w, h);
                let rows = self.pager_rows();
                if let Some(p) = &mut self.pager {
                    p.set_height(rows);
                }
                self.dirty = true;
            }
            Event::Agent(e) => {
                let ended = matches!(e, AgentEvent::Done { .. });
                let asking = self.confirm.is_some();
                // Scrolled up, the view stays on what the person reads while output arrives
                // below it, and a marker says there is more.
                let before = self.anchor();
                self.agent(e);
                self.keep_anchor(before);
                // Called back when a question opens or a turn ends, unless the person is
                // known to be looking.
                let opened = !asking && self.confirm.is_some();
                if (opened || ended) && self.window_focused != Some(true) {
                    fx.push(Effect::CallBack(if opened {
                        CallBack::Question
                    } else {
                        CallBack::TurnEnded
                    }));
                }
                if ended && let Some(q) = self.queued.take() {
                    self.send(&q, &mut fx);
                }
            }
            Event::Focus(focused) => self.window_focused = Some(focused),
            Event::Preview { call_id, diff } => self.preview(call_id, diff),
            Event::Sandbox(h) => {
                self.status.sandbox = h;
                self.dirty = true;
            }
            Event::AuditOlder(page) => {
                self.audit.unreadable += page.unreadable;
                self.audit.prepend(page.records, page.complete);
                self.dirty = true;
            }
            Event::AuditNew(records) => {
                if !records.is_empty() {
                    self.audit.append(records);
                    self.dirty = true;
                }
            }
            Event::AuditChain(state) => {
                self.audit.chain = state;
                self.dirty = true;
            }
            Event::Session(e) => self.session_event(e),
            Event::Failed(why) => self.notice(NoticeKind::Error, why),
            Event::Terminate => {
                self.quit = true;
                fx.push(Effect::Quit);
            }
            Event::Note(what) => self.notice(NoticeKind::Info, what),
            Event::Tick(now) => {
                self.now = now;
                if self.status.busy {
                    self.dirty = true;
                }
                if self
                    .flash
                    .is_some_and(|(_, t)| now.saturating_duration_since(t) > FLASH)
                {
                    self.flash = None;
                    self.dirty = true;
                }
                if self
                    .quit_armed
                    .is_some_and(|t| now.saturating_duration_since(t) > QUIT_WINDOW)
                {
                    self.quit_armed = None;
                    self.dirty = true;
                }
            }
        }
        fx
    }

    /// Mark the call the dialog asks about as waiting for the person (or no longer).
    pub(crate) fn set_awaiting(&mut self, call_id: &str, on: bool) {
        if let Some((t, v)) = self.cells.tool_mut(call_id) {
            t.awaiting = on;
            *v = v.wrapping_add(1);
        }
    }

    /// Lines the whole-output view shows: the screen less the status bar and the view's own
    /// header and footer.
    pub fn pager_rows(&self) -> usize {
        usize::from(
            self.size
                .1
                .saturating_sub(2 + crate::tui::widgets::pager::FRAME_ROWS),
        )
        .max(1)
    }

    /// Open cell `i`'s whole text in the view: a tool's stored output from the ResultStore
    /// (a page at a time), else the text the cell holds.
    pub(crate) fn open_whole(&mut self, i: usize) {
        let Some(cell) = self.cells.items.get(i) else {
            return;
        };
        let text = |t: &str| -> Box<dyn PageSource> { Box::new(TextSource::new(t)) };
        let mut failed = None;
        let (title, source) = match &cell.kind {
            CellKind::Tool(t) => {
                let title = format!("{} {}", t.name, t.target());
                let stored = t
                    .envelope
                    .as_ref()
                    .filter(|_| t.diff.is_none())
                    .and_then(|e| e.result_id.as_deref());
                let source = match (stored, &self.results) {
                    (Some(uri), Some(store)) => match StoredSource::open(store.clone(), uri) {
                        Ok(s) => Box::new(s) as Box<dyn PageSource>,
                        Err(e) => {
                            failed = Some(format!(
                                "{uri} cannot be read ({e}); showing the part the screen holds"
                            ));
                            text(&t.output_text())
                        }
                    },
                    _ => text(&t.output_text()),
                };
                (title, source)
            }
            CellKind::User(t) => ("you".to_string(), text(t)),
            CellKind::Assistant { text: t, .. } => ("spear".to_string(), text(t)),
            CellKind::Reasoning(t) => ("thinking".to_string(), text(t)),
            CellKind::Notice { text: t, .. } => ("notice".to_string(), text(t)),
        };
        let mut pager = Pager::new(title, source);
        pager.set_height(self.pager_rows());
        self.pager = Some(pager);
        if let Some(why) = failed {
            self.notice(NoticeKind::Warning, why);
        }
    }

    /// `text` in the pager, titled `title`.
    pub(crate) fn open_text_pager(&mut self, title: &str, text: &str) {
        let mut pager = Pager::new(title, Box::new(TextSource::new(text)));
        pager.set_height(self.pager_rows());
        self.pager = Some(pager);
    }

    pub(crate) fn open_audit(&mut self, fx: &mut Vec<Effect>) {
        self.audit_open = !self.audit_open;
        self.focus = if self.audit_open {
            Focus::Audit
        } else {
            Focus::Composer
        };
        if self.audit_open && !self.audit_started {
            self.audit_started = true;
            fx.push(Effect::AuditOpen);
        }
    }

    /// A paste of more lines than the screen has goes into the composer folded, as a marker
    /// (`[paste 1: 500 lines]`) that the message carries whole when it is sent; a shorter one
    /// goes in as text.
    fn paste_into_composer(&mut self, text: String) {
        let lines = text.lines().count();
        if lines <= usize::from(self.size.1) {
            self.composer.insert_str(&text);
            return;
        }
        let n = self.pastes.len() + 1;
        let marker = format!("[paste {n}: {lines} lines]");
        self.composer.insert_str(&marker);
        self.pastes.push((marker, text));
    }

    /// The message as it is sent: each folded paste's marker replaced by the paste.
    pub(crate) fn unfold_pastes(&mut self, text: &str) -> String {
        let mut out = text.to_string();
        for (marker, paste) in std::mem::take(&mut self.pastes) {
            out = out.replacen(&marker, &paste, 1);
        }
        out
    }

    /// Scroll so the focused cell is in view: its bottom when it is below the view, its top
    /// when it is above.
    pub(crate) fn follow_focus(&mut self) {
        let Some(i) = self.focused_cell else { return };
        let width = self.size.0;
        let page = self.page();
        let below: usize = (i + 1..self.cells.len())
            .map(|j| {
                self.heights
                    .height(j, &self.cells.items[j], width, &self.theme, self.now)
            })
            .sum();
        let Some(cell) = self.cells.items.get(i) else {
            return;
        };
        let h = self.heights.height(i, cell, width, &self.theme, self.now);
        if below < self.scroll {
            self.scroll = below;
        } else if below + h > self.scroll + page {
            self.scroll = (below + h).saturating_sub(page);
        }
        if self.scroll == 0 {
            self.unseen = false;
        }
    }

    /// Back to the newest output.
    pub(crate) fn scroll_to_bottom(&mut self) {
        self.scroll = 0;
        self.unseen = false;
    }

    /// Lines of the whole conversation at the screen's width (heights are cached per cell).
    fn content_height(&self) -> usize {
        self.heights
            .total(&self.cells, self.size.0, &self.theme, self.now)
    }

    pub(crate) fn scroll_by(&mut self, delta: i64) {
        let wanted = (self.scroll as i64).saturating_add(delta).max(0) as usize;
        // The conversation pane is the screen's width (the widget measures at the same width,
        // so the height cache is shared, not recomputed at two widths in turn).
        let width = self.size.0;
        self.scroll = self.heights.clamp_scroll(
            &self.cells,
            width,
            &self.theme,
            self.now,
            wanted,
            self.page(),
        );
        if self.scroll == 0 {
            self.unseen = false;
        }
    }

    /// The status bar shows the mode at once; the session says from when it applies.
    pub(crate) fn set_mode(&mut self, mode: ExecutionMode, fx: &mut Vec<Effect>) {
        self.status.mode = mode;
        fx.push(Effect::Mode(mode));
    }

    /// The status bar shows the switch at once; the session says from when it applies.
    pub(crate) fn set_network(&mut self, on: bool, fx: &mut Vec<Effect>) {
        self.status.network = on;
        fx.push(Effect::Network(on));
    }

    fn session_event(&mut self, e: SessionEvent) {
        match e {
            SessionEvent::Applied { change, from } => {
                let line = match change {
                    Change::Mode(m) => {
                        self.status.mode = m;
                        let note = match m {
                            ExecutionMode::Auto => {
                                "AUTO mode: commands and writes run without asking \
                                 (DANGEROUS is still refused)"
                            }
                            ExecutionMode::Ask => {
                                "ASK mode: writes, complex shell and network are asked first"
                            }
                            ExecutionMode::Safe => "SAFE mode: read-only; every write is refused",
                        };
                        let when = match from {
                            AppliesFrom::NextCall => "applies from the running turn's next call",
                            AppliesFrom::NextTurn => "applies from the next request",
                        };
                        format!("{note}; {when}")
                    }
                    Change::Network(on) => {
                        self.status.network = on;
                        SessionEvent::applied_line(change, from)
                    }
                };
                self.notice(NoticeKind::Info, line);
            }
            SessionEvent::Refused { op, reason } => {
                // A request or a command that was refused never started: nothing is running.
                if matches!(op, OpKind::Submit | OpKind::RunCommand) {
                    self.status.busy = false;
                }
                self.notice(NoticeKind::Warning, format!("{}: {reason}", op.as_str()));
            }
            SessionEvent::Started {
                id,
                by_request: true,
            } => self.notice(NoticeKind::Info, format!("session {id}")),
            SessionEvent::Started { id, .. } => {
                self.cells = Cells::default();
                self.heights.clear();
                self.scroll_to_bottom();
                self.focused_cell = None;
                self.notice(NoticeKind::Info, format!("new session {id}"));
            }
            SessionEvent::Loaded(s) => self.load_session(&s),
            SessionEvent::Rewound {
                request,
                text,
                messages,
            } => self.rewound(request, &text, &messages),
            SessionEvent::Sessions(list) => {
                self.popup = Some(Popup::Sessions { list, selected: 0 });
                self.dirty = true;
            }
            SessionEvent::ModelChanged { provider, model } => {
                self.notice(
                    NoticeKind::Info,
                    format!("the next requests go to {model} (provider {provider})"),
                );
                self.status.model = Some((provider, model));
                self.has_model = true;
            }
            SessionEvent::StandardChanged { name, note } => {
                self.notice(NoticeKind::Info, note);
                self.status.standard = name;
            }
            SessionEvent::Note(what) => self.notice(NoticeKind::Info, what),
            SessionEvent::Undoable(n) => self.status.undoable = n,
            SessionEvent::Failed(why) => self.notice(NoticeKind::Error, why),
            SessionEvent::TurnEnded { .. } => {}
        }
    }

    pub(crate) fn set_theme(&mut self, theme: Theme) {
        self.theme = theme;
        self.heights.clear();
        self.dirty = true;
    }

    fn load_session(&mut self, s: &crate::agent::transcript::LoadedSession) {
        self.cells = crate::tui::resumed::cells(&s.messages, self.now);
        self.heights.clear();
        self.scroll_to_bottom();
        if let Ok(mode) = s.meta.mode.parse() {
            self.status.mode = mode;
        }
        self.notice(
            NoticeKind::Info,
            format!(
                "resumed session {} ({} messages)",
                s.meta.id,
                s.messages.len()
            ),
        );
    }

    /// The conversation went back to just before request `request`: the cells show what is
    /// left, and the request's words wait in an empty composer, to edit and send again.
    fn rewound(
        &mut self,
        request: usize,
        text: &str,
        messages: &[crate::agent::model::ChatMessage],
    ) {
        self.cells = crate::tui::resumed::cells(messages, self.now);
        self.heights.clear();
        self.scroll_to_bottom();
        let words = if self.composer.is_empty() {
            self.composer = composer();
            self.composer.insert_str(text);
            "its words are in the composer, to edit and send again"
        } else {
            "the composer keeps what you were writing"
        };
        self.notice(
            NoticeKind::Info,
            format!("went back to just before request {request}; {words}"),
        );
        self.dirty = true;
    }

    fn preview(&mut self, call_id: String, diff: FileDiff) {
        if let Some((t, v)) = self.cells.tool_mut(&call_id) {
            t.diff = Some(diff.clone());
            *v = v.wrapping_add(1);
        }
        if let Some(c) = &mut self.confirm
            && c.view.call_id == call_id
        {
            c.view.diff = Some(diff.clone());
        }
        self.previews.insert(call_id, diff);
        self.dirty = true;
    }
}

/// The composer with its placeholder.
pub fn composer() -> TextArea<'static> {
    let mut t = TextArea::default();
    t.set_placeholder_text("Ask Spear…  (!cmd runs a command, /help lists commands)");
    t.set_cursor_line_style(ratatui::style::Style::default());
    t
}
