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
                undoable: 0,
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

/// A Markdown answer of about `bytes` bytes: headings, paragraphs with inline markup, lists,
/// quotes and fenced code, as models write them.
fn markdown_answer(bytes: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < bytes {
        i += 1;
        s.push_str(&format!(
            "## Step {i}\n\nThe **parser** reads `src/lib.rs` and calls *resolve* on each \
             [entry](https://example.invalid/{i}); the result is cached.\n\n\
             - first, check the `Cargo.toml`\n- then run **the tests**\n\n\
             > note: nothing here runs by itself\n\n\
             ```rust\nfn step_{i}(x: u32) -> u32 {{\n    x + {i}\n}}\n```\n\n"
        ));
    }
    s
}

/// CPU per streamed chunk (one 40-byte delta, then one frame) when the answer is `at` bytes
/// long: the screen's cost must not grow with the answer (issue 21: end-to-start ratio at
/// most 1.5 over a 100 KB answer).
fn stream_chunk(c: &mut Criterion, name: &str, at: usize) {
    let text = markdown_answer(100_000);
    let chunks: Vec<String> = text
        .as_bytes()
        .chunks(40)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    let start = at / 40;
    let area = Rect::new(0, 0, 120, 40);
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut spent = std::time::Duration::ZERO;
            let mut done = 0;
            while done < iters {
                // A fresh answer at the same length every 100 chunks, so it stays near `at`;
                // built and drawn once outside the clock, as a live stream would have.
                let mut app = app();
                app.update(Event::Resize(120, 40));
                app.update(Event::Agent(AgentEvent::TextDelta {
                    text: chunks[..start].concat(),
                }));
                let mut buf = Buffer::empty(area);
                spear::tui::ui::render(&app, area, &mut buf);
                let n = (iters - done).min(100);
                let t = Instant::now();
                for k in 0..n as usize {
                    app.update(Event::Agent(AgentEvent::TextDelta {
                        text: chunks[(start + k) % chunks.len()].clone(),
                    }));
                    let mut buf = Buffer::empty(area);
                    spear::tui::ui::render(&app, area, &mut buf);
                }
                spent += t.elapsed();
                done += n;
            }
            spent
        })
    });
}

fn markdown_stream(c: &mut Criterion) {
    stream_chunk(c, "markdown_chunk_at_1kb", 1_000);
    stream_chunk(c, "markdown_chunk_at_100kb", 96_000);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = frame, audit_open, markdown_stream
}
criterion_main!(benches);
