//! What a command changed in the workspace, found by comparing a snapshot of the tree taken
//! before it ran with one taken after: path, type, size, mtime and ctime in nanoseconds, device
//! and inode, mode. The walk never follows a link, never opens anything but a directory and a
//! regular `.gitignore`, and stops at a bound, after which the comparison covers only what both
//! walks saw and says so instead of pretending nothing else changed.
//!
//! Git-ignored entries (`target/`, `node_modules/`, `*.log`) are recorded themselves but never
//! descended into: a build's thousands of artefacts are not what a person reviews, and walking
//! them twice for every command would cost more than the command. So `cargo clean` reports
//! `target` deleted and a first build reports it created, but nothing inside it. `.git` is never
//! descended into either (its changes are what git commands do, and git reports them). The
//! ignore rules are read once, from the snapshot before the command: a command that edits
//! `.gitignore` cannot hide what it did under the rules it wrote.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{FileType, Mode, OFlags};

use crate::harness::primitives::WorkspaceChanges;

/// Entries a snapshot records at most (ten times a large source tree; the walk of 10,000
/// entries costs some tens of milliseconds, see `benches/snapshot.rs`).
pub const DEFAULT_MAX_ENTRIES: usize = 100_000;
/// A `.gitignore` larger than this is not read (its rules do not apply).
const MAX_IGNORE_BYTES: u64 = 1 << 20;

/// The metadata that changes when a file is written, replaced, moved or re-moded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    kind: u32,
    mode: u32,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    dev: u64,
    ino: u64,
    /// Hard links to the inode (not compared: a new name elsewhere changes no file here).
    links: u64,
}

impl Meta {
    fn of(m: &std::fs::Metadata) -> Meta {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Meta {
            kind: m.mode() & libc::S_IFMT,
            mode: m.mode() & 0o7777,
            size: m.size(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
            dev: m.dev(),
            ino: m.ino(),
            links: m.nlink(),
        }
    }

    fn is_dir(&self) -> bool {
        self.kind == libc::S_IFDIR
    }

    /// A directory's size and times change with its entries, which are compared themselves;
    /// it counts as changed only when it was replaced or re-moded.
    fn differs(&self, other: &Meta) -> bool {
        let identity = (self.kind, self.mode, self.dev, self.ino)
            != (other.kind, other.mode, other.dev, other.ino);
        identity
            || (!self.is_dir()
                && (self.size, self.mtime_ns, self.ctime_ns)
                    != (other.size, other.mtime_ns, other.ctime_ns))
    }
}

/// A regular file's identity and the times its content changes with. ctime is in it because a
/// command can set mtime back (`touch -d`) but not ctime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

/// The ignore rules of one directory (`None`: it has no readable `.gitignore`).
type Rules = HashMap<PathBuf, Option<Arc<Gitignore>>>;

/// The tree as it was at one moment, bounded.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceSnapshot {
    /// Workspace-relative path to metadata; the order of `PathBuf` is the walk's order.
    entries: BTreeMap<PathBuf, Meta>,
    rules: Rules,
    /// The walk stopped at the bound after this path.
    stopped_after: Option<PathBuf>,
    /// Directories that could not be listed, and why (their content is unknown).
    unreadable: BTreeMap<PathBuf, String>,
}

impl WorkspaceSnapshot {
    /// Walk `root`, leaving out `skip` (absolute paths: the sandbox's own placeholders).
    pub fn take(root: &Path, skip: &[PathBuf], max_entries: usize) -> Self {
        Self::walk(root, skip, max_entries, None)
    }

    /// Walk `root` again after a command, under the ignore rules `before` was taken with.
    pub fn take_after(root: &Path, before: &Self, skip: &[PathBuf], max_entries: usize) -> Self {
        Self::walk(root, skip, max_entries, Some(&before.rules))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Regular files with more than one hard link, relative to the root: the same inode may be
    /// a file outside the workspace, so the sandbox binds them read-only.
    pub fn hard_linked_files(&self) -> Vec<PathBuf> {
        self.entries
            .iter()
            .filter(|(_, m)| m.kind == libc::S_IFREG && m.links > 1)
            .map(|(p, _)| p.clone())
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every regular file the walk saw, relative to the root, with what changes when its
    /// content may have: a cache keyed by this need not read an unchanged file again.
    pub fn regular_files(&self) -> impl Iterator<Item = (&Path, FileStamp)> {
        self.entries
            .iter()
            .filter(|(_, m)| m.kind == libc::S_IFREG)
            .map(|(p, m)| {
                (
                    p.as_path(),
                    FileStamp {
                        dev: m.dev,
                        ino: m.ino,
                        size: m.size,
                        mtime_ns: m.mtime_ns,
                        ctime_ns: m.ctime_ns,
                    },
                )
            })
    }

    fn walk(root: &Path, skip: &[PathBuf], max: usize, known: Option<&Rules>) -> Self {
        let mut snap = WorkspaceSnapshot::default();
        // Depth-first, children in sorted order, each directory entered as soon as it is met:
        // entries arrive in `PathBuf` order, so a walk stopped at the bound has seen exactly
        // every path up to the last it recorded.
        let mut stack: Vec<Frame> = Vec::new();
        snap.enter(root, PathBuf::new(), Vec::new(), known, &mut stack);
        while let Some(top) = stack.last_mut() {
            let Some((name, meta)) = top.names.get(top.next).cloned() else {
                stack.pop();
                continue;
            };
            top.next += 1;
            let child = top.rel.join(&name);
            let path = root.join(&child);
            if skip.contains(&path) {
                continue;
            }
            if snap.entries.len() >= max {
                snap.stopped_after = snap.entries.keys().next_back().cloned();
                return snap;
            }
            snap.entries.insert(child.clone(), meta);
            if meta.is_dir() && name != ".git" && !ignored(&top.matchers, &path) {
                let matchers = top.matchers.clone();
                snap.enter(root, child, matchers, known, &mut stack);
            }
        }
        snap
    }

    /// List the directory `rel` and push it on the walk's stack, with its ignore rules.
    fn enter(
        &mut self,
        root: &Path,
        rel: PathBuf,
        mut matchers: Vec<Arc<Gitignore>>,
        known: Option<&Rules>,
        stack: &mut Vec<Frame>,
    ) {
        let dir = root.join(&rel);
        let rules = match known.and_then(|k| k.get(&rel)) {
            Some(r) => r.clone(),
            None => read_rules(&dir),
        };
        self.rules.insert(rel.clone(), rules.clone());
        matchers.extend(rules);
        match std::fs::read_dir(&dir) {
            Ok(rd) => {
                // `DirEntry::metadata` is an `fstatat` beside the open directory, links not
                // followed; an entry gone since the listing is left out.
                let mut names: Vec<(OsString, Meta)> = rd
                    .filter_map(|e| {
                        let e = e.ok()?;
                        let meta = Meta::of(&e.metadata().ok()?);
                        Some((e.file_name(), meta))
                    })
                    .collect();
                names.sort_by(|a, b| a.0.cmp(&b.0));
                stack.push(Frame {
                    rel,
                    matchers,
                    names,
                    next: 0,
                });
            }
            Err(e) => {
                self.unreadable.insert(rel, e.to_string());
            }
        }
    }

    /// What changed from `before` to `after`, within what both walks covered.
    pub fn changes(before: &Self, after: &Self) -> WorkspaceChanges {
        let horizon = match (&before.stopped_after, &after.stopped_after) {
            (Some(a), Some(b)) => Some(a.min(b).clone()),
            (a, b) => a.clone().or_else(|| b.clone()),
        };
        let dark: BTreeSet<&PathBuf> = before
            .unreadable
            .keys()
            .chain(after.unreadable.keys())
            .collect();
        let in_view = |p: &PathBuf| {
            horizon.as_ref().is_none_or(|h| p <= h)
                && !dark.iter().any(|d| p != *d && p.starts_with(d))
        };
        let show = |p: &PathBuf| p.to_string_lossy().into_owned();
        let mut ch = WorkspaceChanges::default();
        for (p, m) in before.entries.iter().filter(|(p, _)| in_view(p)) {
            match after.entries.get(p) {
                None => ch.deleted.push(show(p)),
                Some(n) if m.differs(n) => ch.modified.push(show(p)),
                Some(_) => {}
            }
        }
        for p in after.entries.keys().filter(|p| in_view(p)) {
            if !before.entries.contains_key(p) {
                ch.created.push(show(p));
            }
        }
        let mut why = Vec::new();
        if let Some(h) = &horizon {
            why.push(format!(
                "the workspace has more entries than the {} a snapshot records; changes after \
                 `{}` (in walk order) were not looked for",
                before.entries.len().max(after.entries.len()),
                h.display()
            ));
        }
        for (d, e) in before.unreadable.iter().chain(after.unreadable.iter()) {
            let shown = if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            };
            let line = format!("`{}` could not be listed ({e})", shown.display());
            if !why.contains(&line) {
                why.push(line);
            }
        }
        ch.incomplete = (!why.is_empty()).then(|| why.join("; "));
        ch
    }
}

/// One directory being walked.
struct Frame {
    rel: PathBuf,
    matchers: Vec<Arc<Gitignore>>,
    names: Vec<(OsString, Meta)>,
    next: usize,
}

/// Whether the innermost rule that speaks about the directory `path` ignores it.
fn ignored(matchers: &[Arc<Gitignore>], path: &Path) -> bool {
    for m in matchers.iter().rev() {
        match m.matched(path, true) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// The rules of `dir/.gitignore`, read only if it is a regular file (a FIFO or a link there is
/// never opened): opened without following links and without blocking, then checked by `fstat`.
pub(crate) fn read_rules(dir: &Path) -> Option<Arc<Gitignore>> {
    let path = dir.join(".gitignore");
    let fd = rustix::fs::open(
        &path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut text = String::new();
    std::fs::File::from(fd)
        .take(MAX_IGNORE_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let mut builder = GitignoreBuilder::new(dir);
    for line in text.lines() {
        // A line that is not a valid glob is skipped, as git skips it.
        let _ = builder.add_line(Some(path.clone()), line);
    }
    builder.build().ok().map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c).unwrap();
        }
        d
    }

    fn diff(root: &Path, change: impl FnOnce(&Path), max: usize) -> WorkspaceChanges {
        let before = WorkspaceSnapshot::take(root, &[], max);
        change(root);
        let after = WorkspaceSnapshot::take_after(root, &before, &[], max);
        WorkspaceSnapshot::changes(&before, &after)
    }

    #[test]
    fn created_modified_deleted_and_a_new_directory_exactly() {
        let d = tree(&[("keep.txt", "k"), ("edit.txt", "e"), ("src/gone.rs", "g")]);
        let ch = diff(
            d.path(),
            |r| {
                std::fs::write(r.join("edit.txt"), "changed").unwrap();
                std::fs::write(r.join("src/new.rs"), "n").unwrap();
                std::fs::remove_file(r.join("src/gone.rs")).unwrap();
                std::fs::create_dir(r.join("empty")).unwrap();
            },
            DEFAULT_MAX_ENTRIES,
        );
        assert_eq!(
            ch,
            WorkspaceChanges {
                created: vec!["empty".into(), "src/new.rs".into()],
                modified: vec!["edit.txt".into()],
                deleted: vec!["src/gone.rs".into()],
                incomplete: None,
            }
        );
        assert_eq!(ch.all(), ["edit.txt", "empty", "src/gone.rs", "src/new.rs"]);
    }

    #[test]
    fn a_same_size_rewrite_a_chmod_and_a_replacement_count_as_modified() {
        use std::os::unix::fs::PermissionsExt;
        let d = tree(&[("same", "aaaa"), ("mode", "m"), ("swapped", "s")]);
        let ch = diff(
            d.path(),
            |r| {
                // Same size, and mtime put back: ctime still moves.
                let old = std::fs::metadata(r.join("same"))
                    .unwrap()
                    .modified()
                    .unwrap();
                std::fs::write(r.join("same"), "bbbb").unwrap();
                std::fs::File::options()
                    .write(true)
                    .open(r.join("same"))
                    .unwrap()
                    .set_modified(old)
                    .unwrap();
                std::fs::set_permissions(r.join("mode"), std::fs::Permissions::from_mode(0o600))
                    .unwrap();
                std::fs::write(r.join("swapped.tmp"), "s").unwrap();
                std::fs::rename(r.join("swapped.tmp"), r.join("swapped")).unwrap();
            },
            DEFAULT_MAX_ENTRIES,
        );
        assert_eq!(ch.modified, ["mode", "same", "swapped"]);
        assert!(ch.created.is_empty() && ch.deleted.is_empty());
    }

    #[test]
    fn ignored_trees_are_recorded_but_not_entered_under_the_rules_from_before() {
        let d = tree(&[
            (".gitignore", "target/\n"),
            ("target/debug/x", "1"),
            ("a.rs", "a"),
        ]);
        let ch = diff(
            d.path(),
            |r| {
                std::fs::write(r.join("target/debug/y"), "2").unwrap();
                // Rules written by the command do not hide what it did.
                std::fs::write(r.join(".gitignore"), "target/\nsecret/\n").unwrap();
                std::fs::create_dir(r.join("secret")).unwrap();
                std::fs::write(r.join("secret/k"), "k").unwrap();
            },
            DEFAULT_MAX_ENTRIES,
        );
        assert_eq!(ch.created, ["secret", "secret/k"]);
        assert_eq!(ch.modified, [".gitignore"]);
        let gone = diff(
            d.path(),
            |r| std::fs::remove_dir_all(r.join("target")).unwrap(),
            DEFAULT_MAX_ENTRIES,
        );
        assert_eq!(gone.deleted, ["target"]);
    }

    #[test]
    fn links_are_entries_never_followed_and_a_fifo_gitignore_is_never_opened() {
        let d = tree(&[("a", "a")]);
        let c = std::ffi::CString::new(
            d.path()
                .join(".gitignore")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let ch = diff(
            d.path(),
            |r| std::os::unix::fs::symlink("/etc", r.join("l")).unwrap(),
            DEFAULT_MAX_ENTRIES,
        );
        assert_eq!(ch.created, ["l"]);
    }

    #[test]
    fn the_bound_limits_the_comparison_to_what_both_walks_saw_and_says_so() {
        let names: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
        let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x")).collect();
        let d = tree(&files);
        let ch = diff(
            d.path(),
            |r| {
                std::fs::write(r.join("f1"), "changed").unwrap();
                std::fs::write(r.join("f8"), "changed").unwrap();
            },
            5,
        );
        assert_eq!(ch.modified, ["f1"]);
        let why = ch.incomplete.unwrap();
        assert!(
            why.contains("more entries than the 5 a snapshot records"),
            "{why}"
        );
        assert!(why.contains("changes after `f4`"), "{why}");
    }

    #[test]
    fn skipped_paths_are_not_seen() {
        let d = tree(&[("a", "a")]);
        let placeholder = d.path().join(".git");
        let before = WorkspaceSnapshot::take(d.path(), std::slice::from_ref(&placeholder), 100);
        std::fs::write(&placeholder, "").unwrap();
        let after = WorkspaceSnapshot::take_after(d.path(), &before, &[placeholder], 100);
        assert_eq!(
            WorkspaceSnapshot::changes(&before, &after),
            WorkspaceChanges::default()
        );
    }
}
