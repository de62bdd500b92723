//! `TmpfsSizes`: the size of every tmpfs a sandbox gets, so that no command can fill host
//! memory through one. Invariant: no size is 0, which tmpfs would read as "no limit".

use super::{SandboxError, SpecError};

/// The size in bytes of every writable tmpfs the sandbox gets (`/dev` itself is read-only).
/// tmpfs pages are charged to the memory cgroup of the process that writes them, so under
/// cgroup limits (a systemd scope) they count against the command's `MemoryMax`; without
/// cgroup limits these sizes are their only bound (rlimits do not count them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmpfsSizes {
    pub tmp: u64,
    pub home: u64,
    pub run: u64,
    pub dev_shm: u64,
}

const MIB: u64 = 1 << 20;

impl TmpfsSizes {
    /// `/tmp` and `$HOME` hold build trees and caches; `/run` holds sockets and pid files;
    /// `/dev/shm` holds POSIX shared memory (four times Docker's 64 MiB, which headless
    /// browsers and data loaders outgrow).
    pub const DEFAULT: TmpfsSizes = TmpfsSizes {
        tmp: 1024 * MIB,
        home: 1024 * MIB,
        run: 16 * MIB,
        dev_shm: 256 * MIB,
    };

    /// The mounts and their sizes, in the order they are mounted.
    pub fn entries(&self) -> [(&'static str, u64); 4] {
        [
            ("/dev/shm", self.dev_shm),
            ("/tmp", self.tmp),
            ("/run", self.run),
            ("$HOME", self.home),
        ]
    }

    /// tmpfs reads a size of 0 as "no limit", so each size must be at least one page.
    pub fn check(&self) -> Result<(), SandboxError> {
        for (mount, bytes) in self.entries() {
            if bytes < MASK_TMPFS_BYTES {
                return Err(SpecError::TmpfsTooSmall { mount, bytes }.into());
            }
        }
        Ok(())
    }
}

impl Default for TmpfsSizes {
    fn default() -> Self {
        TmpfsSizes::DEFAULT
    }
}

/// The size of the empty read-only tmpfs that hides a directory: one page, so that no tmpfs
/// in the sandbox is unbounded, even one nothing can write.
pub const MASK_TMPFS_BYTES: u64 = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_refused_because_tmpfs_reads_it_as_unlimited() {
        assert!(TmpfsSizes::DEFAULT.check().is_ok());
        let mut s = TmpfsSizes::DEFAULT;
        s.dev_shm = 0;
        let err = s.check().unwrap_err().to_string();
        assert!(err.contains("/dev/shm is 0 bytes"), "{err}");
    }
}
