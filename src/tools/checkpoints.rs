//! The session's checkpoints as the router takes them: one just before and one just after
//! every call that may change the working tree (a file tool's write, `fetch_url`'s `save_as`,
//! any command not READ_ONLY), for every front end, under the session the audit log names.

use crate::harness::audit::display::escape_controls;
use crate::harness::audit::{
    AuditEvent, AuditTarget, CheckpointRef, DecidedBy, Decision, MAX_CHANGED_LISTED,
};
use crate::harness::checkpoint::{Checkpoints, Plan, Report, Taken};
use crate::tools::observer::SessionLabel;

/// The checkpoints of the workspace, bound to the session whose calls they are.
#[derive(Debug, Clone)]
pub struct SessionCheckpoints {
    inner: Checkpoints,
    session: SessionLabel,
}

impl SessionCheckpoints {
    /// Bind `inner` to `session`, and start the session's first checkpoint in the background.
    pub fn new(inner: Checkpoints, session: SessionLabel) -> Self {
        inner.start_in_background();
        SessionCheckpoints { inner, session }
    }

    pub fn checkpoints(&self) -> &Checkpoints {
        &self.inner
    }

    /// The session the checkpoints are logged under now.
    pub fn session(&self) -> String {
        self.session.get()
    }

    /// The checkpoint before a call; `Err` says why none could be taken.
    pub(crate) fn before(
        &self,
        turn: u64,
        call: &str,
        tool: &str,
        target: Option<&str>,
    ) -> Result<Taken, String> {
        self.inner
            .before_call(&self.session.get(), turn, call, tool, target)
            .map_err(|e| e.to_string())
    }

    /// Close `taken` with the checkpoint after the call; what the call's record says of it.
    pub(crate) fn after(&self, taken: Taken) -> CheckpointRef {
        let uncovered: Vec<String> = taken
            .uncovered
            .iter()
            .take(MAX_CHANGED_LISTED)
            .map(|(p, why)| format!("{p} ({why})"))
            .collect();
        let (turn, before) = (taken.record.turn, taken.record.before.clone());
        let failed = self.inner.after_call(taken).err().map(|e| e.to_string());
        CheckpointRef {
            turn,
            before,
            uncovered,
            failed,
        }
    }

    /// What a call's record says when no checkpoint could be taken before it.
    pub(crate) fn failed(why: String) -> CheckpointRef {
        CheckpointRef {
            turn: 0,
            before: String::new(),
            uncovered: Vec::new(),
            failed: Some(why),
        }
    }
}

fn turns_text(plan: &Plan) -> String {
    let t: Vec<String> = plan.turns.iter().map(u32::to_string).collect();
    format!(
        "turn{} {} of session {}",
        if t.len() == 1 { "" } else { "s" },
        t.join(", "),
        plan.session
    )
}

/// What an undo would do, in lines (the screen shows the same).
pub fn plan_lines(plan: &Plan) -> Vec<String> {
    let mut out = vec![format!("Taking back {} would:", turns_text(plan))];
    for s in plan.steps.iter().filter(|s| !s.conflict) {
        let what = match (&s.now, &s.to) {
            (None, Some(_)) => "bring back",
            (Some(_), None) => "remove",
            _ => "restore",
        };
        out.push(format!("  {what:<11} {}", escape_controls(&s.path)));
    }
    for c in &plan.conflicts {
        out.push(format!(
            "  conflict    {}: {} (left alone; `--force` restores it)",
            escape_controls(&c.path),
            c.why
        ));
    }
    for (p, why) in &plan.unrestorable {
        out.push(format!("  cannot      {}: {why}", escape_controls(p)));
    }
    if plan.steps.is_empty() && plan.unrestorable.is_empty() {
        out.push("  nothing: the tree is already as it was".into());
    }
    out
}

/// What an undo did, in lines (the screen shows the same).
pub fn report_lines(plan: &Plan, r: &Report) -> Vec<String> {
    let mut out = vec![format!("Took back {}.", turns_text(plan))];
    if r.resumed {
        out.push("  (an interrupted restore was finished first)".into());
    }
    let groups: [(&str, &Vec<String>); 3] = [
        ("restored", &r.restored),
        ("removed", &r.removed),
        ("brought back", &r.recreated),
    ];
    for (what, paths) in groups {
        for p in paths {
            out.push(format!("  {what:<13} {}", escape_controls(p)));
        }
    }
    for c in &r.left {
        out.push(format!(
            "  conflict      {}: {} (left alone; `spear undo --force` restores it)",
            escape_controls(&c.path),
            c.why
        ));
    }
    for (p, why) in r.failed.iter().chain(plan.unrestorable.iter()) {
        out.push(format!("  not restored  {}: {why}", escape_controls(p)));
    }
    for p in &r.setid_dropped {
        out.push(format!(
            "  note          {}: its set-id bit was not given back",
            escape_controls(p)
        ));
    }
    if plan.has_git {
        out.push(
            "git's HEAD and index were not moved back: `git status` shows where they stand (a commit the session made is undone with `git reset --soft HEAD~1`)."
                .into(),
        );
    }
    out
}

/// The audit record of an undo the person asked for.
pub fn undo_event(plan: &Plan, report: &Report, forced: bool) -> AuditEvent {
    let changed: Vec<String> = report
        .restored
        .iter()
        .chain(&report.removed)
        .chain(&report.recreated)
        .cloned()
        .collect();
    AuditEvent {
        target: AuditTarget::Path(format!(
            "{}{}",
            turns_text(plan),
            if forced { " (forced)" } else { "" }
        )),
        changed_paths: Some(changed.len() as u64),
        changed,
        changes_incomplete: !report.failed.is_empty() || !report.left.is_empty(),
        decided_by: Some(DecidedBy::Person),
        ..AuditEvent::new(plan.session.clone(), "undo", Decision::Approved)
    }
}
