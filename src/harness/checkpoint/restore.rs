//! Taking changes back. A plan compares, path by path, what the session's own calls did (each
//! call's before and after) with the tree as it is now:
//! - a path no call in the range changed is left alone, whatever else changed it;
//! - a path is brought back to what it was just before the first call of the range that
//!   changed it (so an edit the person made before that call stays);
//! - it is a conflict, left alone unless forced, when its state between two of the session's
//!   calls, or now, is not what the session's last call left (someone else changed it).
//!
//! Carrying a plan out is confined: every directory is opened from the root one component at
//! a time without following a link; a file or link is written under a temporary name in its
//! directory and renamed over (never written in place, so another hard link to the old file,
//! perhaps outside the workspace, is untouched); a path to remove is unlinked itself (a link is
//! never followed, a directory is removed only once empty); removals run deepest first, so a
//! directory the model replaced by a link is unlinked before the directory is made again. No
//! set-id bit is restored. The plan is journalled first, and a journal left by an interrupted
//! restore is carried out again before anything else (each step brings one path to a state, so
//! doing it twice is doing it once).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};

use super::log::{CallRecord, SessionLog};
use super::manifest::{Entry, Kind, Manifest, same};
use super::store::unique_name;
use super::{CheckpointError, Checkpoints, scan};
use crate::harness::workspace::beneath;

/// A path the session changed that was changed by someone else too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    pub path: String,
    pub why: String,
}

/// One path brought to one state (`to: None`: removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub path: String,
    pub to: Option<Entry>,
    /// What is there now (`None`: nothing).
    pub now: Option<Entry>,
    /// Someone else changed it too: carried out only when forced.
    #[serde(default)]
    pub conflict: bool,
}

/// What an undo would do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub session: String,
    /// Turns from this one on are taken back.
    pub back_to_turn: u32,
    pub turns: Vec<u32>,
    pub steps: Vec<Step>,
    pub conflicts: Vec<Conflict>,
    /// Paths the session changed that no checkpoint can bring back, with why.
    pub unrestorable: Vec<(String, String)>,
    /// Paths the ignore rules left out when the range began: out of scope, left as they are.
    #[serde(default)]
    pub ignored: Vec<String>,
    /// The workspace has a `.git`, whose HEAD and index an undo does not move.
    pub has_git: bool,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.conflicts.is_empty() && self.unrestorable.is_empty()
    }
}

/// What an undo did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    /// Files and links brought back to their earlier content.
    pub restored: Vec<String>,
    /// Paths the session created, removed.
    pub removed: Vec<String>,
    /// Paths the session deleted, brought back.
    pub recreated: Vec<String>,
    /// Conflicts left alone (not forced).
    pub left: Vec<Conflict>,
    /// What could not be done, with why.
    pub failed: Vec<(String, String)>,
    /// Set-id bits not given back.
    pub setid_dropped: Vec<String>,
    /// An interrupted restore was finished first.
    pub resumed: bool,
}

/// The manifests a plan reads, each once.
struct Manifests<'a> {
    cp: &'a Checkpoints,
    loaded: BTreeMap<String, Manifest>,
}

impl Manifests<'_> {
    fn get(&mut self, id: &str) -> Result<&Manifest, CheckpointError> {
        if !self.loaded.contains_key(id) {
            let m = self.cp.store().manifest(id)?;
            self.loaded.insert(id.to_string(), m);
        }
        Ok(&self.loaded[id])
    }
}

pub(super) fn plan(
    cp: &Checkpoints,
    session: &str,
    log: &SessionLog,
    back_to_turn: Option<u32>,
) -> Result<Plan, CheckpointError> {
    let live = log.live_calls();
    let Some(last) = live.last() else {
        return Err(CheckpointError::Refused(format!(
            "session {session} has nothing to take back: none of its calls changed the tree, or they were taken back already"
        )));
    };
    let back_to_turn = back_to_turn.unwrap_or(last.turn);
    let range: Vec<&CallRecord> = live
        .iter()
        .copied()
        .filter(|c| c.turn >= back_to_turn)
        .collect();
    if range.is_empty() {
        let turns: BTreeSet<u32> = live.iter().map(|c| c.turn).collect();
        return Err(CheckpointError::Refused(format!(
            "turn {back_to_turn} of session {session} changed nothing that can be taken back (turns with changes: {})",
            turns
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some(c) = range.iter().find(|c| c.after.is_none()) {
        return Err(CheckpointError::Refused(format!(
            "the checkpoint after call {} ({}) was never taken (Spear stopped during it), so what it changed is unknown; nothing was restored",
            c.call, c.tool
        )));
    }
    let mut ms = Manifests {
        cp,
        loaded: BTreeMap::new(),
    };
    let mut pairs: Vec<(Manifest, Manifest)> = Vec::new();
    for c in &range {
        let before = ms.get(&c.before)?.clone();
        let after = ms.get(c.after.as_deref().unwrap_or_default())?.clone();
        pairs.push((before, after));
    }
    // What each path holds now is looked at directly, not through a walk: the ignore rules
    // of now (which a call may have changed) must not hide a path the checkpoints know.
    let now_of = |p: &str| scan::inspect(cp.root(), p, cp.limits());
    let mut paths: BTreeSet<&String> = BTreeSet::new();
    for (b, a) in &pairs {
        paths.extend(b.entries.keys());
        paths.extend(a.entries.keys());
        paths.extend(b.uncovered.keys());
        paths.extend(a.uncovered.keys());
    }
    let mut out = Plan {
        session: session.to_string(),
        back_to_turn,
        turns: range
            .iter()
            .map(|c| c.turn)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        steps: Vec::new(),
        conflicts: Vec::new(),
        unrestorable: Vec::new(),
        ignored: Vec::new(),
        has_git: cp.root().join(".git").exists(),
    };
    for p in paths {
        let changers: Vec<usize> = pairs
            .iter()
            .enumerate()
            .filter(|(_, (b, a))| {
                !same(b.entries.get(p), a.entries.get(p)) || b.covers(p) != a.covers(p)
            })
            .map(|(i, _)| i)
            .collect();
        let (Some(&first), Some(&last)) = (changers.first(), changers.last()) else {
            continue;
        };
        let before = &pairs[first].0;
        if before.ignores(p) {
            // Never in a checkpoint's scope, so never taken back, and never removed either
            // (an edit of .gitignore must not make an undo delete what it hid).
            out.ignored.push(p.clone());
            continue;
        }
        if !before.covers(p) {
            let why = before
                .uncovered
                .get(p.as_str())
                .cloned()
                .unwrap_or_else(|| "a directory above it was not taken".into());
            out.unrestorable.push((p.clone(), why));
            continue;
        }
        let to = before.entries.get(p).cloned();
        if to.as_ref().is_some_and(|e| e.kind == Kind::Other) {
            out.unrestorable.push((
                p.clone(),
                "a FIFO, socket or device is never made again".into(),
            ));
            continue;
        }
        let mut why = None;
        for w in changers.windows(2) {
            if !same(pairs[w[0]].1.entries.get(p), pairs[w[1]].0.entries.get(p)) {
                why = Some(format!(
                    "it was changed by something other than this session between calls {} and {}",
                    range[w[0]].call, range[w[1]].call
                ));
            }
        }
        let left = &pairs[last].1;
        let current = now_of(p);
        if same(current.as_ref(), to.as_ref()) {
            continue;
        }
        if !left.covers(p) {
            why = Some(format!(
                "what this session's call {} left in it is not known (it was {} then)",
                range[last].call,
                if left.ignores(p) {
                    "ignored"
                } else {
                    "not taken"
                }
            ));
        } else if !same(left.entries.get(p), current.as_ref()) {
            why = Some(format!(
                "it was changed after this session's call {} (by you or another program)",
                range[last].call
            ));
        }
        if let Some(why) = &why {
            out.conflicts.push(Conflict {
                path: p.clone(),
                why: why.clone(),
            });
        }
        out.steps.push(Step {
            path: p.clone(),
            to,
            now: current,
            conflict: why.is_some(),
        });
    }
    Ok(out)
}

/// Apply `plan`: journal it, finish any earlier journal first, carry out its steps (conflicts
/// only when `force`), and remove the journal.
pub(super) fn apply(cp: &Checkpoints, plan: &Plan, force: bool) -> Result<Report, CheckpointError> {
    let journal = cp.store().journal(&plan.session)?;
    let mut report = Report::default();
    if let Ok(bytes) = std::fs::read(&journal)
        && let Ok(earlier) = serde_json::from_slice::<Journal>(&bytes)
    {
        let mut scratch = Report::default();
        carry_out(cp, &earlier.steps, &mut scratch);
        report.resumed = true;
        let _ = std::fs::remove_file(&journal);
    }
    let steps: Vec<Step> = plan
        .steps
        .iter()
        .filter(|s| force || !s.conflict)
        .cloned()
        .collect();
    report.left = plan.conflicts.iter().filter(|_| !force).cloned().collect();
    let bytes = serde_json::to_vec(&Journal {
        steps: steps.clone(),
    })
    .map_err(CheckpointError::Encode)?;
    cp.store().write_new(&journal, &bytes)?;
    carry_out(cp, &steps, &mut report);
    let _ = std::fs::remove_file(&journal);
    Ok(report)
}

/// A restore in progress.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    steps: Vec<Step>,
}

fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

fn cname(name: &str) -> Option<CString> {
    CString::new(name.as_bytes()).ok()
}

/// The parent directory of `path`, opened from the root without following any link.
fn parent_of(root: &OwnedFd, path: &str) -> Result<OwnedFd, String> {
    let (dir, _) = split(path);
    beneath::open_dir(root, Path::new(dir)).ok_or_else(|| {
        format!("its directory `{dir}` is not a directory in the workspace (a link, or gone)")
    })
}

fn carry_out(cp: &Checkpoints, steps: &[Step], report: &mut Report) {
    let root = match rustix::fs::open(
        cp.root(),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) => {
            for s in steps {
                report.failed.push((
                    s.path.clone(),
                    format!("the workspace could not be opened ({e})"),
                ));
            }
            return;
        }
    };
    // A directory the restore must write in but may not (the model made it read-only, or it
    // comes back read-only) is opened up for the restore and given its mode back at the end.
    let mut relaxed: BTreeMap<String, u32> = BTreeMap::new();
    for s in steps {
        let (dir, _) = split(&s.path);
        if !dir.is_empty() {
            relax(&root, dir, &mut relaxed);
        }
        if s.now.as_ref().is_some_and(|n| n.kind == Kind::Dir) {
            relax(&root, &s.path, &mut relaxed);
        }
    }
    // Deepest first: what must go (created paths, and whatever stands where another kind
    // must return).
    let mut failed: BTreeSet<String> = BTreeSet::new();
    for s in steps.iter().rev() {
        let must_go = match (&s.now, &s.to) {
            (Some(_), None) => true,
            (Some(n), Some(t)) => n.kind != t.kind,
            (None, _) => false,
        };
        if !must_go {
            continue;
        }
        if let Err(why) = remove(&root, &s.path) {
            report.failed.push((s.path.clone(), why));
            failed.insert(s.path.clone());
        } else if s.to.is_none() {
            report.removed.push(s.path.clone());
        }
    }
    // Shallowest first: what must come back.
    for s in steps {
        let Some(to) = &s.to else { continue };
        if failed.contains(&s.path) {
            continue;
        }
        match put(cp, &root, &s.path, to) {
            Ok(setid) => {
                if setid {
                    report.setid_dropped.push(s.path.clone());
                }
                if s.now.is_some() {
                    report.restored.push(s.path.clone());
                } else {
                    report.recreated.push(s.path.clone());
                }
            }
            Err(why) => report.failed.push((s.path.clone(), why)),
        }
    }
    // Deepest first, once everything is in place: directories get their modes (a 0555
    // directory made first could not be filled), and those opened up get theirs back.
    let removed: BTreeSet<&str> = steps
        .iter()
        .filter(|s| s.to.is_none())
        .map(|s| s.path.as_str())
        .collect();
    let mut modes: BTreeMap<String, u32> = relaxed
        .into_iter()
        .filter(|(d, _)| !removed.contains(d.as_str()))
        .collect();
    for s in steps {
        if let Some(to) = s.to.as_ref().filter(|t| t.kind == Kind::Dir)
            && !failed.contains(&s.path)
        {
            modes.insert(s.path.clone(), to.mode);
        }
    }
    for (dir, mode) in modes.iter().rev() {
        if set_dir_mode(&root, dir, *mode).is_err() && steps.iter().any(|s| &s.path == dir) {
            report
                .failed
                .push((dir.clone(), "its mode could not be given back".into()));
        }
    }
}

/// The directory `dir`, reached beneath the root without following a link, opened so that
/// its mode can be read and set.
fn readable_dir(root: &OwnedFd, dir: &str) -> Option<OwnedFd> {
    let o = beneath::open_dir(root, Path::new(dir))?;
    rustix::fs::openat(
        &o,
        c".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

/// Open `dir` for writing by its owner if it is not, remembering its mode.
fn relax(root: &OwnedFd, dir: &str, relaxed: &mut BTreeMap<String, u32>) {
    if relaxed.contains_key(dir) {
        return;
    }
    let Some(fd) = readable_dir(root, dir) else {
        return;
    };
    let Ok(st) = rustix::fs::fstat(&fd) else {
        return;
    };
    let mode = st.st_mode & 0o7777;
    if mode & 0o300 != 0o300 && rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode | 0o700)).is_ok() {
        relaxed.insert(dir.to_string(), mode);
    }
}

/// Give the directory `dir` its mode (no set-id bit), never through a link.
fn set_dir_mode(root: &OwnedFd, dir: &str, mode: u32) -> Result<(), String> {
    let fd = readable_dir(root, dir).ok_or("it is not a directory in the workspace")?;
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode & 0o1777)).map_err(|e| e.to_string())
}

/// Unlink `path` itself (a directory only when empty), never following it.
fn remove(root: &OwnedFd, path: &str) -> Result<(), String> {
    let parent = parent_of(root, path)?;
    let name = cname(split(path).1).ok_or("its name holds a NUL")?;
    let st = match rustix::fs::statat(&parent, &name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(format!("it could not be examined ({e})")),
    };
    let is_dir = rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory;
    let flags = if is_dir {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    rustix::fs::unlinkat(&parent, &name, flags).map_err(|e| {
        if e == rustix::io::Errno::NOTEMPTY {
            "the directory holds files this session did not make, so it stays".to_string()
        } else {
            format!("it could not be removed ({e})")
        }
    })
}

/// Bring `path` to `to`. Returns whether a set-id bit was dropped.
fn put(cp: &Checkpoints, root: &OwnedFd, path: &str, to: &Entry) -> Result<bool, String> {
    let parent = parent_of(root, path)?;
    let name = cname(split(path).1).ok_or("its name holds a NUL")?;
    let setid = to.mode & 0o6000 != 0;
    let mode = Mode::from_raw_mode(to.mode & 0o1777);
    match to.kind {
        // Its mode is given at the end, once what it holds is back.
        Kind::Dir => match rustix::fs::mkdirat(&parent, &name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(format!("the directory could not be made ({e})")),
        },
        Kind::File => {
            let hash = to.hash.as_deref().ok_or("its content was not recorded")?;
            let bytes = cp.store().blob(hash).map_err(|e| e.to_string())?;
            let tmp_name = unique_name(".spear-restore-");
            let tmp = cname(&tmp_name).ok_or("a temporary name")?;
            let fd = rustix::fs::openat(
                &parent,
                &tmp,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(|e| format!("a temporary file could not be made beside it ({e})"))?;
            let mut f = std::fs::File::from(fd);
            let written = f
                .write_all(&bytes)
                .and_then(|()| f.sync_data())
                .map_err(|e| e.to_string())
                .and_then(|()| rustix::fs::fchmod(&f, mode).map_err(|e| e.to_string()));
            if let Err(e) = written.and_then(|()| {
                rustix::fs::renameat(&parent, &tmp, &parent, &name).map_err(|e| e.to_string())
            }) {
                let _ = rustix::fs::unlinkat(&parent, &tmp, AtFlags::empty());
                return Err(format!("it could not be written back ({e})"));
            }
        }
        Kind::Link => {
            let target = to.target.as_deref().ok_or("its target was not recorded")?;
            let tmp_name = unique_name(".spear-restore-");
            let tmp = cname(&tmp_name).ok_or("a temporary name")?;
            rustix::fs::symlinkat(target, &parent, &tmp)
                .map_err(|e| format!("the link could not be made ({e})"))?;
            if let Err(e) = rustix::fs::renameat(&parent, &tmp, &parent, &name) {
                let _ = rustix::fs::unlinkat(&parent, &tmp, AtFlags::empty());
                return Err(format!("the link could not be put back ({e})"));
            }
        }
        Kind::Other => return Err("a FIFO, socket or device is never made again".into()),
    }
    Ok(setid)
}

/// See `Checkpoints::prune`.
pub(super) fn prune(
    cp: &Checkpoints,
    budget: u64,
    keep: Option<&str>,
) -> Result<(Vec<String>, u64), CheckpointError> {
    let store = cp.store();
    let _exclusive = store.lock(true)?;
    let before = store.blob_bytes();
    let mut sessions = cp.sessions();
    // Oldest first.
    sessions.reverse();
    let mut removed = Vec::new();
    let mut size = before;
    for (s, _) in &sessions {
        if size <= budget {
            break;
        }
        if Some(s.as_str()) == keep {
            continue;
        }
        if let Ok(log) = store.session_log(s) {
            let _ = std::fs::remove_file(log);
        }
        removed.push(s.clone());
        size = collect(cp)?;
    }
    collect(cp)?;
    Ok((removed, before.saturating_sub(store.blob_bytes())))
}

/// Remove every manifest and blob older than an hour that no session log needs (younger ones
/// may belong to a call another Spear has not logged yet).
fn collect(cp: &Checkpoints) -> Result<u64, CheckpointError> {
    const GRACE_SECS: u64 = 3600;
    let store = cp.store();
    let mut manifests: BTreeSet<String> = BTreeSet::new();
    for (s, _) in cp.sessions() {
        let Ok(path) = store.session_log(&s) else {
            continue;
        };
        let log = SessionLog::read(&path)?;
        for r in &log.records {
            if let super::log::Record::Call(c) = r {
                for id in std::iter::once(&c.before).chain(c.after.iter()) {
                    manifests.extend(store.chain_of(id));
                }
            }
        }
    }
    let age = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .map_or(0, |d| d.as_secs())
    };
    for id in store.manifest_ids() {
        let path = store.dir().join("manifests").join(format!("{id}.json"));
        if !manifests.contains(&id) && age(&path) > GRACE_SECS {
            store.remove_manifest(&id);
        }
    }
    let mut hashes: BTreeSet<String> = BTreeSet::new();
    for id in store.manifest_ids() {
        if let Ok(m) = store.manifest(&id) {
            hashes.extend(m.entries.values().filter_map(|e| e.hash.clone()));
        }
    }
    let mut size = 0;
    for (hash, path, len, age) in store.blobs() {
        if !hashes.contains(&hash) && age > GRACE_SECS {
            store.remove_blob(&hash, &path);
        } else {
            size += len;
        }
    }
    Ok(size)
}
