//! A `text/event-stream` parser after the WHATWG rules, fed bytes as they arrive. Invariant: the
//! events produced do not depend on how the bytes were split into reads, and no line or event
//! grows past [`MAX_EVENT_BYTES`] (a server that never ends a line gets an error, not our memory).

use thiserror::Error;

/// The largest line or event payload accepted. A streamed chunk is a few hundred bytes; a
/// non-streamed answer is never read through this parser.
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// One dispatched event. `id` and `retry` fields are read and dropped: Chat Completions does
/// not reconnect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event (Groq sends `event: error`).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SseError {
    #[error("the server sent an event-stream line or event longer than {limit} bytes")]
    TooLong { limit: usize },
}

/// Incremental parser: [`SseParser::feed`] any split of the body, then [`SseParser::finish`].
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous read ended in CR: a LF starting the next read belongs to that line end.
    after_cr: bool,
    /// The first line was seen (a byte-order mark may only open the first one).
    started: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse `bytes`, appending every event they complete to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            bytes = bytes.strip_prefix(b"\n").unwrap_or(bytes);
        }
        while let Some(end) = memchr::memchr2(b'\r', b'\n', bytes) {
            self.grow_line(&bytes[..end])?;
            let mut next = end + 1;
            if bytes[end] == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.end_line(out)?;
            bytes = &bytes[next..];
        }
        self.grow_line(bytes)
    }

    /// The body ended: a last line without its line end and a last event without the blank
    /// line after it are still used (real servers end that way).
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if !self.line.is_empty() {
            self.end_line(out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn grow_line(&mut self, piece: &[u8]) -> Result<(), SseError> {
        if self.line.len() + piece.len() > MAX_EVENT_BYTES {
            return Err(SseError::TooLong {
                limit: MAX_EVENT_BYTES,
            });
        }
        self.line.extend_from_slice(piece);
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut line = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if line.starts_with(b"\xEF\xBB\xBF") {
                line.drain(..3);
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            self.line = reuse(line);
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', &line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(SseError::TooLong {
                        limit: MAX_EVENT_BYTES,
                    });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
        self.line = reuse(line);
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if self.has_data {
            self.has_data = false;
            out.push(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
            });
        }
    }
}

/// Keep the line buffer's allocation for the next line.
fn reuse(mut line: Vec<u8>) -> Vec<u8> {
    line.clear();
    line
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(parts: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for part in parts {
            parser.feed(part, &mut out).unwrap();
        }
        parser.finish(&mut out).unwrap();
        out
    }

    fn data(d: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: d.to_string(),
        }
    }

    #[test]
    fn every_line_end_and_the_optional_space() {
        let body = b"data: a\n\ndata:b\r\n\r\ndata: c\r\rdata:  d\n\n";
        assert_eq!(
            parse(&[body]),
            vec![data("a"), data("b"), data("c"), data(" d")]
        );
    }

    #[test]
    fn crlf_split_between_reads_is_one_line_end() {
        assert_eq!(
            parse(&[b"data: a\r", b"\n\r", b"\ndata: b\r", b"\r"]),
            vec![data("a"), data("b")]
        );
    }

    #[test]
    fn comments_multi_line_data_event_names_and_unknown_fields() {
        let body =
            b": keep-alive\nid: 7\nretry: 10\nevent: error\ndata: {\"a\":\ndata: 1}\n\n: x\n\n";
        assert_eq!(
            parse(&[body]),
            vec![SseEvent {
                event: Some("error".into()),
                data: "{\"a\":\n1}".into()
            }]
        );
    }

    #[test]
    fn final_event_without_blank_line_and_without_line_end() {
        assert_eq!(
            parse(&[b"data: a\n\ndata: [DONE]\n"]),
            vec![data("a"), data("[DONE]")]
        );
        assert_eq!(parse(&[b"data: [DONE]"]), vec![data("[DONE]")]);
    }

    #[test]
    fn event_name_without_data_is_not_dispatched_and_does_not_leak() {
        assert_eq!(parse(&[b"event: ping\n\ndata: x\n\n"]), vec![data("x")]);
    }

    #[test]
    fn bom_and_field_without_colon() {
        assert_eq!(
            parse(&[b"\xEF", b"\xBB\xBFdata\n\ndata: y\n\n"]),
            vec![data(""), data("y")]
        );
    }

    #[test]
    fn utf8_split_across_reads() {
        let text = "data: 15 × 27 😊\n\n".as_bytes();
        let parts: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(parse(&parts), vec![data("15 × 27 😊")]);
    }

    #[test]
    fn endless_line_is_refused() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        let block = vec![b'x'; 1024 * 1024];
        let mut result = Ok(());
        for _ in 0..9 {
            result = parser.feed(&block, &mut out);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(
            result,
            Err(SseError::TooLong {
                limit: MAX_EVENT_BYTES
            })
        );
    }
}
