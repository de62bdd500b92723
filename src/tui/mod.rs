//! The full-screen session. One `tokio::select!` loop owns the `App`: terminal input
//! (crossterm's event stream), the agent's events, the loop's own channel (previews, audit
//! pages, background results), a slow tick (audit follow, clocks) and a frame tick that only
//! runs while a redraw is pending. `update` changes state and returns effects; the `Driver`
//! performs them; `ui::draw` renders. Invariant: at most one frame per `FRAME` (about 60 per
//! second), drawn only when something changed; the terminal is restored on every way out.

pub mod app;
mod app_agent;
mod app_keys;
pub mod audit;
pub mod audit_feed;
pub mod background;
pub mod cells;
pub(crate) mod commands;
pub mod diff;
pub(crate) mod driver;
pub mod event;
pub(crate) mod highlight;
pub mod history;
pub(crate) mod markdown;
pub mod notify;
pub mod pager;
pub mod preview;
pub(crate) mod resumed;
pub(crate) mod terminal;
pub mod theme;
pub mod theme_choice;
pub mod ui;
pub mod widgets;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, EventStream, KeyEventKind, MouseEventKind};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::agent::model::ChatModel;
use crate::agent::session::{SessionActor, SessionEvent, SessionOp, SessionStreams};
use crate::harness::audit::AuditPaths;
use crate::tui::app::{App, AppInit};
use crate::tui::driver::Driver;
use crate::tui::event::Event;

/// The shortest time between two frames.
pub const FRAME: Duration = Duration::from_millis(16);
/// Audit follow and clock updates.
const SLOW_TICK: Duration = Duration::from_millis(250);

/// How the session starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionStart {
    New,
    Resume(String),
    /// `spear --resume` without an id: list the sessions to pick one.
    Pick,
}

pub type HealthCheck = Pin<Box<dyn Future<Output = widgets::status_bar::SandboxHealth> + Send>>;

/// Everything the screen needs, assembled by the library's builder and the binary.
pub struct Launch<M: ChatModel + 'static> {
    /// The session, not yet running (a resume is done before the screen opens).
    pub session: SessionActor<M>,
    pub init: AppInit,
    pub start: SessionStart,
    pub sandbox: Option<HealthCheck>,
    pub log_dir: PathBuf,
    pub audit_paths: AuditPaths,
    /// How the person is called back (`notify` in the config).
    pub notify: crate::config::Notify,
    /// Neither the config nor a kept `/theme` chose the theme: the terminal's background picks.
    pub theme_auto: bool,
    /// Where a `/theme` choice is kept for the next runs.
    pub theme_choice: Option<theme_choice::ThemeChoice>,
    /// The loop's own channel (background results of the driver).
    pub channel: (UnboundedSender<Event>, UnboundedReceiver<Event>),
}

/// What the session left behind, for the message printed after the screen is restored.
#[derive(Debug, Clone, Default)]
pub struct ScreenExit {
    pub session: Option<String>,
    pub log: Option<PathBuf>,
}

/// Sees the loop at work: every event after it was handled (its effects performed), and every
/// frame drawn. Tests count with it; the screen itself uses `()`.
pub trait LoopProbe {
    /// Whether `handled` wants the events' labels (computing them costs a little).
    fn wants_labels(&self) -> bool {
        false
    }
    /// An event was handled: `update` ran and its effects were sent. `label` is
    /// [`Event::label`] when `wants_labels`.
    fn handled(&mut self, _app: &App, _label: Option<&str>) {}
    fn drew(&mut self, _app: &App) {}
}

impl LoopProbe for () {}

/// A terminal event as the app sees it.
fn translate(e: TermEvent, now: Instant) -> Option<Event> {
    match e {
        TermEvent::Key(k) if k.kind != KeyEventKind::Release => {
            Some(Event::Key { key: k, at: now })
        }
        TermEvent::Paste(s) => Some(Event::Paste(s)),
        TermEvent::Mouse(m) => match m.kind {
            MouseEventKind::ScrollUp => Some(Event::Scroll(-3)),
            MouseEventKind::ScrollDown => Some(Event::Scroll(3)),
            _ => None,
        },
        TermEvent::Resize(w, h) => Some(Event::Resize(w, h)),
        TermEvent::FocusGained => Some(Event::Focus(true)),
        TermEvent::FocusLost => Some(Event::Focus(false)),
        _ => None,
    }
}

/// The screen's parts once the session runs: the app, its hands, and what it listens to.
pub struct Screen {
    pub app: App,
    pub driver: Driver,
    streams: SessionStreams,
    own: UnboundedReceiver<Event>,
    /// Frames are wrapped in synchronized-output marks (the real terminal; not a test backend).
    pub sync_output: bool,
    /// The session's task: awaited when the screen ends, so what the session started (its MCP
    /// servers) has ended before Spear does.
    session: Option<tokio::task::JoinHandle<Option<String>>>,
}

impl Screen {
    /// Start the session on its task and put the screen in front of it.
    pub fn start<M: ChatModel + 'static>(
        mut session: SessionActor<M>,
        init: AppInit,
        start: &SessionStart,
        audit_paths: AuditPaths,
        channel: (UnboundedSender<Event>, UnboundedReceiver<Event>),
        caller: notify::Caller,
    ) -> Screen {
        let mut app = App::new(init, Instant::now());
        let mut first = None;
        if let SessionStart::Resume(id) = start {
            match session.resume(id) {
                Ok(loaded) => first = Some(SessionEvent::Loaded(Box::new(loaded))),
                Err(e) => {
                    app.update(Event::Failed(format!("cannot resume {id}: {e}")));
                }
            }
        }
        let (tx, own) = channel;
        let (handle, streams, join) = session.spawn();
        let mut driver = Driver::new(handle.clone(), tx, audit_paths, caller);
        // The prompts of earlier runs in this workspace come first in the history.
        let mut earlier = driver.history.load();
        earlier.append(&mut app.history);
        app.history = earlier;
        if let Some(e) = first {
            driver.observe(&e);
            app.update(Event::Session(e));
        }
        if *start == SessionStart::Pick {
            handle.send(SessionOp::ListSessions);
        }
        Screen {
            app,
            driver,
            streams,
            own,
            sync_output: false,
            session: Some(join),
        }
    }

    /// End the session (a running turn is cancelled) and wait, a bounded time, for its task to
    /// end: its MCP servers are stopped and confirmed gone with it.
    pub async fn end_session(&mut self) {
        self.driver.op(SessionOp::Quit);
        if let Some(join) = self.session.take() {
            let _ = tokio::time::timeout(crate::agent::session::SESSION_END_WAIT, join).await;
        }
    }

    /// Read events until the person quits or `input` ends: one event at a time, its effects
    /// sent to the session without waiting, and at most one frame per `FRAME`.
    pub async fn run<B, S>(
        &mut self,
        term: &mut Terminal<B>,
        mut input: S,
        probe: &mut dyn LoopProbe,
    ) -> std::io::Result<()>
    where
        B: Backend,
        B::Error: std::error::Error + Send + Sync + 'static,
        S: Stream<Item = std::io::Result<TermEvent>> + Unpin,
    {
        let size = term.size().map_err(std::io::Error::other)?;
        self.app.update(Event::Resize(size.width, size.height));
        let mut frame = tokio::time::interval(FRAME);
        frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut slow = tokio::time::interval(SLOW_TICK);
        let mut last_draw: Option<Instant> = None;
        // A key (or a paste) is drawn at once, whatever the frame limit: what the person typed
        // must not wait behind a stream's frames.
        let mut typed = false;
        loop {
            if self.app.dirty && (typed || last_draw.is_none_or(|t| t.elapsed() >= FRAME)) {
                let app = &self.app;
                // Synchronized output (DEC mode 2026): the terminal shows the frame whole.
                if self.sync_output {
                    terminal::begin_frame();
                }
                let drawn = term.draw(|f| ui::draw(app, f)).map(|_| ());
                if self.sync_output {
                    terminal::end_frame();
                }
                drawn.map_err(std::io::Error::other)?;
                self.app.dirty = false;
                typed = false;
                last_draw = Some(Instant::now());
                probe.drew(&self.app);
            }
            let event = tokio::select! {
                e = input.next() => match e {
                    Some(Ok(e)) => translate(e, Instant::now()),
                    Some(Err(e)) => return Err(e),
                    None => return Ok(()),
                },
                Some(a) = self.streams.agent.recv() => Some(Event::Agent(a)),
                Some(s) = self.streams.session.recv() => {
                    self.driver.observe(&s);
                    Some(Event::Session(s))
                }
                Some(e) = self.own.recv() => Some(e),
                _ = frame.tick(), if self.app.dirty => None,
                _ = slow.tick() => {
                    if let Some(e) = self.driver.poll_audit() {
                        self.app.update(e);
                    }
                    Some(Event::Tick(Instant::now()))
                }
            };
            let Some(event) = event else { continue };
            typed |= matches!(event, Event::Key { .. } | Event::Paste(_));
            let label = probe.wants_labels().then(|| event.label());
            let effects = self.app.update(event);
            self.driver.save_history(&self.app.history);
            let mut quit = false;
            for effect in effects {
                if !self.driver.perform(effect) {
                    quit = true;
                }
            }
            probe.handled(&self.app, label.as_deref());
            if quit || self.app.quit {
                return Ok(());
            }
        }
    }
}

/// Run the session until the person quits.
pub async fn run<M: ChatModel + 'static>(launch: Launch<M>) -> std::io::Result<ScreenExit> {
    let (_log_guard, log) = terminal::init_logging(&launch.log_dir)?;
    tracing::info!("tui starting");
    let mut screen = Screen::start(
        launch.session,
        launch.init,
        &launch.start,
        launch.audit_paths,
        launch.channel,
        notify::Caller::from_env(launch.notify),
    );
    if let Some(check) = launch.sandbox {
        let tx = screen.driver.loop_sender();
        tokio::spawn(async move {
            let _ = tx.send(Event::Sandbox(check.await));
        });
    }
    let ask = launch.theme_auto && !screen.app.theme.monochrome;
    let terminal::Entered {
        guard: _guard,
        mut term,
        enhanced,
        background,
    } = terminal::TerminalGuard::enter(ask)?;
    screen.app.keyboard_enhanced = enhanced;
    // No theme chosen: the light one on a light background.
    if ask && background.is_some_and(background::is_light) {
        match theme::Theme::load("light", false) {
            Ok(t) => screen.app.set_theme(t),
            Err(e) => tracing::warn!("the light theme does not load: {e}"),
        }
    }
    if let Some(choice) = launch.theme_choice {
        screen.driver.keep_themes_in(choice);
    }
    screen.sync_output = true;
    // SIGTERM and SIGHUP leave as /quit does: the guard gives the terminal back.
    let tx = screen.driver.loop_sender();
    let signals = tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term_signal), Ok(mut hangup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term_signal.recv() => {}
            _ = hangup.recv() => {}
        }
        let _ = tx.send(Event::Terminate);
    });
    let ran = screen.run(&mut term, EventStream::new(), &mut ()).await;
    signals.abort();
    screen.end_session().await;
    ran?;
    tracing::info!("tui leaving");
    Ok(ScreenExit {
        session: screen.driver.session_id.clone(),
        log: Some(log),
    })
}
