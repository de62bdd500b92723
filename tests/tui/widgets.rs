//! Snapshots of the conversation's states: empty session, no-model banner, a streaming
//! message with Markdown, each tool cell folded and unfolded, a refusal, each theme.

use std::time::Instant;

use crossterm::event::KeyCode;
use serde_json::json;
use spear::agent::event::AgentEvent;
use spear::harness::command_policy::CommandClass;
use spear::tui::diff::FileDiff;
use spear::tui::event::Event;

use crate::support::*;

#[test]
fn empty_session() {
    let app = app(Instant::now());
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn no_model_banner() {
    let app = app_with("dark", false, Instant::now());
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn streaming_message_with_markdown() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "explain the layout", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    for d in [
        "## Layout\n",
        "- `src/harness` is **the substrate**\n",
        "- see [DESIGN](DESIGN.md)\n",
        "```rust\nfn main() {}\n```\nand *more*",
    ] {
        agent(&mut app, AgentEvent::TextDelta { text: d.into() });
    }
    insta::assert_snapshot!(render(&app, 80, 24));
}

fn terminal_call(app: &mut spear::tui::app::App, t0: Instant) {
    agent(
        app,
        AgentEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "terminal".into(),
            arguments: json!({"command": "cargo test --lib"}),
        },
    );
    agent(
        app,
        AgentEvent::OutputChunk {
            call_id: "c1".into(),
            stream: "stdout",
            text: "running 3 tests\n\x1b[32mtest a ... ok\x1b[0m\ntest b ... ".into(),
        },
    );
    app.update(Event::Tick(ms(t0, 1500)));
}

#[test]
fn terminal_cell_running() {
    let t0 = Instant::now();
    let mut app = app(t0);
    terminal_call(&mut app, t0);
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn terminal_cell_finished_unfolded_then_folded() {
    let t0 = Instant::now();
    let mut app = app(t0);
    terminal_call(&mut app, t0);
    let mut e = envelope(
        "c1",
        "terminal",
        ok_output(
            "running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... FAILED\n",
            101,
        ),
        Some(CommandClass::ReadOnly),
    );
    e.result_id = Some("result://r-42".into());
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            call_id: "c1".into(),
            envelope: e,
        },
    );
    insta::assert_snapshot!("terminal_cell_unfolded", render(&app, 80, 24));
    press(&mut app, key(KeyCode::Tab), t0);
    press(&mut app, key(KeyCode::Char('f')), t0);
    insta::assert_snapshot!("terminal_cell_folded", render(&app, 80, 24));
}

#[test]
fn terminal_cell_ended_by_a_limit() {
    let t0 = Instant::now();
    let mut app = app(t0);
    terminal_call(&mut app, t0);
    let mut r = spear::harness::primitives::ToolResult::refused(
        spear::harness::primitives::ToolStatus::Timeout,
        "timed out after 120 s (the command's time limit); the sandbox was killed",
    );
    r.stdout = "partial output\n".into();
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            call_id: "c1".into(),
            envelope: envelope("c1", "terminal", r, Some(CommandClass::ReadOnly)),
        },
    );
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn patch_cell_with_its_diff_unfolded_and_folded() {
    let t0 = Instant::now();
    let mut app = app(t0);
    let args = json!({"path": "src/lib.rs", "edits": [{"old": "b", "new": "B"}]});
    patch_call(&mut app, "src/lib.rs", b"a\nb\nc\n", b"a\nB\nc\nd\n", args);
    insta::assert_snapshot!("patch_cell_unfolded", render(&app, 80, 24));
    press(&mut app, key(KeyCode::Tab), t0);
    press(&mut app, key(KeyCode::Char('f')), t0);
    insta::assert_snapshot!("patch_cell_folded", render(&app, 80, 24));
}

#[test]
fn read_file_and_search_cells_fold_and_unfold() {
    let t0 = Instant::now();
    let mut app = app(t0);
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "r1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "src/main.rs"}),
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            call_id: "r1".into(),
            envelope: envelope(
                "r1",
                "read_file",
                ok_output("fn main() {\n    println!(\"hi\");\n}\n", 0),
                None,
            ),
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "s1".into(),
            name: "search_files".into(),
            arguments: json!({"pattern": "TODO"}),
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            call_id: "s1".into(),
            envelope: envelope(
                "s1",
                "search_files",
                ok_output("src/a.rs:3: // TODO split\nsrc/b.rs:9: // TODO test\n", 0),
                None,
            ),
        },
    );
    insta::assert_snapshot!("read_search_folded", render(&app, 80, 24));
    press(&mut app, key(KeyCode::Tab), t0);
    press(&mut app, key(KeyCode::Enter), t0);
    press(&mut app, key(KeyCode::Up), t0);
    press(&mut app, key(KeyCode::Enter), t0);
    insta::assert_snapshot!("read_search_unfolded", render(&app, 80, 24));
}

#[test]
fn refusal_cell_shows_rule_and_reason() {
    let t0 = Instant::now();
    let mut app = app(t0);
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "w1".into(),
            name: "write_file".into(),
            arguments: json!({"path": "vendor/x.rs", "content": "x"}),
        },
    );
    let mut e = envelope(
        "w1",
        "write_file",
        refused("vendor/x.rs is third-party code: edit upstream instead"),
        None,
    );
    e.refusal_rule = Some("third_party".into());
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            call_id: "w1".into(),
            envelope: e,
        },
    );
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn each_theme_colours_by_role() {
    for theme in ["dark", "light", "high-contrast"] {
        let t0 = Instant::now();
        let mut app = app_with(theme, true, t0);
        agent(
            &mut app,
            AgentEvent::TextDelta {
                text: "# Done\n`ok`".into(),
            },
        );
        insta::assert_snapshot!(format!("theme_{theme}"), style_map(&app, 60, 8));
    }
}

#[test]
fn no_color_draws_without_colours() {
    let t0 = Instant::now();
    let mut app = app(t0);
    app.theme = spear::tui::theme::Theme::load("dark", true).unwrap();
    agent(
        &mut app,
        AgentEvent::TextDelta {
            text: "# Done".into(),
        },
    );
    let map = style_map(&app, 40, 6);
    assert!(!map.contains("Rgb"), "{map}");
}

/// The capture shown in the README: a short session with a prompt, an answer, a command and a
/// patch, and the dialog asking about the next command.
#[test]
fn readme_session() {
    let t0 = Instant::now();
    let mut app = app(t0);
    app.update(Event::Resize(100, 34));
    type_text(
        &mut app,
        "rename world to Spear in hello.txt and show it",
        t0,
    );
    press(&mut app, key(KeyCode::Enter), t0);
    agent(
        &mut app,
        AgentEvent::TextDelta {
            text: "I'll **patch** `hello.txt`, then print it.".into(),
        },
    );
    patch_call(
        &mut app,
        "hello.txt",
        b"Hello, world\n",
        b"Hello, Spear\n",
        json!({"path": "hello.txt"}),
    );
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "terminal".into(),
            arguments: json!({"command": "cat hello.txt"}),
        },
    );
    app.update(Event::Tick(ms(t0, 300)));
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            call_id: "c1".into(),
            envelope: envelope(
                "c1",
                "terminal",
                ok_output("Hello, Spear\n", 0),
                Some(CommandClass::ReadOnly),
            ),
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "c2".into(),
            name: "terminal".into(),
            arguments: json!({"command": "git commit -am 'Say Spear'"}),
        },
    );
    agent(&mut app, {
        // As the classifier reports this command (`spear classify`).
        let mut ask = approval(
            "c2",
            "git commit -am 'Say Spear'",
            "WORKSPACE_MUTATING",
            &[],
            false,
        );
        if let AgentEvent::ApprovalRequested { request } = &mut ask {
            request.reasons =
                vec!["`git commit` changes the repository or the working tree".into()];
        }
        ask
    });
    insta::assert_snapshot!(render(&app, 100, 34));
}

/// A patch call `p1` on `path`: its preview diff, its start and its finish.
fn patch_call(
    app: &mut spear::tui::app::App,
    path: &str,
    before: &[u8],
    after: &[u8],
    args: serde_json::Value,
) {
    app.update(Event::Preview {
        call_id: "p1".into(),
        diff: FileDiff::between(path, Some(before), after),
    });
    agent(
        app,
        AgentEvent::ToolCallStarted {
            call_id: "p1".into(),
            name: "patch".into(),
            arguments: args,
        },
    );
    let done = ok_output(&format!("patched {path}"), 0);
    agent(
        app,
        AgentEvent::ToolCallFinished {
            call_id: "p1".into(),
            envelope: envelope("p1", "patch", done, None),
        },
    );
}

/// Issue 20 item 11: no bidi override, isolate, zero-width format character or control reaches
/// the terminal from any text the screen shows: the model's answer is shown with them escaped,
/// and a command's output, which the screen takes as it came, has them removed from its cells.
#[test]
fn bidi_and_invisible_format_characters_never_reach_the_terminal() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "list the files", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    agent(
        &mut app,
        AgentEvent::TextDelta {
            text: "see notes\u{202e}txt.exe\u{202c} and \u{2066}x\u{2069}\u{200b}y\r\n".into(),
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "terminal".into(),
            arguments: json!({"command": "ls \u{202e}fdp.sh"}),
        },
    );
    agent(
        &mut app,
        AgentEvent::OutputChunk {
            call_id: "c1".into(),
            stream: "stdout",
            text: "evil\u{202e}gpj.exe\nok\u{2067}a\u{2069}\n".into(),
        },
    );
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).unwrap();
    term.draw(|f| spear::tui::ui::draw(&app, f)).unwrap();
    let buf = term.backend().buffer();
    let mut shown = String::new();
    for y in 0..24 {
        for x in 0..80 {
            let symbol = buf[(x, y)].symbol();
            for c in symbol.chars() {
                assert!(
                    !spear::harness::audit::display::is_unsafe_char(c),
                    "U+{:04X} reached the terminal at ({x}, {y})",
                    u32::from(c)
                );
            }
            shown.push_str(symbol);
        }
        shown.push('\n');
    }
    // The answer says what was there.
    assert!(shown.contains("notes\\u{202e}txt.exe"), "{shown}");
}

/// Errors in the danger colour, warnings in the warning colour, in every theme (issue 21
/// point 7), pinned for the dark theme by a style snapshot.
#[test]
fn errors_and_warnings_are_drawn_in_their_colours() {
    for theme in ["dark", "light", "high-contrast"] {
        let t0 = Instant::now();
        let mut app = app_with(theme, true, t0);
        app.notice(
            spear::tui::cells::NoticeKind::Error,
            "boom: the server said 500",
        );
        app.notice(spear::tui::cells::NoticeKind::Warning, "careful: retrying");
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(60, 10)).unwrap();
        term.draw(|f| spear::tui::ui::draw(&app, f)).unwrap();
        let buf = term.backend().buffer().clone();
        let find = |word: &str| {
            (0..10u16)
                .find_map(|y| {
                    let row: String = (0..60u16)
                        .map(|x| buf[(x, y)].symbol().to_string())
                        .collect();
                    row.find(word).map(|i| (row[..i].chars().count() as u16, y))
                })
                .unwrap_or_else(|| panic!("{word} not drawn"))
        };
        let (x, y) = find("boom");
        assert_eq!(buf[(x, y)].fg, app.theme.danger, "{theme}: the error");
        let (x, y) = find("careful");
        assert_eq!(buf[(x, y)].fg, app.theme.warning, "{theme}: the warning");
        if theme == "dark" {
            insta::assert_snapshot!("error_and_warning_colours", style_map(&app, 60, 12));
        }
    }
}
