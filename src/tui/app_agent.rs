//! Agent events into state: streamed text into the streaming message, tool calls into cells
//! (live output, then the envelope), approvals into the ASK dialog, usage into the token count.
//! Invariant: every approval opens the dialog and is answered only by it (or by a cancel),
//! naming the request's id; the dialog shows the preview the tool computed, never one of its
//! own. ("Allow for session" is a grant the router keeps: a granted call asks nothing.)

use crate::agent::event::{AgentEvent, StopReason};
use crate::harness::audit::DecidedBy;
use crate::harness::primitives::ToolStatus;
use crate::tui::app::App;
use crate::tui::cells::{CellKind, NoticeKind, ToolCell};
use crate::tui::diff::FileDiff;
use crate::tui::widgets::confirm::{ApprovalView, Confirm};

impl App {
    pub(crate) fn agent(&mut self, e: AgentEvent) {
        self.dirty = true;
        match e {
            AgentEvent::TextDelta { text } => self.cells.stream_text(&text, false),
            AgentEvent::ReasoningDelta { text } => self.cells.stream_text(&text, true),
            AgentEvent::ToolCallStarted {
                call_id,
                name,
                arguments,
            } => {
                self.cells.end_stream();
                if self.cells.tool(&call_id).is_none() {
                    let mut cell = ToolCell::new(&call_id, &name, arguments, self.now);
                    cell.diff = self.previews.get(&call_id).cloned();
                    self.cells.push(CellKind::Tool(Box::new(cell)));
                }
            }
            AgentEvent::OutputChunk { call_id, text, .. } => {
                if let Some((t, v)) = self.cells.tool_mut(&call_id) {
                    t.push_output(&text);
                    *v = v.wrapping_add(1);
                }
            }
            AgentEvent::ToolCallFinished { call_id, envelope } => self.finished(&call_id, envelope),
            AgentEvent::ApprovalRequested { request } => {
                let r = *request;
                let diff = r
                    .preview
                    .as_ref()
                    .and_then(|p| p.file_change())
                    .map(FileDiff::from_change);
                let view = ApprovalView {
                    request_id: r.id,
                    diff,
                    call_id: r.call_id,
                    tool: r.tool,
                    command: r.command,
                    class: r.class.as_str().to_string(),
                    asking_for: r.asking_for.iter().map(|c| c.to_string()).collect(),
                    reasons: r.reasons,
                    writes: r.targets,
                    network: r.network,
                    cwd: self.cwd.clone(),
                    always: r.always,
                };
                self.set_awaiting(&view.call_id, true);
                self.confirm = Some(Confirm::new(view, self.now));
            }
            AgentEvent::ApprovalAnswerRefused { reason, .. } => {
                self.notice(NoticeKind::Warning, reason);
            }
            AgentEvent::ApprovalWithdrawn { request_id, reason } => {
                if let Some(c) = self.confirm.take_if(|c| c.view.request_id == request_id) {
                    self.set_awaiting(&c.view.call_id, false);
                }
                self.notice(NoticeKind::Warning, reason);
            }
            AgentEvent::Truncated { message, .. } => self.notice(NoticeKind::Warning, message),
            AgentEvent::Usage {
                prompt_tokens,
                completion_tokens,
                total_tokens,
            } => {
                let n = total_tokens
                    .unwrap_or(prompt_tokens.unwrap_or(0) + completion_tokens.unwrap_or(0));
                self.status.tokens = self.status.tokens.saturating_add(n);
            }
            AgentEvent::Retrying {
                attempt,
                delay_ms,
                why,
            } => self.retry_notice(format!("retry {attempt} in {delay_ms} ms: {why}")),
            AgentEvent::Compacted {
                how,
                tokens_before,
                tokens_after,
            } => self.notice(
                NoticeKind::Info,
                format!("conversation compacted ({how}): {tokens_before} → {tokens_after} tokens"),
            ),
            AgentEvent::RequestClassified { .. } | AgentEvent::PassStarted { .. } => {
                self.cells.end_stream();
                if let Some(line) = e.normative_line() {
                    self.notice(NoticeKind::Info, line);
                }
            }
            AgentEvent::Error { message } => self.notice(NoticeKind::Error, message),
            AgentEvent::Done {
                reason, message, ..
            } => {
                self.cells.end_stream();
                self.status.busy = false;
                // A cancel answered the pending approval: its dialog has nothing left to decide.
                if let Some(c) = self.confirm.take() {
                    self.set_awaiting(&c.view.call_id, false);
                }
                match reason {
                    StopReason::Finished => {}
                    StopReason::Cancelled => {
                        self.notice(NoticeKind::Info, "the turn was cancelled")
                    }
                    StopReason::Error => {}
                    other => self.notice(
                        NoticeKind::Warning,
                        message.unwrap_or_else(|| format!("the request stopped: {other:?}")),
                    ),
                }
            }
        }
    }

    /// Retries of one request share one line, in the warning colour: the latest replaces the
    /// one before it while nothing else came between them.
    fn retry_notice(&mut self, text: String) {
        if let Some(last) = self.cells.items.last_mut()
            && let CellKind::Notice {
                kind: NoticeKind::Warning,
                text: shown,
            } = &mut last.kind
            && shown.starts_with(RETRY_PREFIX)
        {
            *shown = text;
            last.touch();
            self.dirty = true;
            return;
        }
        self.notice(NoticeKind::Warning, text);
    }

    fn finished(
        &mut self,
        call_id: &str,
        envelope: Box<crate::tools::envelope::ToolResultEnvelope>,
    ) {
        let now = self.now;
        let Some((t, v)) = self.cells.tool_mut(call_id) else {
            return;
        };
        *v = v.wrapping_add(1);
        t.duration = Some(now.saturating_duration_since(t.started));
        if t.by_person {
            let mut ctx = format!(
                "[Spear: the person ran `{}` themselves (status {}",
                t.target(),
                envelope.status
            );
            if let Some(code) = envelope.exit_code {
                ctx.push_str(&format!(", exit code {code}"));
            }
            ctx.push_str(")]\n");
            ctx.push_str(&envelope.preview);
            self.pending_context.push(ctx);
        }
        // The router answered from the person's "allow for session": said, as the dialog would.
        let granted = (envelope.decided_by == Some(DecidedBy::SessionGrant))
            .then(|| format!("allowed for this session (s): {}", t.target()));
        let fold = matches!(t.name.as_str(), "read_file" | "search_files")
            && envelope.status == ToolStatus::Ok;
        t.envelope = Some(envelope);
        if fold
            && let Some(c) = self
                .cells
                .items
                .iter_mut()
                .rev()
                .find(|c| matches!(&c.kind, CellKind::Tool(t) if t.call_id == call_id))
        {
            c.folded = true;
        }
        if let Some(said) = granted {
            self.notice(NoticeKind::Info, said);
        }
    }
}

/// How a retry's line begins (what `retry_notice` recognises).
const RETRY_PREFIX: &str = "retry ";
