//! `Workspace`: the canonical roots every filesystem tool path must resolve inside. `resolve`
//! decides on the path as written and on the file it reaches (links followed, parent of a missing
//! file included) before anything is opened; the operations in `fs_ops` then open relative to a
//! root handle beneath which the kernel keeps them, so a link swapped in after the check cannot
//! redirect a read or a write.

pub(crate) mod beneath;
mod fs_ops;
pub mod git_index;
pub mod git_leftovers;
pub mod modes;
mod refusal;
mod resolve;
pub mod snapshot;

pub use fs_ops::{FsError, OpenPath, OpenStrategy, WriteOutcome};
pub use refusal::{PathRefusal, PathRefusalKind};
pub use snapshot::WorkspaceSnapshot;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use thiserror::Error;

/// What the caller means to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    Write,
}

/// How a root was added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootAccess {
    ReadOnly,
    ReadWrite,
}

/// One canonical root and the directory handle operations are opened beneath.
#[derive(Debug, Clone)]
pub struct Root {
    path: PathBuf,
    access: RootAccess,
    /// Only absolute paths as written may use this root (the launch directory, when allowed).
    absolute_only: bool,
    dir: Arc<OwnedFd>,
}

impl Root {
    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn access(&self) -> RootAccess {
        self.access
    }
}

/// The machinery broke while building a workspace (not a refusal of a path).
#[derive(Debug, Error)]
pub enum WorkspaceError {
    #[error("workspace root {path}: {source}")]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("workspace root {0} is not a directory")]
    NotADirectory(PathBuf),
}

/// A path `resolve` accepted: both the path as written and where it leads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspacePath {
    written: PathBuf,
    resolved: PathBuf,
    root: usize,
    relative: PathBuf,
    exists: bool,
    access: Access,
}

impl WorkspacePath {
    /// Exactly what the caller gave.
    pub fn written(&self) -> &Path {
        &self.written
    }
    /// Absolute, free of links, `.` and `..` at the time of resolution.
    pub fn resolved(&self) -> &Path {
        &self.resolved
    }
    /// `resolved` relative to its root (empty for the root itself).
    pub fn relative(&self) -> &Path {
        &self.relative
    }
    /// Index of the root it lies in (0 is the project).
    pub fn root_index(&self) -> usize {
        self.root
    }
    /// The file existed when it was resolved.
    pub fn exists(&self) -> bool {
        self.exists
    }
    pub fn access(&self) -> Access {
        self.access
    }
}

/// The set of roots. The first is the project; relative paths are taken from it.
#[derive(Debug, Clone)]
pub struct Workspace {
    roots: Vec<Root>,
    launch_dir: Option<PathBuf>,
    strategy: OpenStrategy,
}

impl Workspace {
    /// A workspace whose only root is `project` (canonicalised; must be a directory).
    pub fn new(project: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let root = open_root(project.as_ref(), RootAccess::ReadWrite, false)?;
        Ok(Workspace {
            roots: vec![root],
            launch_dir: None,
            strategy: OpenStrategy::Auto,
        })
    }

    /// Add another root, read-only or read-write (from configuration).
    pub fn with_root(
        mut self,
        path: impl AsRef<Path>,
        access: RootAccess,
    ) -> Result<Self, WorkspaceError> {
        self.roots.push(open_root(path.as_ref(), access, false)?);
        Ok(self)
    }

    /// Record the directory Spear was launched from, so an absolute path into it (but outside the
    /// roots) is refused with a reason that says so. Paths there stay refused unless
    /// `allow_launch_dir` is called too.
    pub fn with_launch_dir(mut self, dir: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let dir = dir.as_ref();
        let canonical = dir.canonicalize().map_err(|source| WorkspaceError::Root {
            path: dir.to_path_buf(),
            source,
        })?;
        self.launch_dir = Some(canonical);
        Ok(self)
    }

    /// Explicitly allow absolute paths into the launch directory, read-only.
    pub fn allow_launch_dir(mut self) -> Result<Self, WorkspaceError> {
        if let Some(dir) = self.launch_dir.clone() {
            self.roots
                .push(open_root(&dir, RootAccess::ReadOnly, true)?);
        }
        Ok(self)
    }

    /// Choose how operations open files (tests force the fallback walk with `NoFollowWalk`).
    pub fn with_open_strategy(mut self, strategy: OpenStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// How this workspace's operations open files on this host.
    pub fn open_path(&self) -> OpenPath {
        self.strategy.path()
    }

    pub fn project_root(&self) -> &Path {
        &self.roots[0].path
    }

    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// Decide whether `path` may be used for `access`, and where it leads.
    pub fn resolve(
        &self,
        path: impl AsRef<Path>,
        access: Access,
    ) -> Result<WorkspacePath, PathRefusal> {
        let written = path.as_ref();
        let absolute = written.is_absolute();
        if written.as_os_str().is_empty() || written.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(PathRefusal::new(
                PathRefusalKind::Invalid,
                written,
                None,
                "a path must be non-empty and may not contain a NUL byte".into(),
            ));
        }
        let lexical = resolve::lexical_normalize(self.project_root(), written);
        if self.root_for(&lexical, absolute).is_none() {
            return Err(self.outside_as_written(written, &lexical));
        }
        let physical = resolve::physical_resolve(self.project_root(), written).map_err(|_| {
            PathRefusal::new(
                PathRefusalKind::SymlinkLoop,
                written,
                None,
                format!(
                    "`{}` follows more than {} symbolic links (a loop)",
                    written.display(),
                    resolve::MAX_LINKS
                ),
            )
        })?;
        let Some(root) = self.root_for(&physical.path, absolute) else {
            return Err(PathRefusal::new(
                PathRefusalKind::SymlinkEscape,
                written,
                Some(physical.path.clone()),
                format!(
                    "`{}` resolves through a symbolic link to `{}`, outside the workspace roots",
                    written.display(),
                    physical.path.display()
                ),
            ));
        };
        let root_ref = &self.roots[root];
        if access == Access::Write && root_ref.access == RootAccess::ReadOnly {
            return Err(PathRefusal::new(
                PathRefusalKind::ReadOnlyRoot,
                written,
                Some(physical.path.clone()),
                format!(
                    "`{}` lies in `{}`, which was added read-only",
                    written.display(),
                    root_ref.path.display()
                ),
            ));
        }
        let relative = physical
            .path
            .strip_prefix(&root_ref.path)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok(WorkspacePath {
            written: written.to_path_buf(),
            resolved: physical.path,
            root,
            relative,
            exists: physical.exists,
            access,
        })
    }

    /// The deepest root holding `p` (a nested root is more specific than the one around it).
    fn root_for(&self, p: &Path, written_absolute: bool) -> Option<usize> {
        self.roots
            .iter()
            .enumerate()
            .filter(|(_, r)| (written_absolute || !r.absolute_only) && p.starts_with(&r.path))
            .max_by_key(|(_, r)| r.path.components().count())
            .map(|(i, _)| i)
    }

    /// The refusal for a path that, as written, is outside every root.
    fn outside_as_written(&self, written: &Path, lexical: &Path) -> PathRefusal {
        let project = self.project_root();
        if let Some(sibling) = sibling_of(project, lexical) {
            return PathRefusal::new(
                PathRefusalKind::SiblingTarget {
                    sibling: sibling.clone(),
                },
                written,
                None,
                format!(
                    "`{}` goes into the sibling project `{sibling}`, not this one (`{}`)",
                    written.display(),
                    project.display()
                ),
            );
        }
        if !written.is_absolute() {
            return PathRefusal::new(
                PathRefusalKind::Traversal,
                written,
                None,
                format!(
                    "`{}` climbs out of the workspace with `..` (to `{}`)",
                    written.display(),
                    lexical.display()
                ),
            );
        }
        let reason = match &self.launch_dir {
            Some(dir) if lexical.starts_with(dir) => format!(
                "`{}` is in the directory Spear was launched from (`{}`) but outside the \
                 workspace roots; it is refused unless that directory is explicitly allowed",
                written.display(),
                dir.display()
            ),
            _ => format!(
                "`{}` is an absolute host path outside the workspace roots",
                written.display()
            ),
        };
        PathRefusal::new(PathRefusalKind::HostAbsolute, written, None, reason)
    }
}

/// The name of the directory next to `project` that `p` lies in (or names), if any.
fn sibling_of(project: &Path, p: &Path) -> Option<String> {
    let parent = project.parent()?;
    // A project at `/` level has the whole host as "siblings"; that is host_absolute instead.
    parent.parent()?;
    let first = p.strip_prefix(parent).ok()?.components().next()?;
    let name = first.as_os_str();
    // A sibling project is a directory; a stray file next to the project is just outside.
    (Some(name) != project.file_name() && parent.join(name).is_dir())
        .then(|| name.to_string_lossy().into_owned())
}

fn open_root(path: &Path, access: RootAccess, absolute_only: bool) -> Result<Root, WorkspaceError> {
    let err = |source| WorkspaceError::Root {
        path: path.to_path_buf(),
        source,
    };
    let canonical = path.canonicalize().map_err(err)?;
    if !canonical.is_dir() {
        return Err(WorkspaceError::NotADirectory(canonical));
    }
    let dir = fs_ops::open_dir_handle(&canonical).map_err(err)?;
    Ok(Root {
        path: canonical,
        access,
        absolute_only,
        dir: Arc::new(dir),
    })
}
