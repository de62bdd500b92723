//! Small helpers shared by the boundary tests: a temporary layout with a project, a sibling
//! project and an outside directory, all canonical.

use std::path::{Path, PathBuf};

pub struct Layout {
    // Held so the directory lives as long as the layout.
    _dir: tempfile::TempDir,
    pub base: PathBuf,
    pub project: PathBuf,
    pub outside: PathBuf,
}

impl Layout {
    /// `base/{project,other-repo,outside}` (other-repo is the sibling project) under a fresh temporary directory.
    pub fn new() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("project");
        let sibling = base.join("other-repo");
        let outside = base.join("outside");
        for d in [&project, &sibling, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        Layout {
            _dir: dir,
            base,
            project,
            outside,
        }
    }

    pub fn write(&self, rel: &str, contents: &str) -> PathBuf {
        let p = self.base.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn link(&self, target: impl AsRef<Path>, at: &str) {
        let p = self.base.join(at);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    }
}
