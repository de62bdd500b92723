//! A response body, streamed or whole, to a `ModelResponse`: SSE events, `[DONE]`, error
//! objects and chunk JSON, with no HTTP in sight (the benchmark and the unit tests drive it
//! directly). Invariant: the result does not depend on how the body was split into reads, and
//! no more than [`MAX_BODY_BYTES`] of body are ever accepted.

use super::assemble::Assembler;
use super::error::{ProviderError, excerpt, message_of};
use super::sse::{SseError, SseEvent, SseParser};
use super::wire::WireChunk;
use crate::agent::model::{ModelResponse, StreamDelta};
use serde_json::Value;

/// The most body one response may have, streamed or whole (a 16k-token answer is well under
/// a megabyte even with a chunk envelope around every token).
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Whether the server said the stream is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    More,
    /// `data: [DONE]` arrived: nothing after it is read.
    Done,
}

/// Turns a `text/event-stream` body into a response, fed as the bytes arrive.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    parser: SseParser,
    events: Vec<SseEvent>,
    assembler: Assembler,
    received: usize,
    done: bool,
}

impl StreamAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next bytes of the body.
    pub fn push_bytes(
        &mut self,
        bytes: &[u8],
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<Progress, ProviderError> {
        if self.done {
            return Ok(Progress::Done);
        }
        self.received = self.received.saturating_add(bytes.len());
        if self.received > MAX_BODY_BYTES {
            return Err(ProviderError::TooLarge {
                limit: MAX_BODY_BYTES,
            });
        }
        self.parser
            .feed(bytes, &mut self.events)
            .map_err(too_long)?;
        self.drain(on_delta)
    }

    /// The body ended (with or without `[DONE]`): the assembled response.
    pub fn finish(
        mut self,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<ModelResponse, ProviderError> {
        if !self.done {
            self.parser.finish(&mut self.events).map_err(too_long)?;
            self.drain(on_delta)?;
        }
        Ok(self.assembler.finish())
    }

    /// Whether anything of the answer arrived yet.
    pub fn is_empty(&self) -> bool {
        self.assembler.is_empty()
    }

    fn drain(&mut self, on_delta: &mut dyn FnMut(StreamDelta)) -> Result<Progress, ProviderError> {
        let mut events = std::mem::take(&mut self.events);
        let mut outcome = Ok(Progress::More);
        for event in events.drain(..) {
            match self.event(&event, on_delta) {
                Ok(Progress::More) => {}
                other => {
                    outcome = other;
                    break;
                }
            }
        }
        events.clear();
        self.events = events;
        outcome
    }

    fn event(
        &mut self,
        event: &SseEvent,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) -> Result<Progress, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Progress::Done);
        }
        if event.event.as_deref() == Some("error") {
            let value = serde_json::from_str::<Value>(data).unwrap_or_else(|_| Value::from(data));
            let error = match value.get("error") {
                Some(inner) if !inner.is_null() => inner.clone(),
                _ => value,
            };
            return Err(in_stream(error));
        }
        if data.is_empty() {
            return Ok(Progress::More);
        }
        let chunk: WireChunk = serde_json::from_str(data).map_err(|_| ProviderError::BadChunk {
            excerpt: excerpt(data),
        })?;
        if let Some(error) = error_of(&chunk) {
            return Err(in_stream(error));
        }
        self.assembler.push(&chunk, on_delta);
        Ok(Progress::More)
    }
}

/// The error a chunk carries: an `error` object and no choices (rule 2).
fn error_of(chunk: &WireChunk) -> Option<Value> {
    let no_choices = chunk.choices.as_ref().is_none_or(Vec::is_empty);
    chunk
        .error
        .as_ref()
        .filter(|error| !error.is_null() && no_choices)
        .cloned()
}

fn in_stream(error: Value) -> ProviderError {
    let message = if error.is_null() || error.as_str().is_some_and(str::is_empty) {
        "an error event without details".to_string()
    } else {
        message_of(&error)
    };
    ProviderError::InStream { message, error }
}

fn too_long(error: SseError) -> ProviderError {
    match error {
        SseError::TooLong { limit } => ProviderError::TooLarge { limit },
    }
}

/// A whole (non-streamed) `chat.completion` body, or a server that ignored `stream: true`.
pub fn assemble_whole(
    body: &[u8],
    on_delta: &mut dyn FnMut(StreamDelta),
) -> Result<ModelResponse, ProviderError> {
    let chunk: WireChunk = serde_json::from_slice(body).map_err(|_| ProviderError::BadChunk {
        excerpt: excerpt(&String::from_utf8_lossy(body)),
    })?;
    if let Some(error) = error_of(&chunk) {
        return Err(in_stream(error));
    }
    let mut assembler = Assembler::new();
    assembler.push(&chunk, on_delta);
    Ok(assembler.finish())
}
