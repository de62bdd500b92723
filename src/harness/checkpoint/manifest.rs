//! One checkpoint's record of the tree: for every path it covers, the kind, the exact mode,
//! the owner, the size, the times and identity it had (to tell an unchanged file without
//! reading it), and what restores it (the content's SHA-256, or a link's target). Paths it
//! could not take are listed with the reason, so a restore can say what it cannot bring back.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    File,
    Dir,
    Link,
    /// A FIFO, socket or device: recorded so a change is seen, never recreated.
    Other,
}

/// One path as a checkpoint saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub kind: Kind,
    /// Permission bits with set-id and sticky (`st_mode & 0o7777`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub dev: u64,
    pub ino: u64,
    /// A regular file's content, as the SHA-256 of the blob that holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// A link's target, as written in the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Entry {
    /// Whether `self` and `other` are the same state of a path: what a person sees and a
    /// restore brings back (kind, mode, owner, content, link target), not the times or inode.
    /// A file whose content was not taken (too large) is the same only while its identity,
    /// size and times are.
    pub fn same_state(&self, other: &Entry) -> bool {
        let unread = self.kind == Kind::File && (self.hash.is_none() || other.hash.is_none());
        let state = |e: &Entry| {
            (
                e.kind,
                e.mode,
                e.uid,
                e.gid,
                e.hash.clone(),
                e.target.clone(),
            )
        };
        let stat = |e: &Entry| (e.size, e.mtime_ns, e.ctime_ns, e.ino);
        state(self) == state(other) && (!unread || stat(self) == stat(other))
    }

    /// Whether the file may have changed since `self` was taken at `taken_ns`: its identity,
    /// size, mode or times differ, or it was written so close to the checkpoint that a later
    /// write in the same timestamp tick would leave the times alone (git's racy-clean rule).
    pub fn may_differ(&self, now: &Entry, taken_ns: i64) -> bool {
        const TICK_NS: i64 = 50_000_000;
        (
            self.kind,
            self.mode,
            self.size,
            self.mtime_ns,
            self.ctime_ns,
            self.dev,
            self.ino,
        ) != (
            now.kind,
            now.mode,
            now.size,
            now.mtime_ns,
            now.ctime_ns,
            now.dev,
            now.ino,
        ) || now.mtime_ns.max(now.ctime_ns) >= taken_ns.saturating_sub(TICK_NS)
    }
}

fn under(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// `a/b/c` gives `a/b`, then `a`.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut rest = path;
    std::iter::from_fn(move || {
        let (parent, _) = rest.rsplit_once('/')?;
        rest = parent;
        Some(parent)
    })
}

/// Two states of a path (either may be absent) are the same state.
pub fn same(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_state(b),
        _ => false,
    }
}

/// The tree as one checkpoint took it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// When the walk began, in nanoseconds since the epoch.
    pub taken_ns: i64,
    /// Workspace-relative path (`/`-separated, UTF-8) to its state.
    pub entries: BTreeMap<String, Entry>,
    /// Paths this checkpoint could not take back, with why (too large, unreadable, over the
    /// budget, a name that is not UTF-8, past the entry bound). A file among them still has its
    /// entry (without content), so a change to it is seen.
    pub uncovered: BTreeMap<String, String>,
    /// Paths the ignore rules left out (each one itself; nothing under an ignored directory
    /// was looked at): out of the checkpoint's scope, so never taken back, nor removed.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub ignored: BTreeSet<String>,
}

impl Manifest {
    /// Whether `path` can be brought back to what this checkpoint saw: its state is known, or
    /// it was absent (then it is removed). A path under an uncovered directory is not.
    pub fn covers(&self, path: &str) -> bool {
        !self.uncovered.contains_key(path)
            && !self.uncovered.keys().any(|u| under(path, u))
            && !self.ignores(path)
    }

    /// Whether the ignore rules left `path` (or a directory above it) out of this checkpoint.
    pub fn ignores(&self, path: &str) -> bool {
        self.ignored.contains(path) || ancestors(path).any(|a| self.ignored.contains(a))
    }

    /// The difference from `base` to `self` (what a delta file stores).
    pub fn delta_from(&self, base: &Manifest) -> Delta {
        let set = self
            .entries
            .iter()
            .filter(|(p, e)| base.entries.get(*p) != Some(e))
            .map(|(p, e)| (p.clone(), e.clone()))
            .collect();
        let unset = base
            .entries
            .keys()
            .filter(|p| !self.entries.contains_key(*p))
            .cloned()
            .collect();
        Delta {
            taken_ns: self.taken_ns,
            set,
            unset,
            uncovered: self.uncovered.clone(),
            ignored: self.ignored.clone(),
        }
    }

    /// `base` with `delta` applied.
    pub fn apply(mut base: Manifest, delta: Delta) -> Manifest {
        for p in delta.unset {
            base.entries.remove(&p);
        }
        base.entries.extend(delta.set);
        base.taken_ns = delta.taken_ns;
        base.uncovered = delta.uncovered;
        base.ignored = delta.ignored;
        base
    }
}

/// A manifest stored as its change from its parent's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    pub taken_ns: i64,
    pub set: BTreeMap<String, Entry>,
    pub unset: Vec<String>,
    pub uncovered: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub ignored: BTreeSet<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(hash: &str, mtime_ns: i64) -> Entry {
        Entry {
            kind: Kind::File,
            mode: 0o644,
            uid: 1,
            gid: 1,
            size: 3,
            mtime_ns,
            ctime_ns: mtime_ns,
            dev: 1,
            ino: 7,
            hash: Some(hash.into()),
            target: None,
        }
    }

    #[test]
    fn a_delta_round_trips() {
        let mut a = Manifest::default();
        a.entries.insert("x".into(), file("1", 1));
        a.entries.insert("gone".into(), file("2", 1));
        let mut b = a.clone();
        b.entries.remove("gone");
        b.entries.insert("x".into(), file("3", 2));
        b.entries.insert("new".into(), file("4", 2));
        b.uncovered.insert("big".into(), "too large".into());
        b.taken_ns = 9;
        let d = b.delta_from(&a);
        assert_eq!(d.set.len(), 2);
        assert_eq!(d.unset, vec!["gone".to_string()]);
        assert_eq!(Manifest::apply(a, d), b);
    }

    #[test]
    fn racy_and_changed_files_are_read_again() {
        let old = file("1", 1_000_000_000);
        // Same stat, written long before the checkpoint: trusted.
        assert!(!old.may_differ(&old, 10_000_000_000));
        // Written within the tick before the checkpoint: read again.
        assert!(old.may_differ(&old, 1_010_000_000));
        let mut moved = old.clone();
        moved.ino = 8;
        assert!(old.may_differ(&moved, 10_000_000_000));
    }

    #[test]
    fn state_ignores_times_but_not_mode() {
        let a = file("1", 1);
        let mut b = file("1", 99);
        assert!(a.same_state(&b));
        b.mode = 0o600;
        assert!(!a.same_state(&b));
        assert!(same(None, None));
        assert!(!same(Some(&a), None));
    }

    #[test]
    fn an_uncovered_directory_covers_nothing_under_it() {
        let mut m = Manifest::default();
        m.uncovered.insert("big".into(), "x".into());
        assert!(!m.covers("big"));
        assert!(!m.covers("big/a"));
        assert!(m.covers("bigger"));
        m.ignored.insert("target".into());
        assert!(!m.covers("target/debug/x") && m.ignores("target/debug/x"));
        assert!(m.covers("targets"));
    }

    #[test]
    fn a_file_without_its_content_is_the_same_only_while_its_stat_is() {
        let mut a = file("1", 1);
        a.hash = None;
        let mut b = a.clone();
        assert!(a.same_state(&b));
        b.size = 4;
        assert!(!a.same_state(&b));
    }
}
