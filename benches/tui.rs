//! The screen's costs: one frame of a session of 10,000 cells (half of them terminal cells with
//! 1,000-line outputs), and opening the audit pane on a log of 1,000,000 records (the last page
//! read from the end, parsed and drawn). Both must stay flat as the session or the log grows:
//! only what is visible is laid out and read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;
use spear::agent::event::{AgentEvent, StopReason};
use spear::harness::audit::AuditPaths;
use spear::harness::primitives::{ExecutionMode, ToolResult};
use spear::tools::envelope::ToolResultEnvelope;
use spear::tui::app::{App, AppInit};
use spear::tui::audit::PAGE;
use spear::tui::audit_feed::AuditFeed;
use spear::tui::event::Event;
use spear::tui::theme::Theme;
use spear::tui::widgets::status_bar::{SandboxHealth, StatusInfo};

fn app() -> App {
    App::new(
        AppInit {
            status: StatusInfo {
                mode: ExecutionMode::Ask,
                model: Some(("local".into(), "bench".into())),
                workspace: "/work/bench".into(),
                sandbox: SandboxHealth::Ok,
                network: false,
                standard: None,
                tokens: 0,
                busy: false,
            },
            theme: Theme::named("dark").unwrap(),
            cwd: "/work/bench".into(),
            keyboard_enhanced: true,
            no_model: None,
            warnings: Vec::new(),
            results: None,
        },
        Instant::now(),
    )
}

fn long_session() -> App {
    let mut app = app();
    app.update(Event::Resize(120, 40));
    let output: String = (0..1000)
        .map(|i| format!("\x1b[32mline {i}\x1b[0m of the output\n"))
        .collect();
    for i in 0..5000 {
        let id = format!("c{i}");
        app.update(Event::Agent(AgentEvent::TextDelta {
            text: format!("Step {i}: **run** the `tests`."),
        }));
        app.update(Event::Agent(AgentEvent::ToolCallStarted {
            call_id: id.clone(),
            name: "terminal".into(),
            arguments: json!({"command": "cargo test"}),
        }));
        let mut r = ToolResult::ok(output.clone());
        r.exit_code = Some(0);
        let env = ToolResultEnvelope::build(&id, "terminal", r, None);
        app.update(Event::Agent(AgentEvent::ToolCallFinished {
            call_id: id,
            envelope: Box::new(env),
        }));
        app.update(Event::Agent(AgentEvent::Done {
            reason: StopReason::Finished,
            tool_calls: 1,
            message: None,
        }));
    }
    app
}

fn frame(c: &mut Criterion) {
    let app = long_session();
    assert!(app.cells.len() >= 10_000, "{}", app.cells.len());
    let area = Rect::new(0, 0, 120, 40);
    c.bench_function("frame_10000_cells", |b| {
        b.iter(|| {
            let mut buf = Buffer::empty(area);
            spear::tui::ui::render(&app, area, &mut buf);
            buf
        })
    });
}

fn audit_open(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let paths = AuditPaths::new(dir.path(), &root);
    std::fs::create_dir_all(&paths.dir).unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(&paths.log).unwrap());
    for i in 0..1_000_000u64 {
        writeln!(
            f,
            r#"{{"v":1,"seq":{i},"time":"2026-12-01T10:00:00Z","session":"s","tool":"terminal","target":"echo {i}","class":"READ_ONLY","mode":"ask","decision":"allowed","status":"ok","prev":"{}"}}"#,
            "0".repeat(64)
        )
        .unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let area = Rect::new(0, 0, 120, 40);
    c.bench_function("audit_open_1000000_records", |b| {
        b.iter(|| {
            let mut feed = AuditFeed::new(paths.clone());
            let page = feed.older(PAGE).unwrap();
            let mut app = app();
            app.update(Event::Resize(120, 40));
            app.update(Event::Key {
                key: crossterm::event::KeyEvent::from(crossterm::event::KeyCode::F(2)),
                at: Instant::now(),
            });
            app.update(Event::AuditOlder(page));
            let mut buf = Buffer::empty(area);
            spear::tui::ui::render(&app, area, &mut buf);
            buf
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = frame, audit_open
}
criterion_main!(benches);
