//! One test per gate of the router and per status, in-process.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use spear::harness::audit::Decision;
use spear::harness::command_policy::{ApprovalDecision, CommandClass};
use spear::harness::primitives::{ExecutionMode::*, ToolStatus};
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::refusal::Gate;
use spear::tools::router::turn::Turn;

use crate::support::*;

#[test]
fn ok_reads_a_numbered_window_and_is_not_audited() {
    let f = Fixture::new();
    f.write("src/a.txt", "one\ntwo\nthree\n");
    let r = f.router(Box::new(Recorder::default()));
    let mut t = turn(&r, Safe);
    let env = call(
        &r,
        &mut t,
        "read_file",
        json!({"path": "src/a.txt", "offset": 2, "limit": 1}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    assert!(env.preview.starts_with("     2\ttwo\n"), "{}", env.preview);
    assert!(env.preview.contains("lines 2-2 of 3"), "{}", env.preview);
    assert_eq!(env.gate, None);
    assert!(
        f.audit().is_empty(),
        "a successful read is not a mutating attempt"
    );
}

#[test]
fn unknown_tool_is_not_found() {
    let f = Fixture::new();
    let r = f.router(Box::new(Recorder::default()));
    let env = call(&r, &mut turn(&r, Auto), "rm_everything", json!({}));
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::NotFound, Some(Gate::UnknownTool))
    );
}

#[test]
fn schema_gate_names_the_field_and_runs_nothing() {
    let f = Fixture::new();
    let rec = Recorder::default();
    let r = f.router(Box::new(rec.clone()));
    let mut t = turn(&r, Auto);
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "ls", "timeout": "ten"}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Failed, Some(Gate::Schema))
    );
    assert!(
        env.reason
            .as_deref()
            .unwrap()
            .contains("`timeout`: expected integer"),
        "{env:?}"
    );
    let env = call(
        &r,
        &mut t,
        "patch",
        json!({"path": "x", "edits": [{"old": "a"}]}),
    );
    assert!(
        env.reason
            .as_deref()
            .unwrap()
            .contains("`edits[0].new`: is required"),
        "{env:?}"
    );
    let env = call(
        &r,
        &mut t,
        "patch",
        json!({"path": "x", "edits": [{"old": "a", "new": "b"}], "diff": "@@"}),
    );
    assert!(
        env.reason.as_deref().unwrap().contains("exactly one"),
        "{env:?}"
    );
    assert!(rec.ran.lock().unwrap().is_empty());
}

#[test]
fn request_scope_refuses_a_tool_the_turn_was_not_offered() {
    let f = Fixture::new();
    f.write("a.txt", "x");
    let r = f.router(Box::new(Recorder::default()));
    let normative = ExposureSettings {
        standard_engaged: true,
        ..ExposureSettings::default()
    };
    let view = ToolExposurePolicy::view(r.registry(), &normative);
    let mut t = Turn::new(
        Auto,
        view,
        Arc::new(spear::harness::command_policy::NoApprover),
    );
    let env = call(&r, &mut t, "read_file", json!({"path": "a.txt"}));
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Denied, Some(Gate::RequestScope))
    );
}

#[test]
fn workspace_gate_refuses_siblings_traversal_and_outside_searches() {
    let f = Fixture::new();
    std::fs::write(f.base.join("other-repo/secret.txt"), "s").unwrap();
    let r = f.router(Box::new(Recorder::default()));
    let mut t = turn(&r, Auto);
    let env = call(
        &r,
        &mut t,
        "read_file",
        json!({"path": "../other-repo/secret.txt"}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::InvalidPath, Some(Gate::Workspace))
    );
    assert_eq!(env.refusal_rule.as_deref(), Some("sibling_target"));
    let env = call(
        &r,
        &mut t,
        "write_file",
        json!({"path": "../../x", "content": "x"}),
    );
    assert_eq!(
        (env.status, env.refusal_rule.as_deref()),
        (ToolStatus::InvalidPath, Some("traversal"))
    );
    let env = call(
        &r,
        &mut t,
        "search_files",
        json!({"pattern": "root", "path": "/etc"}),
    );
    assert_eq!(env.status, ToolStatus::InvalidPath);
    assert!(
        env.reason
            .unwrap()
            .contains("refusing to search outside the project")
    );
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "echo hi > ../other-repo/pwned"}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Denied, Some(Gate::Workspace))
    );
    assert!(!f.base.join("other-repo/pwned").exists());
    let refused: Vec<_> = f
        .audit()
        .into_iter()
        .filter(|a| a.decision == Decision::Refused)
        .collect();
    assert_eq!(refused.len(), 4, "every refusal is audited");
}

#[test]
fn target_policy_gate_refuses_protected_files_to_every_writer() {
    let f = Fixture::new();
    f.write("vendor/lib.rs", "fn a() {}\n");
    f.write("gen.rs", "// @generated\nfn b() {}\n");
    let rec = Recorder::default();
    let r = f.router(Box::new(rec.clone()));
    let mut t = turn(&r, Auto);
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "vendor/lib.rs", "content": "x"}),
        ),
        (
            "patch",
            json!({"path": "./vendor/lib.rs", "edits": [{"old": "a", "new": "b"}]}),
        ),
        ("delete_file", json!({"path": "vendor/lib.rs"})),
        ("write_file", json!({"path": "gen.rs", "content": "x"})),
        ("terminal", json!({"command": "echo x | tee vendor/lib.rs"})),
    ] {
        let env = call(&r, &mut t, tool, args);
        assert_eq!(
            (env.status, env.gate),
            (ToolStatus::Denied, Some(Gate::TargetPolicy)),
            "{tool}"
        );
    }
    assert_eq!(f.read("vendor/lib.rs"), b"fn a() {}\n");
    assert!(rec.ran.lock().unwrap().is_empty());
}

#[test]
fn execution_modes_gate_keeps_file_writers_out_of_safe() {
    let f = Fixture::new();
    let r = f.router(Box::new(Recorder::default()));
    let env = call(
        &r,
        &mut turn(&r, Safe),
        "write_file",
        json!({"path": "a.txt", "content": "x"}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Denied, Some(Gate::ExecutionModes))
    );
    assert!(!f.project.join("a.txt").exists());
}

#[test]
fn terminal_timeouts_default_to_180_and_above_600_are_refused() {
    let f = Fixture::new();
    let rec = Recorder::default();
    let r = f.router(Box::new(rec.clone()));
    let mut t = turn(&r, Auto);
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "ls", "timeout": 601}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Denied, Some(Gate::Arguments))
    );
    call(&r, &mut t, "terminal", json!({"command": "ls"}));
    call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "ls", "timeout": 600}),
    );
    let ran = rec.ran.lock().unwrap();
    let timeouts: Vec<Duration> = ran.iter().map(|r| r.1).collect();
    assert_eq!(
        timeouts,
        [Duration::from_secs(180), Duration::from_secs(600)]
    );
    assert!(
        !ran[0].2.workspace_write,
        "a READ_ONLY command gets a read-only profile"
    );
}

#[test]
fn a_front_ends_timeout_replaces_the_terminals_default_but_not_the_calls_own() {
    let f = Fixture::new();
    let rec = Recorder::default();
    let r = f.router(Box::new(rec.clone()));
    let mut t = turn(&r, Auto);
    // `spear exec`: its --timeout, or the sandbox's 45 s, for a call that names none.
    t.command_timeout = Some(Duration::from_millis(45_500));
    call(&r, &mut t, "terminal", json!({"command": "ls"}));
    call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "ls", "timeout": 7}),
    );
    let timeouts: Vec<Duration> = rec.ran.lock().unwrap().iter().map(|r| r.1).collect();
    assert_eq!(
        timeouts,
        [Duration::from_millis(45_500), Duration::from_secs(7)]
    );
}

#[test]
fn authorization_refuses_what_the_mode_does_not_grant_and_dangerous_everywhere() {
    let f = Fixture::new();
    let rec = Recorder::default();
    let r = f.router(Box::new(rec.clone()));
    let env = call(
        &r,
        &mut turn(&r, Safe),
        "terminal",
        json!({"command": "touch x"}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Denied, Some(Gate::Authorization))
    );
    assert_eq!(env.class, Some(CommandClass::WorkspaceMutating));
    let env = call(
        &r,
        &mut turn(&r, Auto),
        "terminal",
        json!({"command": "rm -rf /"}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Denied, Some(Gate::Authorization))
    );
    assert!(rec.ran.lock().unwrap().is_empty());
    let env = call(
        &r,
        &mut turn(&r, Auto),
        "terminal",
        json!({"command": "touch x"}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    assert!(rec.ran.lock().unwrap()[0].2.workspace_write);
}

#[test]
fn ask_mode_asks_for_file_writes_through_the_same_authorization() {
    let f = Fixture::new();
    let r = f.router(Box::new(Recorder::default()));
    let no = ScriptedApprover::new(ApprovalDecision::Deny(Some("not now".into())));
    let env = call(
        &r,
        &mut turn_with(&r, Ask, no.clone()),
        "write_file",
        json!({"path": "a.txt", "content": "x"}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Denied, Some(Gate::Approval))
    );
    assert!(env.reason.unwrap().contains("not now"));
    let asked = no.asked.lock().unwrap();
    assert_eq!(
        (asked.len(), asked[0].class),
        (1, CommandClass::WorkspaceMutating)
    );
    assert_eq!(asked[0].writes, ["a.txt"]);
    let yes = ScriptedApprover::new(ApprovalDecision::Approve);
    let env = call(
        &r,
        &mut turn_with(&r, Ask, yes.clone()),
        "write_file",
        json!({"path": "d/a.txt", "content": "x"}),
    );
    assert_eq!(
        (env.status, env.changed_paths.clone()),
        (ToolStatus::Ok, vec!["d/a.txt".to_string()])
    );
    assert_eq!(f.read("d/a.txt"), b"x");
    let decisions: Vec<Decision> = f.audit().iter().map(|a| a.decision).collect();
    assert_eq!(decisions, [Decision::Denied, Decision::Approved]);
    let ws = r.host().working_state();
    assert_eq!(ws.changed_paths(), ["d/a.txt"]);
    assert!(ws.get("d/a.txt").unwrap().before.is_none());
}

#[test]
fn cancelled_when_nobody_can_be_asked() {
    let f = Fixture::new();
    f.write("a.txt", "keep");
    let r = f.router(Box::new(Recorder::default()));
    let env = call(
        &r,
        &mut turn(&r, Ask),
        "delete_file",
        json!({"path": "a.txt"}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Cancelled, Some(Gate::Approval))
    );
    assert_eq!(f.read("a.txt"), b"keep");
    assert_eq!(f.audit()[0].decision, Decision::Cancelled);
}

#[test]
fn not_found_for_missing_files_and_results() {
    let f = Fixture::new();
    let r = f.router(Box::new(Recorder::default()));
    let mut t = turn(&r, Auto);
    for (tool, args) in [
        ("read_file", json!({"path": "nope.txt"})),
        ("delete_file", json!({"path": "nope.txt"})),
        (
            "patch",
            json!({"path": "nope.txt", "edits": [{"old": "a", "new": "b"}]}),
        ),
        ("read_file", json!({"path": "result://123-4-5"})),
        ("read_file", json!({"path": "result://../../etc/passwd"})),
    ] {
        let env = call(&r, &mut t, tool, args);
        assert_eq!(env.status, ToolStatus::NotFound, "{tool}: {env:?}");
    }
}

#[test]
fn timeout_and_failed_come_back_from_the_executor() {
    let f = Fixture::new();
    let r = f.router(Box::new(BashExecutor::new(&f.project)));
    let mut t = turn(&r, Auto);
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "sleep 5", "timeout": 1}),
    );
    assert_eq!(env.status, ToolStatus::Timeout);
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "echo out; exit 3"}),
    );
    assert_eq!((env.status, env.exit_code), (ToolStatus::Failed, Some(3)));
    assert_eq!(env.preview, "out\n");
    assert_eq!(env.class, Some(CommandClass::ReadOnly));
}

#[test]
fn binary_files_are_described_not_dumped() {
    let f = Fixture::new();
    f.write("img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let r = f.router(Box::new(Recorder::default()));
    let env = call(
        &r,
        &mut turn(&r, Safe),
        "read_file",
        json!({"path": "img.png"}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    assert!(
        env.preview.contains("a PNG image (16 bytes)") && !env.preview.contains("IHDR"),
        "{}",
        env.preview
    );
}

#[test]
fn search_is_gitignore_aware_and_bounded() {
    let f = Fixture::new();
    f.write(".gitignore", "target/\n");
    f.write("target/out.txt", "needle\n");
    for i in 0..30 {
        f.write(&format!("src/f{i:02}.rs"), "needle\nneedle\n");
    }
    let r = f.router(Box::new(Recorder::default()));
    let env = call(
        &r,
        &mut turn(&r, Safe),
        "search_files",
        json!({"pattern": "needle", "max_results": 10, "glob": "*.rs"}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    assert_eq!(
        env.preview
            .lines()
            .filter(|l| l.starts_with("src/"))
            .count(),
        10
    );
    assert!(
        env.preview
            .contains("60 matches in 30 files; 50 more matches omitted"),
        "{}",
        env.preview
    );
    assert!(!env.preview.contains("target/"));
    let env = call(
        &r,
        &mut turn(&r, Safe),
        "search_files",
        json!({"pattern": "needle(", "regex": true}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Failed, Some(Gate::Schema))
    );
}

/// The person takes their time to answer; the audit records the call's duration, not theirs.
struct SlowYes;

impl spear::harness::command_policy::Approver for SlowYes {
    fn approve(&self, _: &spear::harness::command_policy::ApprovalRequest) -> ApprovalDecision {
        // Not synchronisation: the person's slowness is the input under test.
        std::thread::sleep(Duration::from_millis(600));
        ApprovalDecision::Approve
    }
}

#[test]
fn the_audited_duration_leaves_out_the_time_a_confirmation_waited() {
    let f = Fixture::new();
    let r = f.router(Box::new(Recorder::default()));
    let env = call(
        &r,
        &mut turn_with(&r, Ask, Arc::new(SlowYes)),
        "terminal",
        json!({"command": "touch x"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    let rec = f.audit().into_iter().last().unwrap();
    assert_eq!(rec.decision, Decision::Approved);
    let ms = rec.duration_ms.unwrap();
    assert!(ms < 600, "the 600 ms the person took was counted: {ms} ms");
}
