//! Issue 10, item 4: tool defaults fail closed. A tool whose spec says it mutates (the
//! default) needs the mode's write grant even when its plan names no target and no command,
//! and a spec that declares no execution modes keeps a mutating tool out of SAFE.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use spear::harness::audit::AuditLogger;
use spear::harness::command_policy::ApprovalDecision;
use spear::harness::primitives::{ExecutionMode, ToolResult, ToolStatus};
use spear::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use spear::tools::host::{HostConfig, SpearHost};
use spear::tools::observer::AuditObserver;
use spear::tools::refusal::{Gate, Refusal};
use spear::tools::registry::ToolRegistry;
use spear::tools::router::ToolRouter;
use spear::tools::spec::{Surface, ToolSpec};

use crate::support::*;

/// A handler whose plan forgets to name what it changes; it records each profile it ran with.
#[derive(Clone, Default)]
struct Forgetful(Arc<Mutex<Vec<bool>>>);

struct Run(Arc<Mutex<Vec<bool>>>);

impl ToolHandler for Forgetful {
    fn plan(&self, _args: &Value, _host: &SpearHost) -> Result<Plan, Refusal> {
        Ok(Plan {
            targets: Vec::new(),
            command: None,
            audit_target: None,
            action: Box::new(Run(self.0.clone())),
        })
    }
}

impl Action for Run {
    fn run(self: Box<Self>, _host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        self.0.lock().unwrap().push(ctx.profile.workspace_write);
        ToolResult::ok("changed something").into()
    }
}

fn router(f: &Fixture, spec: ToolSpec, handler: Forgetful) -> ToolRouter {
    let mut registry = ToolRegistry::new();
    registry.register(spec, Arc::new(handler)).unwrap();
    let audit = Arc::new(AuditLogger::open_in(&f.state, &f.project).unwrap());
    ToolRouter::new(
        registry,
        Arc::new(f.host(Box::new(Recorder::default()), HostConfig::default())),
    )
    .with_observer(Arc::new(AuditObserver::new(audit, "test")))
}

fn spec() -> ToolSpec {
    ToolSpec::new(
        "forgetful",
        "changes things",
        json!({"type": "object"}),
        Surface::Coding,
    )
}

#[test]
fn a_mutating_tool_without_declared_modes_never_runs_in_safe() {
    let f = Fixture::new();
    let ran = Forgetful::default();
    let r = router(&f, spec(), ran.clone());
    let env = call(
        &r,
        &mut turn(&r, ExecutionMode::Safe),
        "forgetful",
        json!({}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Denied, Some(Gate::ExecutionModes))
    );
    assert!(ran.0.lock().unwrap().is_empty());
}

#[test]
fn a_mutating_tool_whose_plan_names_nothing_still_needs_the_write_grant() {
    let f = Fixture::new();
    let ran = Forgetful::default();
    // Declared to run everywhere: the mode's capabilities must still decide.
    let all = spec().modes(&ExecutionMode::ALL);
    let r = router(&f, all, ran.clone());
    let env = call(
        &r,
        &mut turn(&r, ExecutionMode::Safe),
        "forgetful",
        json!({}),
    );
    assert_eq!(
        (env.status, env.gate),
        (ToolStatus::Denied, Some(Gate::Authorization)),
        "{env:?}"
    );
    // ASK asks: a person who says no stops it.
    let no = ScriptedApprover::new(ApprovalDecision::Deny(None));
    let env = call(
        &r,
        &mut turn_with(&r, ExecutionMode::Ask, no.clone()),
        "forgetful",
        json!({}),
    );
    assert_eq!(env.status, ToolStatus::Denied, "{env:?}");
    assert_eq!(
        no.asked.lock().unwrap().len(),
        1,
        "the person was not asked"
    );
    assert!(ran.0.lock().unwrap().is_empty());
    // AUTO grants it, with the write capability in its profile.
    let env = call(
        &r,
        &mut turn(&r, ExecutionMode::Auto),
        "forgetful",
        json!({}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert_eq!(*ran.0.lock().unwrap(), vec![true]);
}

#[test]
fn a_read_only_tool_runs_in_every_mode_without_asking() {
    let f = Fixture::new();
    let ran = Forgetful::default();
    let r = router(&f, spec().read_only(), ran.clone());
    for mode in ExecutionMode::ALL {
        let env = call(&r, &mut turn(&r, mode), "forgetful", json!({}));
        assert_eq!(env.status, ToolStatus::Ok, "{mode}: {env:?}");
    }
    assert_eq!(*ran.0.lock().unwrap(), vec![false, false, false]);
}
