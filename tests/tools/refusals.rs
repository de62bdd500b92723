//! Deterministic refusals: five spellings of one refused call stop the turn (audited as
//! repeated_refusal_stopped); five different refused calls do not. The sandbox-down guard.

use serde_json::json;
use spear::harness::audit::Decision;
use spear::harness::primitives::{ExecutionMode::*, ToolStatus};
use spear::tools::refusal::Gate;

use crate::support::*;

#[test]
fn five_spellings_of_one_refused_call_stop_the_turn() {
    let f = Fixture::new();
    f.write("vendor/x.rs", "v");
    let rec = Recorder::default();
    let r = f.router(Box::new(rec.clone()));
    let mut t = turn(&r, Auto);
    let spellings = [
        "touch vendor/x.rs",
        "touch  ./vendor/x.rs",
        "touch 'vendor/x.rs'",
        "touch \"./vendor/x.rs\"",
        "  touch ./vendor//x.rs ",
    ];
    for (i, cmd) in spellings.iter().enumerate() {
        let env = call(&r, &mut t, "terminal", json!({"command": cmd}));
        assert_eq!(env.status, ToolStatus::Denied, "{cmd}");
        assert_eq!(env.turn_stopped, i == 4, "{cmd}");
    }
    assert!(
        t.stopped().unwrap().contains("refused 5 times"),
        "{:?}",
        t.stopped()
    );
    assert!(t.stopped().unwrap().contains("third_party"));
    // Anything after the stop is answered with the stop, and runs nothing.
    let env = call(&r, &mut t, "terminal", json!({"command": "ls"}));
    assert_eq!(
        (env.gate, env.turn_stopped),
        (Some(Gate::TurnStopped), true)
    );
    assert!(rec.ran.lock().unwrap().is_empty());
    let stops = f
        .audit()
        .iter()
        .filter(|a| a.decision == Decision::RepeatedRefusalStopped)
        .count();
    assert_eq!(stops, 1);
}

#[test]
fn five_different_refused_calls_do_not_stop_the_turn() {
    let f = Fixture::new();
    let r = f.router(Box::new(Recorder::default()));
    let mut t = turn(&r, Auto);
    for i in 0..5 {
        let env = call(
            &r,
            &mut t,
            "write_file",
            json!({"path": format!("vendor/f{i}.rs"), "content": "x"}),
        );
        assert_eq!((env.status, env.turn_stopped), (ToolStatus::Denied, false));
    }
    assert!(t.stopped().is_none());
    assert!(
        f.audit()
            .iter()
            .all(|a| a.decision != Decision::RepeatedRefusalStopped)
    );
}

#[test]
fn the_limit_is_configurable() {
    let f = Fixture::new();
    let r = f
        .router(Box::new(Recorder::default()))
        .with_refusal_limit(2);
    let mut t = turn(&r, Safe);
    let a = call(
        &r,
        &mut t,
        "write_file",
        json!({"path": "a", "content": "x"}),
    );
    let b = call(
        &r,
        &mut t,
        "write_file",
        json!({"path": "./a", "content": "y"}),
    );
    assert!(!a.turn_stopped && b.turn_stopped);
}

#[test]
fn sandbox_down_declines_every_later_write_in_the_turn() {
    let f = Fixture::new();
    f.write("a.txt", "keep");
    let r = f.router(Box::new(NoSandbox));
    let mut t = turn(&r, Auto);
    let env = call(
        &r,
        &mut t,
        "write_file",
        json!({"path": "before.txt", "content": "x"}),
    );
    assert_eq!(
        env.status,
        ToolStatus::Ok,
        "writes before the sandbox is known down go ahead"
    );
    let env = call(&r, &mut t, "terminal", json!({"command": "cargo test"}));
    assert_eq!(
        (env.status, env.sandbox_unavailable),
        (ToolStatus::Failed, true)
    );
    assert_eq!(
        t.sandbox_down(),
        Some("bwrap was not found on PATH (install bubblewrap)")
    );
    for (tool, args) in [
        ("write_file", json!({"path": "b.txt", "content": "x"})),
        (
            "patch",
            json!({"path": "a.txt", "edits": [{"old": "keep", "new": "lost"}]}),
        ),
        ("delete_file", json!({"path": "a.txt"})),
    ] {
        let env = call(&r, &mut t, tool, args);
        assert_eq!(
            (env.status, env.gate),
            (ToolStatus::Denied, Some(Gate::SandboxDown)),
            "{tool}"
        );
        let reason = env.reason.unwrap();
        assert!(
            reason.contains("sandbox is down") && reason.contains("nothing could be verified"),
            "{reason}"
        );
    }
    assert_eq!(f.read("a.txt"), b"keep");
    assert!(!f.project.join("b.txt").exists());
    // Reads still work; a new turn starts without the mark.
    let env = call(&r, &mut t, "read_file", json!({"path": "a.txt"}));
    assert_eq!(env.status, ToolStatus::Ok);
    let env = call(
        &r,
        &mut turn(&r, Auto),
        "write_file",
        json!({"path": "b.txt", "content": "x"}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
}
