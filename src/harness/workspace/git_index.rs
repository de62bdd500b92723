//! The gitlinks (mode 160000 entries: `git add sub` of a nested repository) in a repository's
//! index, read by Spear itself: after a run, a gitlink the command added is what makes the
//! person's own `git status` descend into a nested repository the command made, so the runner
//! compares the sets before and after. Read without git, so no config or hook of the
//! repository is involved. Index versions 2, 3 and 4, SHA-1 and SHA-256 object names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const GITLINK: u32 = 0o160000;
/// An index larger than this is not read (a gitlink in it goes unseen; see the caller).
const MAX_INDEX_BYTES: u64 = 256 << 20;

/// Why an index could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("not a git index (no DIRC signature)")]
    NotAnIndex,
    #[error("index version {0} is not one Spear reads (2, 3 or 4)")]
    Version(u32),
    #[error("the index ends inside entry {0}")]
    Truncated(u32),
}

/// The gitlink paths of `root/.git/index`; an empty set when there is no such file.
pub fn gitlinks_of(root: &Path) -> Result<BTreeSet<PathBuf>, IndexError> {
    let git = root.join(".git");
    let index = git.join("index");
    let Ok(meta) = std::fs::symlink_metadata(&index) else {
        return Ok(BTreeSet::new());
    };
    if !meta.is_file() || meta.len() > MAX_INDEX_BYTES {
        return Ok(BTreeSet::new());
    }
    let Ok(bytes) = std::fs::read(&index) else {
        return Ok(BTreeSet::new());
    };
    gitlinks(&bytes, hash_len(&git))
}

/// 32 for a repository whose config says `objectformat = sha256`, else 20.
fn hash_len(git: &Path) -> usize {
    let config = std::fs::read_to_string(git.join("config")).unwrap_or_default();
    let sha256 = config.lines().any(|l| {
        let l = l.trim().to_ascii_lowercase();
        l.starts_with("objectformat") && l.ends_with("sha256")
    });
    if sha256 { 32 } else { 20 }
}

/// The gitlink paths in an index's bytes.
pub fn gitlinks(bytes: &[u8], hash_len: usize) -> Result<BTreeSet<PathBuf>, IndexError> {
    use std::os::unix::ffi::OsStrExt;
    let u32_at = |at: usize| -> Option<u32> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    if bytes.get(..4) != Some(b"DIRC") {
        return Err(IndexError::NotAnIndex);
    }
    let version = u32_at(4).ok_or(IndexError::NotAnIndex)?;
    if !(2..=4).contains(&version) {
        return Err(IndexError::Version(version));
    }
    let count = u32_at(8).ok_or(IndexError::NotAnIndex)?;
    let mut out = BTreeSet::new();
    let mut at = 12usize;
    let mut previous: Vec<u8> = Vec::new();
    for n in 0..count {
        let truncated = IndexError::Truncated(n);
        // ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each), the object name.
        let mode = u32_at(at + 24).ok_or(truncated.clone())?;
        let flags_at = at + 40 + hash_len;
        let flags = bytes
            .get(flags_at..flags_at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or(truncated.clone())?;
        let mut path_at = flags_at + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            path_at += 2;
        }
        let path: Vec<u8> = if version == 4 {
            // A varint of bytes to drop from the previous path, then the rest, NUL-ended.
            let (strip, used) =
                varint(bytes.get(path_at..).ok_or(truncated.clone())?).ok_or(truncated.clone())?;
            path_at += used;
            let rest = bytes.get(path_at..).ok_or(truncated.clone())?;
            let end = rest.iter().position(|&b| b == 0).ok_or(truncated.clone())?;
            let keep = previous.len().checked_sub(strip).ok_or(truncated.clone())?;
            let mut p = previous[..keep].to_vec();
            p.extend_from_slice(&rest[..end]);
            at = path_at + end + 1;
            p
        } else {
            let rest = bytes.get(path_at..).ok_or(truncated.clone())?;
            let end = rest.iter().position(|&b| b == 0).ok_or(truncated.clone())?;
            // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
            let len = path_at - at + end;
            at += (len + 8) & !7;
            rest[..end].to_vec()
        };
        if mode & 0o170000 == GITLINK {
            out.insert(PathBuf::from(std::ffi::OsStr::from_bytes(&path)));
        }
        previous = path;
    }
    Ok(out)
}

/// A git "offset" varint (each continuation adds one before shifting).
fn varint(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value: usize = 0;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        if i > 0 {
            value = value.checked_add(1)?.checked_shl(7)?;
        }
        value |= usize::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn gitlinks_are_read_from_real_indexes_of_every_version() {
        for version in ["2", "3", "4"] {
            let d = tempfile::tempdir().unwrap();
            let root = d.path();
            git(root, &["init", "-q"]);
            std::fs::create_dir_all(root.join("src/deep")).unwrap();
            std::fs::write(root.join("src/deep/a.rs"), "x").unwrap();
            std::fs::write(root.join("README"), "x").unwrap();
            for sub in ["sub", "src/nested-repo"] {
                std::fs::create_dir_all(root.join(sub)).unwrap();
                git(&root.join(sub), &["init", "-q"]);
                std::fs::write(root.join(sub).join("f"), "x").unwrap();
                git(&root.join(sub), &["add", "f"]);
                git(&root.join(sub), &["commit", "-qm", "x"]);
            }
            git(root, &["add", "README", "src", "sub"]);
            // An intent-to-add entry carries the extended flag word (version 3 and up).
            std::fs::write(root.join("later.txt"), "x").unwrap();
            git(root, &["add", "-N", "later.txt"]);
            git(root, &["update-index", "--index-version", version]);
            let links = gitlinks_of(root).unwrap();
            assert_eq!(
                links,
                BTreeSet::from([PathBuf::from("src/nested-repo"), PathBuf::from("sub")]),
                "index version {version}"
            );
        }
    }

    #[test]
    fn malformed_indexes_are_errors_not_panics() {
        assert_eq!(gitlinks(b"", 20), Err(IndexError::NotAnIndex));
        assert_eq!(
            gitlinks(b"DIRC\0\0\0\x09\0\0\0\0", 20),
            Err(IndexError::Version(9))
        );
        assert_eq!(
            gitlinks(b"DIRC\0\0\0\x02\0\0\0\x05", 20),
            Err(IndexError::Truncated(0))
        );
        assert!(varint(&[0xff; 20]).is_none());
    }

    proptest::proptest! {
        #[test]
        fn no_bytes_make_it_panic(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..400), v in 2u8..5) {
            let mut bytes = b"DIRC\0\0\0".to_vec();
            bytes.push(v);
            bytes.extend_from_slice(&tail);
            let _ = gitlinks(&bytes, 20);
        }
    }
}
