//! A request with a standard engaged: classified by the `TaskController`, then run in the
//! passes its class has (`ExposureSettings::passes`), each pass on its own view and with its own
//! note in the system prompt; a MIXED request's implementation pass is handed the normative
//! pass's findings. Invariant: every pass is announced (`pass_started`) before its first model
//! request, so the transcript shows which tools each call was made under.

use crate::agent::event::{AgentEvent, StopReason};
use crate::agent::model::{ChatMessage, ChatModel};
use crate::agent::runtime::{AgentRuntime, Run, TaskOutcome};
use crate::tools::exposure::{ExposureSettings, Pass};

impl<M: ChatModel + 'static> AgentRuntime<M> {
    /// A request with `standard` engaged: classified, then run in the passes its class has
    /// (`ExposureSettings::passes`); a MIXED request's implementation pass is handed the
    /// normative pass's findings.
    pub(super) async fn passes(
        &mut self,
        run: &mut Run<'_>,
        objective: &str,
        standard: &str,
    ) -> TaskOutcome {
        let events = run.task.events().clone();
        let classification = run
            .task
            .classify(objective, standard, self.model.as_ref())
            .await;
        self.emit(&events, classification.event());
        if run.task.is_cancelled() {
            return self.end(run, StopReason::Cancelled, None);
        }
        let passes = ExposureSettings::passes(
            true,
            self.router.host().config().web_enabled,
            classification.class,
        );
        let two = passes.len() > 1;
        let mut outcome = None;
        for (pass, settings) in passes {
            self.set_view(&settings);
            self.emit(
                &events,
                AgentEvent::PassStarted {
                    pass,
                    surface: self.view.surface,
                    tools: self.view.names.iter().cloned().collect(),
                },
            );
            let mut note = pass_note(pass, standard, two);
            if self.view.surface == crate::tools::spec::Surface::Normative {
                // The base prompt describes the coding core's six tools; this pass has others.
                let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
                note.push_str(&format!(
                    " In this pass your tools are exactly: {}; the six tools described above \
                     are not offered.",
                    names.join(", ")
                ));
            }
            self.pass_note = Some(note);
            if pass == Pass::Implementation && two {
                let findings = self.findings(standard);
                self.push(&events, ChatMessage::User { content: findings });
            }
            let o = self.pass(run).await;
            let finished = o.reason == StopReason::Finished;
            outcome = Some(o);
            if !finished {
                break;
            }
        }
        outcome.unwrap_or_else(|| self.end(run, StopReason::Finished, None))
    }

    /// The normative pass's findings, as the implementation pass receives them: its answer
    /// (which cites and quotes clauses) and the references it read.
    fn findings(&self, standard: &str) -> String {
        let answer = self
            .conversation
            .iter()
            .rev()
            .find_map(|m| match m {
                ChatMessage::Assistant {
                    content: Some(c), ..
                } if !c.trim().is_empty() => Some(c.clone()),
                _ => None,
            })
            .unwrap_or_else(|| "(the normative pass gave no answer)".into());
        format!(
            "[Spear: implementation pass. The normative pass on {standard} found:\n{answer}\n\
             Now make the change with the coding tools, keeping to the clauses cited above, and \
             name the clause each change satisfies.]"
        )
    }
}

/// What a pass adds to the system prompt.
fn pass_note(pass: Pass, standard: &str, two_passes: bool) -> String {
    match (pass, two_passes) {
        (Pass::Normative, true) => format!(
            "The standard {standard} is engaged. This is the normative pass of a request that \
             also asks for a change: establish only what {standard} requires for it. Use \
             standard_search and standard_read, cite each requirement by its reference \
             ({standard} §4.2.1 or {standard} p. 3) and quote it. The change itself is made in \
             a later pass with the coding tools."
        ),
        (Pass::Normative, false) => format!(
            "The standard {standard} is engaged and this request asks what it requires. Answer \
             from the standard: use standard_search and standard_read (search_corpus searches \
             every standard), cite each requirement by its reference ({standard} §4.2.1) and \
             quote it. No working-tree tool is offered to this question."
        ),
        (Pass::Implementation, true) => format!(
            "The standard {standard} is engaged. This is the implementation pass: the normative \
             findings are in the conversation; make the change with the coding tools."
        ),
        (Pass::Implementation, false) => format!(
            "The standard {standard} is engaged. Look things up with standard_search and \
             standard_read, and inspect the project with the workspace_* tools; cite clauses \
             by reference."
        ),
    }
}
