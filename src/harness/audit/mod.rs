//! `AuditLogger`: an append-only JSONL log per workspace under `$XDG_STATE_HOME/spear/audit/`,
//! outside every workspace so no sandboxed command can reach it. Metadata only, secrets redacted,
//! each record chained to the one before by SHA-256. Appends from concurrent processes are
//! serialised by an advisory lock and made with one `write(2)` each, then fsynced; a line left
//! incomplete by a killed writer is set aside (and recorded) by the next writer.

mod chain;
pub mod display;
pub mod reader;
mod record;
pub mod summary;
mod summary_lex;

pub use chain::{GENESIS, VerifyFailure, VerifyReport, verify};
pub use record::{
    AuditEvent, AuditRecord, AuditTarget, CheckpointRef, DecidedBy, Decision, GrantRef, HookRun,
    MAX_CHANGED_LISTED, McpToolRef, ToolSeen, rfc3339,
};

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use thiserror::Error;

/// The audit machinery broke. Callers end the turn: an unrecorded mutation is not allowed to pass
/// silently.
#[derive(Debug, Error)]
pub enum AuditError {
    #[error("no state directory: neither XDG_STATE_HOME nor HOME is set")]
    NoStateDir,
    #[error("audit log {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("audit record could not be encoded: {0}")]
    Encode(#[source] serde_json::Error),
    #[error(
        "audit log {path}: the last record is unreadable ({problem}); run `spear audit --verify`"
    )]
    Corrupt { path: PathBuf, problem: String },
}

impl AuditError {
    pub(crate) fn io(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        AuditError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Where one workspace's log lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPaths {
    /// `…/spear/audit`
    pub dir: PathBuf,
    /// `<sha256 of the canonical root>.jsonl`
    pub log: PathBuf,
    /// `<sha256>.head`: the last record's number and hash.
    pub head: PathBuf,
    /// `index.jsonl`: one line per workspace (id, root, first seen).
    pub index: PathBuf,
}

impl AuditPaths {
    /// The paths for `root` (already canonical) under the state directory `state_home`.
    pub fn new(state_home: &Path, root: &Path) -> Self {
        let dir = state_home.join("spear").join("audit");
        let id = chain::sha256_hex(root.as_os_str().as_encoded_bytes());
        AuditPaths {
            log: dir.join(format!("{id}.jsonl")),
            head: dir.join(format!("{id}.head")),
            index: dir.join("index.jsonl"),
            dir,
        }
    }
}

/// `$XDG_STATE_HOME`, else `~/.local/state`.
pub fn default_state_home() -> Result<PathBuf, AuditError> {
    if let Some(dirs) = directories::BaseDirs::new() {
        if let Some(state) = dirs.state_dir() {
            return Ok(state.to_path_buf());
        }
        return Ok(dirs.home_dir().join(".local").join("state"));
    }
    Err(AuditError::NoStateDir)
}

/// Appends records for one workspace. Cheap to share between threads.
#[derive(Debug)]
pub struct AuditLogger {
    paths: AuditPaths,
    log: File,
    head: File,
    /// `flock` does not exclude threads sharing one open file; this does.
    in_process: Mutex<()>,
    /// Secret values held by name (an MCP server's `env`): no record carries one.
    known: crate::harness::secrets::KnownSecrets,
}

/// Holds the advisory lock; releases it when dropped, on every path out.
struct Locked<'a>(&'a File);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // Closing the file would release it too; an unlock error leaves nothing to do.
        let _ = self.0.unlock();
    }
}

impl AuditLogger {
    /// The logger for the workspace rooted at `root`, under the default state directory.
    pub fn open(root: &Path) -> Result<Self, AuditError> {
        Self::open_in(&default_state_home()?, root)
    }

    /// The logger for `root` under an explicit state directory (tests, `--state-dir` configs).
    pub fn open_in(state_home: &Path, root: &Path) -> Result<Self, AuditError> {
        let root = root
            .canonicalize()
            .map_err(|e| AuditError::io("canonicalize workspace", root, e))?;
        let paths = AuditPaths::new(state_home, &root);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&paths.dir)
            .map_err(|e| AuditError::io("create", &paths.dir, e))?;
        let open = |path: &Path, append: bool| {
            OpenOptions::new()
                .read(true)
                .write(!append)
                .append(append)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_CLOEXEC)
                .open(path)
                .map_err(|e| AuditError::io("open", path, e))
        };
        let log = open(&paths.log, true)?;
        let head = open(&paths.head, false)?;
        register_workspace(&paths, &root)?;
        Ok(AuditLogger {
            paths,
            log,
            head,
            in_process: Mutex::new(()),
            known: Default::default(),
        })
    }

    /// Replace these values wherever a record would carry them (`[REDACTED:NAME]`).
    pub fn with_known_secrets(mut self, known: crate::harness::secrets::KnownSecrets) -> Self {
        self.known = known;
        self
    }

    /// `record` with every known secret value replaced, in every text it carries.
    fn scrub(&self, record: AuditRecord) -> AuditRecord {
        if self.known.is_empty() {
            return record;
        }
        // A record always round-trips (the log is read back the same way); were it ever not to,
        // its texts are withheld rather than written unscrubbed.
        let withheld = |mut r: AuditRecord| {
            r.target = Some("[withheld: the record could not be scrubbed of secrets]".into());
            r.env.clear();
            r.changed.clear();
            r.hooks.clear();
            r.checkpoint = None;
            r
        };
        let Ok(mut value) = serde_json::to_value(&record) else {
            return withheld(record);
        };
        self.known.redact_json(&mut value);
        serde_json::from_value(value).unwrap_or_else(|_| withheld(record))
    }

    pub fn paths(&self) -> &AuditPaths {
        &self.paths
    }

    /// Record one event. Returns the record as stored (redacted, chained).
    pub fn append(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
        let record = self.scrub(AuditRecord::from_event(event));
        // A poisoned mutex only means another thread panicked while holding it; the file lock
        // below is what protects the log, so carry on.
        let _guard = self
            .in_process
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let log_path = &self.paths.log;
        self.log
            .lock()
            .map_err(|e| AuditError::io("lock", log_path, e))?;
        let _locked = Locked(&self.log);
        let log_path = &self.paths.log;
        let tail = reader::tail(&self.log, 1, &|_| true)
            .map_err(|e| AuditError::io("read", log_path, e))?;
        let (mut seq, mut prev) = match tail.lines.last() {
            None => (0, GENESIS.to_string()),
            Some(line) => match chain::open_line(line) {
                Ok((record, hash)) => (record.seq, hash),
                Err(problem) => {
                    return Err(AuditError::Corrupt {
                        path: log_path.clone(),
                        problem,
                    });
                }
            },
        };
        if let Some((offset, torn)) = tail.torn {
            // Cut the incomplete line off and record that it was there, so nothing is hidden.
            self.log
                .set_len(offset)
                .map_err(|e| AuditError::io("truncate", log_path, e))?;
            let mut note = AuditRecord::from_event(&AuditEvent {
                target: AuditTarget::Path(format!(
                    "incomplete line of {} bytes (sha256 {}) left by an interrupted writer, removed",
                    torn.len(),
                    chain::sha256_hex(&torn)
                )),
                ..AuditEvent::new("", "spear-audit", Decision::Recovered)
            });
            (seq, prev) = self.write_record(&mut note, seq, prev)?;
        }
        let mut record = record;
        self.write_record(&mut record, seq, prev)?;
        Ok(record)
    }

    /// Chain `record` after (`seq`, `prev`), write it with one write, fsync, update the head.
    fn write_record(
        &self,
        record: &mut AuditRecord,
        seq: u64,
        prev: String,
    ) -> Result<(u64, String), AuditError> {
        record.seq = seq + 1;
        record.prev = prev;
        let (line, hash) = chain::seal(record)?;
        let log_path = &self.paths.log;
        (&self.log)
            .write_all(&line)
            .map_err(|e| AuditError::io("write", log_path, e))?;
        self.log
            .sync_data()
            .map_err(|e| AuditError::io("fsync", log_path, e))?;
        // The record is on disk before the head names it, so a head can lag its log but never
        // run ahead of it; after a machine crash it may lag by more than one record, which
        // `verify` reports. Forcing it to disk too would cost a second flush per record and
        // buy nothing the lag check does not give, except on the first record: a head that
        // exists but is empty cannot be told from one that was emptied.
        let head_path = &self.paths.head;
        self.head
            .write_all_at(chain::head_line(record.seq, &hash).as_bytes(), 0)
            .map_err(|e| AuditError::io("write", head_path, e))?;
        if record.seq == 1 {
            self.head
                .sync_data()
                .map_err(|e| AuditError::io("fsync", head_path, e))?;
        }
        Ok((record.seq, hash))
    }
}

/// Add `root` to the index of workspaces if it is not there yet.
fn register_workspace(paths: &AuditPaths, root: &Path) -> Result<(), AuditError> {
    let index = &paths.index;
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .open(index)
        .map_err(|e| AuditError::io("open", index, e))?;
    file.lock().map_err(|e| AuditError::io("lock", index, e))?;
    let _locked = Locked(&file);
    let id = paths
        .log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing = std::fs::read_to_string(index).map_err(|e| AuditError::io("read", index, e))?;
    let needle = format!("\"id\":\"{id}\"");
    if existing.lines().any(|l| l.contains(&needle)) {
        return Ok(());
    }
    let entry = serde_json::json!({
        "id": id,
        "root": root.to_string_lossy(),
        "first_seen": record::rfc3339_now(),
    });
    let mut line = entry.to_string();
    line.push('\n');
    (&file)
        .write_all(line.as_bytes())
        .map_err(|e| AuditError::io("write", index, e))?;
    file.sync_data()
        .map_err(|e| AuditError::io("fsync", index, e))
}
