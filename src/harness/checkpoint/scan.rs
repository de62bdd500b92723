//! Taking a checkpoint: one walk of the workspace through descriptors (every step an `openat`
//! with `O_NOFOLLOW` from the directory before it, so no link and no rename racing the walk
//! leads outside the root), in sorted order, leaving out `.git` and what the ignore rules
//! exclude (`target/`, `node_modules/`: never read, so a large build directory costs nothing).
//! A regular file whose identity, size, mode and times are those of the previous checkpoint,
//! and that was not written within a timestamp tick of it, keeps its recorded content; any
//! other is read (without following a link, without blocking on a FIFO) and kept as a blob.

use std::ffi::{CStr, OsStr, OsString};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::Gitignore;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat};

use super::manifest::{Entry, Kind, Manifest};
use super::store::Store;
use crate::harness::workspace::beneath;
use crate::harness::workspace::snapshot::read_rules;

/// What one checkpoint may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Paths recorded at most; past it the rest is uncovered.
    pub max_entries: usize,
    /// A file larger than this is not kept (it is uncovered).
    pub max_file_bytes: u64,
    /// The store may grow to this many bytes of blobs; a file that would pass it is uncovered.
    pub store_budget: u64,
    /// Patterns left out besides the ignore files' (gitignore syntax, from the workspace
    /// root), from the configuration's `[checkpoints] ignore`.
    pub ignore: Vec<String>,
}

impl Limits {
    /// The configured patterns as a matcher rooted at `root`; `Err` names a pattern that is
    /// not a valid glob.
    pub fn ignore_matcher(&self, root: &Path) -> Result<Option<Arc<Gitignore>>, String> {
        if self.ignore.is_empty() {
            return Ok(None);
        }
        let mut b = ignore::gitignore::GitignoreBuilder::new(root);
        for p in &self.ignore {
            b.add_line(None, p)
                .map_err(|e| format!("`{p}` is not a pattern: {e}"))?;
        }
        b.build()
            .map(|g| Some(Arc::new(g)))
            .map_err(|e| e.to_string())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 200_000,
            max_file_bytes: 64 << 20,
            store_budget: 2 << 30,
            ignore: Vec::new(),
        }
    }
}

/// The running totals of one walk.
struct Walk<'a> {
    store: Option<&'a Store>,
    previous: Option<&'a Manifest>,
    limits: Limits,
    /// Bytes of blobs the store holds (grows as this walk adds some).
    store_bytes: u64,
    out: Manifest,
    /// Files read this walk (the rest kept their recorded content).
    read: usize,
}

/// What a walk found and did.
#[derive(Debug, Clone)]
pub struct Scanned {
    pub manifest: Manifest,
    /// Files whose content was read (not taken from the previous checkpoint).
    pub read: usize,
    /// Bytes of blobs the store holds now.
    pub store_bytes: u64,
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Take the tree under `root`. With a `store`, every file read is kept there; without one the
/// walk only hashes (a look at the tree as it is now, for a restore to compare).
pub fn scan(
    root: &Path,
    previous: Option<&Manifest>,
    store: Option<&Store>,
    store_bytes: u64,
    limits: &Limits,
) -> std::io::Result<Scanned> {
    let taken_ns = now_ns();
    let fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let configured = limits.ignore_matcher(root).map_err(std::io::Error::other)?;
    let mut walk = Walk {
        store,
        previous,
        limits: limits.clone(),
        store_bytes,
        out: Manifest {
            taken_ns,
            ..Manifest::default()
        },
        read: 0,
    };
    walk.dir(&fd, root, "", &configured.into_iter().collect::<Vec<_>>());
    Ok(Scanned {
        manifest: walk.out,
        read: walk.read,
        store_bytes: walk.store_bytes,
    })
}

fn ns(s: i64, n: u64) -> i64 {
    s.saturating_mul(1_000_000_000)
        .saturating_add(i64::try_from(n).unwrap_or(0))
}

fn entry_of(st: &Stat, kind: Kind) -> Entry {
    Entry {
        kind,
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        size: u64::try_from(st.st_size).unwrap_or(0),
        mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
        ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
        dev: st.st_dev,
        ino: st.st_ino,
        hash: None,
        target: None,
    }
}

fn kind_of(st: &Stat) -> Kind {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Link,
        _ => Kind::Other,
    }
}

/// Whether the innermost rule that speaks about `path` ignores it.
fn ignored(matchers: &[Arc<Gitignore>], path: &Path, is_dir: bool) -> bool {
    for m in matchers.iter().rev() {
        match m.matched(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

impl Walk<'_> {
    fn uncover(&mut self, rel: &str, why: impl Into<String>) {
        self.out.uncovered.insert(rel.to_string(), why.into());
    }

    /// The directory `dir` (open), at `abs` on disk and `rel` in the workspace.
    fn dir(&mut self, dir: &OwnedFd, abs: &Path, rel: &str, inherited: &[Arc<Gitignore>]) {
        let mut matchers = inherited.to_vec();
        matchers.extend(read_rules(abs));
        let Ok(handle) = rustix::fs::openat(
            dir,
            c".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            self.uncover(rel, "the directory could not be opened");
            return;
        };
        let Ok(entries) = Dir::read_from(&handle) else {
            self.uncover(rel, "the directory could not be listed");
            return;
        };
        let mut names: Vec<OsString> = entries
            .flatten()
            .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
            .filter(|n| n != "." && n != "..")
            .collect();
        names.sort();
        for name in names {
            let abs_child = abs.join(&name);
            let Some(name_str) = name.to_str() else {
                let shown = format!("{rel}/{}", name.to_string_lossy());
                self.uncover(shown.trim_start_matches('/'), "its name is not UTF-8");
                continue;
            };
            if name_str == ".git" {
                continue;
            }
            let child = if rel.is_empty() {
                name_str.to_string()
            } else {
                format!("{rel}/{name_str}")
            };
            let Ok(cname) = std::ffi::CString::new(name.as_bytes()) else {
                continue;
            };
            let Ok(st) = rustix::fs::statat(dir, &cname, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            let kind = kind_of(&st);
            if ignored(&matchers, &abs_child, kind == Kind::Dir) {
                self.out.ignored.insert(child);
                continue;
            }
            if self.out.entries.len() >= self.limits.max_entries {
                self.uncover(&child, "past the number of paths a checkpoint records");
                continue;
            }
            let mut e = entry_of(&st, kind);
            match kind {
                // A file whose content is not taken keeps its entry without it, so a change
                // to it is still seen (and a restore knows it cannot bring it back).
                Kind::File => match self.content(dir, &cname, &child, &e) {
                    Ok(hash) => e.hash = Some(hash),
                    Err(why) => self.uncover(&child, why),
                },
                Kind::Link => match rustix::fs::readlinkat(dir, &cname, Vec::new()) {
                    Ok(t) => match t.into_string() {
                        Ok(t) => e.target = Some(t),
                        Err(_) => {
                            self.uncover(&child, "its link target is not UTF-8");
                            continue;
                        }
                    },
                    Err(_) => {
                        self.uncover(&child, "its link could not be read");
                        continue;
                    }
                },
                Kind::Dir | Kind::Other => {}
            }
            self.out.entries.insert(child.clone(), e);
            if kind == Kind::Dir
                && let Ok(sub) = rustix::fs::openat(
                    dir,
                    &cname,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
            {
                self.dir(&sub, &abs_child, &child, &matchers);
            }
        }
    }

    /// The content hash of the regular file `name` in `dir`: the previous checkpoint's when the
    /// file surely has not changed since, else read now (and kept in the store).
    fn content(
        &mut self,
        dir: &OwnedFd,
        name: &CStr,
        rel: &str,
        now: &Entry,
    ) -> Result<String, String> {
        if let Some(prev) = self.previous
            && let Some(before) = prev.entries.get(rel)
            && let Some(hash) = &before.hash
            && !before.may_differ(now, prev.taken_ns)
            && self.store.is_none_or(|s| s.has_blob(hash))
        {
            return Ok(hash.clone());
        }
        if now.size > self.limits.max_file_bytes {
            return Err(format!(
                "larger than {}, the most a checkpoint keeps of one file",
                size_text(self.limits.max_file_bytes)
            ));
        }
        if self.store.is_some() && self.store_bytes + now.size > self.limits.store_budget {
            return Err(format!(
                "the checkpoint store is at its budget ({}); `spear checkpoints prune` frees it",
                size_text(self.limits.store_budget)
            ));
        }
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("it could not be opened ({e})"))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| format!("it could not be read ({e})"))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_ino != now.ino {
            return Err("it was replaced while the checkpoint read it".into());
        }
        let mut bytes = Vec::with_capacity(usize::try_from(now.size).unwrap_or(0));
        std::fs::File::from(fd)
            .take(self.limits.max_file_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("it could not be read ({e})"))?;
        self.read += 1;
        match self.store {
            Some(store) => {
                let (hash, grew) = store.put_blob(&bytes).map_err(|e| e.to_string())?;
                self.store_bytes += grew;
                Ok(hash)
            }
            None => Ok(super::store::sha256_hex(&bytes)),
        }
    }
}

/// A size in the largest unit that shows it whole enough (`64 MiB`, `10 bytes`).
fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// What `rel` is now, looked at directly (its directories opened from the root without
/// following a link, the path itself not followed; a file read if no larger than the limit):
/// `None` when nothing is there, or a directory above it is not a directory.
pub fn inspect(root: &Path, rel: &str, limits: &Limits) -> Option<Entry> {
    let fd = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let parent = beneath::open_dir(&fd, Path::new(dir))?;
    let cname = std::ffi::CString::new(name).ok()?;
    let st = rustix::fs::statat(&parent, &cname, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    let kind = kind_of(&st);
    let mut e = entry_of(&st, kind);
    match kind {
        Kind::File if e.size <= limits.max_file_bytes => {
            let f = rustix::fs::openat(
                &parent,
                &cname,
                OFlags::RDONLY
                    | OFlags::NOFOLLOW
                    | OFlags::NONBLOCK
                    | OFlags::NOCTTY
                    | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()?;
            let mut bytes = Vec::new();
            if std::fs::File::from(f)
                .take(limits.max_file_bytes + 1)
                .read_to_end(&mut bytes)
                .is_ok()
            {
                e.hash = Some(super::store::sha256_hex(&bytes));
            }
        }
        Kind::Link => {
            e.target = rustix::fs::readlinkat(&parent, &cname, Vec::new())
                .ok()
                .and_then(|t| t.into_string().ok());
        }
        _ => {}
    }
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::create_dir_all(p.join("target/debug")).unwrap();
        std::fs::create_dir_all(p.join("data")).unwrap();
        std::fs::create_dir_all(p.join(".git")).unwrap();
        std::fs::write(p.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(p.join("target/debug/big"), vec![0u8; 4096]).unwrap();
        std::fs::write(p.join("data/set.csv"), "a,b\n").unwrap();
        std::fs::write(p.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(p.join("large.bin"), vec![1u8; 100]).unwrap();
        std::os::unix::fs::symlink("src/main.rs", p.join("link")).unwrap();
        d
    }

    #[test]
    fn what_is_ignored_or_too_large_is_left_out_and_links_are_not_followed() {
        let d = tree();
        let store_dir = tempfile::tempdir().unwrap();
        let store = Store::open(store_dir.path()).unwrap();
        let limits = Limits {
            max_file_bytes: 50,
            ignore: vec!["data/".into()],
            ..Limits::default()
        };
        let s = scan(d.path(), None, Some(&store), 0, &limits).unwrap();
        let m = &s.manifest;
        let paths: Vec<&str> = m.entries.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            [".gitignore", "large.bin", "link", "src", "src/main.rs"],
            "{m:?}"
        );
        assert_eq!(m.entries["large.bin"].hash, None);
        let ignored: Vec<&str> = m.ignored.iter().map(String::as_str).collect();
        assert_eq!(ignored, ["data", "target"]);
        assert_eq!(m.entries["link"].target.as_deref(), Some("src/main.rs"));
        assert!(m.uncovered["large.bin"].contains("larger than"), "{m:?}");
        assert_eq!(s.read, 2, "only .gitignore and src/main.rs are read");
        // The next walk reads nothing that did not change (once past the racy tick).
        let mut old = s.manifest.clone();
        old.taken_ns += 10_000_000_000;
        let again = scan(d.path(), Some(&old), Some(&store), 0, &limits).unwrap();
        assert_eq!(again.read, 0);
        std::fs::write(d.path().join("src/main.rs"), "fn main() { }\n").unwrap();
        let changed = scan(d.path(), Some(&old), Some(&store), 0, &limits).unwrap();
        assert_eq!(changed.read, 1);
        assert_ne!(
            changed.manifest.entries["src/main.rs"].hash,
            s.manifest.entries["src/main.rs"].hash
        );
    }

    #[test]
    fn a_file_past_the_store_budget_is_uncovered() {
        let d = tree();
        let store_dir = tempfile::tempdir().unwrap();
        let store = Store::open(store_dir.path()).unwrap();
        let limits = Limits {
            store_budget: 20,
            ..Limits::default()
        };
        let s = scan(d.path(), None, Some(&store), 0, &limits).unwrap();
        assert!(
            s.manifest.uncovered.values().any(|w| w.contains("budget")),
            "{:?}",
            s.manifest.uncovered
        );
    }
}
