//! `ResultStore`: large output kept whole on disk under the state directory (never in the
//! workspace, never whole in memory), addressed as `result://ID`, with a bounded head-and-tail
//! preview for the model. Output is streamed to the file as it arrives; only the head, the tail
//! and a sparse line index stay in memory. Old results are pruned oldest first to a size budget.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::tools::executor::{OutputSink, OutputStream};
use crate::tools::lines::{self, utf8_prefix, utf8_suffix};

/// The scheme of stored results.
pub const SCHEME: &str = "result://";
/// Default budget for all stored results of one workspace.
pub const DEFAULT_BUDGET_BYTES: u64 = 2 << 30;
/// The model sees at most this many characters of one output (head and tail together).
pub const PREVIEW_CHARS: usize = 50_000;
/// Every this many lines the index records where a line starts, so a page is found by a seek.
const LINE_STRIDE: u64 = 1024;

static COUNTER: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("result store {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the result store {0} lies inside the workspace; it must live in the state directory")]
    InsideWorkspace(PathBuf),
    #[error("no stored result `{0}` (it may have been pruned)")]
    NotFound(String),
    #[error("`{0}` is not a result id")]
    BadId(String),
    #[error("stored result {0} has an unreadable index")]
    BadIndex(String),
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// The stored results of one workspace.
#[derive(Debug, Clone)]
pub struct ResultStore {
    dir: PathBuf,
    budget: u64,
}

/// What is known about a stored output; written next to it as `ID.idx`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultIndex {
    pub total_bytes: u64,
    pub total_lines: u64,
    /// Bytes kept on disk (less than `total_bytes` only if one output exceeded the budget).
    pub stored_bytes: u64,
    /// `starts[k]` is the byte offset of line `k * LINE_STRIDE + 1`.
    pub starts: Vec<u64>,
}

/// A finished stored output and its bounded preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOutput {
    pub id: String,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub stored_bytes: u64,
    /// What the model is shown: the whole output when it fits, else head, marker, tail.
    pub preview: String,
    pub shown_bytes: u64,
    pub shown_lines: u64,
    pub truncated: bool,
}

impl StoredOutput {
    pub fn uri(&self) -> String {
        format!("{SCHEME}{}", self.id)
    }
}

impl ResultStore {
    /// The store for the workspace rooted at `root`, under `state_home/spear/results/`.
    pub fn open_in(state_home: &Path, root: &Path, budget: u64) -> Result<Self, StoreError> {
        let root = root.canonicalize().map_err(io_err("canonicalize", root))?;
        let id = hex(&Sha256::digest(root.as_os_str().as_encoded_bytes()));
        let dir = state_home.join("spear").join("results").join(id);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io_err("create", &dir))?;
        let dir = dir.canonicalize().map_err(io_err("canonicalize", &dir))?;
        if dir.starts_with(&root) {
            return Err(StoreError::InsideWorkspace(dir));
        }
        Ok(ResultStore { dir, budget })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// A writer for a new result.
    pub fn create(&self) -> Result<ResultWriter, StoreError> {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let id = format!(
            "{}-{}-{}",
            since.as_millis(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let path = self.dir.join(format!("{id}.out"));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err("create", &path))?;
        Ok(ResultWriter::new(self.clone(), id, path, file))
    }

    /// Store an output that is already in memory (a tool's own bounded text).
    pub fn store_text(&self, text: &str) -> Result<StoredOutput, StoreError> {
        let mut w = self.create()?;
        w.push(text.as_bytes());
        w.finish()
    }

    fn check_id<'a>(&self, id: &'a str) -> Result<&'a str, StoreError> {
        let ok = !id.is_empty()
            && id.len() <= 64
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        ok.then_some(id)
            .ok_or_else(|| StoreError::BadId(id.to_string()))
    }

    /// The index of a stored result.
    pub fn index(&self, id: &str) -> Result<ResultIndex, StoreError> {
        let id = self.check_id(id)?;
        let path = self.dir.join(format!("{id}.idx"));
        let raw = match fs::read(&path) {
            Ok(raw) => raw,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound(id.to_string()));
            }
            Err(e) => return Err(io_err("read", &path)(e)),
        };
        serde_json::from_slice(&raw).map_err(|_| StoreError::BadIndex(id.to_string()))
    }

    /// A reader positioned at the start of line `line` (1-based), and the index.
    pub fn open_at_line(
        &self,
        id: &str,
        line: u64,
    ) -> Result<(BufReader<File>, ResultIndex), StoreError> {
        let index = self.index(id)?;
        let path = self.dir.join(format!("{id}.out"));
        let mut file = File::open(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => StoreError::NotFound(id.to_string()),
            _ => io_err("open", &path)(e),
        })?;
        let want = line.max(1) - 1;
        let slot = ((want / LINE_STRIDE) as usize).min(index.starts.len().saturating_sub(1));
        let start = index.starts.get(slot).copied().unwrap_or(0);
        file.seek(SeekFrom::Start(start))
            .map_err(io_err("seek", &path))?;
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        lines::skip_lines(&mut reader, want - slot as u64 * LINE_STRIDE)
            .map_err(io_err("read", &path))?;
        Ok((reader, index))
    }

    /// Forget a result that turned out small enough to show whole.
    pub fn discard(&self, id: &str) -> Result<(), StoreError> {
        let id = self.check_id(id)?;
        for ext in ["out", "idx"] {
            let p = self.dir.join(format!("{id}.{ext}"));
            match fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", &p)(e)),
            }
        }
        Ok(())
    }

    /// Remove the oldest results until the store fits its budget; `keep` is never removed.
    pub fn prune(&self, keep: &str) -> Result<u64, StoreError> {
        let entries = fs::read_dir(&self.dir).map_err(io_err("list", &self.dir))?;
        let mut outs: Vec<(SystemTime, String, u64)> = Vec::new();
        let mut total = 0u64;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(meta) = entry.metadata() else { continue };
            total += meta.len();
            if let Some(id) = name.strip_suffix(".out") {
                let idx = meta.len()
                    + fs::metadata(self.dir.join(format!("{id}.idx"))).map_or(0, |m| m.len());
                let when = meta.modified().unwrap_or(UNIX_EPOCH);
                outs.push((when, id.to_string(), idx));
            }
        }
        outs.sort();
        let mut removed = 0;
        for (_, id, size) in outs {
            if total <= self.budget {
                break;
            }
            if id == keep {
                continue;
            }
            self.discard(&id)?;
            total = total.saturating_sub(size);
            removed += 1;
        }
        Ok(removed)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Streams one output to disk, keeping only its head, its tail and a sparse line index.
pub struct ResultWriter {
    store: ResultStore,
    id: String,
    path: PathBuf,
    file: BufWriter<File>,
    head: Vec<u8>,
    /// The last bytes after the head; kept between `half` and `2 * half` bytes long.
    tail: Vec<u8>,
    half: usize,
    total: u64,
    newlines: u64,
    last: u8,
    starts: Vec<u64>,
    stored: u64,
    error: Option<io::Error>,
}

impl ResultWriter {
    fn new(store: ResultStore, id: String, path: PathBuf, file: File) -> Self {
        ResultWriter {
            store,
            id,
            path,
            file: BufWriter::with_capacity(256 * 1024, file),
            head: Vec::new(),
            tail: Vec::new(),
            half: PREVIEW_CHARS / 2,
            total: 0,
            newlines: 0,
            last: b'\n',
            starts: vec![0],
            stored: 0,
            error: None,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Take one chunk. I/O errors are remembered and reported by `finish`; counting goes on, so
    /// the envelope still says how large the output was.
    pub fn push(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        for pos in memchr::memchr_iter(b'\n', chunk) {
            self.newlines += 1;
            if self.newlines.is_multiple_of(LINE_STRIDE) {
                self.starts.push(self.total + pos as u64 + 1);
            }
        }
        let room = self.store.budget.saturating_sub(self.stored) as usize;
        let keep = &chunk[..chunk.len().min(room)];
        if self.error.is_none() && !keep.is_empty() {
            match self.file.write_all(keep) {
                Ok(()) => self.stored += keep.len() as u64,
                Err(e) => self.error = Some(e),
            }
        }
        let mut rest = chunk;
        if self.head.len() < self.half {
            let take = rest.len().min(self.half - self.head.len());
            self.head.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
        }
        if rest.len() >= self.half {
            self.tail.clear();
            self.tail.extend_from_slice(&rest[rest.len() - self.half..]);
        } else {
            self.tail.extend_from_slice(rest);
            if self.tail.len() > 2 * self.half {
                let cut = self.tail.len() - self.half;
                self.tail.drain(..cut);
            }
        }
        self.total += chunk.len() as u64;
        self.last = chunk[chunk.len() - 1];
    }

    /// Flush, write the index, prune the store, and build the preview.
    pub fn finish(mut self) -> Result<StoredOutput, StoreError> {
        if let Some(e) = self.error.take() {
            return Err(io_err("write", &self.path)(e));
        }
        self.file.flush().map_err(io_err("write", &self.path))?;
        let total_lines = self.newlines + u64::from(self.total > 0 && self.last != b'\n');
        let index = ResultIndex {
            total_bytes: self.total,
            total_lines,
            stored_bytes: self.stored,
            starts: std::mem::take(&mut self.starts),
        };
        let idx_path = self.store.dir.join(format!("{}.idx", self.id));
        let encoded = serde_json::to_vec(&index).map_err(|e| StoreError::Io {
            op: "encode",
            path: idx_path.clone(),
            source: io::Error::other(e),
        })?;
        fs::write(&idx_path, encoded).map_err(io_err("write", &idx_path))?;
        self.store.prune(&self.id)?;
        Ok(self.preview(&index))
    }

    fn preview(&self, index: &ResultIndex) -> StoredOutput {
        let tail_len = self.tail.len().min(self.half);
        let tail = &self.tail[self.tail.len() - tail_len..];
        let shown_total = (self.head.len() + tail_len) as u64;
        let truncated = self.total > shown_total;
        let (preview, shown_bytes, shown_lines) = if !truncated {
            let mut all = self.head.clone();
            all.extend_from_slice(tail);
            let n = memchr::memchr_iter(b'\n', &all).count() as u64;
            (
                String::from_utf8_lossy(&all).into_owned(),
                all.len() as u64,
                n.max(index.total_lines.min(1)),
            )
        } else {
            let head = utf8_prefix(&self.head);
            let tail = utf8_suffix(tail);
            let shown = (head.len() + tail.len()) as u64;
            let head_lines = memchr::memchr_iter(b'\n', head).count() as u64;
            let tail_lines = memchr::memchr_iter(b'\n', tail).count() as u64 + 1;
            let marker = format!(
                "\n[… {} bytes ({} lines) cut here; the whole output ({} bytes, {} lines) is \
                 stored as {SCHEME}{id}: read it with read_file {{\"path\": \"{SCHEME}{id}\", \
                 \"offset\": LINE, \"limit\": N}} …]\n",
                self.total - shown,
                index.total_lines.saturating_sub(head_lines + tail_lines),
                self.total,
                index.total_lines,
                id = self.id
            );
            let text = format!(
                "{}{marker}{}",
                String::from_utf8_lossy(head),
                String::from_utf8_lossy(tail)
            );
            (text, shown, head_lines + tail_lines)
        };
        StoredOutput {
            id: self.id.clone(),
            total_bytes: index.total_bytes,
            total_lines: index.total_lines,
            stored_bytes: index.stored_bytes,
            preview,
            shown_bytes,
            shown_lines,
            truncated,
        }
    }
}

impl OutputSink for ResultWriter {
    fn write(&mut self, _stream: OutputStream, chunk: &[u8]) -> io::Result<()> {
        // Both streams go to one file in arrival order, as a terminal would show them.
        self.push(chunk);
        match &self.error {
            Some(e) => Err(io::Error::new(e.kind(), e.to_string())),
            None => Ok(()),
        }
    }
}
