//! Snapshots of the ASK dialog: a terminal command, a patch (with the diff of what will be
//! written), a network command, each at 120 and 60 columns, and a 2,000-character command,
//! which is wrapped and scrolled, never cut.

use std::time::Instant;

use crossterm::event::KeyCode;
use serde_json::json;
use spear::agent::event::AgentEvent;
use spear::tools::preview::{FileChange, Preview};
use spear::tui::diff::FileDiff;
use spear::tui::event::Event;

use crate::support::*;

fn both_widths(app: &spear::tui::app::App, name: &str) {
    insta::assert_snapshot!(format!("{name}_120"), render(app, 120, 32));
    insta::assert_snapshot!(format!("{name}_60"), render(app, 60, 32));
}

#[test]
fn ask_dialog_for_a_terminal_command() {
    let mut app = app(Instant::now());
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "terminal".into(),
            arguments: json!({"command": "cargo fmt && git add -A"}),
        },
    );
    agent(
        &mut app,
        approval(
            "c1",
            "cargo fmt && git add -A",
            "SHELL_COMPLEX",
            &["src/", ".git/index"],
            false,
        ),
    );
    both_widths(&app, "ask_terminal");
}

#[test]
fn ask_dialog_for_a_patch_shows_the_diff() {
    let mut app = app(Instant::now());
    // The patch tool's own preview: the file before and after.
    let change = FileChange::new(
        "src/lib.rs",
        Some(b"pub fn a() {}\npub fn b() {}\n"),
        Some(b"pub fn a() {}\npub fn b() -> u8 { 1 }\n"),
    );
    app.update(Event::Preview {
        call_id: "p1".into(),
        diff: FileDiff::from_change(&change),
    });
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "p1".into(),
            name: "patch".into(),
            arguments: json!({"path": "src/lib.rs"}),
        },
    );
    agent(
        &mut app,
        with_preview(
            approval(
                "p1",
                "patch src/lib.rs",
                "WORKSPACE_MUTATING",
                &["src/lib.rs"],
                false,
            ),
            Preview::FileChange(change),
        ),
    );
    both_widths(&app, "ask_patch");
}

#[test]
fn ask_dialog_for_a_network_command() {
    let mut app = app(Instant::now());
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "n1".into(),
            name: "terminal".into(),
            arguments: json!({"command": "cargo fetch"}),
        },
    );
    agent(
        &mut app,
        approval(
            "n1",
            "cargo fetch",
            "WORKSPACE_MUTATING",
            &["Cargo.lock"],
            true,
        ),
    );
    both_widths(&app, "ask_network");
}

#[test]
fn a_2000_character_command_is_wrapped_and_scrolls_never_cut() {
    let t0 = Instant::now();
    let mut app = app(t0);
    let long: String = (0..200).map(|i| format!("echo {i:04}; ")).collect();
    assert!(long.len() >= 2000);
    agent(&mut app, approval("l1", &long, "SHELL_COMPLEX", &[], false));
    insta::assert_snapshot!("ask_long_command_top", render(&app, 80, 24));
    // Every character is in the dialog's body, in order.
    let body: String = app
        .confirm
        .as_ref()
        .unwrap()
        .body(76, &app.theme)
        .iter()
        .map(|l| l.to_string())
        .collect();
    let squeezed: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(
        squeezed.contains(
            &long
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
        )
    );
    for _ in 0..40 {
        press(&mut app, key(KeyCode::Down), ms(t0, 1000));
    }
    insta::assert_snapshot!("ask_long_command_scrolled", render(&app, 80, 24));
}
