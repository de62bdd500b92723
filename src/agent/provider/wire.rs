//! Lenient serde types for what a Chat Completions server sends back, streamed chunk or whole
//! response. Invariant: a field that is missing, `null` or of an unexpected type reads as
//! `None` and never fails the chunk; unknown fields are ignored. Servers differ too much for
//! anything stricter (see the captures in `shared/data/sse`).

use serde::{Deserialize, Deserializer, de::DeserializeOwned};
use serde_json::Value;

/// Read a field as `T` when it is one, and as `None` otherwise.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).ok())
}

/// One `chat.completion.chunk`, or a whole `chat.completion` (whose choices hold `message`
/// instead of `delta`), or an error object.
#[derive(Debug, Default, Deserialize)]
pub struct WireChunk {
    #[serde(default, deserialize_with = "lenient")]
    pub choices: Option<Vec<WireChoice>>,
    #[serde(default, deserialize_with = "lenient")]
    pub usage: Option<WireUsage>,
    /// Present when the server reports a failure inside a 200 stream.
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireChoice {
    #[serde(default, deserialize_with = "lenient")]
    pub index: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub delta: Option<WireDelta>,
    /// The non-streamed form.
    #[serde(default, deserialize_with = "lenient")]
    pub message: Option<WireDelta>,
    #[serde(default, deserialize_with = "lenient")]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireDelta {
    #[serde(default, deserialize_with = "lenient")]
    pub content: Option<WireContent>,
    /// DeepSeek, llama.cpp, Z.ai, xAI.
    #[serde(default, deserialize_with = "lenient")]
    pub reasoning_content: Option<String>,
    /// Groq, OpenRouter (next to `reasoning_details`, with the same text).
    #[serde(default, deserialize_with = "lenient")]
    pub reasoning: Option<String>,
    /// OpenRouter and gateways: `[{type: "reasoning.text", text}, {type: "reasoning.summary",
    /// summary}, {type: "reasoning.encrypted", data}]`.
    #[serde(default, deserialize_with = "lenient")]
    pub reasoning_details: Option<Vec<WireReasoningDetail>>,
    #[serde(default, deserialize_with = "lenient")]
    pub tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireReasoningDetail {
    #[serde(default, deserialize_with = "lenient")]
    pub text: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub summary: Option<String>,
}

/// `content` as a string or as an array of typed parts (Mistral's magistral models).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum WireContent {
    Text(String),
    Parts(Vec<WirePart>),
}

#[derive(Debug, Default, Deserialize)]
pub struct WirePart {
    #[serde(default, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub text: Option<String>,
    /// A `thinking` part holds its own parts (`[{type: "text", text}]`).
    #[serde(default, deserialize_with = "lenient")]
    pub thinking: Option<Vec<WirePart>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireToolCall {
    #[serde(default, deserialize_with = "lenient")]
    pub index: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub function: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireFunction {
    #[serde(default, deserialize_with = "lenient")]
    pub name: Option<String>,
    /// A string fragment as specified, or a whole JSON object (TGI's older format).
    #[serde(default)]
    pub arguments: Option<Value>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub struct WireUsage {
    #[serde(default, deserialize_with = "lenient")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub completion_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub total_tokens: Option<u64>,
}

impl WireContent {
    /// The text this content contributes: a string as is; of parts, only `text` ones
    /// (a part without a type counts as text).
    pub fn text(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            WireContent::Text(text) => Some(std::borrow::Cow::Borrowed(text)),
            WireContent::Parts(parts) => join_parts(parts, |p| p.is_text()),
        }
    }

    /// The reasoning this content carries: the text inside `thinking` parts.
    pub fn thinking(&self) -> Option<String> {
        let WireContent::Parts(parts) = self else {
            return None;
        };
        let inner: Vec<&WirePart> = parts
            .iter()
            .filter(|p| p.kind.as_deref() == Some("thinking"))
            .flat_map(|p| p.thinking.iter().flatten())
            .collect();
        let text: String = inner
            .iter()
            .filter(|p| p.is_text())
            .filter_map(|p| p.text.as_deref())
            .collect();
        (!text.is_empty()).then_some(text)
    }
}

impl WirePart {
    fn is_text(&self) -> bool {
        matches!(self.kind.as_deref(), None | Some("text"))
    }
}

fn join_parts(
    parts: &[WirePart],
    keep: impl Fn(&WirePart) -> bool,
) -> Option<std::borrow::Cow<'_, str>> {
    let text: String = parts
        .iter()
        .filter(|p| keep(p))
        .filter_map(|p| p.text.as_deref())
        .collect();
    (!text.is_empty()).then_some(std::borrow::Cow::Owned(text))
}

impl WireDelta {
    /// The reasoning text of this delta. OpenRouter repeats `reasoning` in
    /// `reasoning_details`, so the first field present wins and nothing is counted twice.
    pub fn reasoning_text(&self) -> Option<String> {
        if let Some(text) = self.reasoning_content.as_ref().filter(|t| !t.is_empty()) {
            return Some(text.clone());
        }
        if let Some(text) = self.reasoning.as_ref().filter(|t| !t.is_empty()) {
            return Some(text.clone());
        }
        let details: String = self
            .reasoning_details
            .iter()
            .flatten()
            .filter_map(|d| d.text.as_deref().or(d.summary.as_deref()))
            .collect();
        if !details.is_empty() {
            return Some(details);
        }
        self.content.as_ref().and_then(WireContent::thinking)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn wrong_types_read_as_absent_and_unknown_fields_are_ignored() {
        let chunk: WireChunk = serde_json::from_str(
            r#"{"choices":[{"index":"zero","delta":{"content":7,"tool_calls":null,
               "x_new":1},"finish_reason":3,"logprobs":{"content":null}}],
               "usage":"n/a","seed":2853637492034609700}"#,
        )
        .unwrap();
        let choice = &chunk.choices.unwrap()[0];
        assert_eq!(choice.index, None);
        assert_eq!(choice.finish_reason, None);
        let delta = choice.delta.as_ref().unwrap();
        assert!(delta.content.is_none() && delta.tool_calls.is_none());
        assert!(chunk.usage.is_none());
    }

    #[test]
    fn content_parts_split_text_from_thinking() {
        let delta: WireDelta = serde_json::from_str(
            r#"{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]},
                           {"type":"text","text":"Hi"}]}"#,
        )
        .unwrap();
        assert_eq!(delta.content.as_ref().unwrap().text().unwrap(), "Hi");
        assert_eq!(delta.reasoning_text().unwrap(), "hm");
    }

    #[test]
    fn reasoning_is_not_counted_twice() {
        let delta: WireDelta = serde_json::from_str(
            r#"{"reasoning":" The","reasoning_details":[{"type":"reasoning.text","text":" The"}]}"#,
        )
        .unwrap();
        assert_eq!(delta.reasoning_text().unwrap(), " The");
        let delta: WireDelta = serde_json::from_str(
            r#"{"reasoning_details":[{"type":"reasoning.encrypted","data":"xx"}]}"#,
        )
        .unwrap();
        assert_eq!(delta.reasoning_text(), None);
    }
}
