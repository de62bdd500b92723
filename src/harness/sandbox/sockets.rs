//! Socket files in the workspace are covered before a command starts. A Unix socket's path is
//! a way to a live service (an ssh `ControlPath`, a process manager, a language server), and
//! `connect` needs no write permission the read-only or closed-network sandbox could withhold:
//! the kernel checks a read-only mount only for files, directories and links. So every socket
//! found has a read-only `/dev/null` bound over it, in read-only and writable runs alike.
//!
//! The walk enters every directory (git-ignored trees included: `node_modules/.cache` holds
//! sockets as readily as `src/`) and never follows a link. It is cached by directory: a
//! directory whose device, inode and modification time are what the last walk saw is not read
//! again (a socket appears or disappears only with its directory's mtime changing), so a
//! repeated run costs one `lstat` per directory. A directory changed too close to the last read
//! to tell (the filesystem's clock is coarse) is read again every time until it settles.
//!
//! What this cannot cover: a socket created while the command runs is reachable by it; the
//! security model says so.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A directory's identity and modification time as `lstat` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirStamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
}

impl DirStamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        DirStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }

    /// Whether a change made after `read_at` could still carry this very mtime: then what was
    /// read may be stale even though the stamp matches.
    fn racy(&self, read_at: SystemTime) -> bool {
        const CLOCK_SLACK: Duration = Duration::from_secs(2);
        let secs = u64::try_from(self.mtime.0).unwrap_or(0);
        let nanos = u32::try_from(self.mtime.1).unwrap_or(0);
        let mtime = SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
        mtime + CLOCK_SLACK >= read_at
    }
}

/// What one read of a directory found.
#[derive(Debug, Clone)]
struct DirRecord {
    stamp: DirStamp,
    read_at: SystemTime,
    subdirs: Vec<OsString>,
    sockets: Vec<OsString>,
}

/// The per-workspace cache of where sockets are. Keep one per runner.
#[derive(Debug, Default)]
pub struct SocketSurvey {
    root: PathBuf,
    dirs: HashMap<PathBuf, DirRecord>,
    /// Directories read (not taken from the cache) by the last `survey`, for tests and benches.
    last_reads: usize,
}

impl SocketSurvey {
    pub fn new() -> Self {
        SocketSurvey::default()
    }

    /// Every socket file under `root` now, as absolute paths, sorted.
    pub fn survey(&mut self, root: &Path) -> Vec<PathBuf> {
        if self.root != root {
            self.dirs.clear();
            self.root = root.to_path_buf();
        }
        let mut seen: HashMap<PathBuf, DirRecord> = HashMap::with_capacity(self.dirs.len());
        let mut found = Vec::new();
        let mut stack = vec![PathBuf::new()];
        self.last_reads = 0;
        while let Some(rel) = stack.pop() {
            let abs = root.join(&rel);
            let Ok(meta) = std::fs::symlink_metadata(&abs) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            let stamp = DirStamp::of(&meta);
            let record = match self.dirs.remove(&rel) {
                Some(r) if r.stamp == stamp && !stamp.racy(r.read_at) => r,
                _ => {
                    self.last_reads += 1;
                    read_dir(&abs, stamp)
                }
            };
            found.extend(record.sockets.iter().map(|s| abs.join(s)));
            stack.extend(record.subdirs.iter().map(|d| rel.join(d)));
            seen.insert(rel, record);
        }
        // Directories not reached this time (removed, or now behind a link) are forgotten.
        self.dirs = seen;
        found.sort();
        found
    }

    /// How many directories the last `survey` had to read.
    pub fn last_reads(&self) -> usize {
        self.last_reads
    }
}

/// Read one directory: its sockets and its subdirectories (never a link to one). An entry
/// whose type the directory does not record is looked at with `lstat`; one that vanishes
/// meanwhile is passed over. A directory that cannot be read yields nothing: the command runs
/// as the same user and cannot list it either.
fn read_dir(abs: &Path, stamp: DirStamp) -> DirRecord {
    let read_at = SystemTime::now();
    let mut record = DirRecord {
        stamp,
        read_at,
        subdirs: Vec::new(),
        sockets: Vec::new(),
    };
    let Ok(entries) = std::fs::read_dir(abs) else {
        return record;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_socket() {
            record.sockets.push(entry.file_name());
        } else if kind.is_dir() {
            record.subdirs.push(entry.file_name());
        }
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn sockets_are_found_at_any_depth_and_links_are_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("a/b/node_modules/.cache")).unwrap();
        let _l1 = UnixListener::bind(root.join("top.sock")).unwrap();
        let _l2 = UnixListener::bind(root.join("a/b/node_modules/.cache/ctl")).unwrap();
        let _l3 = UnixListener::bind(outside.path().join("far.sock")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("a/link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("far.sock"), root.join("a/s")).unwrap();
        std::fs::write(root.join("a/file"), "x").unwrap();
        let mut survey = SocketSurvey::new();
        assert_eq!(
            survey.survey(root),
            vec![
                root.join("a/b/node_modules/.cache/ctl"),
                root.join("top.sock")
            ]
        );
    }

    #[test]
    fn a_settled_directory_is_not_read_again_and_a_changed_one_is() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("x/y")).unwrap();
        // Age every directory past the clock slack, so the cache may trust it.
        let old = SystemTime::now() - Duration::from_secs(60);
        for p in [root.to_path_buf(), root.join("x"), root.join("x/y")] {
            std::fs::File::open(&p).unwrap().set_modified(old).unwrap();
        }
        let mut survey = SocketSurvey::new();
        assert!(survey.survey(root).is_empty());
        assert_eq!(survey.last_reads(), 3);
        assert!(survey.survey(root).is_empty());
        assert_eq!(survey.last_reads(), 0, "nothing changed, nothing read");
        // A socket appears: its directory's mtime moves, so that directory alone is read.
        let _l = UnixListener::bind(root.join("x/y/new.sock")).unwrap();
        assert_eq!(survey.survey(root), vec![root.join("x/y/new.sock")]);
        assert_eq!(survey.last_reads(), 1);
        // Still racy (changed just now): read again, and still found.
        assert_eq!(survey.survey(root), vec![root.join("x/y/new.sock")]);
    }

    #[test]
    fn a_stamp_that_matches_but_was_read_in_the_same_tick_is_distrusted() {
        let d = tempfile::tempdir().unwrap();
        let meta = std::fs::symlink_metadata(d.path()).unwrap();
        let stamp = DirStamp::of(&meta);
        assert!(stamp.racy(SystemTime::now()));
        assert!(!stamp.racy(SystemTime::now() + Duration::from_secs(10)));
    }
}
