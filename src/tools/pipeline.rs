//! The steps of the spec's "life of a tool call" (5.1.4), named, in the order the router takes
//! them. Invariant: `SPEC_ORDER` is that order, the router records each step a call passed in
//! the order it passed it, and a call that passed every step has a trace equal to `SPEC_ORDER`
//! (a test asserts the whole list), so a gate added to the router is added here, once, for every
//! front end (the model, `spear tool`, `spear exec`, the screen's `!COMMAND`).

use serde::Serialize;

/// One step of the call path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// The arguments fit the tool's schema (and its handler could read them).
    Schema,
    /// The tool is offered to this turn, and a purely normative turn reaches no working tree.
    RequestScope,
    /// Workspace confinement and the target policy judged every path the call names and every
    /// write a command makes (siblings, generated, snapshot and third-party targets, searches
    /// outside the project).
    TargetPolicy,
    /// The sandbox was not reported down in this turn, or the call writes nothing (5.1.5).
    SandboxDown,
    /// The tool's spec lets it run in the turn's mode (`execution_modes`).
    ExecutionModes,
    /// The handler prepared its action (the typed preview) and the observers' `before` hooks
    /// were told.
    Hooks,
    /// The command's classification (or a file tool's write, assessed as WORKSPACE_MUTATING)
    /// became the call's: what authorization intersects. The bash parse itself was taken when
    /// the call was planned, because the target gates judge the writes it found.
    Classify,
    /// The class was intersected with what the mode grants; anything not granted ends here.
    Authorize,
    /// ASK mode asked for a confirmation (a person, or a session grant they gave, answered).
    Approve,
    /// The action ran (for a command: the sandbox preflight, its checks, the confined run).
    Run,
    /// The result was normalised into a `ToolResultEnvelope` (large output kept whole in the
    /// ResultStore, a bounded preview shown).
    Envelope,
    /// The observers' `after` hooks recorded the call (the audit log).
    Record,
}

/// The spec's order (5.1.4), every step of a call that asked and ran.
pub const SPEC_ORDER: [Step; 12] = [
    Step::Schema,
    Step::RequestScope,
    Step::TargetPolicy,
    Step::SandboxDown,
    Step::ExecutionModes,
    Step::Hooks,
    Step::Classify,
    Step::Authorize,
    Step::Approve,
    Step::Run,
    Step::Envelope,
    Step::Record,
];

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Schema => "schema",
            Step::RequestScope => "request_scope",
            Step::TargetPolicy => "target_policy",
            Step::SandboxDown => "sandbox_down",
            Step::ExecutionModes => "execution_modes",
            Step::Hooks => "hooks",
            Step::Classify => "classify",
            Step::Authorize => "authorize",
            Step::Approve => "approve",
            Step::Run => "run",
            Step::Envelope => "envelope",
            Step::Record => "record",
        }
    }
}

/// Whether `trace` is a subsequence of `SPEC_ORDER`: every call, whatever it skipped or where
/// it was stopped, took its steps in the spec's order.
pub fn in_spec_order(trace: &[Step]) -> bool {
    let mut order = SPEC_ORDER.iter();
    trace.iter().all(|s| order.any(|o| o == s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_out_of_order_is_told_apart() {
        assert!(in_spec_order(&SPEC_ORDER));
        assert!(in_spec_order(&[Step::Schema, Step::Run, Step::Record]));
        assert!(!in_spec_order(&[Step::Authorize, Step::Classify]));
        assert!(!in_spec_order(&[Step::Schema, Step::Schema]));
    }
}
