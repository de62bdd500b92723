//! The checkpoint store of one workspace, under `$XDG_STATE_HOME/spear/checkpoints/<sha256 of
//! the root>/` (mode 0700, outside every mount a sandbox gets):
//! - `blobs/ab/cdef…`: file contents named by their SHA-256, written once (to a temporary name,
//!   then renamed), checked against their name when read back;
//! - `manifests/<id>.json`: a manifest, whole (`{"full": …}`) or as its change from a parent
//!   (`{"parent": ID, "delta": …}`), a whole one at least every `FULL_EVERY` links;
//! - `sessions/<session>.jsonl`: what each session's calls took (see `log`);
//! - `journal/<session>.json`: a restore in progress.
//!
//! Two Spear processes may share it: a blob is the same bytes whoever writes it, a manifest or
//! a session log has one writer, and pruning holds an exclusive lock (`lock`) that taking a
//! checkpoint holds shared.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::CheckpointError;
use super::manifest::{Delta, Manifest};

/// A whole manifest is written at least every this many deltas, so reading one back follows a
/// bounded chain.
const FULL_EVERY: u32 = 32;

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// The SHA-256 of `bytes`, in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// A name no other writer in this or another process picks.
pub(crate) fn unique_name(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}{nanos:x}-{}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

/// `session` if it can name a session: letters, digits, `.`, `_`, `-`, not starting with `.`.
fn session_name(session: &str) -> Result<&str, CheckpointError> {
    let ok = !session.is_empty()
        && session.len() <= 200
        && !session.starts_with('.')
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(session)
    } else {
        Err(CheckpointError::Refused(format!(
            "`{session}` is not a session name (letters, digits, `.`, `_` and `-`; `spear checkpoints` lists them)"
        )))
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredManifest {
    Full(Manifest),
    Delta {
        parent: String,
        depth: u32,
        delta: Delta,
    },
}

/// One workspace's store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    /// Blobs this process wrote or found in the store. Only a prune removes a blob, and
    /// never one a live session's checkpoints name, so a blob known here is not looked for
    /// again: a checkpoint of an unchanged tree then costs one `stat` per file, not two.
    known: Arc<Mutex<HashSet<String>>>,
}

impl Store {
    /// The store at `dir` (made private if new).
    pub fn open(dir: &Path) -> Result<Store, CheckpointError> {
        for sub in ["", "blobs", "manifests", "sessions", "journal", "tmp"] {
            let d = dir.join(sub);
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&d)
                .map_err(CheckpointError::io("create", &d))?;
        }
        Ok(Store {
            dir: dir.to_path_buf(),
            known: Arc::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A session's log. A session name is letters, digits, `.`, `_` and `-`, not starting
    /// with `.`: nothing else can be one (`..` would lead out of the store).
    pub fn session_log(&self, session: &str) -> Result<PathBuf, CheckpointError> {
        Ok(self
            .dir
            .join("sessions")
            .join(format!("{}.jsonl", session_name(session)?)))
    }

    pub(crate) fn journal(&self, session: &str) -> Result<PathBuf, CheckpointError> {
        Ok(self
            .dir
            .join("journal")
            .join(format!("{}.json", session_name(session)?)))
    }

    fn blob_path(&self, hash: &str) -> Option<PathBuf> {
        let ok = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        ok.then(|| self.dir.join("blobs").join(&hash[..2]).join(&hash[2..]))
    }

    pub fn has_blob(&self, hash: &str) -> bool {
        if self.is_known(hash) {
            return true;
        }
        let there = self.blob_path(hash).is_some_and(|p| p.exists());
        if there {
            self.know(hash);
        }
        there
    }

    fn is_known(&self, hash: &str) -> bool {
        self.known.lock().is_ok_and(|k| k.contains(hash))
    }

    fn know(&self, hash: &str) {
        if let Ok(mut k) = self.known.lock() {
            k.insert(hash.to_string());
        }
    }

    /// Remove blob file `path` (of blob `hash`), and forget it was there.
    pub(crate) fn remove_blob(&self, hash: &str, path: &Path) {
        if let Ok(mut k) = self.known.lock() {
            k.remove(hash);
        }
        let _ = fs::remove_file(path);
    }

    /// Keep `bytes`; returns their hash and how many bytes the store grew by (0 when it held
    /// them already).
    pub fn put_blob(&self, bytes: &[u8]) -> Result<(String, u64), CheckpointError> {
        let hash = sha256_hex(bytes);
        let Some(path) = self.blob_path(&hash) else {
            return Err(CheckpointError::Corrupt("a blob name".into()));
        };
        // Looked for even when known: a new content is rare, and a blob must never be
        // missing behind a manifest that names it.
        if path.exists() {
            self.know(&hash);
            return Ok((hash, 0));
        }
        if let Some(parent) = path.parent() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(CheckpointError::io("create", parent))?;
        }
        self.write_new(&path, bytes)?;
        self.know(&hash);
        Ok((hash, bytes.len() as u64))
    }

    /// The bytes of blob `hash`, checked against it.
    pub fn blob(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self
            .blob_path(hash)
            .ok_or_else(|| CheckpointError::Corrupt(format!("blob name {hash}")))?;
        let mut bytes = Vec::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(CheckpointError::io("read", &path))?;
        if sha256_hex(&bytes) != hash {
            return Err(CheckpointError::Corrupt(format!(
                "blob {hash} does not hold what its name says"
            )));
        }
        Ok(bytes)
    }

    /// Write `bytes` as `path` whole or not at all: to a private temporary file, synced, then
    /// renamed over.
    pub(crate) fn write_new(&self, path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
        let tmp = self.dir.join("tmp").join(unique_name("w-"));
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(CheckpointError::io("create", &tmp))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_data())
            .map_err(CheckpointError::io("write", &tmp))?;
        fs::rename(&tmp, path).map_err(CheckpointError::io("rename", path))
    }

    /// Keep `m`, as its change from `parent` when there is one (`parent`: its id, manifest and
    /// depth in the chain). Returns the new id and its depth.
    pub fn save_manifest(
        &self,
        m: &Manifest,
        parent: Option<(&str, &Manifest, u32)>,
    ) -> Result<(String, u32), CheckpointError> {
        let (stored, depth) = match parent {
            Some((id, base, depth)) if depth < FULL_EVERY => (
                StoredManifest::Delta {
                    parent: id.to_string(),
                    depth: depth + 1,
                    delta: m.delta_from(base),
                },
                depth + 1,
            ),
            _ => (StoredManifest::Full(m.clone()), 0),
        };
        let id = unique_name("m");
        let bytes = serde_json::to_vec(&stored).map_err(CheckpointError::Encode)?;
        self.write_new(&self.manifest_path(&id)?, &bytes)?;
        Ok((id, depth))
    }

    fn manifest_path(&self, id: &str) -> Result<PathBuf, CheckpointError> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(CheckpointError::Corrupt(format!("manifest id {id:?}")));
        }
        Ok(self.dir.join("manifests").join(format!("{id}.json")))
    }

    /// The manifest `id`, its chain of deltas applied.
    pub fn manifest(&self, id: &str) -> Result<Manifest, CheckpointError> {
        let mut chain = Vec::new();
        let mut next = id.to_string();
        loop {
            let path = self.manifest_path(&next)?;
            let bytes = fs::read(&path).map_err(CheckpointError::io("read", &path))?;
            let stored: StoredManifest = serde_json::from_slice(&bytes)
                .map_err(|e| CheckpointError::Corrupt(format!("manifest {next}: {e}")))?;
            match stored {
                StoredManifest::Full(m) => {
                    return Ok(chain.into_iter().rev().fold(m, Manifest::apply));
                }
                StoredManifest::Delta { parent, delta, .. } => {
                    chain.push(delta);
                    if chain.len() > FULL_EVERY as usize + 1 {
                        return Err(CheckpointError::Corrupt(format!(
                            "manifest {id}: its chain is longer than any Spear writes"
                        )));
                    }
                    next = parent;
                }
            }
        }
    }

    /// Every manifest id a manifest `id` needs (itself and its parents).
    pub(crate) fn chain_of(&self, id: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut next = Some(id.to_string());
        while let Some(id) = next.take() {
            let Ok(path) = self.manifest_path(&id) else {
                break;
            };
            out.push(id);
            let Ok(bytes) = fs::read(&path) else { break };
            if let Ok(StoredManifest::Delta { parent, .. }) = serde_json::from_slice(&bytes)
                && out.len() <= FULL_EVERY as usize + 1
            {
                next = Some(parent);
            }
        }
        out
    }

    /// The lock file that pruning holds exclusively and checkpointing holds shared.
    pub(crate) fn lock(&self, exclusive: bool) -> Result<File, CheckpointError> {
        let path = self.dir.join("lock");
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(CheckpointError::io("open", &path))?;
        let locked = if exclusive { f.lock() } else { f.lock_shared() };
        locked.map_err(CheckpointError::io("lock", &path))?;
        Ok(f)
    }

    /// Bytes the blobs take.
    pub fn blob_bytes(&self) -> u64 {
        let mut total = 0;
        let Ok(fans) = fs::read_dir(self.dir.join("blobs")) else {
            return 0;
        };
        for fan in fans.flatten() {
            if let Ok(files) = fs::read_dir(fan.path()) {
                for f in files.flatten() {
                    total += f.metadata().map_or(0, |m| m.len());
                }
            }
        }
        total
    }

    /// Every blob: its hash, path, size and age in seconds.
    pub(crate) fn blobs(&self) -> Vec<(String, PathBuf, u64, u64)> {
        let mut out = Vec::new();
        let Ok(fans) = fs::read_dir(self.dir.join("blobs")) else {
            return out;
        };
        for fan in fans.flatten() {
            let prefix = fan.file_name().to_string_lossy().into_owned();
            if let Ok(files) = fs::read_dir(fan.path()) {
                for f in files.flatten() {
                    let Ok(meta) = f.metadata() else { continue };
                    let age = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .map_or(0, |d| d.as_secs());
                    let hash = format!("{prefix}{}", f.file_name().to_string_lossy());
                    out.push((hash, f.path(), meta.len(), age));
                }
            }
        }
        out
    }

    /// Every manifest id on disk.
    pub(crate) fn manifest_ids(&self) -> Vec<String> {
        let Ok(rd) = fs::read_dir(self.dir.join("manifests")) else {
            return Vec::new();
        };
        rd.flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".json"))
                    .map(str::to_string)
            })
            .collect()
    }

    pub(crate) fn has_manifest(&self, id: &str) -> bool {
        self.manifest_path(id).is_ok_and(|p| p.exists())
    }

    pub(crate) fn remove_manifest(&self, id: &str) {
        if let Ok(p) = self.manifest_path(id) {
            let _ = fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::checkpoint::manifest::{Entry, Kind};

    #[test]
    fn a_blob_is_looked_for_once_and_forgotten_when_pruned() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let (h, _) = s.put_blob(b"kept").unwrap();
        let path = s.blob_path(&h).unwrap();
        // Known from the write: a copy of the store (another `Checkpoints` of this process)
        // answers without looking, even after the file went by another way.
        let other = s.clone();
        fs::remove_file(&path).unwrap();
        assert!(other.has_blob(&h));
        // Written again (a put always looks), then removed by a prune: no longer known.
        assert_eq!(s.put_blob(b"kept").unwrap().1, 4);
        s.remove_blob(&h, &path);
        assert!(!path.exists());
        assert!(!other.has_blob(&h));
        // A fresh store finds what is there.
        let (h2, _) = s.put_blob(b"found").unwrap();
        assert!(Store::open(d.path()).unwrap().has_blob(&h2));
    }

    #[test]
    fn blobs_are_named_by_their_content_and_checked_on_read() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let (h, grew) = s.put_blob(b"hello").unwrap();
        assert_eq!(grew, 5);
        assert_eq!(s.put_blob(b"hello").unwrap().1, 0, "stored once");
        assert_eq!(s.blob(&h).unwrap(), b"hello");
        let path = s.blob_path(&h).unwrap();
        fs::write(&path, b"tampered").unwrap();
        assert!(matches!(s.blob(&h), Err(CheckpointError::Corrupt(_))));
        assert!(s.blob("../../etc/passwd").is_err());
    }

    #[test]
    fn manifests_chain_as_deltas_and_read_back_whole() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let mut m = Manifest::default();
        let (mut id, mut depth) = s.save_manifest(&m, None).unwrap();
        for i in 0..(FULL_EVERY + 5) {
            let prev = m.clone();
            m.entries.insert(
                format!("f{i}"),
                Entry {
                    kind: Kind::File,
                    mode: 0o600,
                    uid: 0,
                    gid: 0,
                    size: 1,
                    mtime_ns: i64::from(i),
                    ctime_ns: 0,
                    dev: 0,
                    ino: u64::from(i),
                    hash: Some(sha256_hex(&[i as u8])),
                    target: None,
                },
            );
            (id, depth) = s.save_manifest(&m, Some((&id, &prev, depth))).unwrap();
            assert_eq!(s.manifest(&id).unwrap(), m);
        }
        assert!(depth < FULL_EVERY, "a whole manifest was written again");
        assert!(s.manifest("../x").is_err());
    }
}
