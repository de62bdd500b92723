//! Session transcripts: each conversation written as it happens to one JSONL file under
//! `$XDG_STATE_HOME/spear/sessions/<workspace hash>/<id>.jsonl` (outside every workspace, so no
//! sandboxed command can reach it). Invariant: every record is one line appended with a single
//! `write(2)` as soon as it exists, so a crash loses at most the record in flight; records hold
//! previews only (the ResultStore keeps payloads) and never a key or a header value.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::agent::event::AgentEvent;
use crate::agent::model::{ChatMessage, ToolCallRequest};
use crate::tools::results::{StoreError, workspace_state_dir};

#[derive(Debug, Error)]
pub enum SessionError {
    #[error("session store {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no session `{id}` for this workspace; `spear sessions` lists them")]
    NotFound { id: String },
    #[error("`{0}` is not a session id (they look like 20261130T142233-1a2b)")]
    BadId(String),
    #[error("session {path} is unreadable: line {line} is not a session record")]
    Corrupt { path: PathBuf, line: usize },
    #[error("{0}")]
    Dir(#[from] StoreError),
}

fn io_err<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> SessionError + 'a {
    move |source| SessionError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// Facts about a session, written as its first record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub id: String,
    pub workspace: String,
    pub created: String,
    pub provider: String,
    pub model: String,
    pub mode: String,
}

/// One line of a session file.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionRecord<'a> {
    Session(&'a SessionMeta),
    /// A message appended to the conversation.
    Message {
        message: &'a ChatMessage,
    },
    /// An event of a task (deltas are not kept: the whole message is).
    Event {
        event: &'a AgentEvent,
    },
    /// The conversation was compacted: from here on it is `messages`.
    Compacted {
        messages: &'a [ChatMessage],
    },
    /// The session was continued by a later run.
    Resumed {
        at: String,
    },
    /// `/rewind`: the conversation went back to just before request `request` (counted from
    /// 1 among the person's requests); from here on it is `messages`. What came after stays
    /// above, on record.
    Rewound {
        request: usize,
        at: String,
        messages: &'a [ChatMessage],
    },
}

/// What loading needs of a record; events are skipped.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StoredRecord {
    Session(SessionMeta),
    Message {
        message: ChatMessage,
    },
    Compacted {
        messages: Vec<ChatMessage>,
    },
    Rewound {
        messages: Vec<ChatMessage>,
    },
    #[serde(other)]
    Other,
}

/// A line of `spear sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    pub id: String,
    pub created: String,
    pub updated: String,
    pub model: String,
    pub mode: String,
    pub messages: usize,
    /// The first request, cut to one short line.
    pub title: String,
}

/// A session read back.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    pub meta: SessionMeta,
    pub messages: Vec<ChatMessage>,
    /// The last line was cut by a crash: its length (it was skipped, and is cut off before
    /// the session is written again).
    pub torn: Option<usize>,
}

/// The sessions of one workspace.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    workspace: PathBuf,
}

pub fn now_rfc3339() -> String {
    crate::harness::audit::rfc3339(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default(),
    )
}

impl SessionStore {
    pub fn open_in(state_home: &Path, root: &Path) -> Result<Self, SessionError> {
        let (dir, root) = workspace_state_dir(state_home, "sessions", root)?;
        Ok(SessionStore {
            dir,
            workspace: root,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    fn path_of(&self, id: &str) -> Result<PathBuf, SessionError> {
        let ok = !id.is_empty()
            && id.len() <= 64
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !ok {
            return Err(SessionError::BadId(id.to_string()));
        }
        Ok(self.dir.join(format!("{id}.jsonl")))
    }

    /// A new session: a fresh id, its file created with the meta record.
    pub fn create(
        &self,
        provider: &str,
        model: &str,
        mode: &str,
    ) -> Result<SessionWriter, SessionError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let stamp: String = crate::harness::audit::rfc3339(now)
            .chars()
            .filter(|c| c.is_ascii_digit() || *c == 'T')
            .take(15)
            .collect();
        // Two sessions started in the same second get different salts; a clash is retried.
        let base = (now.subsec_nanos() ^ std::process::id().rotate_left(16)) & 0xffff;
        let mut attempt = 0u32;
        let (id, path, file) = loop {
            let id = format!("{stamp}-{:04x}", (base + attempt * 0x9e37) & 0xffff);
            let path = self.path_of(&id)?;
            match OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => break (id, path, file),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => {
                    attempt += 1;
                }
                Err(e) => return Err(io_err("create", &path)(e)),
            }
        };
        let meta = SessionMeta {
            id,
            workspace: self.workspace.display().to_string(),
            created: now_rfc3339(),
            provider: provider.to_string(),
            model: model.to_string(),
            mode: mode.to_string(),
        };
        let mut w = SessionWriter {
            file,
            path,
            id: meta.id.clone(),
        };
        w.write(&SessionRecord::Session(&meta))?;
        Ok(w)
    }

    /// Continue `id`: its conversation, and a writer appending to it.
    pub fn resume(&self, id: &str) -> Result<(LoadedSession, SessionWriter), SessionError> {
        let loaded = self.load(id)?;
        let path = self.path_of(id)?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io_err("open", &path))?;
        // A line cut by a crash would glue onto the next record and make the file unreadable
        // past it: it is cut off, back to the last whole line, before anything is appended.
        if loaded.torn.is_some() {
            let bytes = std::fs::read(&path).map_err(io_err("read", &path))?;
            // The torn line is the last one, with or without a newline after it.
            let end = bytes.len() - usize::from(bytes.ends_with(b"\n"));
            let whole = bytes[..end]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            file.set_len(whole as u64)
                .map_err(io_err("truncate", &path))?;
        }
        let mut w = SessionWriter {
            file,
            path,
            id: id.to_string(),
        };
        w.write(&SessionRecord::Resumed { at: now_rfc3339() })?;
        Ok((loaded, w))
    }

    /// Read a session back. A last line cut by a crash is ignored; the conversation is
    /// repaired so every tool call has its answer (a call cut by the crash is `cancelled`).
    pub fn load(&self, id: &str) -> Result<LoadedSession, SessionError> {
        let path = self.path_of(id)?;
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound { id: id.to_string() });
            }
            Err(e) => return Err(io_err("open", &path)(e)),
        };
        let lines: Vec<String> = BufReader::new(file)
            .lines()
            .collect::<Result<_, _>>()
            .map_err(io_err("read", &path))?;
        let mut meta = None;
        let mut messages = Vec::new();
        let mut torn = None;
        let last = lines.len();
        for (i, line) in lines.iter().enumerate() {
            match serde_json::from_str::<StoredRecord>(line) {
                Ok(StoredRecord::Session(m)) => meta = Some(m),
                Ok(StoredRecord::Message { message }) => messages.push(message),
                Ok(
                    StoredRecord::Compacted { messages: m } | StoredRecord::Rewound { messages: m },
                ) => messages = m,
                Ok(StoredRecord::Other) => {}
                Err(_) if i + 1 == last => torn = Some(line.len()),
                Err(_) => {
                    return Err(SessionError::Corrupt {
                        path: path.clone(),
                        line: i + 1,
                    });
                }
            }
        }
        let meta = meta.ok_or(SessionError::Corrupt {
            path: path.clone(),
            line: 1,
        })?;
        Ok(LoadedSession {
            meta,
            messages: repair(messages),
            torn,
        })
    }

    /// This workspace's sessions, newest first.
    pub fn list(&self) -> Result<Vec<SessionSummary>, SessionError> {
        let mut out = Vec::new();
        let entries = fs::read_dir(&self.dir).map_err(io_err("list", &self.dir))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".jsonl") else {
                continue;
            };
            let Ok(s) = self.load(id) else { continue };
            let updated = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(crate::harness::audit::rfc3339)
                .unwrap_or_default();
            let title = s
                .messages
                .iter()
                .find_map(|m| match m {
                    ChatMessage::User { content } => Some(one_line(content, 72)),
                    _ => None,
                })
                .unwrap_or_default();
            out.push(SessionSummary {
                id: s.meta.id,
                created: s.meta.created,
                updated,
                model: s.meta.model,
                mode: s.meta.mode,
                messages: s.messages.len(),
                title,
            });
        }
        out.sort_by(|a, b| b.updated.cmp(&a.updated).then(b.id.cmp(&a.id)));
        Ok(out)
    }
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Answer every tool call that has no `tool` message (the run ended while it was in flight).
pub fn repair(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    let mut open: Vec<ToolCallRequest> = Vec::new();
    let close = |out: &mut Vec<ChatMessage>, open: &mut Vec<ToolCallRequest>| {
        for call in open.drain(..) {
            out.push(ChatMessage::Tool {
                tool_call_id: call.id,
                content: "[cancelled] the session ended before this call finished; it may or \
                          may not have run"
                    .into(),
            });
        }
    };
    for m in messages {
        match &m {
            ChatMessage::Tool { tool_call_id, .. } => {
                open.retain(|c| &c.id != tool_call_id);
            }
            ChatMessage::Assistant { tool_calls, .. } => {
                close(&mut out, &mut open);
                open = tool_calls.clone();
            }
            _ => close(&mut out, &mut open),
        }
        out.push(m);
    }
    close(&mut out, &mut open);
    out
}

/// Appends to one session file.
#[derive(Debug)]
pub struct SessionWriter {
    file: File,
    path: PathBuf,
    id: String,
}

impl SessionWriter {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One record, one line, one `write(2)` (the file is opened `O_APPEND`, unbuffered).
    pub fn write(&mut self, record: &SessionRecord<'_>) -> Result<(), SessionError> {
        let mut line = serde_json::to_vec(record).map_err(|e| SessionError::Io {
            op: "encode",
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.flush())
            .map_err(io_err("append", &self.path))
    }
}
