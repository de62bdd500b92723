//! Files a writable run gets read-only because a policy says so (the target policy's
//! generated-header files): the runner asks a `HeldFileCheck` about each regular file the
//! before-snapshot saw and does not learn why, beyond the sentence it is to pass on. Asking
//! means reading a header, so answers are cached per workspace-relative path and kept while the
//! file's device, inode, size, mtime and ctime stay what they were: a repeated run reads only
//! the files that changed since.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::harness::workspace::snapshot::{FileStamp, WorkspaceSnapshot};

/// Given a workspace-relative regular file, the sentence that says why it is held read-only
/// for commands, or `None` when it is not.
#[derive(Clone)]
pub struct HeldFileCheck(Arc<dyn Fn(&Path) -> Option<String> + Send + Sync>);

impl HeldFileCheck {
    pub fn new(check: impl Fn(&Path) -> Option<String> + Send + Sync + 'static) -> Self {
        HeldFileCheck(Arc::new(check))
    }
}

impl std::fmt::Debug for HeldFileCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeldFileCheck(..)")
    }
}

/// One held file: where, and why (the check's sentence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldFile {
    pub rel: PathBuf,
    pub why: String,
}

/// The answers so far, by path.
#[derive(Debug, Default)]
pub struct HeldFileCache {
    answers: HashMap<PathBuf, (FileStamp, Option<String>)>,
    /// Files the last `held` call had to ask about (not answered from the cache).
    last_asked: usize,
}

impl HeldFileCache {
    /// The held files among those `snapshot` saw. Paths the snapshot no longer has are dropped.
    pub fn held(&mut self, snapshot: &WorkspaceSnapshot, check: &HeldFileCheck) -> Vec<HeldFile> {
        let mut next = HashMap::with_capacity(self.answers.len());
        let mut out = Vec::new();
        self.last_asked = 0;
        for (rel, stamp) in snapshot.regular_files() {
            let answer = match self.answers.remove(rel) {
                Some((was, answer)) if was == stamp => answer,
                _ if stamp.size == 0 => None,
                _ => {
                    self.last_asked += 1;
                    (check.0)(rel)
                }
            };
            if let Some(why) = &answer {
                out.push(HeldFile {
                    rel: rel.to_path_buf(),
                    why: why.clone(),
                });
            }
            next.insert(rel.to_path_buf(), (stamp, answer));
        }
        self.answers = next;
        out
    }

    #[cfg(test)]
    pub fn last_asked(&self) -> usize {
        self.last_asked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn only_new_or_changed_files_are_asked_about_again() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/gen.rs"), "// @generated\nfn f() {}\n").unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn g() {}\n").unwrap();
        std::fs::write(root.join("empty"), "").unwrap();
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        let base = root.to_path_buf();
        let check = HeldFileCheck::new(move |rel| {
            counter.fetch_add(1, Ordering::SeqCst);
            let text = std::fs::read_to_string(base.join(rel)).ok()?;
            text.starts_with("// @generated")
                .then(|| "generated".to_string())
        });
        let mut cache = HeldFileCache::default();
        let snap = |r: &Path| WorkspaceSnapshot::take(r, &[], 1000);
        let held = cache.held(&snap(root), &check);
        assert_eq!(
            held,
            vec![HeldFile {
                rel: "src/gen.rs".into(),
                why: "generated".into()
            }]
        );
        assert_eq!(
            cache.last_asked(),
            2,
            "the empty file has no header to ask about"
        );
        cache.held(&snap(root), &check);
        assert_eq!(cache.last_asked(), 0);
        // Rewritten in place, same size: ctime moves, so it is asked about again.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("src/lib.rs"), "// @generated\n").unwrap();
        let held = cache.held(&snap(root), &check);
        assert_eq!(cache.last_asked(), 1);
        assert_eq!(held.len(), 2);
        assert_eq!(asked.load(Ordering::SeqCst), 3);
    }
}
