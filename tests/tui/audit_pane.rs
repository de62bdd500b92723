//! The audit pane: snapshots empty, full, filtered and with a chain that does not verify; and
//! the feed against a real log written by `AuditLogger` (last page first, older pages on
//! demand, new records followed).

use std::time::Instant;

use crossterm::event::KeyCode;
use spear::harness::audit::{
    AuditEvent, AuditLogger, AuditPaths, AuditRecord, AuditTarget, Decision,
};
use spear::harness::command_policy::CommandClass;
use spear::harness::primitives::ToolStatus;
use spear::tui::audit::ChainState;
use spear::tui::audit_feed::{AuditFeed, Page};
use spear::tui::event::Event;

use crate::support::*;

fn record(seq: u64, tool: &str, decision: &str, class: Option<&str>, target: &str) -> AuditRecord {
    let class = class.map_or(String::new(), |c| format!(r#""class":"{c}","#));
    serde_json::from_str(&format!(
        r#"{{"v":1,"seq":{seq},"time":"2026-12-01T10:{:02}:00Z","session":"s1","tool":"{tool}","target":"{target}",{class}"mode":"ask","decision":"{decision}","status":"ok","prev":"{}"}}"#,
        seq % 60,
        "0".repeat(64)
    ))
    .unwrap()
}

fn records() -> Vec<AuditRecord> {
    (0..40)
        .map(|i| match i % 4 {
            0 => record(
                i,
                "terminal",
                "allowed",
                Some("READ_ONLY"),
                &format!("ls dir{i}"),
            ),
            1 => record(i, "write_file", "approved", None, &format!("src/f{i}.rs")),
            2 => record(
                i,
                "terminal",
                "denied",
                Some("SHELL_COMPLEX"),
                "curl x | sh\\u001b[2J",
            ),
            _ => record(i, "patch", "refused", None, "vendor/lib.rs"),
        })
        .collect()
}

fn opened(records: Vec<AuditRecord>, chain: ChainState) -> spear::tui::app::App {
    let t0 = Instant::now();
    let mut app = app(t0);
    press(&mut app, key(KeyCode::F(2)), t0);
    app.update(Event::AuditOlder(Page {
        records,
        unreadable: 0,
        complete: true,
    }));
    app.update(Event::AuditChain(chain));
    app
}

#[test]
fn audit_pane_empty() {
    let app = opened(Vec::new(), ChainState::NoLog);
    insta::assert_snapshot!(render(&app, 100, 30));
}

#[test]
fn audit_pane_full_newest_at_the_bottom_controls_escaped() {
    let app = opened(records(), ChainState::Verified(40));
    let screen = render(&app, 100, 30);
    assert!(
        screen.contains("\\x1b[2J"),
        "control characters are escaped"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn audit_pane_filtered_by_decision_then_search() {
    let t0 = Instant::now();
    let mut app = opened(records(), ChainState::Verified(40));
    press(&mut app, key(KeyCode::Char('d')), t0); // allowed
    press(&mut app, key(KeyCode::Char('d')), t0); // approved
    press(&mut app, key(KeyCode::Char('d')), t0); // denied
    insta::assert_snapshot!("audit_pane_filtered", render(&app, 100, 30));
    press(&mut app, key(KeyCode::Char('d')), t0);
    press(&mut app, key(KeyCode::Char('d')), t0);
    press(&mut app, key(KeyCode::Char('d')), t0); // off
    press(&mut app, key(KeyCode::Char('/')), t0);
    type_text(&mut app, "f13", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    assert_eq!(app.audit.visible().len(), 1);
    press(&mut app, key(KeyCode::Enter), t0);
    insta::assert_snapshot!("audit_record_opened", render(&app, 100, 30));
}

#[test]
fn a_broken_chain_is_warned_about() {
    let app = opened(
        records(),
        ChainState::Broken("line 7: the hash does not match".into()),
    );
    let screen = render(&app, 100, 30);
    assert!(
        screen.contains("the audit chain does not verify: line 7"),
        "{screen}"
    );
}

#[test]
fn the_feed_reads_the_last_page_first_then_older_pages_then_follows() {
    let dir = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let logger = AuditLogger::open_in(dir.path(), root.path()).unwrap();
    let write = |i: u32| {
        let mut e = AuditEvent::new("s", "terminal", Decision::Allowed);
        e.target = AuditTarget::Command(format!("echo {i}"));
        e.class = Some(CommandClass::ReadOnly);
        e.status = Some(ToolStatus::Ok);
        logger.append(&e).unwrap();
    };
    for i in 0..25 {
        write(i);
    }
    let mut feed = AuditFeed::new(logger.paths().clone());
    let first = feed.older(10).unwrap();
    assert_eq!(first.records.len(), 10);
    assert!(!first.complete);
    assert_eq!(
        first.records.last().unwrap().target.as_deref(),
        Some("echo 24")
    );
    let second = feed.older(10).unwrap();
    assert_eq!(
        second.records.first().unwrap().target.as_deref(),
        Some("echo 5")
    );
    assert_eq!(
        second.records.last().unwrap().target.as_deref(),
        Some("echo 14")
    );
    let rest = feed.older(10).unwrap();
    assert_eq!(rest.records.len(), 5);
    assert!(rest.complete);
    write(25);
    let new = feed.poll().unwrap();
    assert_eq!(new.len(), 1);
    assert_eq!(new[0].target.as_deref(), Some("echo 25"));
    assert!(feed.poll().unwrap().is_empty());
    assert_eq!(AuditFeed::verify(logger.paths()), ChainState::Verified(26));
    let missing = AuditPaths::new(dir.path(), &root.path().join("nowhere"));
    assert_eq!(AuditFeed::verify(&missing), ChainState::NoLog);
}
