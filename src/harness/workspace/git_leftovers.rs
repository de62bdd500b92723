//! After a writable run: what the command created or changed, under any git directory, that
//! git later runs or reads as configuration. The sandbox keeps the workspace repository's own
//! `config`, `hooks`, `info` and `config.worktree` read-only; everything else git would act on
//! is found here and moved out of the workspace to a quarantine: a nested repository's config
//! (`sub/.git/config` with `core.fsmonitor`, which the person's own `git status` runs once
//! `sub` is a gitlink), its hooks, `.git/modules/*/config`, `.git/worktrees/*/commondir`, a
//! `gitdir` link, a `rebase-merge/git-rebase-todo` whose `exec` lines the person's `git rebase
//! --continue` would run. Never edited in place, never followed through a link: the walk and
//! every move go through descriptors opened beneath the root with `O_NOFOLLOW`.
//!
//! "Created or changed during the run" is the entry's ctime, which a command cannot set back.
//! Only non-directories are moved, so a nested repository keeps its objects and refs (git
//! works without a config file) and nothing the person had before, untouched, is moved.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::beneath;
use super::modes::CtimeMark;

/// Names git reads as configuration or follows to another repository, in any git directory.
const CONTROL_FILES: &[&str] = &["config", "config.worktree", "commondir", "gitdir"];
/// Directories of a git directory whose every file git runs or reads as instructions.
const CONTROL_DIRS: &[&str] = &["hooks", "info", "rebase-merge", "rebase-apply", "sequencer"];
/// Directories of a git directory with nothing git runs, and often very many files.
const DATA_DIRS: &[&str] = &["objects", "refs", "logs", "lfs"];

/// One file the command left under a git directory, and where it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitLeftover {
    /// Workspace-relative.
    pub path: PathBuf,
    /// Where it was moved; `Err` says why it could not be (then the person must remove it).
    pub moved_to: Result<PathBuf, MoveError>,
}

/// Why one entry could not be moved out of the workspace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoveError {
    #[error("it has no name")]
    NoName,
    #[error("its name holds a NUL")]
    NulInName,
    #[error("its directory is no longer there")]
    DirectoryGone,
    /// A rename cannot cross filesystems, and a directory is not copied.
    #[error("it is a directory on another filesystem than the quarantine")]
    DirectoryAcrossFilesystems,
    #[error("the quarantine `{}`: {why}", path.display())]
    Quarantine { path: PathBuf, why: String },
    #[error("{0}")]
    System(Errno),
}

impl From<Errno> for MoveError {
    fn from(e: Errno) -> Self {
        MoveError::System(e)
    }
}

impl From<std::io::Error> for MoveError {
    fn from(e: std::io::Error) -> Self {
        MoveError::System(Errno::from_io_error(&e).unwrap_or(Errno::IO))
    }
}

impl std::fmt::Display for GitLeftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.moved_to {
            Ok(_) => write!(f, "`{}`", self.path.display()),
            Err(why) => write!(
                f,
                "`{}` (which could not be moved: {why}; remove it yourself)",
                self.path.display()
            ),
        }
    }
}

/// The walk's failure that stops it: the root itself cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error(
    "the workspace `{root}` could not be checked for git control files a command left: {source}"
)]
pub struct GitLeftoversError {
    root: PathBuf,
    source: std::io::Error,
}

/// Find what a run since `since` left under any git directory beneath `root` (see the
/// module's text) and move each into a new directory under `quarantine`. `held` are the
/// root-relative paths the run had read-only: the command cannot have changed anything there,
/// so whatever changed there meanwhile is the person's own doing and is not looked at.
pub fn quarantine_after_run(
    root: &Path,
    since: CtimeMark,
    quarantine: &Path,
    held: &[PathBuf],
) -> Result<Vec<GitLeftover>, GitLeftoversError> {
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| GitLeftoversError {
        root: root.to_path_buf(),
        source: e.into(),
    })?;
    let found = find(&root_fd, since, held);
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let dest = fresh_dir(quarantine);
    Ok(found
        .into_iter()
        .map(|rel| {
            let moved_to = match &dest {
                Ok(d) => move_out(&root_fd, &rel, d),
                Err(e) => Err(e.clone()),
            };
            GitLeftover {
                path: rel,
                moved_to,
            }
        })
        .collect())
}

/// Move one workspace-relative entry (a file, or a whole directory such as a sequencer state
/// git could not abort) into a new directory under `quarantine`. A directory on another
/// filesystem than the quarantine is renamed beside itself instead, to a name git never reads.
pub fn quarantine_path(root: &Path, rel: &Path, quarantine: &Path) -> Result<PathBuf, MoveError> {
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let dest = fresh_dir(quarantine)?;
    match move_out(&root_fd, rel, &dest) {
        Err(MoveError::DirectoryAcrossFilesystems) => {
            let name = rel.file_name().ok_or(MoveError::NoName)?;
            let mut aside = name.to_os_string();
            aside.push(format!(
                ".spear-quarantined-{}",
                dest.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ));
            let from = CString::new(name.as_bytes()).map_err(|_| MoveError::NulInName)?;
            let to = CString::new(aside.as_bytes()).map_err(|_| MoveError::NulInName)?;
            let parent = beneath::open_dir(&root_fd, rel.parent().unwrap_or(Path::new("")))
                .ok_or(MoveError::DirectoryGone)?;
            rustix::fs::renameat(&parent, &from, &parent, &to)?;
            Ok(root.join(rel).with_file_name(aside))
        }
        other => other,
    }
}

/// The control files changed since `since`, workspace-relative, sorted.
fn find(root: &OwnedFd, since: CtimeMark, held: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    beneath::walk(root, &mut |dir, _name, rel, st| {
        if held.iter().any(|h| rel.starts_with(h)) {
            return beneath::Step::Skip;
        }
        let kind = FileType::from_raw_mode(st.st_mode);
        let Some(tail) = inside_git_dir(rel) else {
            // A `.git` file below the root is a link to a git directory elsewhere.
            if kind != FileType::Directory
                && rel.file_name() == Some(OsStr::new(".git"))
                && rel.components().count() > 1
                && changed(st, since)
            {
                out.push(rel.to_path_buf());
            }
            return beneath::Step::Enter;
        };
        if kind == FileType::Directory {
            let name = tail.last().copied().unwrap_or_default();
            let is_data = DATA_DIRS.iter().any(|d| OsStr::new(d) == name)
                && rustix::fs::statat(dir, c"HEAD", AtFlags::SYMLINK_NOFOLLOW).is_ok();
            return match is_data {
                true => beneath::Step::Skip,
                false => beneath::Step::Enter,
            };
        }
        if changed(st, since) && is_control(&tail) {
            out.push(rel.to_path_buf());
        }
        beneath::Step::Enter
    });
    out.sort();
    out
}

fn changed(st: &Stat, since: CtimeMark) -> bool {
    CtimeMark::of(st) >= since
}

/// The components after the last `.git` of `rel`, when `rel` lies inside a `.git` directory.
fn inside_git_dir(rel: &Path) -> Option<Vec<&OsStr>> {
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let last = parts.iter().rposition(|p| *p == OsStr::new(".git"))?;
    let tail = parts.get(last + 1..)?.to_vec();
    (!tail.is_empty()).then_some(tail)
}

/// Whether a file at `tail` (its path inside a `.git`) is one git runs or reads as config.
fn is_control(tail: &[&OsStr]) -> bool {
    let Some((name, dirs)) = tail.split_last() else {
        return false;
    };
    CONTROL_FILES.iter().any(|c| OsStr::new(c) == *name)
        || dirs
            .iter()
            .any(|d| CONTROL_DIRS.iter().any(|c| OsStr::new(c) == *d))
}

/// A new directory for this run's findings: `quarantine/<seconds>-<pid>-<n>`.
fn fresh_dir(quarantine: &Path) -> Result<PathBuf, MoveError> {
    let failed = |path: &Path, why: String| MoveError::Quarantine {
        path: path.to_path_buf(),
        why,
    };
    std::fs::create_dir_all(quarantine).map_err(|e| failed(quarantine, e.to_string()))?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    for n in 0..1000 {
        let d = quarantine.join(format!("{secs}-{}-{n}", std::process::id()));
        match std::fs::create_dir(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(failed(&d, e.to_string())),
        }
    }
    Err(failed(quarantine, "no free directory name in it".into()))
}

/// Move the workspace file `rel` to the same relative place under `dest`: a rename between
/// descriptors when both lie on one filesystem, else a copy (the file's bytes, or a link's
/// target text) and an unlink of that very name. The source is reached beneath the root
/// without following a link at any step.
fn move_out(root: &OwnedFd, rel: &Path, dest: &Path) -> Result<PathBuf, MoveError> {
    let parent = rel.parent().unwrap_or(Path::new(""));
    let name = rel.file_name().ok_or(MoveError::NoName)?;
    let name = CString::new(name.as_bytes()).map_err(|_| MoveError::NulInName)?;
    let from = beneath::open_dir(root, parent).ok_or(MoveError::DirectoryGone)?;
    let to_path = dest.join(rel);
    let to_parent = to_path.parent().unwrap_or(dest);
    std::fs::create_dir_all(to_parent)?;
    let to_dir = rustix::fs::open(
        to_parent,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    match rustix::fs::renameat(&from, &name, &to_dir, &name) {
        Ok(()) => Ok(to_path),
        Err(Errno::XDEV) => {
            let st = rustix::fs::statat(&from, &name, AtFlags::SYMLINK_NOFOLLOW)?;
            if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                return Err(MoveError::DirectoryAcrossFilesystems);
            }
            copy_then_unlink(&from, &name, &to_path)?;
            Ok(to_path)
        }
        Err(e) => Err(e.into()),
    }
}

fn copy_then_unlink(from: &OwnedFd, name: &CStr, to: &Path) -> Result<(), MoveError> {
    let st = rustix::fs::statat(from, name, AtFlags::SYMLINK_NOFOLLOW)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(from, name, Vec::new())?;
            std::os::unix::fs::symlink(OsStr::from_bytes(target.as_bytes()), to)?;
        }
        FileType::RegularFile => {
            let fd = rustix::fs::openat(
                from,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let mut src = std::fs::File::from(fd);
            let mut dst = std::fs::File::create_new(to)?;
            std::io::copy(&mut src, &mut dst)?;
        }
        // A socket, fifo or device node is nothing git reads; it only has to go.
        _ => {}
    }
    Ok(rustix::fs::unlinkat(from, name, AtFlags::empty())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: &[GitLeftover]) -> Vec<String> {
        found.iter().map(|f| f.path.display().to_string()).collect()
    }

    #[test]
    fn control_files_are_told_from_data() {
        let t = |p: &str| inside_git_dir(Path::new(p)).is_some_and(|tail| is_control(&tail));
        for yes in [
            "sub/.git/config",
            "sub/.git/hooks/pre-commit",
            ".git/modules/m/config",
            ".git/modules/m/hooks/post-checkout",
            ".git/worktrees/w/commondir",
            ".git/worktrees/w/gitdir",
            ".git/rebase-merge/git-rebase-todo",
            "a/b/.git/info/attributes",
            "x/.git/modules/y/.git/config",
        ] {
            assert!(t(yes), "{yes}");
        }
        for no in [
            ".git/index",
            ".git/HEAD",
            "sub/.git/objects/ab/cdef",
            "sub/.git/refs/heads/main",
            "src/config",
            ".gitmodules",
            "git/config",
        ] {
            assert!(!t(no), "{no}");
        }
    }

    #[test]
    fn what_the_run_left_is_moved_and_what_was_there_before_stays() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("ws");
        let q = d.path().join("quarantine");
        std::fs::create_dir_all(root.join("old/.git/hooks")).unwrap();
        std::fs::write(root.join("old/.git/config"), "[core]\n").unwrap();
        std::fs::write(root.join("old/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("old/.git/refs/heads/hooks")).unwrap();
        // Outside, reached only through a link: never moved.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("config"), "x").unwrap();
        // The mark lies a margin before now: what came before must be older than that.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let since = CtimeMark::now();
        std::fs::create_dir_all(root.join("new/.git/hooks")).unwrap();
        std::fs::write(root.join("new/.git/config"), "[core]\n\tfsmonitor = x\n").unwrap();
        std::fs::write(root.join("new/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join("new/.git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::write(root.join("old/.git/refs/heads/hooks/config"), "0\n").unwrap();
        std::fs::create_dir(root.join("linked")).unwrap();
        std::fs::write(root.join("linked/.git"), "gitdir: /elsewhere\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("old/.git/modules")).unwrap();
        // The person's own repository files, read-only to the run, changed meanwhile by them.
        std::fs::write(root.join("old/.git/config"), "[core]\n\tbare = false\n").unwrap();
        let held = [PathBuf::from("old/.git/config")];
        let found = quarantine_after_run(&root, since, &q, &held).unwrap();
        let mut shown = names(&found);
        shown.sort();
        assert_eq!(
            shown,
            [
                "linked/.git",
                "new/.git/config",
                "new/.git/hooks/pre-commit",
            ]
        );
        for f in &found {
            let to = f.moved_to.as_ref().unwrap();
            assert!(to.starts_with(&q) && to.ends_with(&f.path), "{to:?}");
            assert!(std::fs::symlink_metadata(to).is_ok());
            assert!(std::fs::symlink_metadata(root.join(&f.path)).is_err());
        }
        assert!(root.join("old/.git/config").exists());
        assert!(
            root.join("new/.git/HEAD").exists(),
            "only control files move"
        );
        assert!(
            root.join("old/.git/refs/heads/hooks/config").exists(),
            "a ref is data"
        );
        assert!(outside.path().join("config").exists());
    }
}
