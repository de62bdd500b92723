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
pub mod cells;
pub mod commands;
pub mod diff;
pub mod driver;
pub mod event;
pub mod highlight;
pub mod markdown;
pub mod preview;
pub mod terminal;
pub mod theme;
pub mod ui;
pub mod widgets;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, EventStream, KeyEventKind, MouseEventKind};
use futures_util::StreamExt;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::agent::event::EventSink;
use crate::agent::model::ChatModel;
use crate::tui::app::{App, AppInit};
use crate::tui::driver::{Driver, DriverParts};
use crate::tui::event::{Effect, Event};

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

/// Everything the screen needs, wired by `main.rs`.
pub struct Launch<M: ChatModel + 'static> {
    pub parts: DriverParts<M>,
    pub init: AppInit,
    pub start: SessionStart,
    pub sandbox: Option<HealthCheck>,
    pub log_dir: PathBuf,
    /// The loop's own channel; its sender also feeds the preview observer under the router.
    pub channel: (UnboundedSender<Event>, UnboundedReceiver<Event>),
}

/// What the session left behind, for the message printed after the screen is restored.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub session: Option<String>,
    pub log: Option<PathBuf>,
}

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
        _ => None,
    }
}

/// Run the session until the person quits.
pub async fn run<M: ChatModel + 'static>(launch: Launch<M>) -> std::io::Result<Outcome> {
    let (_log_guard, log) = terminal::init_logging(&launch.log_dir)?;
    tracing::info!("tui starting");
    let (tx, mut loop_rx) = launch.channel;
    let (sink, mut agent_rx) = EventSink::channel();
    let mut driver = Driver::new(launch.parts, sink, tx.clone());
    let mut app = App::new(launch.init, Instant::now());
    match &launch.start {
        // A session is started by the first request.
        SessionStart::New => {}
        SessionStart::Resume(id) => match driver.resume(id) {
            Ok(loaded) => {
                app.update(Event::SessionLoaded(Box::new(loaded)));
            }
            Err(e) => {
                app.update(Event::Failed(format!("cannot resume {id}: {e}")));
            }
        },
        SessionStart::Pick => {
            driver.perform(Effect::ListSessions).await;
        }
    }
    if let Some(check) = launch.sandbox {
        let tx = tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(Event::Sandbox(check.await));
        });
    }
    let (_guard, mut term) = terminal::TerminalGuard::enter()?;
    let size = term.size()?;
    app.update(Event::Resize(size.width, size.height));
    let mut input = EventStream::new();
    let mut frame = tokio::time::interval(FRAME);
    frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut slow = tokio::time::interval(SLOW_TICK);
    let mut last_draw: Option<Instant> = None;
    'run: loop {
        if app.dirty && last_draw.is_none_or(|t| t.elapsed() >= FRAME) {
            term.draw(|f| ui::draw(&app, f))?;
            app.dirty = false;
            last_draw = Some(Instant::now());
        }
        let event = tokio::select! {
            e = input.next() => match e {
                Some(Ok(e)) => translate(e, Instant::now()),
                Some(Err(e)) => return Err(e),
                None => break 'run,
            },
            Some(a) = agent_rx.recv() => Some(Event::Agent(a)),
            Some(e) = loop_rx.recv() => Some(e),
            _ = frame.tick(), if app.dirty => None,
            _ = slow.tick() => {
                if let Some(e) = driver.poll_audit() {
                    app.update(e);
                }
                Some(Event::Tick(Instant::now()))
            }
        };
        let Some(event) = event else { continue };
        for effect in app.update(event) {
            if !driver.perform(effect).await {
                break 'run;
            }
        }
        if app.quit {
            break;
        }
    }
    tracing::info!("tui leaving");
    Ok(Outcome {
        session: driver.session.clone(),
        log: Some(log),
    })
}
