//! Approvals at the tool seam: the router builds the request (its own id, the call's id, the
//! tool, the class, the tool's typed preview), "allow for session" leaves a grant the router
//! keeps and consults for exactly that command and class, and the audit log says who decided.

use std::sync::Mutex;

use serde_json::json;
use spear::harness::command_policy::{ApprovalDecision, CommandClass};
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::approval::{CallApprovalRequest, CallApprover};
use spear::tools::preview::Preview;
use spear::tools::router::turn::Turn;

use crate::support::{Fixture, Recorder, call};

/// Answers every request with `answer` and keeps each one.
struct Keeps {
    answer: ApprovalDecision,
    asked: Mutex<Vec<CallApprovalRequest>>,
}

impl Keeps {
    fn new(answer: ApprovalDecision) -> std::sync::Arc<Keeps> {
        std::sync::Arc::new(Keeps {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<CallApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl CallApprover for Keeps {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

fn ask_turn(router: &spear::tools::router::ToolRouter, approver: std::sync::Arc<Keeps>) -> Turn {
    let view = spear::tools::exposure::ToolExposurePolicy::view(
        router.registry(),
        &spear::tools::exposure::ExposureSettings::default(),
    );
    Turn::new(ExecutionMode::Ask, view, approver)
}

#[test]
fn the_request_carries_the_call_the_tool_and_the_tools_own_preview() {
    let fx = Fixture::new();
    fx.write("src/lib.rs", "pub fn a() {}\npub fn b() {}\n");
    let router = fx.router(Box::new(Recorder::default()));
    let keeps = Keeps::new(ApprovalDecision::Deny(None));
    let mut t = ask_turn(&router, keeps.clone());
    call(
        &router,
        &mut t,
        "patch",
        json!({"path": "src/lib.rs", "edits": [{"old": "b() {}", "new": "b() -> u8 { 1 }"}]}),
    );
    call(
        &router,
        &mut t,
        "terminal",
        json!({"command": "touch made.txt"}),
    );
    let asked = keeps.asked();
    assert_eq!(asked.len(), 2);
    let (patch, term) = (&asked[0], &asked[1]);
    assert_eq!(
        (patch.call_id.as_str(), patch.tool.as_str()),
        ("t1", "patch")
    );
    assert_eq!(patch.class, CommandClass::WorkspaceMutating);
    assert_eq!(patch.targets, ["src/lib.rs"]);
    let change = patch
        .preview
        .as_ref()
        .and_then(Preview::file_change)
        .unwrap();
    assert_eq!(
        change.before.as_deref(),
        Some("pub fn a() {}\npub fn b() {}\n")
    );
    assert_eq!(
        change.after.as_deref(),
        Some("pub fn a() {}\npub fn b() -> u8 { 1 }\n")
    );
    assert_eq!(term.tool, "terminal");
    match &term.preview {
        Some(Preview::Command { assessment }) => {
            assert_eq!(assessment.command, "touch made.txt");
            assert_eq!(assessment.class, term.class);
        }
        other => panic!("a command's preview is its assessment: {other:?}"),
    }
    assert_ne!(patch.id, term.id, "every request has its own id");
    // The person said no: nothing was written.
    assert_eq!(fx.read("src/lib.rs"), b"pub fn a() {}\npub fn b() {}\n");
}

#[test]
fn allow_for_session_is_a_grant_for_exactly_that_command_and_the_audit_says_so() {
    let fx = Fixture::new();
    let router = fx.router(Box::new(Recorder::default()));
    let keeps = Keeps::new(ApprovalDecision::ApproveForSession);
    let mut t = ask_turn(&router, keeps.clone());
    let touch = json!({"command": "touch made.txt"});
    assert_eq!(
        call(&router, &mut t, "terminal", touch.clone()).status,
        ToolStatus::Ok
    );
    assert_eq!(keeps.asked().len(), 1);
    // The same command again, in a later turn of the session: the grant answers.
    let mut later = ask_turn(&router, keeps.clone());
    let granted = call(&router, &mut later, "terminal", touch);
    assert_eq!(granted.status, ToolStatus::Ok);
    assert_eq!(
        granted.decided_by,
        Some(spear::harness::audit::DecidedBy::SessionGrant),
        "the envelope says so too (the screen tells the person)"
    );
    assert_eq!(
        keeps.asked().len(),
        1,
        "a granted command is not asked again"
    );
    // Another command (or the same words spaced otherwise) is asked.
    call(
        &router,
        &mut later,
        "terminal",
        json!({"command": "touch  made.txt"}),
    );
    assert_eq!(keeps.asked().len(), 2);
    let grants = router.grants().list();
    assert_eq!(grants.len(), 2, "{grants:?}");
    assert_eq!(grants[0].command, "touch made.txt");
    let records = fx.audit();
    let by: Vec<_> = records
        .iter()
        .map(|r| (r.decision, r.decided_by, r.grant.map(|g| (g.id, g.class))))
        .collect();
    use spear::harness::audit::{DecidedBy, Decision};
    assert_eq!(
        by,
        [
            (Decision::Approved, Some(DecidedBy::Person), None),
            (
                Decision::Approved,
                Some(DecidedBy::SessionGrant),
                Some((grants[0].id, CommandClass::WorkspaceMutating))
            ),
            (Decision::Approved, Some(DecidedBy::Person), None),
        ]
    );
}

#[test]
fn the_audit_says_the_mode_or_the_policy_decided_when_nobody_was_asked() {
    let fx = Fixture::new();
    let router = fx.router(Box::new(Recorder::default()));
    let mut t = crate::support::turn(&router, ExecutionMode::Safe);
    call(
        &router,
        &mut t,
        "terminal",
        json!({"command": "touch made.txt"}),
    );
    call(
        &router,
        &mut t,
        "write_file",
        json!({"path": "../other-repo/x", "content": "y"}),
    );
    let mut auto = crate::support::turn(&router, ExecutionMode::Auto);
    call(
        &router,
        &mut auto,
        "terminal",
        json!({"command": "touch made.txt"}),
    );
    use spear::harness::audit::{DecidedBy, Decision};
    let by: Vec<_> = fx
        .audit()
        .iter()
        .map(|r| (r.decision, r.decided_by))
        .collect();
    assert_eq!(
        by,
        [
            (Decision::Denied, Some(DecidedBy::Mode)),
            (Decision::Refused, Some(DecidedBy::Policy)),
            (Decision::Allowed, Some(DecidedBy::Mode)),
        ]
    );
}
