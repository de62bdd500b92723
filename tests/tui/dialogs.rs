//! Snapshots of the ASK dialog: a terminal command, a patch (with the diff of what will be
//! written), a network command, each at 120 and 60 columns, and a 2,000-character command,
//! which is wrapped and scrolled, never cut.

use std::time::Instant;

use crossterm::event::KeyCode;
use serde_json::json;
use spear::agent::event::AgentEvent;
use spear::tools::preview::{FileChange, Preview};
use spear::tui::diff::FileDiff;
use spear::tui::event::{Effect, Event};

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

/// A long answer, then a command asked about: the dialog docks at the bottom, the cell says it
/// waits, PgUp scrolls the conversation above it and answers nothing, and the answer clears the
/// waiting state.
#[test]
fn the_docked_dialog_leaves_the_conversation_readable_and_scrollable() {
    let t0 = Instant::now();
    let mut app = app(t0);
    let answer: String = (1..=60).map(|i| format!("paragraph {i}\n\n")).collect();
    agent(&mut app, AgentEvent::TextDelta { text: answer });
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "terminal".into(),
            arguments: json!({"command": "touch x"}),
        },
    );
    agent(
        &mut app,
        approval("c1", "touch x", "WORKSPACE_MUTATING", &["x"], false),
    );
    let screen = render(&app, 80, 24);
    assert!(screen.contains("waiting for your answer"), "{screen}");
    let rows: Vec<&str> = screen.lines().collect();
    let dialog_row = rows.iter().position(|r| r.contains("Spear asks")).unwrap();
    let waiting_row = rows.iter().position(|r| r.contains("waiting for")).unwrap();
    assert!(
        waiting_row < dialog_row,
        "the cell stays above the dialog:\n{screen}"
    );
    assert!(
        dialog_row > 5,
        "docked at the bottom, not over the middle:\n{screen}"
    );
    // PgUp scrolls what is above; the dialog stays open and undecided.
    press(&mut app, key(KeyCode::PageUp), ms(t0, 1000));
    assert!(app.scroll > 0);
    assert!(app.confirm.is_some());
    let screen = render(&app, 80, 24);
    assert!(screen.contains("paragraph 5"), "{screen}");
    assert!(screen.contains("Spear asks"), "{screen}");
    let fx = press(&mut app, key(KeyCode::Char('y')), ms(t0, 2000));
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Answer { .. })),
        "{fx:?}"
    );
    assert!(!app.cells.tool("c1").unwrap().awaiting);
}

/// Scrolled up while output arrives: the view stays on what the person reads and a marker
/// says there is more below, until they are back at the bottom.
#[test]
fn output_below_a_scrolled_view_keeps_the_view_and_shows_a_marker() {
    let t0 = Instant::now();
    let mut app = app(t0);
    let answer: String = (1..=60).map(|i| format!("paragraph {i}\n\n")).collect();
    agent(&mut app, AgentEvent::TextDelta { text: answer });
    press(&mut app, key(KeyCode::PageUp), t0);
    let before = render(&app, 80, 24);
    assert!(!before.contains("new output below"), "{before}");
    agent(
        &mut app,
        AgentEvent::TextDelta {
            text: "more\n\nand more\n\nand even more\n".into(),
        },
    );
    let after = render(&app, 80, 24);
    assert!(after.contains("new output below"), "{after}");
    let top = |s: &str| s.lines().take(10).collect::<Vec<_>>().join("\n");
    assert_eq!(top(&before), top(&after), "the view did not move");
    press(&mut app, key(KeyCode::PageDown), t0);
    press(&mut app, key(KeyCode::PageDown), t0);
    assert_eq!(app.scroll, 0);
    assert!(!render(&app, 80, 24).contains("new output below"));
}

/// The egress proxy's question, asked while the command runs: the name and port in the reason,
/// nothing under "writes", and "always" keeps a `net:` rule for that name and port.
#[test]
fn ask_dialog_for_a_name_the_proxy_holds() {
    use spear::harness::command_policy::{ApprovalDecision, SaveScope};
    use spear::harness::primitives::{Capability, CapabilitySet, ExecutionMode};
    use spear::tools::approval::CallApprovalRequest;
    let t0 = Instant::now();
    let mut app = app(t0);
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "e1".into(),
            name: "terminal".into(),
            arguments: json!({"command": "cargo build"}),
        },
    );
    agent(
        &mut app,
        AgentEvent::ApprovalRequested {
            request: Box::new(CallApprovalRequest {
                id: request_id("e1"),
                call_id: "e1".into(),
                tool: "terminal".into(),
                mode: ExecutionMode::Ask,
                command: "cargo build".into(),
                class: spear::harness::command_policy::CommandClass::ShellComplex,
                asking_for: CapabilitySet::of(&[Capability::Network]),
                reasons: vec![
                    "the command `cargo build` wants `index.crates.io:443`, which is not in \
                     [network] allow; the connection waits for your answer"
                        .into(),
                ],
                targets: Vec::new(),
                network: true,
                preview: None,
                always: vec!["net:index.crates.io:443".into()],
            }),
        },
    );
    press(&mut app, key(KeyCode::Char('a')), ms(t0, 1000));
    let screen = render(&app, 120, 32);
    insta::assert_snapshot!("ask_egress_name_120", screen);
    assert!(!screen.contains("writes"), "{screen}");
    assert!(screen.contains("allow net:index.crates.io:443"), "{screen}");
    let fx = press(&mut app, key(KeyCode::Char('g')), ms(t0, 2000));
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Answer { decision: ApprovalDecision::Always { rule, scope: SaveScope::Global }, .. }
                if rule == "net:index.crates.io:443"
        )),
        "{fx:?}"
    );
}

/// A question taken back (its command ended first) closes the dialog and says why; another
/// request's withdrawal leaves the open one alone.
#[test]
fn a_withdrawn_question_closes_its_dialog() {
    let mut app = app(Instant::now());
    agent(
        &mut app,
        approval("w1", "cargo fetch", "WORKSPACE_MUTATING", &[], true),
    );
    assert!(app.confirm.is_some());
    agent(
        &mut app,
        AgentEvent::ApprovalWithdrawn {
            request_id: request_id("o99"),
            reason: "not this one".into(),
        },
    );
    assert!(app.confirm.is_some());
    agent(
        &mut app,
        AgentEvent::ApprovalWithdrawn {
            request_id: request_id("w1"),
            reason: "the command ended before its network question was answered".into(),
        },
    );
    assert!(app.confirm.is_none());
    let screen = render(&app, 120, 32);
    assert!(screen.contains("the command ended before"), "{screen}");
}
