//! Keeping a conversation inside the provider's context window, for `AgentRuntime`: before each
//! request, when the estimate is over the budget (or on demand, the TUI's `/compact`), older
//! tool outputs are first replaced by `result://` references, and if that is not enough the
//! earlier conversation is summarised by the model. Invariant: compaction only shortens what
//! is sent; the whole outputs stay in the ResultStore and the transcript records the change.

use crate::agent::context::{
    SUMMARY_PROMPT, elide_tool_outputs, estimate_tokens, latest_exchange, request_budget,
    summary_message, summary_split, transcript,
};
use crate::agent::event::AgentEvent;
use crate::agent::model::{ChatMessage, ChatModel, ChatRequest};
use crate::agent::runtime::AgentRuntime;
use crate::agent::task::TaskController;

/// The most bytes of conversation text one summary request carries.
const SUMMARY_INPUT_BYTES: usize = 200_000;
/// The most tokens a summary may take.
const SUMMARY_MAX_TOKENS: u32 = 4096;

impl<M: ChatModel + 'static> AgentRuntime<M> {
    /// The context window in force: the options', else the model's.
    pub fn context_window(&self) -> Option<u64> {
        self.options()
            .context_window
            .or(self.model().context_window())
    }

    /// The estimated size of the next request.
    pub fn estimated_tokens(&self) -> u64 {
        let r = self.request(self.options().response_max_tokens);
        estimate_tokens(&r.messages, &r.tools)
    }

    /// Shorten the conversation now, whatever its size (`/compact`). `Err` is what the person
    /// reads when the summary could not be made.
    pub async fn compact(&mut self, task: &TaskController) -> Result<(), String> {
        self.fit_context(task, true).await
    }

    /// Make the next request fit (or, `force`d, shorten it anyway).
    pub(crate) async fn fit_context(
        &mut self,
        task: &TaskController,
        force: bool,
    ) -> Result<(), String> {
        let budget = match self.context_window() {
            Some(w) => request_budget(w, self.options().response_max_tokens),
            None if force => 0,
            None => return Ok(()),
        };
        let before = self.estimated_tokens();
        if !force && before <= budget {
            return Ok(());
        }
        let events = task.events().clone();
        // Step 1: older tool outputs become references to the ResultStore.
        let mut messages = self.conversation().to_vec();
        let keep_from = latest_exchange(&messages);
        let results = self.router().host().results().clone();
        let elided = elide_tool_outputs(&mut messages, keep_from, |text| {
            results.store_text(text).ok().map(|s| s.uri())
        });
        if elided > 0 {
            self.replace_conversation(&events, messages);
            let after = self.estimated_tokens();
            self.emit(
                &events,
                AgentEvent::Compacted {
                    how: "tool_outputs",
                    tokens_before: before,
                    tokens_after: after,
                },
            );
            if !force && after <= budget {
                return Ok(());
            }
        }
        // Step 2: the earlier conversation becomes a summary.
        let before = self.estimated_tokens();
        let messages = self.conversation().to_vec();
        let split = match summary_split(&messages) {
            // On demand with a single request: the whole conversation becomes the summary.
            0 if force => messages.len(),
            s => s,
        };
        if split == 0 {
            return if force || before <= budget {
                Ok(())
            } else {
                Err(format!(
                    "the conversation (about {before} tokens) does not fit the context window \
                     ({budget} tokens for the request) and has nothing earlier to summarise; \
                     raise context_window or start a new session"
                ))
            };
        }
        let summary = self.summarise(task, &messages[..split]).await?;
        let mut kept = vec![summary_message(&summary)];
        kept.extend_from_slice(&messages[split..]);
        self.replace_conversation(&events, kept);
        let after = self.estimated_tokens();
        self.emit(
            &events,
            AgentEvent::Compacted {
                how: "summary",
                tokens_before: before,
                tokens_after: after,
            },
        );
        Ok(())
    }

    async fn summarise(
        &mut self,
        task: &TaskController,
        head: &[ChatMessage],
    ) -> Result<String, String> {
        let request = ChatRequest {
            messages: vec![
                ChatMessage::System {
                    content: SUMMARY_PROMPT.to_string(),
                },
                ChatMessage::User {
                    content: format!(
                        "Summarise this conversation:\n\n{}",
                        transcript(head, SUMMARY_INPUT_BYTES)
                    ),
                },
            ],
            tools: Vec::new(),
            max_tokens: SUMMARY_MAX_TOKENS.min(self.options().response_max_tokens),
        };
        let cancel = task.cancel_token();
        let mut ignore = |_d: crate::agent::model::StreamDelta| {};
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err("the task was cancelled".into()),
            r = self.model().complete(&request, &mut ignore) => r,
        };
        match response {
            Ok(r) if !r.content.trim().is_empty() => Ok(r.content),
            Ok(_) => Err("the model returned an empty summary of the conversation".into()),
            Err(e) => Err(format!("the conversation could not be summarised: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::context::*;
    use crate::agent::model::{ChatMessage, ToolCallRequest};

    fn call(id: &str) -> ChatMessage {
        ChatMessage::Assistant {
            content: None,
            tool_calls: vec![ToolCallRequest {
                id: id.into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            }],
            reasoning: None,
        }
    }

    fn tool(id: &str, text: &str) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            content: text.into(),
        }
    }

    #[test]
    fn old_outputs_are_elided_but_the_latest_exchange_is_kept_whole() {
        let big = "x".repeat(2000);
        let mut m = vec![
            ChatMessage::User {
                content: "go".into(),
            },
            call("a"),
            tool("a", &big),
            call("b"),
            tool("b", &big),
        ];
        let keep = latest_exchange(&m);
        assert_eq!(keep, 3);
        let n = elide_tool_outputs(&mut m, keep, |_| Some("result://r1".into()));
        assert_eq!(n, 1);
        let ChatMessage::Tool { content, .. } = &m[2] else {
            panic!()
        };
        assert!(
            content.starts_with(ELIDED) && content.contains("result://r1"),
            "{content}"
        );
        assert_eq!(m[4], tool("b", &big));
    }

    #[test]
    fn the_summary_split_keeps_the_current_request_and_never_splits_a_call() {
        let m = vec![
            ChatMessage::User {
                content: "first".into(),
            },
            call("a"),
            tool("a", "out"),
            ChatMessage::User {
                content: "second".into(),
            },
            call("b"),
            tool("b", "out"),
        ];
        assert_eq!(summary_split(&m), 3);
        // One request only: split before its latest exchange.
        assert_eq!(summary_split(&m[3..]), 1);
        // Nothing to summarise.
        assert_eq!(summary_split(&m[3..4]), 0);
    }
}
