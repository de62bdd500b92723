//! The conversation as cells: what the person said, what the model answered (streamed), each
//! tool call with its live output and its envelope, and Spear's own notices. Cells are state,
//! not drawing; `widgets::cell` renders one. Invariant: a tool cell is found by its call id and
//! keeps only the last `LIVE_LINES` lines of live output (the whole output is in the
//! ResultStore under `result://ID`), so memory does not grow with a command's output.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::audit::display::escape_controls_keeping_lines;
use crate::tools::envelope::ToolResultEnvelope;
use crate::tui::diff::FileDiff;

/// Live output kept per running command.
pub const LIVE_LINES: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Info,
    Warning,
    Error,
}

#[derive(Debug, Clone)]
pub struct ToolCell {
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    /// Run by the person with `!COMMAND`, not by the model.
    pub by_person: bool,
    /// The last lines of output (ANSI kept), as they arrived.
    pub live: VecDeque<String>,
    /// A partial last line not yet ended by a newline.
    pub partial: String,
    /// Lines of live output in all (more than `live` holds once it is past `LIVE_LINES`).
    pub lines_seen: u64,
    /// The ASK dialog is asking about this call: it waits for the person, it is not running.
    pub awaiting: bool,
    /// Rebuilt from a resumed session's transcript: the result is what the model was told.
    pub resumed: bool,
    pub started: Instant,
    pub duration: Option<Duration>,
    pub envelope: Option<Box<ToolResultEnvelope>>,
    /// For write_file / patch: the file's content against the result of applying the call.
    pub diff: Option<FileDiff>,
}

impl ToolCell {
    pub fn new(call_id: &str, name: &str, arguments: Value, now: Instant) -> Self {
        ToolCell {
            call_id: call_id.to_string(),
            name: name.to_string(),
            arguments,
            by_person: false,
            live: VecDeque::new(),
            partial: String::new(),
            lines_seen: 0,
            awaiting: false,
            resumed: false,
            started: now,
            duration: None,
            envelope: None,
            diff: None,
        }
    }

    /// Append streamed output, keeping the last `LIVE_LINES` lines.
    pub fn push_output(&mut self, text: &str) {
        self.partial.push_str(text);
        while let Some(nl) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=nl).collect();
            self.lines_seen += 1;
            self.live
                .push_back(line.trim_end_matches(['\n', '\r']).to_string());
            if self.live.len() > LIVE_LINES {
                self.live.pop_front();
            }
        }
    }

    /// The command or target the call is about, for summaries.
    pub fn target(&self) -> String {
        let arg = |k: &str| self.arguments.get(k).and_then(Value::as_str);
        // fetch_url: the URL, then the pages asked for and where it is saved, if anywhere.
        if let Some(url) = arg("url") {
            let mut t = url.to_string();
            if let Some(p) = arg("pages") {
                t.push_str(&format!(" (pages {p})"));
            }
            if let Some(s) = arg("save_as") {
                t.push_str(&format!(" -> {s}"));
            }
            return t;
        }
        // A search is about its pattern (and where it looks).
        if let Some(p) = arg("pattern") {
            return match arg("path") {
                Some(path) => format!("{p}  in {path}"),
                None => p.to_string(),
            };
        }
        ["command", "path", "query"]
            .iter()
            .find_map(|k| arg(k))
            .unwrap_or("")
            .to_string()
    }

    /// What the call produced, as text: the diff of a write, else the output (what the
    /// envelope holds once it ended, the live lines while it runs).
    pub fn output_text(&self) -> String {
        if let Some(d) = &self.diff {
            return d.text();
        }
        match &self.envelope {
            Some(e) => {
                let mut s = e.stdout.clone();
                if !e.stderr.is_empty() && !s.is_empty() && !s.ends_with('\n') {
                    s.push('\n');
                }
                s.push_str(&e.stderr);
                s
            }
            None => {
                let mut s: String = self.live.iter().map(|l| format!("{l}\n")).collect();
                s.push_str(&self.partial);
                s
            }
        }
    }

    pub fn running(&self) -> bool {
        self.envelope.is_none()
    }
}

#[derive(Debug, Clone)]
pub enum CellKind {
    User(String),
    Assistant { text: String, streaming: bool },
    Reasoning(String),
    Tool(Box<ToolCell>),
    Notice { kind: NoticeKind, text: String },
}

#[derive(Debug, Clone)]
pub struct Cell {
    pub kind: CellKind,
    pub folded: bool,
    /// Bumped on every change, so a cached layout knows it is stale.
    pub version: u64,
}

impl Cell {
    pub fn new(kind: CellKind) -> Self {
        Cell {
            kind,
            folded: false,
            version: 0,
        }
    }

    pub fn touch(&mut self) {
        self.version = self.version.wrapping_add(1);
    }

    /// The text a copy (OSC 52) of this cell carries.
    pub fn plain_text(&self) -> String {
        match &self.kind {
            CellKind::User(t) | CellKind::Reasoning(t) => t.clone(),
            CellKind::Assistant { text, .. } => text.clone(),
            CellKind::Notice { text, .. } => text.clone(),
            CellKind::Tool(t) => format!("{}\n{}", t.target(), t.output_text()),
        }
    }
}

/// All cells of the session, in order.
#[derive(Debug, Default, Clone)]
pub struct Cells {
    pub items: Vec<Cell>,
}

impl Cells {
    pub fn push(&mut self, kind: CellKind) -> usize {
        self.items.push(Cell::new(kind));
        self.items.len() - 1
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn tool_mut(&mut self, call_id: &str) -> Option<(&mut ToolCell, &mut u64)> {
        self.items.iter_mut().rev().find_map(|c| match &mut c.kind {
            CellKind::Tool(t) if t.call_id == call_id => Some((t.as_mut(), &mut c.version)),
            _ => None,
        })
    }

    pub fn tool(&self, call_id: &str) -> Option<&ToolCell> {
        self.items.iter().rev().find_map(|c| match &c.kind {
            CellKind::Tool(t) if t.call_id == call_id => Some(t.as_ref()),
            _ => None,
        })
    }

    /// Append streamed assistant text to the streaming message, or start one.
    pub fn stream_text(&mut self, delta: &str, reasoning: bool) {
        // The model's text is shown as it came, less what a terminal would act on or reorder.
        let delta = &*escape_controls_keeping_lines(delta);
        if let Some(last) = self.items.last_mut() {
            match (&mut last.kind, reasoning) {
                (
                    CellKind::Assistant {
                        text,
                        streaming: true,
                    },
                    false,
                )
                | (CellKind::Reasoning(text), true) => {
                    text.push_str(delta);
                    last.touch();
                    return;
                }
                _ => {}
            }
        }
        if reasoning {
            let i = self.push(CellKind::Reasoning(delta.to_string()));
            self.items[i].folded = true;
        } else {
            self.push(CellKind::Assistant {
                text: delta.to_string(),
                streaming: true,
            });
        }
    }

    /// The model's message ended (a tool call or the end of the task).
    pub fn end_stream(&mut self) {
        for c in self.items.iter_mut().rev().take(3) {
            if let CellKind::Assistant { streaming, .. } = &mut c.kind
                && *streaming
            {
                *streaming = false;
                c.version = c.version.wrapping_add(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_output_keeps_the_last_lines_and_holds_a_partial_line() {
        let mut t = ToolCell::new("c1", "terminal", Value::Null, Instant::now());
        for i in 0..(LIVE_LINES + 10) {
            t.push_output(&format!("line {i}\n"));
        }
        t.push_output("part");
        assert_eq!(t.live.len(), LIVE_LINES);
        assert_eq!(t.live.front().map(String::as_str), Some("line 10"));
        assert_eq!(t.partial, "part");
    }

    #[test]
    fn a_fetch_is_summarised_by_its_url_pages_and_save_target() {
        let t = |args: Value| ToolCell::new("c", "fetch_url", args, Instant::now()).target();
        assert_eq!(
            t(serde_json::json!({"url": "https://x.example/a.pdf"})),
            "https://x.example/a.pdf"
        );
        assert_eq!(
            t(
                serde_json::json!({"url": "https://x.example/a.pdf", "pages": "13-24", "save_as": "a.pdf"})
            ),
            "https://x.example/a.pdf (pages 13-24) -> a.pdf"
        );
        let q = ToolCell::new(
            "c",
            "search_internet",
            serde_json::json!({"query": "rebar"}),
            Instant::now(),
        );
        assert_eq!(q.target(), "rebar");
    }

    #[test]
    fn deltas_extend_one_streaming_message_until_it_ends() {
        let mut c = Cells::default();
        c.stream_text("Hel", false);
        c.stream_text("lo", false);
        assert_eq!(c.len(), 1);
        c.end_stream();
        c.stream_text("again", false);
        assert_eq!(c.len(), 2);
    }
}
