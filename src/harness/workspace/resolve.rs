//! Path resolution as the kernel would do it, but without opening anything: lexical normalisation
//! (for the "as written" decision) and a full symlink walk that tolerates missing components (for
//! the "where it really goes" decision). Neither function decides anything; `Workspace` does.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The kernel's limit on links followed in one resolution (`MAXSYMLINKS`); more means a loop.
pub(crate) const MAX_LINKS: usize = 40;

/// `path` taken from `base` when relative, with `.` dropped and `..` popping the previous
/// component, never above `/`. No filesystem access: this is the path as written, made absolute.
pub(crate) fn lexical_normalize(base: &Path, path: &Path) -> PathBuf {
    let mut out = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    for comp in path.components() {
        match comp {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// What a full symlink walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Physical {
    /// Absolute, free of `.`, `..` and links (as far as the filesystem went).
    pub path: PathBuf,
    /// The final component exists (a dangling link's target does not count as existing).
    pub exists: bool,
}

/// More than `MAX_LINKS` links were followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LinkLoop;

/// Resolve every link in `path` (taken from `base` when relative), like `realpath -m`: a component
/// that does not exist is kept as written and the walk goes on lexically from there, so the parent
/// of a file not yet created is still fully resolved. `base` must be absolute and canonical.
pub(crate) fn physical_resolve(base: &Path, path: &Path) -> Result<Physical, LinkLoop> {
    let mut current = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front_components(&mut pending, path);
    let mut links = 0usize;
    // The root (or `base`) exists; every step below says whether the new last component does.
    let mut exists = true;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            current.pop();
            exists = true;
            continue;
        }
        let candidate = current.join(&name);
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(LinkLoop);
                }
                match std::fs::read_link(&candidate) {
                    Ok(target) => {
                        if target.is_absolute() {
                            current = PathBuf::from("/");
                        }
                        push_front_components(&mut pending, &target);
                        exists = true;
                    }
                    // The link vanished between lstat and readlink: treat it as missing, which
                    // is what a retry would see. The operation itself re-checks beneath the root.
                    Err(_) => {
                        current = candidate;
                        exists = false;
                    }
                }
            }
            Ok(_) => {
                current = candidate;
                exists = true;
            }
            Err(_) => {
                current = candidate;
                exists = false;
            }
        }
    }
    Ok(Physical {
        path: current,
        exists,
    })
}

/// Queue `path`'s components (without `/` and `.`) ahead of what is pending, in order.
fn push_front_components(pending: &mut VecDeque<OsString>, path: &Path) {
    let comps: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    for c in comps.into_iter().rev() {
        pending.push_front(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn lexical_pops_and_never_climbs_above_root() {
        let base = Path::new("/w/p");
        assert_eq!(
            lexical_normalize(base, Path::new("a/./b/../c")),
            Path::new("/w/p/a/c")
        );
        assert_eq!(
            lexical_normalize(base, Path::new("../../../../x")),
            Path::new("/x")
        );
        assert_eq!(
            lexical_normalize(base, Path::new("/etc/../tmp")),
            Path::new("/tmp")
        );
    }

    #[test]
    fn physical_follows_chains_relative_links_and_missing_tails() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real/sub")).unwrap();
        symlink("real", root.join("l1")).unwrap();
        symlink("l1/sub", root.join("l2")).unwrap();
        symlink("../..", root.join("real/sub/up")).unwrap();
        let p = physical_resolve(&root, Path::new("l2/new/file.txt")).unwrap();
        assert_eq!(p.path, root.join("real/sub/new/file.txt"));
        assert!(!p.exists);
        let up = physical_resolve(&root, Path::new("l2/up")).unwrap();
        assert_eq!(up.path, root);
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        assert_eq!(physical_resolve(&root, Path::new("loop1/x")), Err(LinkLoop));
    }
}
