//! `read_file {path, offset?, limit?}`: a bounded, numbered window of a text file in the
//! workspace, or of a stored result (`result://ID`). Lines are streamed, never the whole file;
//! binary files are described rather than dumped; a missing file is `not_found`.

use std::io::{BufRead, BufReader};

use serde_json::{Value, json};

use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::harness::workspace::WorkspacePath;
use crate::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use crate::tools::host::SpearHost;
use crate::tools::host::files::fs_failure;
use crate::tools::host::gates::{Target, TargetAccess};
use crate::tools::lines::{count_lines, display_line, read_line_capped, skip_lines};
use crate::tools::refusal::Refusal;
use crate::tools::results::{SCHEME, StoreError};

pub const DEFAULT_LIMIT: u64 = 500;
pub const MAX_LIMIT: u64 = 2_000;
/// A window never exceeds this many characters, so the router never has to cut it.
pub const MAX_WINDOW_CHARS: usize = 40_000;
/// Files larger than this are not counted to the end for the "of N lines" footer.
const COUNT_LIMIT_BYTES: u64 = 256 << 20;

pub fn schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["path"],
        "properties": {
            "path": {"type": "string", "minLength": 1,
                     "description": "A workspace path, or result://ID for a stored output"},
            "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                      "description": "How many lines (default 500)"}
        }
    })
}

pub struct ReadFile;

impl ToolHandler for ReadFile {
    fn plan(&self, args: &Value, _host: &SpearHost) -> Result<Plan, Refusal> {
        let path = args["path"].as_str().unwrap_or_default().to_string();
        let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(1);
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_LIMIT);
        let window = Window { offset, limit };
        if let Some(id) = path.strip_prefix(SCHEME) {
            return Ok(Plan {
                targets: Vec::new(),
                command: None,
                audit_target: Some(path.clone()),
                action: Box::new(ReadResult {
                    id: id.to_string(),
                    window,
                }),
            });
        }
        Ok(Plan {
            targets: vec![Target {
                path: path.clone(),
                access: TargetAccess::Read,
            }],
            command: None,
            audit_target: Some(path),
            action: Box::new(ReadWorkspace { window }),
        })
    }
}

#[derive(Clone, Copy)]
struct Window {
    offset: u64,
    limit: u64,
}

/// The numbered lines of one window and what follows it.
struct Shown {
    text: String,
    lines: u64,
    /// Another line follows the window.
    more: bool,
}

fn read_window(r: &mut impl BufRead, w: Window) -> std::io::Result<Shown> {
    let mut shown = Shown {
        text: String::new(),
        lines: 0,
        more: false,
    };
    let mut chars = 0usize;
    while shown.lines < w.limit {
        let Some(line) = read_line_capped(r, crate::tools::lines::MAX_LINE_CHARS * 4)? else {
            return Ok(shown);
        };
        let text = format!("{:>6}\t{}\n", w.offset + shown.lines, display_line(&line));
        let n = text.chars().count();
        if shown.lines > 0 && chars + n > MAX_WINDOW_CHARS {
            shown.more = true;
            return Ok(shown);
        }
        chars += n;
        shown.text.push_str(&text);
        shown.lines += 1;
    }
    shown.more = !r.fill_buf()?.is_empty();
    Ok(shown)
}

fn footer(w: Window, shown: &Shown, total: Option<u64>, what: &str) -> String {
    let last = w.offset + shown.lines.saturating_sub(1);
    let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
    if shown.lines == 0 {
        return format!("[{what} has no line {}{of}]\n", w.offset);
    }
    if shown.more {
        format!(
            "[lines {}-{last}{of} of {what}; continue with offset={}]\n",
            w.offset,
            last + 1
        )
    } else {
        format!("[lines {}-{last}{of} of {what}; end]\n", w.offset)
    }
}

/// What a binary file is, from its first bytes.
fn describe_binary(head: &[u8]) -> &'static str {
    const MAGIC: [(&[u8], &str); 9] = [
        (b"\x89PNG", "a PNG image"),
        (b"\xFF\xD8\xFF", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (b"PK\x03\x04", "a ZIP archive"),
        (b"\x1F\x8B", "gzip-compressed data"),
        (b"\x7FELF", "an ELF executable or library"),
        (b"\0asm", "a WebAssembly module"),
        (b"SQLite format 3\0", "an SQLite database"),
    ];
    MAGIC
        .iter()
        .find(|(m, _)| head.starts_with(m))
        .map_or("binary data", |(_, what)| what)
}

struct ReadWorkspace {
    window: Window,
}

impl Action for ReadWorkspace {
    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        let Some(p) = ctx.paths.first() else {
            return ToolResult::failed("read_file was planned without a path").into();
        };
        read_workspace(host, p, self.window).into()
    }
}

fn read_workspace(host: &SpearHost, p: &WorkspacePath, w: Window) -> ToolResult {
    let shown_path = p.written().display().to_string();
    if !p.exists() {
        return ToolResult::refused(
            ToolStatus::NotFound,
            format!("`{shown_path}` does not exist"),
        );
    }
    if p.resolved().is_dir() {
        return ToolResult::failed(format!(
            "`{shown_path}` is a directory; list it with search_files or `ls` in the terminal"
        ));
    }
    let file = match host.open_read(p) {
        Ok(f) => f,
        Err(e) => return fs_failure(e),
    };
    let meta = file.metadata().ok();
    let size = meta.as_ref().map_or(0, |m| m.len());
    let links = meta
        .as_ref()
        .map_or(1, std::os::unix::fs::MetadataExt::nlink);
    let mut r = BufReader::with_capacity(64 * 1024, file);
    let head = match r.fill_buf() {
        Ok(b) => b[..b.len().min(8192)].to_vec(),
        Err(e) => return ToolResult::failed(format!("read `{shown_path}`: {e}")),
    };
    if head.contains(&0) {
        return ToolResult::ok(format!(
            "`{shown_path}` is {} ({size} bytes); binary content is not shown.\n",
            describe_binary(&head)
        ));
    }
    let body = (|| -> std::io::Result<(Shown, Option<u64>)> {
        let skipped = skip_lines(&mut r, w.offset - 1)?;
        let shown = read_window(&mut r, w)?;
        let total = if size <= COUNT_LIMIT_BYTES {
            let (rest, _) = count_lines(&mut r)?;
            Some(skipped + shown.lines + rest)
        } else {
            None
        };
        Ok((shown, total))
    })();
    match body {
        Ok((shown, total)) => {
            let mut out = shown.text.clone();
            if std::str::from_utf8(crate::tools::lines::utf8_prefix(&head)).is_err() {
                out.push_str("[the file is not valid UTF-8; invalid bytes are shown as U+FFFD]\n");
            }
            out.push_str(&footer(w, &shown, total, &format!("`{shown_path}`")));
            if links > 1 {
                out.push_str(&format!(
                    "[`{shown_path}` has {links} hard links: the same file may also be reached \
                     outside the workspace, so its content may not be the project's own; Spear \
                     will not write it in place]\n"
                ));
            }
            ToolResult::ok(out)
        }
        Err(e) => ToolResult::failed(format!("read `{shown_path}`: {e}")),
    }
}

struct ReadResult {
    id: String,
    window: Window,
}

impl Action for ReadResult {
    fn run(self: Box<Self>, host: &SpearHost, _ctx: &RunContext<'_>) -> ActionOutcome {
        let w = self.window;
        let uri = format!("{SCHEME}{}", self.id);
        let (mut r, index) = match host.results().open_at_line(&self.id, w.offset) {
            Ok(x) => x,
            Err(e @ (StoreError::NotFound(_) | StoreError::BadId(_))) => {
                return ToolResult::refused(ToolStatus::NotFound, e.to_string()).into();
            }
            Err(e) => return ToolResult::failed(e.to_string()).into(),
        };
        match read_window(&mut r, w) {
            Ok(shown) => {
                let mut out = shown.text.clone();
                out.push_str(&footer(w, &shown, Some(index.lines_stored()), &uri));
                if index.dropped_bytes > 0 {
                    out.push_str(&format!(
                        "[the output was {} bytes: only its first {} and last {} bytes were kept \
                         ({} dropped from the middle, at the marker line), as one stored result \
                         may keep no more]\n",
                        index.total_bytes, index.head_bytes, index.tail_bytes, index.dropped_bytes
                    ));
                } else if index.stored_bytes < index.total_bytes {
                    out.push_str(&format!(
                        "[only the first {} of {} bytes were kept: the output exceeded the store's budget]\n",
                        index.stored_bytes, index.total_bytes
                    ));
                }
                ToolResult::ok(out).into()
            }
            Err(e) => ToolResult::failed(format!("read {uri}: {e}")).into(),
        }
    }
}
