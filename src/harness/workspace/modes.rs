//! After a writable run: the modes a command left that would give someone more than they had.
//! The seccomp filter already refuses set-id modes; this check does not rely on it, nor on the
//! snapshot's limits: it walks the whole workspace (ignored trees included, no entry bound),
//! finds every regular file with a set-uid or set-gid bit whose status changed during the run,
//! and every group- or world-writable mode or write-granting ACL that the run put on the
//! workspace root, `.git` or a protected directory, and clears each.
//!
//! "Changed during the run" is the inode's ctime, which a command cannot set (utimensat sets
//! only access and modification times): a set-id file the person had before, untouched, is
//! theirs and left alone. Every step goes through descriptors opened beneath the root with
//! `O_NOFOLLOW`, so no link the command left leads the walk or a repair outside the workspace.

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, Stat};

use super::beneath;

/// What a command left and what Spear did about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeRepair {
    /// Workspace-relative.
    pub path: PathBuf,
    pub finding: ModeFinding,
    /// Whether the repair worked; when not, the person must do it (the reason says so).
    pub repaired: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeFinding {
    /// A regular file with S_ISUID or S_ISGID (the mode found).
    SetId(u32),
    /// A directory that must stay the owner's made group- or world-writable (the mode found).
    Writable(u32),
    /// A directory given an ACL that lets another user or group write.
    WritingAcl,
}

impl std::fmt::Display for ModeRepair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        match self.finding {
            ModeFinding::SetId(m) => write!(f, "`{path}` with a set-id mode ({m:o})")?,
            ModeFinding::Writable(m) => write!(f, "`{path}` writable by others ({m:o})")?,
            ModeFinding::WritingAcl => write!(f, "`{path}` with an ACL that lets others write")?,
        }
        f.write_str(if self.repaired {
            " (cleared)"
        } else {
            " (which could not be cleared: fix it yourself)"
        })
    }
}

/// A point in time as the kernel stamps ctime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CtimeMark {
    secs: i64,
    nanos: i64,
}

impl CtimeMark {
    /// Now, less a margin: the kernel stamps ctime from a coarse clock that lags the precise
    /// one by up to a tick, so a change made just after this mark may carry a slightly earlier
    /// stamp. The margin only counts a little more as the run's, never less.
    pub fn now() -> Self {
        const MARGIN: std::time::Duration = std::time::Duration::from_millis(100);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_sub(MARGIN);
        CtimeMark {
            secs: t.as_secs() as i64,
            nanos: i64::from(t.subsec_nanos()),
        }
    }

    pub(crate) fn of(st: &Stat) -> Self {
        CtimeMark {
            secs: st.st_ctime as i64,
            nanos: st.st_ctime_nsec as i64,
        }
    }
}

/// The walk's failures that stop it: the root itself cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("the workspace `{root}` could not be checked for modes a command left: {source}")]
pub struct ModesError {
    root: PathBuf,
    source: std::io::Error,
}

/// Walk `root` and clear what a run since `since` left (see the module's text). `guarded` are
/// workspace-relative directories that must stay the owner's alone (`.git`, the protected
/// directories); the root always is.
pub fn repair_after_run(
    root: &Path,
    since: CtimeMark,
    guarded: &[PathBuf],
) -> Result<Vec<ModeRepair>, ModesError> {
    let fail = |source: std::io::Error| ModesError {
        root: root.to_path_buf(),
        source,
    };
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| fail(e.into()))?;
    let mut out = Vec::new();
    walk_set_id(&root_fd, since, &mut out);
    let mut dirs: Vec<PathBuf> = vec![PathBuf::new(), PathBuf::from(".git")];
    dirs.extend(guarded.iter().cloned());
    dirs.sort();
    dirs.dedup();
    for rel in dirs {
        guard_dir(&root_fd, &rel, since, &mut out);
    }
    Ok(out)
}

/// Regular files with a set-id bit whose status changed since the mark: cleared.
fn walk_set_id(root: &OwnedFd, since: CtimeMark, out: &mut Vec<ModeRepair>) {
    beneath::walk(root, &mut |dir, name, rel, st| {
        if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
            && st.st_mode & 0o6000 != 0
            && CtimeMark::of(st) >= since
        {
            let mode = st.st_mode & 0o7777;
            let repaired = set_mode(dir, name, mode & !0o6000).is_ok();
            out.push(ModeRepair {
                path: rel.to_path_buf(),
                finding: ModeFinding::SetId(mode),
                repaired,
            });
        }
        beneath::Step::Enter
    });
}

/// The mode of `name` in `dir`, set through an `O_PATH | O_NOFOLLOW` descriptor of that very
/// inode (a name swapped for a link in between is not followed: the open fails).
fn set_mode(dir: &impl AsFd, name: &CStr, mode: u32) -> rustix::io::Result<()> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::chmod(beneath::proc_fd(&fd), Mode::from_raw_mode(mode))
}

const ACL_ACCESS: &CStr = c"system.posix_acl_access";
const ACL_DEFAULT: &CStr = c"system.posix_acl_default";

/// A guarded directory: group/other write bits and write-granting ACLs the run put on it.
fn guard_dir(root: &OwnedFd, rel: &Path, since: CtimeMark, out: &mut Vec<ModeRepair>) {
    let Some(fd) = beneath::open_dir(root, rel) else {
        return;
    };
    let Ok(st) = rustix::fs::fstat(&fd) else {
        return;
    };
    if CtimeMark::of(&st) < since {
        return;
    }
    let path = beneath::proc_fd(&fd);
    let shown = if rel.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rel.to_path_buf()
    };
    let acl = [ACL_ACCESS, ACL_DEFAULT]
        .into_iter()
        .any(|name| acl_grants_write(&path, name));
    if acl {
        let removed =
            [ACL_ACCESS, ACL_DEFAULT].into_iter().all(|name| {
                match rustix::fs::removexattr(&path, name) {
                    Ok(()) => true,
                    Err(e) => e == rustix::io::Errno::NODATA,
                }
            });
        out.push(ModeRepair {
            path: shown.clone(),
            finding: ModeFinding::WritingAcl,
            repaired: removed,
        });
    }
    // Read again: removing an access ACL rewrites the mode's group bits.
    let mode = rustix::fs::fstat(&fd).map_or(st.st_mode, |s| s.st_mode) & 0o7777;
    if mode & 0o022 != 0 {
        let repaired = rustix::fs::chmod(&path, Mode::from_raw_mode(mode & !0o022)).is_ok();
        out.push(ModeRepair {
            path: shown,
            finding: ModeFinding::Writable(mode),
            repaired,
        });
    }
}

/// Whether the POSIX ACL stored under `name` grants write to anyone but the owner. The xattr
/// is a version word (2) and entries of tag (u16), permissions (u16) and id (u32); a named
/// user, the owning group, a named group or others with the write bit (2) count.
fn acl_grants_write(path: &CStr, name: &CStr) -> bool {
    const USER: u16 = 0x02;
    const GROUP_OBJ: u16 = 0x04;
    const GROUP: u16 = 0x08;
    const OTHER: u16 = 0x20;
    let mut buf = vec![0u8; 4096];
    let Ok(len) = rustix::fs::getxattr(path, name, &mut buf) else {
        return false;
    };
    let Some(body) = buf.get(4..len) else {
        return false;
    };
    body.chunks_exact(8).any(|e| {
        let tag = u16::from_ne_bytes([e[0], e[1]]);
        let perm = u16::from_ne_bytes([e[2], e[3]]);
        matches!(tag, USER | GROUP_OBJ | GROUP | OTHER) && perm & 2 != 0
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn set(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    #[test]
    fn set_id_files_and_widened_guarded_dirs_changed_since_the_mark_are_cleared() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("target/deep/er")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("target/deep/er/tool"), "x").unwrap();
        std::fs::write(root.join("src/main.rs"), "x").unwrap();
        // Outside the workspace, reached only through a link: never touched.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("kept"), "x").unwrap();
        set(&outside.path().join("kept"), 0o4755);
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let since = CtimeMark::now();
        set(&root.join("target/deep/er/tool"), 0o4755);
        set(&root.join("src/main.rs"), 0o2644);
        set(&root.join(".git"), 0o777);
        set(root, 0o775);
        let found = repair_after_run(root, since, &[]).unwrap();
        let mut shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        shown.sort();
        assert_eq!(
            shown,
            [
                "`.` writable by others (775) (cleared)",
                "`.git` writable by others (777) (cleared)",
                "`src/main.rs` with a set-id mode (2644) (cleared)",
                "`target/deep/er/tool` with a set-id mode (4755) (cleared)",
            ]
        );
        assert_eq!(mode(&root.join("target/deep/er/tool")), 0o755);
        assert_eq!(mode(&root.join("src/main.rs")), 0o644);
        assert_eq!(mode(&root.join(".git")), 0o755);
        assert_eq!(mode(root), 0o755);
        assert_eq!(mode(&outside.path().join("kept")), 0o4755);
    }

    #[test]
    fn what_the_person_had_before_the_run_is_theirs() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("theirs"), "x").unwrap();
        set(&root.join("theirs"), 0o4755);
        set(&root.join(".git"), 0o775);
        // A mark well after the changes above.
        let later = CtimeMark {
            secs: CtimeMark::now().secs + 5,
            nanos: 0,
        };
        assert!(repair_after_run(root, later, &[]).unwrap().is_empty());
        assert_eq!(mode(&root.join("theirs")), 0o4755);
        assert_eq!(mode(&root.join(".git")), 0o775);
    }
}
