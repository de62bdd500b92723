//! A pids cgroup made for one launch, written directly in the cgroup filesystem: the process
//! cap for root on kernels that do not namespace `pid_max` (before Linux 6.14) and have no
//! systemd to ask for a scope (containers, CI runners, this project's own machine). The kernel
//! exempts uid 0 from `RLIMIT_NPROC`, but not from a cgroup's `pids.max`.
//!
//! The launch's child joins the cgroup itself, between fork and exec, by writing `0` to the
//! cgroup's `cgroup.procs` (the writer moves itself): bwrap and everything it starts are born
//! inside, and no process ID is ever written. Invariant: a launch that asked for a cgroup either
//! runs inside it or does not start.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use thiserror::Error;

/// Which cgroup hierarchy carries the pids controller here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

impl CgroupVersion {
    fn label(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "cgroup v1",
            CgroupVersion::V2 => "cgroup v2",
        }
    }
}

/// Why no pids cgroup can be made here.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PidsCgroupError {
    #[error("no cgroup hierarchy here carries the pids controller")]
    NoController,
    #[error(
        "the pids cgroup {} is not writable (a read-only cgroup mount, or not root); a \
         container needs a writable /sys/fs/cgroup (e.g. a private cgroup namespace mounted \
         read-write)",
        .0.display()
    )]
    NotWritable(PathBuf),
    #[error(
        "in cgroup v2 the pids controller cannot be given to a child of {}: it holds \
         processes and is not the root, and its parent is not writable here",
        .0.display()
    )]
    NoDelegation(PathBuf),
}

/// A launch's own pids cgroup could not be made (the parent was found, this step failed).
#[derive(Debug, Error)]
#[error("making the launch's pids cgroup {} failed: {source}", path.display())]
pub struct CgroupCreateError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The directory under which each launch gets its own pids cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidsCgroupParent {
    dir: PathBuf,
    version: CgroupVersion,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl PidsCgroupParent {
    /// The parent for this process, from `/proc/self/cgroup` and `/proc/self/mountinfo`.
    pub fn find() -> Result<PidsCgroupParent, PidsCgroupError> {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        Self::find_from(
            &read("/proc/self/cgroup"),
            &read("/proc/self/mountinfo"),
            Path::new("/"),
            &|p| writable(p),
        )
    }

    /// `find` over given file contents; `root` prefixes every mount point (tests build a fake
    /// tree there) and `can_write` says whether a directory may be written.
    pub fn find_from(
        proc_cgroup: &str,
        mountinfo: &str,
        root: &Path,
        can_write: &dyn Fn(&Path) -> bool,
    ) -> Result<PidsCgroupParent, PidsCgroupError> {
        let mounts = cgroup_mounts(mountinfo);
        // v1 first: a controller bound to a v1 hierarchy is absent from v2.
        for line in proc_cgroup.lines() {
            let mut f = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            if !controllers.split(',').any(|c| c == "pids") {
                continue;
            }
            let Some(m) = mounts.iter().find(|m| !m.v2 && m.pids) else {
                continue;
            };
            let dir = m.dir_for(root, path);
            if m.read_only || !can_write(&dir) {
                return Err(PidsCgroupError::NotWritable(dir));
            }
            return Ok(PidsCgroupParent {
                dir,
                version: CgroupVersion::V1,
            });
        }
        let path = proc_cgroup
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .ok_or(PidsCgroupError::NoController)?;
        let m = mounts
            .iter()
            .find(|m| m.v2)
            .ok_or(PidsCgroupError::NoController)?;
        let own = m.dir_for(root, path);
        let lists_pids = |file: &Path| {
            std::fs::read_to_string(file).is_ok_and(|s| s.split_whitespace().any(|c| c == "pids"))
        };
        // A cgroup that already hands pids to its children (the root, or one that holds no
        // processes) can take ours; otherwise a sibling under a parent that hands pids down.
        let candidate = if lists_pids(&own.join("cgroup.subtree_control")) {
            own.clone()
        } else if lists_pids(&own.join("cgroup.controllers"))
            && let Some(parent) = own.parent().filter(|p| p.starts_with(root.join(m.rel())))
        {
            parent.to_path_buf()
        } else if lists_pids(&own.join("cgroup.controllers")) || own.join("pids.max").exists() {
            return Err(PidsCgroupError::NoDelegation(own));
        } else {
            return Err(PidsCgroupError::NoController);
        };
        if m.read_only || !can_write(&candidate) {
            return Err(PidsCgroupError::NotWritable(candidate));
        }
        Ok(PidsCgroupParent {
            dir: candidate,
            version: CgroupVersion::V2,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// One line for `spear doctor`.
    pub fn describe(&self) -> String {
        format!(
            "pids.max of a cgroup made for each launch under {} ({})",
            self.dir.display(),
            self.version.label()
        )
    }

    /// Make a fresh cgroup capped at `limit` tasks and open its `cgroup.procs` for the launch's
    /// child to join. Removed again when the returned value is dropped.
    pub fn create(&self, limit: u64) -> Result<LaunchCgroup, CgroupCreateError> {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = self
            .dir
            .join(format!("spear-{}-{seq}-{nanos:x}", std::process::id()));
        let fail = |source: std::io::Error| CgroupCreateError {
            path: dir.clone(),
            source,
        };
        std::fs::create_dir(&dir).map_err(fail)?;
        // From here the directory is removed on every path, by the guard's drop.
        let mut made = LaunchCgroup {
            dir: dir.clone(),
            procs: None,
        };
        std::fs::write(dir.join("pids.max"), format!("{limit}\n")).map_err(fail)?;
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .map_err(fail)?;
        made.procs = Some(procs.into());
        Ok(made)
    }
}

/// One launch's pids cgroup: its directory, and `cgroup.procs` open for writing.
#[derive(Debug)]
pub struct LaunchCgroup {
    dir: PathBuf,
    procs: Option<OwnedFd>,
}

impl LaunchCgroup {
    /// The descriptor the launch's child writes `0` to, between fork and exec.
    pub fn procs_fd(&self) -> Option<RawFd> {
        self.procs.as_ref().map(|f| f.as_raw_fd())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for LaunchCgroup {
    /// Every process of the launch has been killed by now, but the kernel releases the last
    /// of a dying PID namespace's tasks a little after its init is reaped: a cgroup still busy
    /// is removed by a short-lived thread once it empties, and what a Spear that exits first
    /// leaves is removed by the next one (`sweep_leftovers`).
    fn drop(&mut self) {
        self.procs = None;
        match std::fs::remove_dir(&self.dir) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                let dir = std::mem::take(&mut self.dir);
                let _ = std::thread::Builder::new()
                    .name("spear-cgroup-rmdir".into())
                    .spawn(move || remove_when_empty(&dir));
            }
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove a launch's pids cgroup");
            }
        }
    }
}

/// Retry removing `dir` while the kernel releases its last tasks (up to about ten seconds).
fn remove_when_empty(dir: &Path) {
    let mut wait = std::time::Duration::from_millis(5);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        match std::fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(wait);
                wait = (wait * 2).min(std::time::Duration::from_millis(500));
            }
            Err(_) => return,
        }
    }
    tracing::warn!(dir = %dir.display(), "a launch's pids cgroup is still busy; the next start removes it");
}

impl PidsCgroupParent {
    /// Remove the launch cgroups that Spears no longer running left under this parent (their
    /// names carry the owner's pid). A cgroup that still holds processes cannot be removed,
    /// so a live one is never lost.
    pub fn sweep_leftovers(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        entries
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let Some(owner) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("spear-"))
                    .and_then(|n| n.split('-').next())
                else {
                    return false;
                };
                owner != std::process::id().to_string() && !Path::new("/proc").join(owner).exists()
            })
            .filter(|e| std::fs::remove_dir(e.path()).is_ok())
            .count()
    }
}

fn writable(dir: &Path) -> bool {
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}

/// A cgroup filesystem mount, from one mountinfo line.
#[derive(Debug)]
struct CgroupMount {
    /// The root of the hierarchy this mount shows (field 4; `/` unless bind-mounted).
    root: String,
    point: String,
    v2: bool,
    pids: bool,
    read_only: bool,
}

impl CgroupMount {
    /// Where `path` (as `/proc/self/cgroup` names it) is under this mount.
    fn dir_for(&self, prefix: &Path, path: &str) -> PathBuf {
        let rel = path
            .strip_prefix(self.root.trim_end_matches('/'))
            .unwrap_or(path)
            .trim_start_matches('/');
        let mut dir = prefix.join(self.rel());
        if !rel.is_empty() {
            dir.push(rel);
        }
        dir
    }

    fn rel(&self) -> &str {
        self.point.trim_start_matches('/')
    }
}

/// The cgroup mounts in a mountinfo text (`ID PARENT MAJ:MIN ROOT POINT OPTS ... - FSTYPE SRC
/// SUPER_OPTS`).
fn cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            let fstype = *r.first()?;
            if fstype != "cgroup" && fstype != "cgroup2" {
                return None;
            }
            let super_opts = r.get(2).copied().unwrap_or("");
            Some(CgroupMount {
                root: unescape(l.get(3)?),
                point: unescape(l.get(4)?),
                v2: fstype == "cgroup2",
                pids: super_opts.split(',').any(|o| o == "pids"),
                read_only: l.get(5)?.split(',').any(|o| o == "ro"),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 4])
                .ok()
                .and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1_MOUNTS: &str = "\
30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
38 30 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:35 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";

    fn all_writable(_: &Path) -> bool {
        true
    }

    #[test]
    fn cgroup_v1_pids_is_found_at_the_process_own_cgroup() {
        let got = PidsCgroupParent::find_from(
            "8:pids:/ci/job\n4:memory:/x\n0::/\n",
            V1_MOUNTS,
            Path::new("/"),
            &all_writable,
        )
        .unwrap();
        assert_eq!(got.dir(), Path::new("/sys/fs/cgroup/pids/ci/job"));
        assert_eq!(got.version(), CgroupVersion::V1);
    }

    #[test]
    fn a_read_only_or_unwritable_hierarchy_is_refused_naming_it() {
        let ro = V1_MOUNTS.replace("/sys/fs/cgroup/pids rw,", "/sys/fs/cgroup/pids ro,");
        let e = PidsCgroupParent::find_from("8:pids:/\n", &ro, Path::new("/"), &all_writable)
            .unwrap_err();
        assert!(
            matches!(e, PidsCgroupError::NotWritable(ref d) if d == Path::new("/sys/fs/cgroup/pids"))
        );
        let e = PidsCgroupParent::find_from("8:pids:/\n", V1_MOUNTS, Path::new("/"), &|_| false)
            .unwrap_err();
        assert!(e.to_string().contains("not writable"), "{e}");
    }

    fn v2_tree(own: &str, subtree: &str, controllers: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let own_dir = d
            .path()
            .join("sys/fs/cgroup")
            .join(own.trim_start_matches('/'));
        std::fs::create_dir_all(&own_dir).unwrap();
        std::fs::write(own_dir.join("cgroup.subtree_control"), subtree).unwrap();
        std::fs::write(own_dir.join("cgroup.controllers"), controllers).unwrap();
        d
    }

    const V2_MOUNTS: &str = "35 30 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw";

    #[test]
    fn cgroup_v2_root_takes_the_launch_as_a_child() {
        let d = v2_tree("/", "cpu pids memory\n", "cpu pids memory\n");
        let got =
            PidsCgroupParent::find_from("0::/\n", V2_MOUNTS, d.path(), &all_writable).unwrap();
        assert_eq!(got.dir(), d.path().join("sys/fs/cgroup"));
        assert_eq!(got.version(), CgroupVersion::V2);
    }

    #[test]
    fn cgroup_v2_with_processes_uses_a_sibling_under_a_parent_that_hands_pids_down() {
        let d = v2_tree("/runner/job", "\n", "cpu pids\n");
        let got =
            PidsCgroupParent::find_from("0::/runner/job\n", V2_MOUNTS, d.path(), &all_writable)
                .unwrap();
        assert_eq!(got.dir(), d.path().join("sys/fs/cgroup/runner"));
    }

    #[test]
    fn cgroup_v2_without_pids_anywhere_says_so() {
        let d = v2_tree("/job", "\n", "cpu memory\n");
        let e = PidsCgroupParent::find_from("0::/job\n", V2_MOUNTS, d.path(), &all_writable)
            .unwrap_err();
        assert_eq!(e, PidsCgroupError::NoController);
        let e = PidsCgroupParent::find_from("", "", d.path(), &all_writable).unwrap_err();
        assert_eq!(e, PidsCgroupError::NoController);
    }

    #[test]
    fn a_bind_mounted_hierarchy_maps_the_cgroup_path_below_its_root() {
        // A container whose /sys/fs/cgroup/pids shows the host hierarchy from /docker/abc.
        let mounts = "38 30 0:34 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids";
        let got = PidsCgroupParent::find_from(
            "8:pids:/docker/abc/inner\n",
            mounts,
            Path::new("/"),
            &all_writable,
        )
        .unwrap();
        assert_eq!(got.dir(), Path::new("/sys/fs/cgroup/pids/inner"));
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/trail\\04"), "/trail\\04");
    }
}
