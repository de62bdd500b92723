//! A successful preflight remembered across Spear processes, so that one-shot `spear exec`
//! does not pay for two sandboxes. Only success is stored, for ten minutes, under a key made of
//! everything the verdict depends on (bwrap's identity, the kernel, the user, the argv of the
//! preflight sandbox). Invariant: confinement never depends on this cache: a stale "ok" can only
//! turn a clear preflight diagnosis into bwrap's own error on the real command, which fails
//! closed just the same. The directory is private to the user (0700, owner checked).

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

const TTL: Duration = Duration::from_secs(600);

/// The cache file for a preflight of `argv` run with `bwrap`, or `None` when no private
/// directory is available.
pub fn entry(bwrap: &Path, argv: &[std::ffi::OsString]) -> Option<PathBuf> {
    let meta = std::fs::metadata(bwrap).ok()?;
    let uid = rustix::process::geteuid().as_raw();
    let mut h = Sha256::new();
    h.update(bwrap.as_os_str().as_encoded_bytes());
    h.update(format!(
        "{}:{}:{}:{}",
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime()
    ));
    h.update(rustix::system::uname().release().to_bytes());
    h.update(format!("{uid}:{}", rustix::process::getegid().as_raw()));
    for a in argv {
        h.update(a.as_encoded_bytes());
        h.update([0]);
    }
    let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Some(private_dir(uid)?.join(format!("preflight-{}", &key[..32])))
}

fn private_dir(uid: u32) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| std::env::temp_dir().join(format!("spear-{uid}")));
    let dir = base.join("spear-preflight");
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0).then_some(dir)
}

/// Whether a fresh success is recorded.
pub fn is_fresh(entry: &Path) -> bool {
    std::fs::symlink_metadata(entry)
        .ok()
        .filter(|m| m.is_file() && m.uid() == rustix::process::geteuid().as_raw())
        .and_then(|m| m.modified().ok())
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < TTL)
}

pub fn record(entry: &Path) {
    let _ = std::fs::write(entry, "ok\n");
}
