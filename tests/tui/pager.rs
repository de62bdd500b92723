//! The whole-output view (issue 21): a 3,000-line result opened from its cell with Enter,
//! read from the ResultStore a page at a time, searched, scrolled and closed; counts that say
//! the whole output's size; Enter that unfolds rather than hides.

use std::time::Instant;

use crossterm::event::KeyCode;
use spear::agent::event::AgentEvent;
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::results::{ResultStore, StoreLimits};
use spear::tui::app::{App, Focus};
use spear::tui::event::Event;

use crate::support::{agent, app, ctrl, key, ok_output, press, render, type_text};

fn long_output() -> String {
    (1..=3000)
        .map(|i| {
            if i == 2500 {
                "error: the needle is here\n".to_string()
            } else {
                // Long enough that the whole output (about 120 KB) is more than the preview
                // and is kept in the store.
                format!("line {i} {}\n", ".".repeat(32))
            }
        })
        .collect()
}

/// An app whose one tool cell ran `seq 3000`, with the output kept in a real store.
fn with_stored_output(dir: &std::path::Path) -> App {
    let root = dir.join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let store = ResultStore::open_in(&dir.join("state"), &root, StoreLimits::default()).unwrap();
    let text = long_output();
    let stored = store.store_text(&text).unwrap();
    let t0 = Instant::now();
    let mut a = app(t0);
    a = rebuild_with_store(a, store);
    agent(
        &mut a,
        AgentEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "terminal".into(),
            arguments: serde_json::json!({"command": "seq 3000"}),
        },
    );
    let env = ToolResultEnvelope::build("c1", "terminal", ok_output(&text, 0), Some(&stored));
    assert!(
        env.result_id.is_some(),
        "a 3,000-line output is kept in the store"
    );
    agent(
        &mut a,
        AgentEvent::ToolCallFinished {
            call_id: "c1".into(),
            envelope: Box::new(env),
        },
    );
    a
}

fn rebuild_with_store(_old: App, store: ResultStore) -> App {
    let t0 = Instant::now();
    let mut init = crate::support::init_with("dark", true);
    init.results = Some(store);
    let mut a = App::new(init, t0);
    a.update(Event::Resize(80, 24));
    a
}

fn focus_last_cell(a: &mut App) {
    press(a, key(KeyCode::Tab), Instant::now());
    assert_eq!(a.focus, Focus::Conversation);
}

#[test]
fn the_cell_counts_the_whole_output_and_enter_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = with_stored_output(dir.path());
    let screen = render(&a, 80, 24);
    assert!(
        screen.contains("… 2988 earlier lines"),
        "the count is of the whole output, not of the preview:\n{screen}"
    );
    focus_last_cell(&mut a);
    press(&mut a, key(KeyCode::Enter), Instant::now());
    let p = a.pager.as_ref().expect("Enter opens the whole output");
    assert_eq!(p.total(), 3000);
    let screen = render(&a, 80, 24);
    assert!(screen.contains("lines 1–20 of 3000"), "{screen}");
    assert!(
        screen.contains("line 1\n") || screen.contains("line 1 "),
        "{screen}"
    );
    // The end, then a search backwards from there finds the one error line.
    press(&mut a, key(KeyCode::End), Instant::now());
    let screen = render(&a, 80, 24);
    assert!(screen.contains("line 3000 ...."), "{screen}");
    assert!(screen.contains("lines 2981–3000 of 3000"), "{screen}");
    type_text(&mut a, "/needle", Instant::now());
    press(&mut a, key(KeyCode::Enter), Instant::now());
    let p = a.pager.as_ref().unwrap();
    assert_eq!(p.current_match(), Some(2499));
    let screen = render(&a, 80, 24);
    assert!(screen.contains("error: the needle is here"), "{screen}");
    insta::assert_snapshot!("pager_found_in_a_stored_output", screen);
    // Keys go to the view while it is open, and q closes it.
    press(&mut a, key(KeyCode::Char('q')), Instant::now());
    assert!(a.pager.is_none());
    assert!(
        a.composer.lines().join("").is_empty(),
        "no key reached the composer"
    );
}

#[test]
fn ctrl_o_opens_the_last_tool_output_from_the_composer() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = with_stored_output(dir.path());
    assert_eq!(a.focus, Focus::Composer);
    press(&mut a, ctrl('o'), Instant::now());
    assert_eq!(a.pager.as_ref().map(|p| p.total()), Some(3000));
    press(&mut a, key(KeyCode::Esc), Instant::now());
    assert!(a.pager.is_none());
}

#[test]
fn an_evicted_result_falls_back_to_what_the_screen_holds_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = with_stored_output(dir.path());
    // The store's files are gone (evicted, or the state directory was cleaned).
    let results = dir.path().join("state/spear/results");
    std::fs::remove_dir_all(&results).unwrap();
    std::fs::create_dir_all(&results).unwrap();
    press(&mut a, ctrl('o'), Instant::now());
    let p = a.pager.as_ref().expect("the view still opens");
    assert!(p.total() > 0 && p.total() < 3000, "{}", p.total());
    let screen = render(&a, 80, 24);
    let _ = screen;
    press(&mut a, key(KeyCode::Esc), Instant::now());
    let screen = render(&a, 80, 40);
    assert!(screen.contains("cannot be read"), "{screen}");
}

#[test]
fn enter_unfolds_a_folded_cell_and_f_folds_it() {
    let t0 = Instant::now();
    let mut a = app(t0);
    agent(
        &mut a,
        AgentEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "terminal".into(),
            arguments: serde_json::json!({"command": "ls"}),
        },
    );
    agent(
        &mut a,
        AgentEvent::ToolCallFinished {
            call_id: "c1".into(),
            envelope: crate::support::envelope("c1", "terminal", ok_output("a\nb\n", 0), None),
        },
    );
    focus_last_cell(&mut a);
    press(&mut a, key(KeyCode::Char('f')), t0);
    assert!(a.cells.items.last().unwrap().folded);
    press(&mut a, key(KeyCode::Enter), t0);
    assert!(!a.cells.items.last().unwrap().folded, "Enter unfolds");
    assert!(a.pager.is_none(), "and opens nothing while folded");
    press(&mut a, key(KeyCode::Enter), t0);
    let p = a
        .pager
        .as_ref()
        .expect("Enter on an unfolded cell opens it whole");
    assert_eq!(p.total(), 2);
}

#[test]
fn a_dialog_that_opens_over_the_view_takes_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = with_stored_output(dir.path());
    press(&mut a, ctrl('o'), Instant::now());
    agent(
        &mut a,
        crate::support::approval("c2", "touch x", "WORKSPACE_MUTATING", &["x"], false),
    );
    assert!(a.confirm.is_some());
    let screen = render(&a, 80, 24);
    assert!(
        screen.contains("touch x"),
        "the dialog is drawn over the view:\n{screen}"
    );
}

#[test]
fn the_wheel_scrolls_the_view_and_a_paste_does_not_reach_the_hidden_composer() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = with_stored_output(dir.path());
    press(&mut a, ctrl('o'), Instant::now());
    a.update(Event::Scroll(-3));
    assert_eq!(a.pager.as_ref().unwrap().top, 0, "up at the top stays");
    a.update(Event::Scroll(5));
    assert_eq!(a.pager.as_ref().unwrap().top, 5);
    assert_eq!(a.scroll, 0, "the conversation underneath did not move");
    a.update(Event::Paste("secret text".into()));
    assert!(a.composer.lines().join("").is_empty());
    press(&mut a, key(KeyCode::Char('q')), Instant::now());
    assert!(render(&a, 80, 24).contains("the paste was not used"));
}
