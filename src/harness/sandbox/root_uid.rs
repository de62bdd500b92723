//! A root Spear's sandbox user (issue 20, first part). When Spear runs as root, bwrap's sandbox
//! runs as the host's uid 0: discretionary permissions are no wall, and a file only root may
//! read is readable in SAFE mode unless it is masked by name. The remedy is to run the sandbox
//! as an unprivileged host uid of Spear's own, with the workspace bound through an idmapped
//! mount so that it still looks like the sandbox's own tree. This module holds the decisions:
//! which uid (`choose`), whether this kernel and the workspace's filesystem can give the
//! workspace to that uid (`probe_idmapped_workspace`), and the idmapped trees a launch stages
//! (`MappedUser`). The launch (`BubblewrapSandbox::spawn`) attaches them in a private mount
//! namespace and drops to the uid before bwrap runs; `spear doctor` reports both decisions.

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// The uid (and gid) used when root has no subordinate range: high, far from any range
/// `useradd` hands out, and not `nobody` (65534), whose files other processes may share.
pub const FALLBACK_ID: u32 = 2_147_000_000;

/// Where the sandbox's uid comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdSource {
    /// The first id of root's range in `/etc/subuid` (`/etc/subgid`).
    SubordinateRange,
    /// [`FALLBACK_ID`], which no account and no subordinate range uses.
    Fixed,
}

/// The host uid and gid a root Spear's sandbox would run as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxIds {
    pub uid: u32,
    pub gid: u32,
    pub source: IdSource,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootUidError {
    #[error(
        "root's subordinate range in {file} starts at {id}, which is {why}; give root a range \
         of unprivileged ids (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 \
         root)"
    )]
    UnusableRange {
        file: &'static str,
        id: u32,
        why: &'static str,
    },
    #[error(
        "root has no subordinate range and the fixed id {FALLBACK_ID} is {why}; give root a \
         range of unprivileged ids (usermod --add-subuids 100000-165535 --add-subgids \
         100000-165535 root)"
    )]
    FallbackTaken { why: String },
}

/// The first id of root's range in a `/etc/subuid`-style text (`root:100000:65536` or
/// `0:100000:65536`), if it has one with a count above zero.
fn root_range(text: &str) -> Option<u32> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let mut f = l.split(':');
            let (who, start, count) = (f.next()?, f.next()?, f.next()?);
            let count: u64 = count.trim().parse().ok()?;
            ((who == "root" || who == "0") && count > 0)
                .then(|| start.trim().parse().ok())
                .flatten()
        })
}

/// Every `start..start+count` range of a `/etc/subuid`-style text.
fn ranges(text: &str) -> impl Iterator<Item = (u64, u64)> + '_ {
    text.lines().filter_map(|l| {
        let mut f = l.trim().split(':').skip(1);
        let start: u64 = f.next()?.trim().parse().ok()?;
        let count: u64 = f.next()?.trim().parse().ok()?;
        Some((start, start + count))
    })
}

/// The ids (third field: uid in `/etc/passwd`, gid in `/etc/group`) accounts use.
fn account_ids(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.lines()
        .filter_map(|l| l.split(':').nth(2).and_then(|x| x.trim().parse().ok()))
}

/// Why `id` may not be the sandbox's, if it may not.
fn unusable(id: u32) -> Option<&'static str> {
    match id {
        0 => Some("root itself"),
        65534 => Some("`nobody`, whose files other processes share"),
        u32::MAX => Some("the invalid id -1"),
        _ => None,
    }
}

/// Choose the sandbox's ids from the texts of `/etc/subuid`, `/etc/subgid`, `/etc/passwd` and
/// `/etc/group`: the first of root's subordinate ranges, else [`FALLBACK_ID`] when no account
/// and no range uses it.
pub fn choose(
    subuid: &str,
    subgid: &str,
    passwd: &str,
    group: &str,
) -> Result<SandboxIds, RootUidError> {
    if let (Some(uid), Some(gid)) = (root_range(subuid), root_range(subgid)) {
        for (file, id) in [("/etc/subuid", uid), ("/etc/subgid", gid)] {
            if let Some(why) = unusable(id) {
                return Err(RootUidError::UnusableRange { file, id, why });
            }
        }
        return Ok(SandboxIds {
            uid,
            gid,
            source: IdSource::SubordinateRange,
        });
    }
    let id = FALLBACK_ID;
    let in_range = |text: &str| ranges(text).any(|(s, e)| (s..e).contains(&u64::from(id)));
    let why = if account_ids(passwd).any(|u| u == id) {
        Some("an account's uid in /etc/passwd")
    } else if account_ids(group).any(|g| g == id) {
        Some("a group's gid in /etc/group")
    } else if in_range(subuid) || in_range(subgid) {
        Some("inside another account's subordinate range")
    } else {
        None
    };
    match why {
        Some(why) => Err(RootUidError::FallbackTaken { why: why.into() }),
        None => Ok(SandboxIds {
            uid: id,
            gid: id,
            source: IdSource::Fixed,
        }),
    }
}

/// Choose from this host's files (a missing file reads as empty).
pub fn choose_for_host() -> Result<SandboxIds, RootUidError> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    choose(
        &read("/etc/subuid"),
        &read("/etc/subgid"),
        &read("/etc/passwd"),
        &read("/etc/group"),
    )
}

/// Why the workspace cannot be given to the sandbox's uid through an idmapped mount here.
#[derive(Debug, thiserror::Error)]
pub enum IdmapUnsupported {
    #[error("making an idmapped mount needs root (CAP_SYS_ADMIN)")]
    NotRoot,
    #[error("a user namespace for the mapping could not be made: {0}")]
    Namespace(std::io::Error),
    #[error("this kernel has no {call} (idmapped mounts need Linux 5.12 or later)")]
    KernelTooOld { call: &'static str },
    #[error(
        "the filesystem holding `{path}` does not support idmapped mounts (ext4, xfs and btrfs \
         do from Linux 5.12, tmpfs from 6.3; NFS and most overlay set-ups do not): {source}"
    )]
    Filesystem {
        path: String,
        source: std::io::Error,
    },
    #[error("{call} on `{path}` failed: {source}")]
    Call {
        call: &'static str,
        path: String,
        source: std::io::Error,
    },
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

/// `struct mount_attr` of linux/mount.h (size 32, MOUNT_ATTR_SIZE_VER0).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// The user namespace an idmapped workspace mount takes: the workspace owner's ids `owner` map
/// to the sandbox's `ids`. A mount idmapped with it presents the files the owner has on disk
/// as the sandbox uid's, and stores what the sandbox uid writes as the owner's (on disk the
/// idmapping reads each id as the namespace's inside id and shows its outside id). Held by a
/// descriptor; made by a child (`cat`, blocked on its stdin) that unshares it before exec,
/// ended and reaped before this returns.
fn idmap_user_namespace(ids: SandboxIds, owner: (u32, u32)) -> std::io::Result<OwnedFd> {
    // By absolute path: a root Spear's PATH is not trusted to name the program.
    let cat = ["/usr/bin/cat", "/bin/cat"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT))?;
    let mut cmd = Command::new(cat);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: between fork and exec the closure makes one raw system call (unshare) and
    // allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            // SAFETY: a new user namespace changes no memory or descriptor this process shares.
            rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWUSER)?;
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    // The child is unreaped until `wait` below, so its pid names it and no other process.
    let proc = format!("/proc/{}", child.id());
    let mapped = (|| {
        std::fs::write(
            format!("{proc}/uid_map"),
            format!("{} {} 1\n", owner.0, ids.uid),
        )?;
        std::fs::write(format!("{proc}/setgroups"), "deny")?;
        std::fs::write(
            format!("{proc}/gid_map"),
            format!("{} {} 1\n", owner.1, ids.gid),
        )?;
        std::fs::File::open(format!("{proc}/ns/user")).map(OwnedFd::from)
    })();
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.flush();
    }
    let _ = child.wait();
    mapped
}

const AT_RECURSIVE: libc::c_uint = 0x8000;

/// A detached copy of the mount tree at `path` (`open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)`),
/// idmapped through `idmap` when given. It is attached nowhere; dropping it unmounts it.
pub(crate) fn clone_tree(
    path: &Path,
    idmap: Option<&OwnedFd>,
) -> Result<OwnedFd, IdmapUnsupported> {
    let shown = || path.display().to_string();
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
        IdmapUnsupported::Call {
            call: "open_tree",
            path: shown(),
            source: std::io::Error::from_raw_os_error(libc::EINVAL),
        }
    })?;
    // SAFETY: open_tree reads a NUL-terminated path and returns a new descriptor or -1.
    let tree = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            c_path.as_ptr(),
            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE,
        )
    };
    if tree < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => IdmapUnsupported::KernelTooOld { call: "open_tree" },
            _ => IdmapUnsupported::Call {
                call: "open_tree",
                path: shown(),
                source: e,
            },
        });
    }
    // SAFETY: `tree` is a descriptor open_tree just returned, owned from here on.
    let tree = unsafe { OwnedFd::from_raw_fd(tree as i32) };
    let Some(userns) = idmap else {
        return Ok(tree);
    };
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_IDMAP,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.as_raw_fd() as u64,
    };
    let empty = c"";
    // SAFETY: mount_setattr reads `size_of::<MountAttr>()` bytes of `attr`, which lives until
    // the call returns, and the empty NUL-terminated path with AT_EMPTY_PATH.
    let set = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if set < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => IdmapUnsupported::KernelTooOld {
                call: "mount_setattr",
            },
            Some(libc::EINVAL) => IdmapUnsupported::Filesystem {
                path: shown(),
                source: e,
            },
            _ => IdmapUnsupported::Call {
                call: "mount_setattr",
                path: shown(),
                source: e,
            },
        });
    }
    Ok(tree)
}

fn owner_of(path: &Path) -> Result<(u32, u32), IdmapUnsupported> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .map(|m| (m.uid(), m.gid()))
        .map_err(|source| IdmapUnsupported::Call {
            call: "stat",
            path: path.display().to_string(),
            source,
        })
}

/// Can the workspace at `path` be bound through a mount idmapped to `ids` here? Tries it on a
/// detached clone of the mount, which is never attached anywhere and ends with its descriptor:
/// nothing on the host changes.
pub fn probe_idmapped_workspace(path: &Path, ids: SandboxIds) -> Result<(), IdmapUnsupported> {
    if !rustix::process::geteuid().is_root() {
        return Err(IdmapUnsupported::NotRoot);
    }
    let userns = idmap_user_namespace(ids, owner_of(path)?).map_err(IdmapUnsupported::Namespace)?;
    clone_tree(path, Some(&userns)).map(drop)
}

/// A root Spear's sandbox user: its ids, and the idmapping namespaces made so far (one per
/// workspace owner; a mount keeps its own reference, the cache only saves a child per launch).
#[derive(Debug)]
pub struct MappedUser {
    pub ids: SandboxIds,
    namespaces: std::sync::Mutex<std::collections::HashMap<(u32, u32), OwnedFd>>,
}

impl MappedUser {
    pub fn new(ids: SandboxIds) -> Self {
        MappedUser {
            ids,
            namespaces: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// A detached tree of the workspace at `path`, idmapped so that its owner's files are the
    /// sandbox uid's.
    pub fn workspace_tree(&self, path: &Path) -> Result<OwnedFd, IdmapUnsupported> {
        let owner = owner_of(path)?;
        let mut cache = self
            .namespaces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let userns = match cache.entry(owner) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(
                idmap_user_namespace(self.ids, owner).map_err(IdmapUnsupported::Namespace)?,
            ),
        };
        clone_tree(path, Some(userns))
    }
}

/// Who the sandbox's processes are on the host.
#[derive(Debug)]
pub enum SandboxUser {
    /// Spear's own uid, which is not root.
    Own,
    /// Root, because the person set `[sandbox] root_uid = "host"`: discretionary permissions
    /// are no wall for the sandbox; every command's audit record says so.
    HostRoot,
    /// A root Spear's unprivileged uid, with the workspace idmapped to it.
    Mapped(MappedUser),
    /// A root Spear that cannot give its sandbox another uid here: commands are refused.
    Refused(String),
}

impl SandboxUser {
    /// The user for this process: its own when not root; as root, the mapped uid when this
    /// host allows it (`host_root`: the person's opt-out).
    pub fn for_this_process(host_root: bool) -> Self {
        if !rustix::process::geteuid().is_root() {
            return SandboxUser::Own;
        }
        if host_root {
            return SandboxUser::HostRoot;
        }
        match choose_for_host() {
            Ok(ids) => SandboxUser::Mapped(MappedUser::new(ids)),
            Err(e) => SandboxUser::Refused(e.to_string()),
        }
    }

    /// The host uid the sandbox's processes have (the ledger's sweep recognises them by it).
    pub fn host_uid(&self) -> u32 {
        match self {
            SandboxUser::Mapped(m) => m.ids.uid,
            _ => rustix::process::getuid().as_raw(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\nme:x:1000:1000::/home/me:/bin/sh\n";
    const GROUP: &str = "root:x:0:\nme:x:1000:\n";

    #[test]
    fn the_first_of_roots_subordinate_range_is_taken() {
        let ids = choose(
            "me:165536:65536\nroot:100000:65536\n",
            "root:200000:65536\n",
            PASSWD,
            GROUP,
        )
        .unwrap();
        assert_eq!(
            ids,
            SandboxIds {
                uid: 100000,
                gid: 200000,
                source: IdSource::SubordinateRange
            }
        );
        // Root named by uid works too.
        let ids = choose("0:300000:10\n", "0:300000:10\n", PASSWD, GROUP).unwrap();
        assert_eq!(ids.uid, 300000);
    }

    #[test]
    fn without_a_range_the_fixed_id_is_used_when_free() {
        let ids = choose("me:165536:65536\n", "", PASSWD, GROUP).unwrap();
        assert_eq!((ids.uid, ids.gid), (FALLBACK_ID, FALLBACK_ID));
        assert_eq!(ids.source, IdSource::Fixed);
        // An empty range for root is no range.
        let ids = choose("root:100000:0\n", "root:100000:0\n", PASSWD, GROUP).unwrap();
        assert_eq!(ids.source, IdSource::Fixed);
    }

    #[test]
    fn a_taken_fixed_id_or_a_privileged_range_is_refused_with_the_fix() {
        let taken = format!("{PASSWD}odd:x:{FALLBACK_ID}:5::/:/bin/sh\n");
        let e = choose("", "", &taken, GROUP).unwrap_err();
        assert!(e.to_string().contains("usermod --add-subuids"), "{e}");
        let covering = format!("me:{}:10\n", FALLBACK_ID - 5);
        assert!(choose(&covering, "", PASSWD, GROUP).is_err());
        for bad in ["root:0:65536\n", "root:65534:1\n"] {
            let e = choose(bad, bad, PASSWD, GROUP).unwrap_err();
            assert!(
                matches!(e, RootUidError::UnusableRange { .. }),
                "{bad}: {e}"
            );
        }
    }

    proptest! {
        /// Whatever the files hold, the chosen uid is never root's, never nobody's, and never
        /// an account's when it is the fixed one.
        #[test]
        fn the_chosen_ids_are_never_privileged_or_shared(
            subuid in "[a-z0-9:\n]{0,80}",
            subgid in "[a-z0-9:\n]{0,80}",
            passwd in "[a-z0-9:\n]{0,80}",
        ) {
            if let Ok(ids) = choose(&subuid, &subgid, &passwd, GROUP) {
                for id in [ids.uid, ids.gid] {
                    prop_assert!(id != 0 && id != 65534 && id != u32::MAX);
                }
                if ids.source == IdSource::Fixed {
                    prop_assert!(account_ids(&passwd).all(|u| u != ids.uid));
                }
            }
        }
    }

    /// As root the probe gives a definite answer for the filesystem found (whichever it is);
    /// as anyone else it says root is needed. Either way nothing is left mounted.
    #[test]
    fn the_probe_answers_for_the_host_found() {
        let dir = tempfile::tempdir().unwrap();
        let before = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let ids = SandboxIds {
            uid: FALLBACK_ID,
            gid: FALLBACK_ID,
            source: IdSource::Fixed,
        };
        let got = probe_idmapped_workspace(dir.path(), ids);
        if rustix::process::geteuid().is_root() {
            match &got {
                Ok(()) => {}
                Err(
                    IdmapUnsupported::Filesystem { .. } | IdmapUnsupported::KernelTooOld { .. },
                ) => {}
                Err(e) => panic!("as root the probe should run: {e}"),
            }
        } else {
            assert!(matches!(got, Err(IdmapUnsupported::NotRoot)), "{got:?}");
        }
        let after = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert_eq!(before.lines().count(), after.lines().count());
    }
}
