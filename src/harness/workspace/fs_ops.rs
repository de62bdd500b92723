//! File operations on resolved paths, opened beneath a root directory handle: `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` where the kernel has it, otherwise a walk that opens
//! one component at a time with `O_NOFOLLOW`. Either way a link swapped in after `resolve` cannot
//! carry a read or a write outside the root. Writes are atomic: temporary file in the same
//! directory, fsync, rename, fsync of the directory, the original mode kept. Only regular files
//! are ever opened for reading or replaced: a FIFO, socket or device is refused by its type,
//! found with `fstat` on a handle that opened nothing (`O_PATH`), so it can neither hang a read
//! nor wake a driver.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use thiserror::Error;

use super::{Access, Workspace, WorkspacePath};

/// How operations open files beneath a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpenStrategy {
    /// `openat2` when the kernel has it, the `O_NOFOLLOW` walk otherwise.
    #[default]
    Auto,
    /// Always the component-by-component `O_NOFOLLOW` walk (what old kernels get).
    NoFollowWalk,
}

impl OpenStrategy {
    /// The path operations take on this host under this strategy.
    pub fn path(self) -> OpenPath {
        match self {
            OpenStrategy::Auto if openat2_available() => OpenPath::Openat2,
            OpenStrategy::Auto | OpenStrategy::NoFollowWalk => OpenPath::NoFollowWalk,
        }
    }
}

/// How operations actually open files here: what `OpenStrategy` became on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenPath {
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`.
    Openat2,
    /// One component at a time with `O_NOFOLLOW` (kernels before 5.6, or filters refusing it).
    NoFollowWalk,
}

impl std::fmt::Display for OpenPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OpenPath::Openat2 => "openat2 (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)",
            OpenPath::NoFollowWalk => "the O_NOFOLLOW walk (no openat2)",
        })
    }
}

/// An operation on an accepted path failed. `Escaped` means the filesystem changed under us in a
/// way that would have left the root: the operation was not performed.
#[derive(Debug, Error)]
pub enum FsError {
    #[error("`{0}` was resolved for reading, not writing")]
    NotResolvedForWrite(PathBuf),
    #[error("`{0}` changed after it was checked and now leads outside its root; nothing was done")]
    Escaped(PathBuf),
    #[error("`{0}` does not exist")]
    NotFound(PathBuf),
    #[error("`{0}` was replaced while it was being opened; nothing was read")]
    Changed(PathBuf),
    #[error("`{0}` is not a regular file")]
    NotAFile(PathBuf),
    /// A FIFO, socket, device (or a directory where a file was meant): never opened for data.
    #[error("`{path}` is {kind}, not a regular file; Spear reads and writes regular files only")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("`{0}` does not belong to this workspace")]
    ForeignPath(PathBuf),
    #[error("{op} `{path}`: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What an atomic write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOutcome {
    pub bytes: u64,
    /// The file did not exist before.
    pub created: bool,
}

/// What a file type is, in words, for a refusal ("`x` is a FIFO (named pipe), ...").
pub fn describe_file_type(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a Unix domain socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "a file of unknown type",
    }
}

/// A handle on a directory, usable as the base of `*at` calls.
pub(crate) fn open_dir_handle(path: &Path) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Whether `openat2` works here: probed once. Old kernels say ENOSYS; some seccomp filters
/// (older container runtimes) say EPERM for syscalls they do not know.
fn openat2_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        !matches!(
            rustix::fs::openat2(
                rustix::fs::CWD,
                ".",
                OFlags::PATH | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH,
            ),
            Err(Errno::NOSYS) | Err(Errno::PERM)
        )
    })
}

/// Open `rel` (free of `..` and absolute parts) beneath `dir`.
fn open_beneath(
    strategy: OpenStrategy,
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> rustix::io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    if strategy.path() == OpenPath::Openat2 {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        // EAGAIN: a concurrent rename made the kernel unsure a `..` stayed beneath; retry.
        let mut attempts = 0;
        loop {
            match rustix::fs::openat2(dir, rel, flags | OFlags::CLOEXEC, mode, resolve) {
                Err(Errno::AGAIN) if attempts < 16 => attempts += 1,
                other => return other,
            }
        }
    }
    nofollow_walk(dir, rel, flags, mode)
}

/// The fallback: every directory opened with `O_NOFOLLOW`, so no link is followed at all.
fn nofollow_walk(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> rustix::io::Result<OwnedFd> {
    let mut names = Vec::new();
    for comp in rel.components() {
        match comp {
            Component::Normal(n) => names.push(n),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Errno::XDEV);
            }
        }
    }
    let Some((last, dirs)) = names.split_last() else {
        return rustix::fs::openat(dir, ".", flags | OFlags::CLOEXEC, mode);
    };
    let mut held: Option<OwnedFd> = None;
    for name in dirs {
        let base = held.as_ref().map_or(dir, |fd| fd.as_fd());
        held = Some(nofollow_step(
            base,
            name,
            OFlags::PATH | OFlags::DIRECTORY,
            Mode::empty(),
        )?);
    }
    let base = held.as_ref().map_or(dir, |fd| fd.as_fd());
    nofollow_step(base, last, flags, mode)
}

/// One `openat` with `O_NOFOLLOW`. A link met where a directory is wanted gives ENOTDIR; report
/// it as ELOOP so callers see "a link was in the way", as `openat2` would say.
fn nofollow_step(
    base: BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    flags: OFlags,
    mode: Mode,
) -> rustix::io::Result<OwnedFd> {
    match rustix::fs::openat(base, name, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, mode) {
        Err(Errno::NOTDIR) => match rustix::fs::statat(base, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => Err(Errno::LOOP),
            _ => Err(Errno::NOTDIR),
        },
        other => other,
    }
}

/// Names for temporary files: unique within this process, and the pid makes them unique across.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Workspace {
    fn root_dir(&self, p: &WorkspacePath) -> Result<BorrowedFd<'_>, FsError> {
        match self.roots.get(p.root) {
            Some(root) if p.resolved.starts_with(&root.path) => Ok(root.dir.as_fd()),
            _ => Err(FsError::ForeignPath(p.written.clone())),
        }
    }

    fn map_errno(&self, op: &'static str, p: &WorkspacePath, e: Errno) -> FsError {
        match e {
            Errno::XDEV | Errno::LOOP => FsError::Escaped(p.written.clone()),
            Errno::NOENT => FsError::NotFound(p.written.clone()),
            other => FsError::Io {
                op,
                path: p.written.clone(),
                source: other.into(),
            },
        }
    }

    /// Open an accepted path for reading. Only a regular file is opened: the path is first
    /// pinned with `O_PATH` (which opens nothing) and its type read with `fstat`; anything else
    /// is `NotRegular`. The real open then carries `O_NONBLOCK | O_NOCTTY` and is checked to be
    /// the same inode, so a FIFO swapped in between cannot block and a device is never opened.
    pub fn open_read(&self, p: &WorkspacePath) -> Result<File, FsError> {
        let root = self.root_dir(p)?;
        let pinned = open_beneath(
            self.strategy,
            root,
            &p.relative,
            OFlags::PATH,
            Mode::empty(),
        )
        .map_err(|e| self.map_errno("open", p, e))?;
        let before = self.regular_file(p, &pinned)?;
        let fd = open_beneath(
            self.strategy,
            root,
            &p.relative,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|e| self.map_errno("open", p, e))?;
        let after = self.regular_file(p, &fd)?;
        if (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino) {
            return Err(FsError::Changed(p.written.clone()));
        }
        // O_NONBLOCK means nothing for a regular file's reads; clear it all the same, so the
        // handle behaves as an ordinary one wherever it is passed.
        rustix::fs::fcntl_setfl(&fd, OFlags::empty()).map_err(|e| self.map_errno("open", p, e))?;
        Ok(File::from(fd))
    }

    /// The `fstat` of `fd`, if it is a regular file.
    fn regular_file(&self, p: &WorkspacePath, fd: &OwnedFd) -> Result<rustix::fs::Stat, FsError> {
        let st = rustix::fs::fstat(fd).map_err(|e| self.map_errno("stat", p, e))?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Ok(st),
            // `resolve` followed every link, so a link met here was swapped in since.
            FileType::Symlink => Err(FsError::Escaped(p.written.clone())),
            other => Err(FsError::NotRegular {
                path: p.written.clone(),
                kind: describe_file_type(other),
            }),
        }
    }

    /// Read a whole file.
    pub fn read(&self, p: &WorkspacePath) -> Result<Vec<u8>, FsError> {
        self.read_prefix(p, u64::MAX)
    }

    /// Read at most `limit` bytes from the start of a file (enough to look at its header).
    pub fn read_prefix(&self, p: &WorkspacePath, limit: u64) -> Result<Vec<u8>, FsError> {
        let file = self.open_read(p)?;
        let mut out = Vec::new();
        file.take(limit)
            .read_to_end(&mut out)
            .map_err(|source| FsError::Io {
                op: "read",
                path: p.written.clone(),
                source,
            })?;
        Ok(out)
    }

    /// Open the directory holding `p`, creating missing directories beneath the root if asked.
    fn open_parent(&self, p: &WorkspacePath, create: bool) -> Result<OwnedFd, FsError> {
        let root = self.root_dir(p)?;
        let parent = p.relative.parent().unwrap_or(Path::new(""));
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        match open_beneath(self.strategy, root, parent, flags, Mode::empty()) {
            Err(Errno::NOENT) if create => {}
            other => return other.map_err(|e| self.map_errno("open directory", p, e)),
        }
        // Create one level at a time, each opened beneath the one before.
        let mut cur = rustix::fs::openat(root, ".", flags | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| self.map_errno("open root", p, e))?;
        for comp in parent.components() {
            let Component::Normal(name) = comp else {
                return Err(FsError::Escaped(p.written.clone()));
            };
            match rustix::fs::mkdirat(&cur, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(self.map_errno("create directory", p, e)),
            }
            cur = open_beneath(
                self.strategy,
                cur.as_fd(),
                Path::new(name),
                flags,
                Mode::empty(),
            )
            .map_err(|e| self.map_errno("open directory", p, e))?;
        }
        Ok(cur)
    }

    fn file_name<'a>(&self, p: &'a WorkspacePath) -> Result<&'a std::ffi::OsStr, FsError> {
        if p.access != Access::Write {
            return Err(FsError::NotResolvedForWrite(p.written.clone()));
        }
        p.relative
            .file_name()
            .ok_or_else(|| FsError::NotAFile(p.written.clone()))
    }

    /// Replace (or create) the file at `p` with `contents`, atomically, keeping its mode.
    pub fn write_atomic(
        &self,
        p: &WorkspacePath,
        contents: &[u8],
    ) -> Result<WriteOutcome, FsError> {
        let name = self.file_name(p)?;
        let dir = self.open_parent(p, true)?;
        let original_mode = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => Some(Mode::from_raw_mode(st.st_mode & 0o7777)),
                // `resolve` followed every link, so a link here was swapped in since.
                FileType::Symlink => return Err(FsError::Escaped(p.written.clone())),
                other => {
                    return Err(FsError::NotRegular {
                        path: p.written.clone(),
                        kind: describe_file_type(other),
                    });
                }
            },
            Err(Errno::NOENT) => None,
            Err(e) => return Err(self.map_errno("stat", p, e)),
        };
        let tmp = format!(
            ".{}.spear-{}-{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let fd = rustix::fs::openat(
            &dir,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        )
        .map_err(|e| self.map_errno("create temporary file", p, e))?;
        let written = self.fill_and_rename(p, &dir, fd, &tmp, name, contents, original_mode);
        if written.is_err() {
            // Best effort: the error already says what went wrong; a leftover temp file is noise.
            let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
        }
        written?;
        Ok(WriteOutcome {
            bytes: contents.len() as u64,
            created: original_mode.is_none(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn fill_and_rename(
        &self,
        p: &WorkspacePath,
        dir: &OwnedFd,
        fd: OwnedFd,
        tmp: &str,
        name: &std::ffi::OsStr,
        contents: &[u8],
        mode: Option<Mode>,
    ) -> Result<(), FsError> {
        let io = |op: &'static str| {
            move |source: std::io::Error| FsError::Io {
                op,
                path: p.written.clone(),
                source,
            }
        };
        let mut file = File::from(fd);
        file.write_all(contents).map_err(io("write"))?;
        if let Some(mode) = mode {
            rustix::fs::fchmod(&file, mode).map_err(|e| io("chmod")(e.into()))?;
        }
        file.sync_all().map_err(io("fsync"))?;
        rustix::fs::renameat(dir, tmp, dir, name).map_err(|e| self.map_errno("rename", p, e))?;
        rustix::fs::fsync(dir).map_err(|e| io("fsync directory")(e.into()))
    }

    /// Remove the file at `p` (not a directory).
    pub fn delete(&self, p: &WorkspacePath) -> Result<(), FsError> {
        let name = self.file_name(p)?;
        let dir = self.open_parent(p, false)?;
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                return Err(FsError::NotAFile(p.written.clone()));
            }
            Ok(_) => {}
            Err(e) => return Err(self.map_errno("stat", p, e)),
        }
        rustix::fs::unlinkat(&dir, name, AtFlags::empty())
            .map_err(|e| self.map_errno("delete", p, e))?;
        rustix::fs::fsync(&dir).map_err(|e| self.map_errno("fsync directory", p, e))
    }
}
