//! `AgentRuntime`: the model <-> tool loop. One request: the system prompt (Spear's text and the
//! project's AGENTS.md files) and the conversation go to the model; its text streams out as
//! events; each tool call it makes goes through the `ToolRouter`, in order, and its envelope
//! comes back to the model as a `tool` message with the call's id; repeat until the model
//! answers without calls or a limit ends the request. Invariant: every tool call the model made
//! is answered by exactly one `tool` message before the next request, whatever ended the
//! request, and nothing reaches a tool except through the router.

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::event::{AgentEvent, EventSink, StopReason};
use crate::agent::model::{
    ChatMessage, ChatModel, ChatRequest, ModelResponse, StreamDelta, ToolDefinition,
};
use crate::agent::prompt::{self, SystemPrompt};
use crate::agent::task::TaskController;
use crate::agent::transcript::{SessionRecord, SessionWriter};
use crate::tools::exposure::{ExposureSettings, ToolExposurePolicy, ToolView};
use crate::tools::normative::EngagedStandard;
use crate::tools::router::ToolRouter;
use crate::tools::router::turn::Turn;

mod calls;
mod passes;

pub(crate) use calls::EventTap;
pub use calls::parse_arguments;

/// What the loop is bounded by.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Tool calls one request may make.
    pub max_tool_calls: u32,
    /// Cap on one response (`SPEAR_RESPONSE_MAX_TOKENS`).
    pub response_max_tokens: u32,
    /// The context window, when the model does not say (or to override it).
    pub context_window: Option<u64>,
    /// Where the person started Spear (AGENTS.md files are read down to here).
    pub cwd: PathBuf,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOutcome {
    pub reason: StopReason,
    pub tool_calls: u32,
    /// The error or stop message, when the request did not simply finish.
    pub message: Option<String>,
}

/// The loop for one conversation.
pub struct AgentRuntime<M: ChatModel> {
    model: Arc<M>,
    router: Arc<ToolRouter>,
    options: RuntimeOptions,
    view: ToolView,
    tools: Vec<ToolDefinition>,
    conversation: Vec<ChatMessage>,
    session: Option<SessionWriter>,
    prompt: Option<SystemPrompt>,
    /// The standard engaged for this conversation (shared with the normative tools).
    engaged: EngagedStandard,
    /// What the current pass adds to the system prompt.
    pass_note: Option<String>,
}

/// The request's state the loop threads through its steps.
pub(crate) struct Run<'t> {
    pub(crate) task: &'t TaskController,
    pub(crate) turn: Option<Turn>,
    pub(crate) calls: u32,
}

impl<M: ChatModel + 'static> AgentRuntime<M> {
    /// A runtime offering the coding surface of `router`'s registry.
    pub fn new(model: Arc<M>, router: Arc<ToolRouter>, options: RuntimeOptions) -> Self {
        let mut runtime = AgentRuntime {
            model,
            router,
            options,
            view: ToolView {
                surface: crate::tools::spec::Surface::Coding,
                names: Default::default(),
                working_tree: true,
            },
            tools: Vec::new(),
            conversation: Vec::new(),
            session: None,
            prompt: None,
            engaged: EngagedStandard::default(),
            pass_note: None,
        };
        runtime.set_view(&runtime.coding_settings());
        runtime
    }

    /// The coding surface's settings (the web setting is the host's, though the core is never
    /// offered the web pair as tools).
    fn coding_settings(&self) -> ExposureSettings {
        ExposureSettings {
            web_enabled: self.router.host().config().web_enabled,
            ..ExposureSettings::default()
        }
    }

    /// Engage standards through `engaged` (shared with the normative tools the router holds).
    /// The web pair is offered on the normative surface exactly when the host's `web_enabled`
    /// says so.
    #[must_use]
    pub fn with_standards(mut self, engaged: EngagedStandard) -> Self {
        self.engaged = engaged;
        self
    }

    /// Engage `name` for the next requests (`None`: no standard, the coding core answers).
    pub fn set_standard(&mut self, name: Option<String>) {
        self.engaged.set(name);
    }

    pub fn standard(&self) -> Option<String> {
        self.engaged.get()
    }

    /// Offer the tools `settings` expose (the next model request lists them).
    fn set_view(&mut self, settings: &ExposureSettings) {
        self.view = ToolExposurePolicy::view(self.router.registry(), settings);
        self.tools = ToolExposurePolicy::visible(self.router.registry(), settings)
            .into_iter()
            .map(|s| ToolDefinition {
                name: s.wire_name(),
                description: s.description.clone(),
                parameters: s.parameters.clone(),
            })
            .collect();
    }

    /// Record the conversation in `writer` from now on.
    #[must_use]
    pub fn with_session(mut self, writer: SessionWriter) -> Self {
        self.session = Some(writer);
        self
    }

    /// Answer the next requests with `model` (the person switched models); the conversation
    /// so far is kept.
    pub fn set_model(&mut self, model: Arc<M>) {
        self.model = model;
    }

    /// Continue an earlier conversation (a resumed session).
    #[must_use]
    pub fn with_conversation(mut self, messages: Vec<ChatMessage>) -> Self {
        self.conversation = messages;
        self
    }

    pub fn conversation(&self) -> &[ChatMessage] {
        &self.conversation
    }

    pub fn tool_definitions(&self) -> &[ToolDefinition] {
        &self.tools
    }

    pub fn session_id(&self) -> Option<&str> {
        self.session.as_ref().map(SessionWriter::id)
    }

    /// The prompt the last request was built with (its notes say what was cut).
    pub fn system_prompt(&self) -> Option<&SystemPrompt> {
        self.prompt.as_ref()
    }

    pub(crate) fn options(&self) -> &RuntimeOptions {
        &self.options
    }

    pub(crate) fn model(&self) -> &M {
        &self.model
    }

    pub(crate) fn router(&self) -> &Arc<ToolRouter> {
        &self.router
    }

    /// Send an event and keep it in the transcript (deltas are not kept; envelopes are kept
    /// without their stdout and stderr, which the preview already bounds).
    pub(crate) fn emit(&mut self, events: &EventSink, event: AgentEvent) {
        if !event.is_delta()
            && let Some(w) = self.session.as_mut()
        {
            let kept = match &event {
                AgentEvent::ToolCallFinished { call_id, envelope } => {
                    let mut e = envelope.clone();
                    e.stdout.clear();
                    e.stderr.clear();
                    AgentEvent::ToolCallFinished {
                        call_id: call_id.clone(),
                        envelope: e,
                    }
                }
                other => other.clone(),
            };
            if let Err(e) = w.write(&SessionRecord::Event { event: &kept }) {
                self.session_failed(events, &e.to_string());
            }
        }
        events.send(event);
    }

    fn session_failed(&mut self, events: &EventSink, why: &str) {
        // The transcript is a record, not a gate: the request goes on, the person is told
        // once, and nothing more is written to a file that failed.
        self.session = None;
        events.send(AgentEvent::Error {
            message: format!("the session transcript could not be written ({why}); it stops here"),
        });
    }

    /// Append to the conversation (and the transcript).
    pub(crate) fn push(&mut self, events: &EventSink, message: ChatMessage) {
        if let Some(w) = self.session.as_mut()
            && let Err(e) = w.write(&SessionRecord::Message { message: &message })
        {
            self.session_failed(events, &e.to_string());
        }
        self.conversation.push(message);
    }

    /// Replace the conversation (after compaction), recorded as such.
    pub(crate) fn replace_conversation(&mut self, events: &EventSink, messages: Vec<ChatMessage>) {
        if let Some(w) = self.session.as_mut()
            && let Err(e) = w.write(&SessionRecord::Compacted {
                messages: &messages,
            })
        {
            self.session_failed(events, &e.to_string());
        }
        self.conversation = messages;
    }

    /// Go back to just before the person's request `request` (its index among the user
    /// messages, from 1): the conversation before it stays, the transcript records the rewind.
    /// `None` when there is no such request.
    pub(crate) fn rewind(&mut self, events: &EventSink, request: usize) -> Option<usize> {
        let at = self
            .conversation
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, ChatMessage::User { .. }))
            .nth(request.checked_sub(1)?)
            .map(|(i, _)| i)?;
        let kept = self.conversation[..at].to_vec();
        if let Some(w) = self.session.as_mut()
            && let Err(e) = w.write(&SessionRecord::Rewound {
                request,
                at: crate::agent::transcript::now_rfc3339(),
                messages: &kept,
            })
        {
            self.session_failed(events, &e.to_string());
        }
        self.conversation = kept;
        Some(at)
    }

    /// The person's requests so far, in order (the user messages' words).
    pub fn requests(&self) -> Vec<&str> {
        self.conversation
            .iter()
            .filter_map(|m| match m {
                ChatMessage::User { content } => Some(content.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The request as it goes to the model: the system prompt, then the conversation.
    pub(crate) fn request(&self, max_tokens: u32) -> ChatRequest {
        let mut messages = Vec::with_capacity(self.conversation.len() + 1);
        if let Some(p) = &self.prompt {
            let content = match &self.pass_note {
                Some(note) => format!("{}\n\n{note}", p.text),
                None => p.text.clone(),
            };
            messages.push(ChatMessage::System { content });
        }
        messages.extend(self.conversation.iter().cloned());
        ChatRequest {
            messages,
            tools: self.tools.clone(),
            max_tokens,
        }
    }

    /// Run one request to its end. Events go to the task's channel; the last is `done`.
    pub async fn run_task(&mut self, objective: &str, task: &TaskController) -> TaskOutcome {
        let events = task.events().clone();
        self.prompt = Some(prompt::build(
            self.router.host(),
            task.mode(),
            &self.options.cwd,
        ));
        self.push(
            &events,
            ChatMessage::User {
                content: objective.to_string(),
            },
        );
        let mut run = Run {
            task,
            turn: None,
            calls: 0,
        };
        let outcome = match self.engaged.get() {
            None => {
                self.set_view(&self.coding_settings());
                self.pass_note = None;
                self.pass(&mut run).await
            }
            Some(standard) => self.passes(&mut run, objective, &standard).await,
        };
        self.pass_note = None;
        task.end();
        self.emit(
            &events,
            AgentEvent::Done {
                reason: outcome.reason,
                tool_calls: outcome.tool_calls,
                message: outcome.message.clone(),
            },
        );
        outcome
    }

    /// One pass over the current view. One router turn spans the whole pass, so a refusal
    /// repeated across responses is counted toward the stop, and a sandbox found down stays
    /// down for the pass.
    async fn pass(&mut self, run: &mut Run<'_>) -> TaskOutcome {
        let task = run.task;
        let switches = task.switches();
        let mut turn = Turn::new(switches.mode, self.view.clone(), task.approver());
        turn.network = switches.network;
        turn.cancel = task.cancel_token();
        turn.output_tap = Some(Arc::new(EventTap(task.events().clone())));
        run.turn = Some(turn);
        self.steps(run).await
    }

    pub(crate) fn end(
        &mut self,
        run: &Run<'_>,
        reason: StopReason,
        message: Option<String>,
    ) -> TaskOutcome {
        if reason == StopReason::Error
            && let Some(m) = &message
        {
            self.emit(run.task.events(), AgentEvent::Error { message: m.clone() });
        }
        TaskOutcome {
            reason,
            tool_calls: run.calls,
            message,
        }
    }

    async fn steps(&mut self, run: &mut Run<'_>) -> TaskOutcome {
        let events = run.task.events().clone();
        loop {
            if run.task.is_cancelled() {
                return self.end(run, StopReason::Cancelled, None);
            }
            if let Err(message) = self.fit_context(run.task, false).await {
                let reason = if run.task.is_cancelled() {
                    StopReason::Cancelled
                } else {
                    StopReason::Error
                };
                return self.end(run, reason, Some(message));
            }
            let mut response = self.complete(run.task).await;
            // A server that says the request overflows its window (whose size may not be
            // configured) gets one shortened retry.
            if let Some(Err(message)) = &response
                && crate::agent::context::is_context_overflow(message)
            {
                if let Err(why) = self.fit_context(run.task, true).await {
                    return self.end(run, StopReason::Error, Some(format!("{message}; {why}")));
                }
                response = self.complete(run.task).await;
            }
            let response = match response {
                Some(Ok(r)) => r,
                Some(Err(message)) => return self.end(run, StopReason::Error, Some(message)),
                None => return self.end(run, StopReason::Cancelled, None),
            };
            if let Some(u) = &response.usage {
                self.emit(&events, AgentEvent::usage(u));
            }
            let truncated = response.truncated();
            let calls = response.tool_calls.clone();
            self.push(
                &events,
                ChatMessage::Assistant {
                    content: (!response.content.is_empty()).then(|| response.content.clone()),
                    tool_calls: calls.clone(),
                    reasoning: (!response.reasoning.is_empty()).then(|| response.reasoning.clone()),
                },
            );
            if truncated {
                let max = self.options.response_max_tokens;
                self.emit(
                    &events,
                    AgentEvent::Truncated {
                        max_tokens: max,
                        message: format!(
                            "the response was cut at the limit of {max} tokens \
                             (SPEAR_RESPONSE_MAX_TOKENS)"
                        ),
                    },
                );
            }
            if calls.is_empty() {
                if truncated {
                    self.note_truncation(&events);
                }
                return self.end(run, StopReason::Finished, None);
            }
            let stop = self.route_all(run, &calls, truncated).await;
            if truncated {
                self.note_truncation(&events);
            }
            if let Some((reason, message)) = stop {
                return self.end(run, reason, message);
            }
        }
    }

    /// Tell the model its last response was cut (it is told before its next request).
    fn note_truncation(&mut self, events: &EventSink) {
        let max = self.options.response_max_tokens;
        self.push(
            events,
            ChatMessage::User {
                content: format!(
                    "[Spear: your previous response was truncated: it was cut at the limit of \
                     {max} tokens. Anything after the cut was lost. Continue with shorter \
                     steps: split large writes into several patches.]"
                ),
            },
        );
    }

    /// Stream one response, or `None` when the task was cancelled meanwhile (the stream is
    /// dropped at once). The error is what the person reads.
    async fn complete(&mut self, task: &TaskController) -> Option<Result<ModelResponse, String>> {
        let request = self.request(self.options.response_max_tokens);
        let events = task.events().clone();
        let cancel = task.cancel_token();
        let mut on_delta = move |d: StreamDelta| match d {
            StreamDelta::Text(text) => events.send(AgentEvent::TextDelta { text }),
            StreamDelta::Reasoning(text) => events.send(AgentEvent::ReasoningDelta { text }),
            StreamDelta::Retrying {
                attempt,
                delay_ms,
                why,
            } => events.send(AgentEvent::Retrying {
                attempt,
                delay_ms,
                why,
            }),
            _ => {}
        };
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            r = self.model.complete(&request, &mut on_delta) => Some(r),
        };
        result.map(|r| r.map_err(|e| e.to_string()))
    }
}
