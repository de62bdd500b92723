//! The loop's hands: performs the effects `update` asks for. Everything that touches the
//! conversation, the model or a tool goes to the session actor as an op on a channel (sending
//! never waits), and comes back as events on the loop's streams; the audit pane's pages and the
//! clipboard are the driver's own. Invariant: `perform` never awaits anything a turn holds, so a
//! key typed during a turn is handled before the next event is read.

use crate::agent::session::{SessionEvent, SessionHandle, SessionOp};
use crate::harness::audit::AuditPaths;
use crate::tui::audit::PAGE;
use crate::tui::audit_feed::AuditFeed;
use crate::tui::event::{Effect, Event};
use crate::tui::history::PromptHistory;
use crate::tui::notify::Caller;
use crate::tui::theme_choice::ThemeChoice;
use tokio::sync::mpsc::UnboundedSender;

pub struct Driver {
    session: SessionHandle,
    /// The session the conversation is recorded in, as the actor last said.
    pub(crate) session_id: Option<String>,
    tx: UnboundedSender<Event>,
    pub(crate) feed: Option<AuditFeed>,
    audit_paths: AuditPaths,
    /// The composer's history on disk (`history_failed`: a write failed, said once, and
    /// saving stopped).
    pub(crate) history: PromptHistory,
    history_failed: bool,
    /// How the person is called back on this terminal.
    caller: Caller,
    /// Where a `/theme` choice is kept (none: not kept).
    themes: Option<ThemeChoice>,
}

impl Driver {
    pub fn new(
        session: SessionHandle,
        tx: UnboundedSender<Event>,
        audit_paths: AuditPaths,
        caller: Caller,
    ) -> Self {
        Driver {
            session,
            session_id: None,
            tx,
            feed: None,
            history: PromptHistory::beside(&audit_paths),
            history_failed: false,
            audit_paths,
            caller,
            themes: None,
        }
    }

    /// Keep `/theme` choices in `choice` for the next runs.
    pub fn keep_themes_in(&mut self, choice: ThemeChoice) {
        self.themes = Some(choice);
    }

    /// The loop's own channel, for background results.
    pub fn loop_sender(&self) -> UnboundedSender<Event> {
        self.tx.clone()
    }

    /// Note what the session said that the driver keeps (its id).
    pub fn observe(&mut self, e: &SessionEvent) {
        match e {
            SessionEvent::Started { id, .. } => self.session_id = Some(id.clone()),
            SessionEvent::Loaded(l) => self.session_id = Some(l.meta.id.clone()),
            _ => {}
        }
    }

    /// Keep what the person sent for the next run; a failure is said once and saving stops.
    pub fn save_history(&mut self, history: &[String]) {
        if self.history_failed {
            return;
        }
        if let Err(e) = self.history.save_new(history) {
            self.history_failed = true;
            self.fail(format!(
                "the prompt history cannot be kept in {}: {e}",
                self.history.path().display()
            ));
        }
    }

    /// Perform one effect. `false`: the app is to quit.
    pub fn perform(&mut self, effect: Effect) -> bool {
        let op = match effect {
            Effect::Quit => {
                self.op(SessionOp::Quit);
                return false;
            }
            Effect::Submit(text) => SessionOp::Submit(text),
            Effect::RunCommand { call_id, command } => SessionOp::RunCommand { call_id, command },
            Effect::Answer {
                request_id,
                decision,
            } => SessionOp::Answer {
                request_id,
                decision,
            },
            Effect::Cancel => SessionOp::Cancel,
            Effect::Mode(m) => SessionOp::SetMode(m),
            Effect::Network(on) => SessionOp::SetNetwork(on),
            Effect::Model(name) => SessionOp::SetModel(name),
            Effect::Standard(arg) => SessionOp::Standard(arg),
            Effect::Mcp(arg) => SessionOp::Mcp(arg),
            Effect::Compact => SessionOp::Compact,
            Effect::NewSession => SessionOp::New,
            Effect::ListSessions => SessionOp::ListSessions,
            Effect::Undo { turn, force } => SessionOp::Undo { turn, force },
            Effect::Rewind {
                request,
                what,
                force,
            } => SessionOp::Rewind {
                request,
                what,
                force,
            },
            Effect::Resume(id) => SessionOp::Resume(id),
            Effect::AuditOpen => return self.audit_open(),
            Effect::AuditOlder => return self.audit_older(),
            Effect::Copy(text) => {
                crate::tui::terminal::copy_osc52(&text);
                return true;
            }
            Effect::KeepTheme(name) => {
                if let Some(c) = &self.themes
                    && let Err(e) = c.save(&name)
                {
                    self.fail(format!(
                        "the theme cannot be kept for the next runs in {}: {e}",
                        c.path().display()
                    ));
                }
                return true;
            }
            Effect::CallBack(why) => {
                crate::tui::terminal::write_bytes(&self.caller.bytes(why));
                return true;
            }
        };
        self.op(op);
        true
    }

    pub(crate) fn op(&self, op: SessionOp) {
        if !self.session.send(op) {
            self.fail("the session has ended; restart Spear to go on");
        }
    }

    fn send(&self, e: Event) {
        let _ = self.tx.send(e);
    }

    fn fail(&self, why: impl Into<String>) {
        self.send(Event::Failed(why.into()));
    }

    fn audit_open(&mut self) -> bool {
        let mut feed = AuditFeed::new(self.audit_paths.clone());
        match feed.older(PAGE) {
            Ok(page) => self.send(Event::AuditOlder(page)),
            Err(e) => self.fail(format!("cannot read the audit log: {e}")),
        }
        self.feed = Some(feed);
        let paths = self.audit_paths.clone();
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(Event::AuditChain(AuditFeed::verify(&paths)));
        });
        true
    }

    fn audit_older(&mut self) -> bool {
        if let Some(feed) = &mut self.feed {
            match feed.older(PAGE) {
                Ok(page) => self.send(Event::AuditOlder(page)),
                Err(e) => self.fail(format!("cannot read the audit log: {e}")),
            }
        }
        true
    }

    /// New audit records since the last poll (the pane follows the log).
    pub fn poll_audit(&mut self) -> Option<Event> {
        let feed = self.feed.as_mut()?;
        match feed.poll() {
            Ok(r) if r.is_empty() => None,
            Ok(r) => Some(Event::AuditNew(r)),
            Err(e) => Some(Event::Failed(format!("cannot follow the audit log: {e}"))),
        }
    }
}
