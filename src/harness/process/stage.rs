//! A child that starts in a mount namespace of its own, with detached mount trees attached
//! under a fresh tmpfs (the stage), and that may give up root before it executes its program.
//! The parent prepares everything (paths as C strings, the trees as descriptors made by
//! `open_tree`); `enter` runs between fork and exec and only makes raw system calls. This module
//! does not know what the trees are or why the identity changes; the sandbox decides that.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

/// `MOVE_MOUNT_F_EMPTY_PATH` of linux/mount.h: the source is the descriptor itself.
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x0000_0004;

/// One detached mount tree and where under the stage it is attached.
#[derive(Debug)]
pub struct StagedTree {
    /// Absolute path of the mount point (under the stage), created before the attach.
    pub at: CString,
    /// A tree from `open_tree(OPEN_TREE_CLONE)`; attaching it consumes it.
    pub tree: OwnedFd,
    /// The tree's root is a directory (else a file: the mount point is an empty file).
    pub dir: bool,
}

/// What the child does before anything else: a private mount namespace, the stage, and the
/// identity it continues as.
#[derive(Debug)]
pub struct PrivateStage {
    /// An existing, empty directory the stage's tmpfs covers in the child's namespace only.
    pub dir: CString,
    /// The tmpfs's options (`mode=0755,size=…`).
    pub options: CString,
    pub trees: Vec<StagedTree>,
    /// The uid and gid the child's programs run as. Its standard output and error pipes are
    /// given to them (a command reopens `/dev/stdout` through `/proc`, which checks the pipe's
    /// owner), and it becomes them, with no supplementary groups, once the stage is in place.
    pub ids: (u32, u32),
    /// Whether the child becomes `ids` itself (else a program it executes first still needs
    /// root and changes identity after it).
    pub become_now: bool,
}

/// `PIPEFS_MAGIC` of linux/magic.h: the filesystem of anonymous pipes.
const PIPEFS_MAGIC: libc::c_long = 0x5049_5045;

fn check(r: libc::c_long) -> std::io::Result<()> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl PrivateStage {
    /// Between fork and exec: raw system calls only, no allocation (every string was made by
    /// the parent). Mounts made here are seen by this child and what it executes, never by the
    /// host: the namespace is private and `/` is made a slave first, so nothing propagates back.
    pub(crate) fn enter(&self) -> std::io::Result<()> {
        // SAFETY (whole function): each call reads only NUL-terminated strings and descriptors
        // owned by `self`, which the parent allocated before the fork and which live until exec.
        unsafe {
            check(libc::unshare(libc::CLONE_NEWNS).into())?;
            check(
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_SLAVE,
                    std::ptr::null(),
                )
                .into(),
            )?;
            check(
                libc::mount(
                    c"tmpfs".as_ptr(),
                    self.dir.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    self.options.as_ptr().cast(),
                )
                .into(),
            )?;
            for t in &self.trees {
                if t.dir {
                    check(libc::mkdir(t.at.as_ptr(), 0o755).into())?;
                } else {
                    let fd = libc::open(
                        t.at.as_ptr(),
                        libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                        0o644,
                    );
                    check(fd.into())?;
                    libc::close(fd);
                }
                check(libc::syscall(
                    libc::SYS_move_mount,
                    t.tree.as_raw_fd(),
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    t.at.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                ))?;
            }
            let (uid, gid) = self.ids;
            for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
                // Only an anonymous pipe: a file or device here is the host's, never chowned.
                let mut fs: libc::statfs = std::mem::zeroed();
                if libc::fstatfs(fd, &mut fs) == 0 && fs.f_type as libc::c_long == PIPEFS_MAGIC {
                    check(libc::fchown(fd, uid, gid).into())?;
                }
            }
            if self.become_now {
                become_ids(uid, gid)?;
            }
        }
        Ok(())
    }
}

/// Become `uid` and `gid` with no supplementary groups, for good: groups first, while root may
/// still change them; setresuid last, which drops every capability (no keep-caps bit is set).
/// Between fork and exec: raw system calls only. A change of ids clears the parent-death
/// signal, so the caller sets it afterwards.
pub fn become_ids(uid: u32, gid: u32) -> std::io::Result<()> {
    // SAFETY: each call takes plain integers (and a null list of groups).
    unsafe {
        check(libc::setgroups(0, std::ptr::null()).into())?;
        check(libc::setresgid(gid, gid, gid).into())?;
        check(libc::setresuid(uid, uid, uid).into())?;
    }
    Ok(())
}
