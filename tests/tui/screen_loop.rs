//! The screen's own loop (`Screen::run`) over a `TestBackend`, driven by keys on a channel, in
//! front of a session actor built by the library's builder (the real sandbox) and a scripted
//! model. Issue 18: no key waits on a running turn. The turn's command is held at a gate (it
//! waits for a file the test creates only after the probe has seen every key handled), so if a
//! key waited on the turn the test could not go on: events and frames are counted, nothing is
//! timed (the timeout below only turns a hang into a failure).

use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use spear::harness::primitives::ExecutionMode;
use spear::tui::app::{App, AppInit};
use spear::tui::theme::Theme;
use spear::tui::widgets::status_bar::{SandboxHealth, StatusInfo};
use spear::tui::{LoopProbe, Screen, SessionStart};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::loop_support::{Fixture, ScriptedModel, calls, text};

const HANG: Duration = Duration::from_secs(90);
/// One step's guard, shorter than the whole test's, so a hang names its step.
const STEP: Duration = Duration::from_secs(45);

/// What the app looked like right after one event was handled.
#[derive(Debug, Clone)]
struct Seen {
    label: String,
    mode: ExecutionMode,
    network: bool,
    busy: bool,
    scroll: usize,
    popup: bool,
    confirm: bool,
    last_notice: String,
}

/// Records every handled event with the app's state, counts frames, and tells the test.
struct Probe {
    seen: Vec<Seen>,
    frames: usize,
    /// For each frame: how many events had been handled when it was drawn, and whether a turn
    /// was running.
    drawn: Vec<(usize, bool)>,
    tell: UnboundedSender<Seen>,
}

impl LoopProbe for Probe {
    fn wants_labels(&self) -> bool {
        true
    }

    fn handled(&mut self, app: &App, label: Option<&str>) {
        let label = label.unwrap_or_default();
        if label == "tick" {
            return;
        }
        let s = seen(app, label);
        self.seen.push(s.clone());
        let _ = self.tell.send(s);
    }

    fn drew(&mut self, app: &App) {
        self.frames += 1;
        self.drawn.push((self.seen.len(), app.busy()));
        // Frames are told too (not recorded in `seen`), so the test can wait for one.
        let _ = self.tell.send(seen(app, FRAME_LABEL));
    }
}

/// The label a drawn frame is told under.
const FRAME_LABEL: &str = "frame";

fn seen(app: &App, label: &str) -> Seen {
    let last_notice = app
        .cells
        .items
        .iter()
        .rev()
        .find_map(|c| match &c.kind {
            spear::tui::cells::CellKind::Notice { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default();
    Seen {
        label: label.to_string(),
        mode: app.status.mode,
        network: app.status.network,
        busy: app.busy(),
        scroll: app.scroll,
        popup: app.popup.is_some(),
        confirm: app.confirm.is_some(),
        last_notice,
    }
}

fn init(mode: ExecutionMode) -> AppInit {
    AppInit {
        status: StatusInfo {
            mode,
            model: Some(("scripted".into(), "scripted".into())),
            workspace: "/work/demo".into(),
            sandbox: SandboxHealth::Ok,
            network: true,
            undoable: 0,
            standard: None,
            tokens: 0,
            busy: false,
        },
        theme: Theme::named("dark").unwrap(),
        cwd: "/work/demo".into(),
        keyboard_enhanced: true,
        no_model: None,
        warnings: Vec::new(),
        results: None,
    }
}

fn key(code: KeyCode) -> TermEvent {
    TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// The keys of `text` then Enter.
fn line(text: &str) -> Vec<TermEvent> {
    let mut v: Vec<TermEvent> = text.chars().map(|c| key(KeyCode::Char(c))).collect();
    v.push(key(KeyCode::Enter));
    v
}

/// A screen in front of a session over `f`, with its keys, its input and its probe.
struct Rig {
    screen: Screen,
    term: Terminal<TestBackend>,
    input: futures_util::stream::BoxStream<'static, std::io::Result<TermEvent>>,
    keys: UnboundedSender<TermEvent>,
    heard: tokio::sync::mpsc::UnboundedReceiver<Seen>,
    probe: Probe,
}

fn rig(f: &Fixture, model: std::sync::Arc<ScriptedModel>, network: bool) -> Rig {
    let session = f.session(model, ExecutionMode::Auto, network);
    let screen = Screen::start(
        session,
        init(ExecutionMode::Auto),
        &SessionStart::New,
        spear::harness::audit::AuditPaths::new(&f.state, &f.project),
        unbounded_channel(),
        spear::tui::notify::Caller::new(spear::config::Notify::Bell, None, false),
    );
    let (keys, key_rx) = unbounded_channel::<TermEvent>();
    let input = futures_util::stream::unfold(key_rx, |mut rx| async move {
        rx.recv().await.map(|k| (Ok(k), rx))
    })
    .boxed();
    let (tell, heard) = unbounded_channel();
    Rig {
        screen,
        term: Terminal::new(TestBackend::new(100, 30)).unwrap(),
        input,
        keys,
        heard,
        probe: Probe {
            seen: Vec::new(),
            frames: 0,
            drawn: Vec::new(),
            tell,
        },
    }
}

/// Waits on the probe's reports for one matching `pred`.
async fn wait_for(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Seen>,
    what: &str,
    pred: impl Fn(&Seen) -> bool,
) -> Seen {
    let found = tokio::time::timeout(STEP, async {
        while let Some(s) = rx.recv().await {
            if pred(&s) {
                return Some(s);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(s)) => s,
        _ => panic!("the screen never showed {what}"),
    }
}

/// A command that prints `started`, then waits until the file `go` exists in the workspace.
fn gated() -> String {
    serde_json::json!({
        "command": "echo started; while [ ! -e go ]; do sleep 0.05; done; echo through",
        "timeout": 120,
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_typed_during_a_turn_are_handled_at_once_and_the_approval_can_be_answered() {
    let f = Fixture::new();
    let slow = gated();
    let model = ScriptedModel::new(vec![
        calls(&[("slow", "terminal", slow.as_str())]),
        calls(&[("w1", "write_file", r#"{"path":"a.txt","content":"x"}"#)]),
        text("written"),
    ]);
    let Rig {
        mut screen,
        mut term,
        input,
        keys,
        mut heard,
        mut probe,
    } = rig(&f, model, true);
    let send = |events: Vec<TermEvent>| {
        for e in events {
            keys.send(e).unwrap();
        }
    };
    let project = f.project.clone();
    let script = async {
        send(line("do it"));
        wait_for(&mut heard, "the gated command's output", |s| {
            s.label == "agent output_chunk slow"
        })
        .await;
        // During the turn: a narrowing, a widening-then-narrowing of the mode, a refused model
        // switch, a popup opened and closed with Esc, and a page up.
        send(line("/network off"));
        let n = wait_for(&mut heard, "the network change applied", |s| {
            s.label == "session Applied" && !s.network
        })
        .await;
        assert!(n.last_notice.contains("next call"), "{n:?}");
        send(line("/mode ask"));
        let m = wait_for(&mut heard, "the mode change applied", |s| {
            s.label == "session Applied" && s.mode == ExecutionMode::Ask
        })
        .await;
        assert!(m.last_notice.contains("next call"), "{m:?}");
        send(line("/model other"));
        send(line("/model"));
        wait_for(&mut heard, "the model popup", |s| s.popup).await;
        send(vec![key(KeyCode::Esc)]);
        wait_for(&mut heard, "the popup closed by Esc", |s| {
            s.label == "key Esc" && !s.popup && s.busy
        })
        .await;
        send(vec![key(KeyCode::PageUp)]);
        wait_for(&mut heard, "PgUp handled", |s| s.label == "key PageUp").await;
        // The screen draws while the turn runs: a frame after the last key, command still held.
        wait_for(&mut heard, "a frame during the turn", |s| {
            s.label == FRAME_LABEL && s.busy
        })
        .await;
        // Every key was handled while the command still waits at its gate: open it.
        std::fs::write(project.join("go"), "").unwrap();
        // The mode narrowed to ASK applies from the next call: the write asks.
        wait_for(&mut heard, "the approval dialog", |s| s.confirm).await;
        // The dialog ignores keys in its first 300 ms (text meant for the composer must not
        // answer it); this wait is that guard's, not a measurement.
        tokio::time::sleep(Duration::from_millis(400)).await;
        send(vec![key(KeyCode::Char('y'))]);
        wait_for(&mut heard, "the end of the turn", |s| {
            s.label == "agent done" && !s.busy
        })
        .await;
        send(line("/quit"));
    };
    let run = screen.run(&mut term, input, &mut probe);
    let (ran, ()) = tokio::time::timeout(HANG, async { tokio::join!(run, script) })
        .await
        .expect("the screen or the turn hung");
    ran.unwrap();

    assert_eq!(
        std::fs::read_to_string(f.project.join("a.txt")).unwrap(),
        "x"
    );
    let seen = &probe.seen;
    let at = |label: &str| {
        seen.iter()
            .position(|s| s.label == label)
            .unwrap_or_else(|| panic!("{label} not handled: {seen:#?}"))
    };
    let finished_slow = at("agent tool_call_finished slow");
    // Each key's effect was in the app before the next event was read: the status bar after
    // the Enter of `/network off` and `/mode ask`, the refusal of `/model other`, the popup.
    let enters: Vec<usize> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.label == "key Enter")
        .map(|(i, _)| i)
        .collect();
    assert!(enters.len() >= 5, "{seen:#?}");
    assert!(!seen[enters[1]].network, "/network off not shown at once");
    assert_eq!(
        seen[enters[2]].mode,
        ExecutionMode::Ask,
        "/mode not shown at once"
    );
    assert!(
        seen[enters[3]].last_notice.contains("a turn is running"),
        "/model NAME during a turn: {:?}",
        seen[enters[3]]
    );
    assert!(
        seen[enters[4]].popup,
        "/model did not open its popup at once"
    );
    let pgup = at("key PageUp");
    assert!(seen[pgup].scroll > 0 || seen[pgup - 1].scroll == seen[pgup].scroll);
    // All of it happened while the first command was still running.
    for i in [enters[1], enters[2], enters[3], enters[4], pgup] {
        assert!(i < finished_slow, "a key waited for the turn: {seen:#?}");
        assert!(seen[i].busy, "the turn was not running at key {i}");
    }
    // The screen kept drawing during the turn: a frame showed the keys' effects while the first
    // command still ran. (How many frames is the scheduler's business, not this test's.)
    assert!(
        probe
            .drawn
            .iter()
            .any(|&(n, busy)| busy && n > pgup && n <= finished_slow),
        "no frame during the turn after the first key: {:?}",
        probe.drawn
    );
    // The write was asked about only after the narrowing, and answered from the dialog.
    let approval = at("agent approval_requested w1");
    assert!(approval > finished_slow);
    assert!(at("agent tool_call_finished w1") > approval);
    // One id: the session the list shows is the one every call's audit record names.
    let store = spear::agent::transcript::SessionStore::open_in(&f.state, &f.project).unwrap();
    let listed: Vec<String> = store.list().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let log =
        std::fs::read_to_string(spear::harness::audit::AuditPaths::new(&f.state, &f.project).log)
            .unwrap();
    let named: std::collections::BTreeSet<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["session"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        named.into_iter().collect::<Vec<_>>(),
        listed,
        "the audit log names another session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_during_a_command_cancels_the_turn_and_the_screen_goes_on() {
    let f = Fixture::new();
    let slow = gated();
    let model = ScriptedModel::new(vec![
        calls(&[("slow", "terminal", slow.as_str())]),
        text("never asked"),
    ]);
    let Rig {
        mut screen,
        mut term,
        input,
        keys,
        mut heard,
        mut probe,
    } = rig(&f, model, false);
    let script = async {
        for k in line("do it") {
            keys.send(k).unwrap();
        }
        wait_for(&mut heard, "the gated command's output", |s| {
            s.label == "agent output_chunk slow"
        })
        .await;
        keys.send(key(KeyCode::Esc)).unwrap();
        wait_for(&mut heard, "the cancelled turn's end", |s| {
            s.label == "agent done" && !s.busy
        })
        .await;
        // The screen goes on: a command of the person's own runs next.
        for k in line("!echo again") {
            keys.send(k).unwrap();
        }
        wait_for(&mut heard, "the command's end", |s| {
            s.label == "agent done" && !s.busy
        })
        .await;
        for k in line("/quit") {
            keys.send(k).unwrap();
        }
    };
    let run = screen.run(&mut term, input, &mut probe);
    let (ran, ()) = tokio::time::timeout(HANG, async { tokio::join!(run, script) })
        .await
        .expect("the screen or the turn hung");
    ran.unwrap();
    let finished: Vec<&Seen> = probe
        .seen
        .iter()
        .filter(|s| s.label.starts_with("agent tool_call_finished"))
        .collect();
    assert_eq!(finished.len(), 2, "{:#?}", probe.seen);
    let cells = &screen.app.cells;
    let slow = cells.tool("slow").unwrap();
    let env = slow.envelope.as_ref().unwrap();
    assert_eq!(
        env.status,
        spear::harness::primitives::ToolStatus::Cancelled
    );
    let mine = cells.tool("you-1").unwrap().envelope.as_ref().unwrap();
    assert!(mine.preview.contains("again"), "{:?}", mine.preview);
    // Issue 21: the next screen on this workspace starts with these prompts in its history.
    let next = rig(&f, ScriptedModel::new(vec![]), false);
    assert_eq!(next.screen.app.history, ["do it", "!echo again", "/quit"]);
}
