//! The router's call path is the spec's (5.1.4), asserted as one whole list: a call that asks
//! and runs passes every step, in `SPEC_ORDER`; other calls pass the same order without the
//! steps they did not reach or need.

use std::sync::{Arc, Mutex};

use serde_json::json;
use spear::harness::command_policy::ApprovalDecision;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::observer::{CallEnd, ObserverError, ToolObserver};
use spear::tools::pipeline::{SPEC_ORDER, Step, in_spec_order};

use crate::support::{Fixture, Recorder, ScriptedApprover, call, turn, turn_with};

/// Keeps the steps of every call that ended.
#[derive(Default)]
struct Steps(Mutex<Vec<Vec<Step>>>);

impl ToolObserver for Steps {
    fn after(&self, end: &CallEnd<'_>) -> Result<(), ObserverError> {
        self.0.lock().unwrap().push(end.steps.to_vec());
        Ok(())
    }
}

/// The spec's order without the steps a call did not reach or need.
fn spec_order_without(skipped: &[Step]) -> Vec<Step> {
    SPEC_ORDER
        .iter()
        .copied()
        .filter(|s| !skipped.contains(s))
        .collect()
}

fn last(steps: &Steps) -> Vec<Step> {
    steps.0.lock().unwrap().last().cloned().unwrap()
}

#[test]
fn a_call_that_asks_and_runs_passes_every_step_in_the_specs_order() {
    let fx = Fixture::new();
    let steps = Arc::new(Steps::default());
    let recorder = Recorder::default();
    let router = fx
        .router(Box::new(recorder.clone()))
        .with_observer(steps.clone());
    let approver = ScriptedApprover::new(ApprovalDecision::Approve);
    let mut t = turn_with(&router, ExecutionMode::Ask, approver.clone());
    let env = call(
        &router,
        &mut t,
        "terminal",
        json!({"command": "touch made.txt"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert_eq!(approver.asked.lock().unwrap().len(), 1, "ASK asked once");
    assert_eq!(recorder.ran.lock().unwrap().len(), 1, "the command ran");
    assert_eq!(
        last(&steps),
        SPEC_ORDER.to_vec(),
        "the whole path, in the spec's order: schema, request scope, target policy, \
         sandbox-down guard, execution modes, hooks, classify, authorize, approve, run, \
         envelope, record"
    );
}

#[test]
fn calls_stopped_or_not_asked_keep_the_order_without_the_steps_they_skipped() {
    let fx = Fixture::new();
    fx.write("a.txt", "x\n");
    let steps = Arc::new(Steps::default());
    let router = fx
        .router(Box::new(Recorder::default()))
        .with_observer(steps.clone());
    // AUTO grants a write without asking: no approve step.
    let mut t = turn(&router, ExecutionMode::Auto);
    call(
        &router,
        &mut t,
        "terminal",
        json!({"command": "touch b.txt"}),
    );
    assert_eq!(last(&steps), spec_order_without(&[Step::Approve]));
    // SAFE refuses it at authorization: nothing after classify but the envelope and the record.
    let mut t = turn(&router, ExecutionMode::Safe);
    let env = call(
        &router,
        &mut t,
        "terminal",
        json!({"command": "touch c.txt"}),
    );
    assert_eq!(env.status, ToolStatus::Denied);
    assert_eq!(
        last(&steps),
        spec_order_without(&[Step::Authorize, Step::Approve, Step::Run])
    );
    // A sibling target stops at the target policy.
    let env = call(
        &router,
        &mut t,
        "write_file",
        json!({"path": "../other-repo/x", "content": "y"}),
    );
    assert_eq!(env.status, ToolStatus::InvalidPath, "{env:?}");
    assert_eq!(
        last(&steps),
        vec![
            Step::Schema,
            Step::RequestScope,
            Step::Envelope,
            Step::Record
        ]
    );
    // A read needs no authorization.
    let env = call(&router, &mut t, "read_file", json!({"path": "a.txt"}));
    assert_eq!(env.status, ToolStatus::Ok);
    for s in steps.0.lock().unwrap().iter() {
        assert!(in_spec_order(s), "{s:?}");
    }
    assert_eq!(
        last(&steps),
        spec_order_without(&[Step::Classify, Step::Authorize, Step::Approve])
    );
}
