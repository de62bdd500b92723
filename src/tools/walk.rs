//! Directory walks over the workspace with ripgrep's `ignore` crate that cannot be made to hang.
//! The crate opens every `.gitignore` and `.ignore` it meets with a blocking `open`, and a FIFO
//! planted under one of those names would stop the walk forever. So an ignore file that is not
//! a regular file is never handed to the crate: a directory holding one is skipped (and named),
//! and when the walk's own directory or one of its ancestors holds one, ignore files are not
//! read at all (and that is said). `.git/info/exclude` is never read: its location comes from
//! the content of a `.git` file, which a command in the workspace may write.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::WalkBuilder;

/// The names the crate reads in each directory (with the settings below).
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// What a walk left out because of special files, to be said in the result.
#[derive(Debug, Clone, Default)]
pub struct WalkNotes {
    /// Directories skipped whole: (directory, its ignore file's kind).
    skipped_dirs: Arc<Mutex<Vec<(PathBuf, &'static str)>>>,
    /// Ignore rules were not applied because of this ignore file (and its kind).
    rules_off: Option<(PathBuf, &'static str)>,
}

impl WalkNotes {
    /// One line per fact, each starting with `[` and ending with `]`; empty when nothing was
    /// left out. Paths are shown relative to `root` where they lie inside it.
    pub fn lines(&self, root: &Path) -> Vec<String> {
        let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
        let mut out = Vec::new();
        if let Some((file, kind)) = &self.rules_off {
            out.push(format!(
                "[.gitignore rules were not applied: `{}` is {kind}, not a regular file]",
                rel(file)
            ));
        }
        let dirs = self.skipped_dirs.lock().unwrap_or_else(|p| p.into_inner());
        for (dir, kind) in dirs.iter() {
            out.push(format!(
                "[skipped the directory `{}`: its ignore file is {kind}, not a regular file]",
                rel(dir)
            ));
        }
        out
    }
}

/// The kind of a file that is not a regular file or a directory, in words; `None` for regular
/// files, directories and links (a walk that does not follow links never opens one).
pub fn special_kind(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a Unix domain socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        None
    }
}

/// The first ignore file in `dir` the crate would open that is not a regular file. Links are
/// followed, as the crate's `open` follows them; a directory under that name fails to read
/// without blocking, so it is harmless.
fn bad_ignore_file(dir: &Path) -> Option<(PathBuf, &'static str)> {
    IGNORE_FILES.iter().find_map(|name| {
        let p = dir.join(name);
        let kind = std::fs::metadata(&p)
            .ok()
            .and_then(|m| special_kind(m.file_type()))?;
        Some((p, kind))
    })
}

/// A walk of `dir`: links not followed, `.gitignore` honoured without requiring a repository,
/// and no special ignore file ever opened. The caller may configure the builder further.
pub fn safe_walk(dir: &Path) -> (WalkBuilder, WalkNotes) {
    let mut builder = WalkBuilder::new(dir);
    builder
        .follow_links(false)
        .require_git(false)
        .git_exclude(false);
    let mut notes = WalkNotes::default();
    // The crate reads the ignore files of `dir` and of every ancestor up to `/`.
    if let Some(bad) = dir.ancestors().find_map(bad_ignore_file) {
        builder.git_ignore(false).ignore(false).parents(false);
        notes.rules_off = Some(bad);
        return (builder, notes);
    }
    let skipped = Arc::clone(&notes.skipped_dirs);
    builder.filter_entry(move |entry| {
        if !entry.file_type().is_some_and(|t| t.is_dir()) {
            return true;
        }
        match bad_ignore_file(entry.path()) {
            Some((_, kind)) => {
                let mut s = skipped.lock().unwrap_or_else(|p| p.into_inner());
                s.push((entry.path().to_path_buf(), kind));
                false
            }
            None => true,
        }
    });
    (builder, notes)
}
