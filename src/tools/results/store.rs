//! `ResultStore`: large output kept on disk under the state directory (never in the workspace,
//! never whole in memory), addressed as `result://ID`, with a bounded head-and-tail preview for
//! the model. Two limits hold at every moment, not only once an output ends: one result keeps at
//! most `per_result_bytes` (its head and its tail; the middle of a flood is dropped and the
//! stored text says where), and all results together stay within `total_bytes`, the oldest
//! evicted first to make room, never one of the current turn and never one still streaming.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::tools::lines;
use crate::tools::results::error::{StoreError, io_err};
use crate::tools::results::index::{LINE_STRIDE, ResultIndex};
use crate::tools::results::preview::StoredOutput;
use crate::tools::results::writer::{Budget, ResultWriter};

const MIB: u64 = 1 << 20;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// How much the store may keep. The defaults, and why:
/// - `per_result_bytes` 64 MiB: a million lines of build or test log, some 1,600 pages of
///   `read_file` (2,000 lines a page): more than anyone reads back, and the head and the tail,
///   where a log's cause and verdict are, are always among what is kept. A 45 s flood at disk
///   speed (several GB) is cut to this as it streams.
/// - `total_bytes` 1 GiB: sixteen results at the cap; results are read back within the turn
///   that made them, or soon after, so older ones are what is evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StoreLimits {
    /// The most one result keeps on disk (its head and its tail, half each).
    pub per_result_bytes: u64,
    /// The most all results of one workspace keep together.
    pub total_bytes: u64,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            per_result_bytes: 64 * MIB,
            total_bytes: 1024 * MIB,
        }
    }
}

/// What this process knows about the store's use; shared by every clone of the store.
#[derive(Debug, Default)]
struct Ledger {
    /// The turn whose results are protected (as the router names it).
    turn: Option<u64>,
    /// Results created in that turn: never evicted.
    this_turn: HashSet<String>,
    /// Writers still streaming: the bytes each is granted now, and the most it may claim.
    in_flight: HashMap<String, (u64, u64)>,
}

/// The stored results of one workspace.
#[derive(Debug, Clone)]
pub struct ResultStore {
    dir: PathBuf,
    limits: StoreLimits,
    ledger: Arc<Mutex<Ledger>>,
}

/// One result's files on disk.
struct OnDisk {
    id: String,
    /// (milliseconds, pid, counter) from the id: creation order.
    born: (u128, u32, u64),
    bytes: u64,
}

/// `ID.out`, `ID.idx`, `ID.tN` (tail segments): the id and the creation order in it.
fn parse_name(name: &str) -> Option<(String, (u128, u32, u64))> {
    let (id, ext) = name.split_once('.')?;
    let ext_ok = ext == "out"
        || ext == "idx"
        || ext
            .strip_prefix('t')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let mut parts = id.split('-');
    let born = (
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
    );
    (ext_ok && parts.next().is_none()).then(|| (id.to_string(), born))
}

/// Index bytes a result of `data` bytes may need besides its data (one offset per 1,024 lines,
/// lines of one byte at worst), so the reservation covers both.
pub(crate) fn with_index(data: u64) -> u64 {
    data + data / 64 + 4096
}

/// `state_home/spear/KIND/<sha256 of the canonical root>`, created private, and the canonical
/// root. Refused when it would lie inside the workspace, where a sandboxed command could
/// rewrite it. Every per-workspace record (results, sessions) lives in one of these.
pub fn workspace_state_dir(
    state_home: &Path,
    kind: &str,
    root: &Path,
) -> Result<(PathBuf, PathBuf), StoreError> {
    let root = root.canonicalize().map_err(io_err("canonicalize", root))?;
    let id = hex(&Sha256::digest(root.as_os_str().as_encoded_bytes()));
    let dir = state_home.join("spear").join(kind).join(id);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(io_err("create", &dir))?;
    let dir = dir.canonicalize().map_err(io_err("canonicalize", &dir))?;
    if dir.starts_with(&root) {
        return Err(StoreError::InsideWorkspace(dir));
    }
    Ok((dir, root))
}

impl ResultStore {
    /// The store for the workspace rooted at `root`, under `state_home/spear/results/`.
    pub fn open_in(
        state_home: &Path,
        root: &Path,
        limits: StoreLimits,
    ) -> Result<Self, StoreError> {
        let (dir, _root) = workspace_state_dir(state_home, "results", root)?;
        Ok(ResultStore {
            dir,
            limits,
            ledger: Arc::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn limits(&self) -> StoreLimits {
        self.limits
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start protecting the results of turn `turn` (the router calls this with every call; a
    /// new turn number ends the protection of the previous turn's results).
    pub fn begin_turn(&self, turn: u64) {
        let mut l = self.ledger();
        if l.turn != Some(turn) {
            l.turn = Some(turn);
            l.this_turn.clear();
        }
    }

    /// A writer for a new result. Its cap is the per-result cap, or less when the results that
    /// may not be evicted (this turn's, and those still streaming) leave less of the budget.
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
        let file = self.create_file(&path)?;
        let cap = {
            let mut l = self.ledger();
            let kept = self
                .scan()?
                .into_iter()
                .filter(|r| l.this_turn.contains(&r.id));
            let kept: u64 = kept.map(|r| r.bytes).sum::<u64>()
                + l.in_flight.values().map(|(_, most)| most).sum::<u64>();
            // Room for the data and its index (`with_index`), or none at all.
            let room = self.limits.total_bytes.saturating_sub(kept);
            let cap = self
                .limits
                .per_result_bytes
                .min(room.saturating_sub(4096) / 65 * 64);
            l.this_turn.insert(id.clone());
            l.in_flight.insert(id.clone(), (0, with_index(cap)));
            cap
        };
        Ok(ResultWriter::new(
            Box::new(self.clone()),
            id,
            path,
            file,
            cap,
        ))
    }

    /// A new file of the store, private to the user.
    pub(crate) fn create_file(&self, path: &Path) -> Result<File, StoreError> {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(io_err("create", path))
    }

    /// Let the writer `id` use `want` more bytes of disk (up to its reservation), evicting the
    /// oldest results that may be evicted. Returns the bytes granted (less than `want` only when
    /// another process filled the store meanwhile) and what was evicted.
    pub(crate) fn grow(&self, id: &str, want: u64) -> Result<(u64, u64, u64), StoreError> {
        let mut l = self.ledger();
        let (granted, most) = l.in_flight.get(id).copied().unwrap_or((0, 0));
        let want = want.min(most.saturating_sub(granted));
        let mut results = self.scan()?;
        results.sort_by_key(|r| r.born);
        let mut used: u64 = results
            .iter()
            .filter(|r| !l.in_flight.contains_key(&r.id))
            .map(|r| r.bytes)
            .sum::<u64>()
            + l.in_flight.values().map(|(g, _)| g).sum::<u64>();
        let (mut evicted, mut evicted_bytes) = (0, 0);
        for r in &results {
            if used + want <= self.limits.total_bytes {
                break;
            }
            if l.this_turn.contains(&r.id) || l.in_flight.contains_key(&r.id) || self.busy(&r.id) {
                continue;
            }
            self.discard(&r.id)?;
            used = used.saturating_sub(r.bytes);
            evicted += 1;
            evicted_bytes += r.bytes;
        }
        let grant = want.min(self.limits.total_bytes.saturating_sub(used));
        if let Some(entry) = l.in_flight.get_mut(id) {
            entry.0 += grant;
        }
        Ok((grant, evicted, evicted_bytes))
    }

    /// The writer `id` is done (finished or abandoned): its reservation ends.
    pub(crate) fn release(&self, id: &str) {
        self.ledger().in_flight.remove(id);
    }

    /// Another process is still writing `id` (it holds a shared lock on the output file).
    fn busy(&self, id: &str) -> bool {
        let Ok(f) = File::open(self.dir.join(format!("{id}.out"))) else {
            return false;
        };
        matches!(f.try_lock(), Err(fs::TryLockError::WouldBlock))
    }

    /// Every result on disk with its size.
    fn scan(&self) -> Result<Vec<OnDisk>, StoreError> {
        let entries = fs::read_dir(&self.dir).map_err(io_err("list", &self.dir))?;
        let mut by_id: HashMap<String, OnDisk> = HashMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((id, born)) = parse_name(&name) else {
                continue;
            };
            let bytes = entry.metadata().map_or(0, |m| m.len());
            by_id
                .entry(id.clone())
                .or_insert(OnDisk { id, born, bytes: 0 })
                .bytes += bytes;
        }
        Ok(by_id.into_values().collect())
    }

    /// Bytes all results keep on disk now.
    pub fn used_bytes(&self) -> Result<u64, StoreError> {
        Ok(self.scan()?.iter().map(|r| r.bytes).sum())
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

    /// A reader positioned at the start of line `line` (1-based) of the stored text, and the
    /// index.
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

    /// Forget a result (one shown whole needs no copy; an evicted one makes room).
    pub fn discard(&self, id: &str) -> Result<(), StoreError> {
        let id = self.check_id(id)?;
        let entries = fs::read_dir(&self.dir).map_err(io_err("list", &self.dir))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if parse_name(&name).is_some_and(|(of, _)| of == id) {
                let p = entry.path();
                match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_err("remove", &p)(e)),
                }
            }
        }
        Ok(())
    }
}

impl Budget for ResultStore {
    fn per_result_bytes(&self) -> u64 {
        self.limits.per_result_bytes
    }

    fn total_bytes(&self) -> u64 {
        self.limits.total_bytes
    }

    fn grow(&self, id: &str, want: u64) -> Result<(u64, u64, u64), StoreError> {
        ResultStore::grow(self, id, want)
    }

    fn release(&self, id: &str) {
        ResultStore::release(self, id);
    }

    fn create_file(&self, path: &Path) -> Result<File, StoreError> {
        ResultStore::create_file(self, path)
    }

    fn discard(&self, id: &str) -> Result<(), StoreError> {
        ResultStore::discard(self, id)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_default_and_read_from_a_config_table() {
        let d = StoreLimits::default();
        assert_eq!((d.per_result_bytes, d.total_bytes), (64 << 20, 1 << 30));
        let partial: StoreLimits = toml::from_str("per_result_bytes = 1000").unwrap();
        assert_eq!(
            partial,
            StoreLimits {
                per_result_bytes: 1000,
                ..StoreLimits::default()
            }
        );
    }

    #[test]
    fn only_the_store_own_names_are_read_as_results() {
        assert_eq!(
            parse_name("1700000000000-42-7.out"),
            Some(("1700000000000-42-7".into(), (1_700_000_000_000, 42, 7)))
        );
        assert!(parse_name("1-2-3.idx").is_some());
        assert!(parse_name("1-2-3.t12").is_some());
        for other in [
            "notes.txt",
            "1-2.out",
            "1-2-3-4.out",
            "1-2-3.t",
            "1-2-3.tx",
            "a-2-3.out",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }
}
