//! Walking and opening beneath a workspace root through descriptors: every step is an
//! `openat` relative to the directory before it with `O_NOFOLLOW`, so no link a command left
//! (and no rename racing the walk) leads outside the root. Used by the checks that run after a
//! command and repair or move what it left.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat};

/// What the walk does with a directory the visitor has just seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Enter,
    Skip,
}

/// Every entry beneath `root`, depth-first, with no bound: the visitor gets the open parent
/// directory, the entry's name, its root-relative path and its `lstat`. Entries that vanish or
/// cannot be read are passed over (what the walk cannot open, a repair could not reach either).
pub(crate) fn walk(root: &OwnedFd, visit: &mut dyn FnMut(&OwnedFd, &CStr, &Path, &Stat) -> Step) {
    walk_from(root, PathBuf::new(), visit);
}

fn walk_from(
    dir: &OwnedFd,
    rel: PathBuf,
    visit: &mut dyn FnMut(&OwnedFd, &CStr, &Path, &Stat) -> Step,
) {
    let Ok(handle) = rustix::fs::openat(
        dir,
        c".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return;
    };
    let Ok(entries) = Dir::read_from(&handle) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let child = rel.join(OsStr::from_bytes(name.to_bytes()));
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let step = visit(dir, name, &child, &st);
        if step == Step::Enter
            && FileType::from_raw_mode(st.st_mode) == FileType::Directory
            && let Ok(sub) = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
        {
            walk_from(&sub, child, visit);
        }
    }
}

/// `/proc/self/fd/N` for `fd`: a path to that very inode for calls that take no descriptor.
pub(crate) fn proc_fd(fd: &OwnedFd) -> CString {
    // A decimal number holds no NUL.
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default()
}

/// Open a root-relative directory beneath the root, one component at a time, never through a
/// link (an `O_PATH` descriptor).
pub(crate) fn open_dir(root: &OwnedFd, rel: &Path) -> Option<OwnedFd> {
    let mut fd = rustix::fs::openat(
        root,
        c".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    for part in rel.components() {
        let std::path::Component::Normal(name) = part else {
            return None;
        };
        fd = rustix::fs::openat(
            &fd,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
    }
    Some(fd)
}
