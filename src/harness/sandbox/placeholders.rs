//! No mount point is left behind in the workspace. bwrap creates an empty file (mode 0444) where
//! a placeholder `/dev/null` is bound over an absent protected path, on the host, through the
//! writable workspace bind. Every run holds a shared `flock` on the workspace directory; the
//! last run out (the one that can take the lock exclusively) removes the placeholder files.
//! Invariant: only an empty, mode-0444 regular file at a protected location is ever removed,
//! and only while no sandbox on the same workspace is running.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

/// A shared hold on a workspace for the length of one sandbox.
pub struct WorkspaceHold {
    dir: File,
}

impl WorkspaceHold {
    /// Take the shared lock (waits while a finishing run is cleaning up).
    pub fn acquire(workspace: &Path) -> std::io::Result<WorkspaceHold> {
        let dir = File::open(workspace)?;
        flock(&dir, FlockOperation::LockShared)?;
        Ok(WorkspaceHold { dir })
    }

    /// Release the hold; when no other run holds the workspace, remove `placeholders` that are
    /// still what bwrap made of them.
    pub fn release(self, placeholders: &[PathBuf]) {
        if placeholders.is_empty() {
            return;
        }
        if flock(&self.dir, FlockOperation::NonBlockingLockExclusive).is_ok() {
            for p in placeholders {
                if is_placeholder(p) {
                    let _ = std::fs::remove_file(p);
                }
            }
        }
    }
}

/// What bwrap leaves for a read-only bind over an absent path: an empty regular file, mode 0444.
/// (A run that finds one left by a crashed Spear treats it as absent, so it is cleaned up too.)
pub fn is_placeholder(p: &Path) -> bool {
    match std::fs::symlink_metadata(p) {
        Ok(m) => m.is_file() && m.size() == 0 && m.permissions().mode() & 0o7777 == 0o444,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_empty_read_only_files_count_as_placeholders() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        std::fs::write(&p, "").unwrap();
        assert!(!is_placeholder(&p));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        assert!(is_placeholder(&p));
        std::fs::write(d.path().join("y"), "data").unwrap();
        std::fs::set_permissions(d.path().join("y"), std::fs::Permissions::from_mode(0o444))
            .unwrap();
        assert!(!is_placeholder(&d.path().join("y")));
        let hold = WorkspaceHold::acquire(d.path()).unwrap();
        let other = WorkspaceHold::acquire(d.path()).unwrap();
        other.release(std::slice::from_ref(&p));
        assert!(p.exists(), "another run still holds the workspace");
        hold.release(std::slice::from_ref(&p));
        assert!(!p.exists());
    }
}
