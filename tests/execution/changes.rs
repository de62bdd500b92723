//! Issue 8, item 8: what a command changed in the workspace is reported, by CommandRunner, by
//! `spear exec --json` and `spear tool terminal --json`, in the audit line of the call, and in
//! WorkingState for the terminal; a read-only run takes no snapshot and reports nothing.

use std::path::Path;
use std::sync::Arc;

use assert_cmd::Command;
use serde_json::{Value, json};
use spear::agent::builder::{Place, SessionBuilder};
use spear::config::HarnessSettings;
use spear::harness::command_policy::NoApprover;
use spear::harness::command_runner::CommandRunner;
use spear::harness::primitives::{ExecutionMode, ToolStatus, WorkspaceChanges};
use spear::harness::workspace::Workspace;
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::router::ToolCall;
use spear::tools::router::turn::Turn;
use spear::tools::working_state::NOT_HASHED;

use crate::support::*;

/// The command every test runs: modifies a tracked file, creates one, deletes one, makes a
/// directory, and writes inside an ignored build directory (not reported).
const CHANGE: &str =
    "echo more >> tracked.txt; echo new > new.txt; rm old.txt; mkdir made; touch target/out.o";

fn seed(ws: &Path) {
    std::fs::write(ws.join("tracked.txt"), "tracked\n").unwrap();
    std::fs::write(ws.join("old.txt"), "old\n").unwrap();
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(ws.join("target")).unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "// lib\n").unwrap();
}

fn expected() -> WorkspaceChanges {
    WorkspaceChanges {
        created: vec!["made".into(), "new.txt".into()],
        modified: vec!["tracked.txt".into()],
        deleted: vec!["old.txt".into()],
        incomplete: None,
    }
}

const ALL: [&str; 4] = ["made", "new.txt", "old.txt", "tracked.txt"];

#[tokio::test]
async fn command_runner_reports_exactly_what_a_writable_command_changed() {
    let (_d, ws) = workspace();
    seed(&ws);
    let r = runner(&ws);
    let res = run(&r, writable(), CHANGE).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(ws.join("target/out.o").exists() && !ws.join("old.txt").exists());
    assert_eq!(res.changed_paths, ALL);
    assert_eq!(res.changes.as_deref(), Some(&expected()));
    // Nothing changed: an empty comparison, not a missing one.
    let res = run(&r, writable(), "cat tracked.txt >/dev/null").await;
    assert_eq!(res.changes.as_deref(), Some(&WorkspaceChanges::default()));
}

/// A snapshot bound smaller than the workspace makes every snapshotting run say it was hit;
/// the read-only run says nothing, so it took no snapshot.
#[tokio::test]
async fn a_read_only_command_takes_no_snapshot_and_reports_none() {
    let (_d, ws) = workspace();
    for i in 0..10 {
        std::fs::write(ws.join(format!("f{i}")), "x").unwrap();
    }
    let mut cfg = config(&ws);
    cfg.snapshot_max_entries = 3;
    let r = CommandRunner::new(cfg).unwrap();
    let control = run(&r, writable(), "echo changed > f0").await;
    let why = control.changes.as_ref().and_then(|c| c.incomplete.clone());
    assert!(
        why.as_deref()
            .is_some_and(|w| w.contains("more entries than the 3")),
        "positive control: a writable run snapshots ({control:?})"
    );
    assert_eq!(control.changed_paths, ["f0"]);
    let res = run(&r, read_only(), "cat f0; ls").await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(
        res.stdout.starts_with("changed\n"),
        "the command ran: {res:?}"
    );
    assert!(res.changed_paths.is_empty());
    assert_eq!(res.changes, None, "a read-only run took a snapshot");
}

fn spear(ws: &Path) -> Command {
    spear_in(ws)
}

fn last_audit_line(ws: &Path) -> Value {
    let out = spear(ws).args(["audit", "--json"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn spear_exec_json_and_its_audit_line_carry_the_changes() {
    let (_d, ws) = workspace();
    seed(&ws);
    let out = spear(&ws)
        .args(["exec", "--mode", "auto", "--json", "--", CHANGE])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["changed_paths"], json!(ALL), "{v}");
    assert_eq!(v["changes"], serde_json::to_value(expected()).unwrap());
    let rec = last_audit_line(&ws);
    assert_eq!(rec["changed_paths"], 4, "{rec}");
    assert_eq!(rec["changed"], json!(ALL), "{rec}");
    let human = spear(&ws).arg("audit").output().unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(
        human.contains("changed: made, new.txt, old.txt, tracked.txt"),
        "{human}"
    );
    // A read-only command: none, and the audit line says zero.
    let out = spear(&ws)
        .args(["exec", "--mode", "auto", "--json", "--", "cat tracked.txt"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["changed_paths"].clone(), v.get("changes")),
        (json!([]), None)
    );
    assert_eq!(v["stdout"], "tracked\nmore\n");
    let rec = last_audit_line(&ws);
    assert_eq!(
        (rec["changed_paths"].clone(), rec.get("changed")),
        (json!(0), None)
    );
}

#[test]
fn spear_tool_terminal_json_and_its_audit_line_carry_the_changes() {
    let (_d, ws) = workspace();
    seed(&ws);
    let out = spear(&ws)
        .args([
            "tool",
            "terminal",
            &json!({"command": CHANGE}).to_string(),
            "--mode",
            "auto",
            "--json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["changed_paths"], json!(ALL), "{v}");
    assert_eq!(v["changes"], serde_json::to_value(expected()).unwrap());
    let rec = last_audit_line(&ws);
    assert_eq!(rec["tool"], "terminal");
    assert_eq!(rec["changed"], json!(ALL), "{rec}");
}

#[test]
fn the_terminal_records_grounded_mutations_in_working_state() {
    let (_d, ws) = workspace();
    seed(&ws);
    let state = state_dir(&ws);
    require_bwrap();
    // Built as every front end builds it: the library's builder, the real sandbox.
    let place = Place::of(Workspace::new(&ws).unwrap(), ws.clone(), state);
    let router = SessionBuilder::new(place, HarnessSettings::default(), "test")
        .router()
        .unwrap();
    let view = ToolExposurePolicy::view(router.registry(), &ExposureSettings::default());
    let mut turn = Turn::new(ExecutionMode::Auto, view, Arc::new(NoApprover));
    let call = ToolCall {
        id: "c1".into(),
        name: "terminal".into(),
        arguments: json!({"command": CHANGE}),
    };
    let env = router.call(&mut turn, &call).unwrap();
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(env.model_text().contains(
        "[changed in the workspace: created made, new.txt; modified tracked.txt; deleted old.txt]"
    ));
    let w = router.host().working_state();
    assert_eq!(w.changed_paths(), ALL);
    let new = w.get("new.txt").unwrap();
    assert_eq!(new.before, None);
    assert_eq!(
        new.after.as_deref(),
        Some(spear::tools::working_state::content_hash(b"new\n").as_str())
    );
    assert_eq!(
        w.get("old.txt").unwrap().before.as_deref(),
        Some(NOT_HASHED)
    );
    assert_eq!(w.get("old.txt").unwrap().after, None);
}
