//! `StandardsLibrary`: the standards a person added, each stored as one JSON file under
//! `$XDG_STATE_HOME/spear/standards/NAME.json` holding its facts, its units, its pages and its
//! BM25 index. Invariant: a standard's file is replaced whole (written aside, synced, renamed),
//! so a reader sees the old standard or the new one, never half of either; and a source whose
//! content hash did not change is not indexed again.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::tools::normative::error::StandardError;
use crate::tools::normative::extract::{self, Extracted, SourceKind};
use crate::tools::normative::index::{Bm25Index, terms};
use crate::tools::normative::units::Unit;

/// Facts about one standard (what `spear standard list` shows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StandardMeta {
    pub name: String,
    /// The file or URL it was added from.
    pub source: String,
    pub kind: SourceKind,
    /// SHA-256 of the source's bytes, hex.
    pub sha256: String,
    pub added: String,
    pub units: usize,
    /// Pages (0 for a document without pages).
    pub pages: usize,
}

/// A standard as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standard {
    pub meta: StandardMeta,
    pub units: Vec<Unit>,
    pub pages: Vec<String>,
    index: Bm25Index,
}

/// What `add` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AddOutcome {
    Added,
    /// The name was there with other content: indexed again.
    Reindexed,
    /// The same content was there already: nothing was done.
    Unchanged,
}

/// One ranked search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub standard: String,
    pub reference: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<(u32, u32)>,
    pub score: f64,
    /// The unit's line that best matches the query, cut short.
    pub excerpt: String,
}

impl Hit {
    /// How the hit is cited: `NAME §4.2.1`, `NAME p. 3`, `NAME "Scope"`.
    pub fn citation(&self) -> String {
        cite(&self.standard, &self.reference)
    }
}

/// A unit's citation.
pub fn cite(standard: &str, reference: &str) -> String {
    if let Some(p) = reference.strip_prefix("page ") {
        return format!("{standard} p. {p}");
    }
    if crate::tools::normative::units::clause_start(&format!("{reference} X")).is_some() {
        return format!("{standard} §{reference}");
    }
    format!("{standard} \"{reference}\"")
}

/// Characters of an excerpt.
const EXCERPT_CHARS: usize = 240;

/// The largest file a standard is added from (the same as a fetched one).
pub const MAX_SOURCE_BYTES: u64 = 128 << 20;

/// A loaded standard and the file's modification time and length it was read at.
type Cached = (SystemTime, u64, Arc<Standard>);

/// The library in one directory.
#[derive(Debug)]
pub struct StandardsLibrary {
    dir: PathBuf,
    /// Loaded standards, with the file's modification time and length they were read at.
    cache: Mutex<HashMap<String, Cached>>,
}

/// A name a standard may have: it is also its file's name.
pub fn check_name(name: &str) -> Result<(), StandardError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(StandardError::BadName(name.to_string()))
    }
}

/// The name a source gets when none is given: its file name without the extension, with
/// anything but letters, digits, `.`, `_` and `-` made `-`.
pub fn default_name(source: &str) -> String {
    let last = source
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(source);
    let last = last.split(['?', '#']).next().unwrap_or(last);
    let stem = match last.rsplit_once('.') {
        Some((s, ext)) if !s.is_empty() && ext.len() <= 8 => s,
        _ => last,
    };
    let mut name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    name = name.trim_matches(['-', '.']).to_string();
    name.truncate(64);
    if name.is_empty() {
        "standard".into()
    } else {
        name
    }
}

/// A source file's bytes: only a regular file, and at most `MAX_SOURCE_BYTES` of it, so a
/// device (`/dev/zero`), a FIFO or a file that keeps growing is refused, never read without end.
fn read_source(file: &Path, source: &str) -> Result<Vec<u8>, StandardError> {
    use std::io::Read;
    let refused = |why: String| StandardError::Unsupported {
        origin: source.to_string(),
        why,
    };
    let too_large = || {
        refused(format!(
            "it is larger than the {} MiB a standard is added from",
            MAX_SOURCE_BYTES >> 20
        ))
    };
    // Non-blocking, so opening a FIFO with no writer does not wait; a regular file ignores it.
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(file)
        .map_err(io("read", file))?;
    let meta = f.metadata().map_err(io("read", file))?;
    if !meta.is_file() {
        return Err(refused(
            "it is not a regular file (a device, a FIFO or a directory is not read as a standard; \
             copy the document into a file first)"
                .into(),
        ));
    }
    if meta.len() > MAX_SOURCE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    f.take(MAX_SOURCE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io("read", file))?;
    match bytes.len() as u64 > MAX_SOURCE_BYTES {
        true => Err(too_large()),
        false => Ok(bytes),
    }
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StandardError + 'a {
    move |source| StandardError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

impl StandardsLibrary {
    /// The library under `state_home/spear/standards`, created private if missing.
    pub fn open_in(state_home: &Path) -> Result<Self, StandardError> {
        Self::at(state_home.join("spear").join("standards"))
    }

    pub fn at(dir: PathBuf) -> Result<Self, StandardError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io("create", &dir))?;
        Ok(StandardsLibrary {
            dir,
            cache: Mutex::new(HashMap::new()),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, name: &str) -> Result<PathBuf, StandardError> {
        check_name(name)?;
        Ok(self.dir.join(format!("{name}.json")))
    }

    /// Add (or re-index) the document `bytes` read from `source` under `name`.
    pub fn add(
        &self,
        name: &str,
        source: &str,
        kind: SourceKind,
        bytes: &[u8],
    ) -> Result<(AddOutcome, StandardMeta), StandardError> {
        let path = self.path_of(name)?;
        let sha256 = hex(&Sha256::digest(bytes));
        let outcome = match self.load(name) {
            Ok(old) if old.meta.sha256 == sha256 => {
                return Ok((AddOutcome::Unchanged, old.meta.clone()));
            }
            Ok(_) => AddOutcome::Reindexed,
            Err(StandardError::NotFound { .. }) => AddOutcome::Added,
            Err(e) => return Err(e),
        };
        let Extracted { units, pages } = extract::extract(source, kind, bytes)?;
        if units.iter().all(|u| u.text.trim().is_empty()) {
            return Err(StandardError::Empty {
                origin: source.to_string(),
            });
        }
        let index = Bm25Index::build(units.iter().map(|u| u.text.as_str()));
        let standard = Standard {
            meta: StandardMeta {
                name: name.to_string(),
                source: source.to_string(),
                kind,
                sha256,
                added: crate::harness::audit::rfc3339(
                    SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .unwrap_or_default(),
                ),
                units: units.len(),
                pages: pages.len(),
            },
            units,
            pages,
            index,
        };
        let json = serde_json::to_vec(&standard).map_err(|e| StandardError::Corrupt {
            path: path.clone(),
            why: e.to_string(),
        })?;
        write_atomically(&path, &json)?;
        let meta = standard.meta.clone();
        self.forget(name);
        Ok((outcome, meta))
    }

    /// Add a file; the name defaults to the file's stem.
    pub fn add_file(
        &self,
        file: &Path,
        name: Option<&str>,
    ) -> Result<(AddOutcome, StandardMeta), StandardError> {
        let source = file.display().to_string();
        let bytes = read_source(file, &source)?;
        let kind = extract::detect(&source, None, &bytes)?;
        let name = name.map_or_else(|| default_name(&source), str::to_string);
        self.add(&name, &source, kind, &bytes)
    }

    /// Every standard's facts, by name.
    pub fn list(&self) -> Result<Vec<StandardMeta>, StandardError> {
        let mut out = Vec::new();
        for name in self.names()? {
            out.push(self.load(&name)?.meta.clone());
        }
        Ok(out)
    }

    /// The names in the library, sorted.
    pub fn names(&self) -> Result<Vec<String>, StandardError> {
        let mut names: Vec<String> = fs::read_dir(&self.dir)
            .map_err(io("list", &self.dir))?
            .filter_map(Result::ok)
            .filter_map(|e| {
                let n = e.file_name().into_string().ok()?;
                let stem = n.strip_suffix(".json")?;
                check_name(stem).ok().map(|()| stem.to_string())
            })
            .collect();
        names.sort();
        Ok(names)
    }

    /// Remove `name`; returns what it was.
    pub fn remove(&self, name: &str) -> Result<StandardMeta, StandardError> {
        let meta = self.load(name)?.meta.clone();
        let path = self.path_of(name)?;
        fs::remove_file(&path).map_err(io("remove", &path))?;
        self.forget(name);
        Ok(meta)
    }

    fn forget(&self, name: &str) {
        if let Ok(mut c) = self.cache.lock() {
            c.remove(name);
        }
    }

    /// The standard `name`, read from disk unless the cached copy is still the file's.
    pub fn load(&self, name: &str) -> Result<Arc<Standard>, StandardError> {
        let path = self.path_of(name)?;
        let stat = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StandardError::NotFound {
                    name: name.to_string(),
                    known: match self.names().unwrap_or_default() {
                        names if names.is_empty() => "the library is empty".to_string(),
                        names => format!("it has: {}", names.join(", ")),
                    },
                });
            }
            Err(e) => return Err(io("stat", &path)(e)),
        };
        let stamp = (
            stat.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            stat.len(),
        );
        if let Ok(c) = self.cache.lock()
            && let Some((m, l, s)) = c.get(name)
            && (*m, *l) == stamp
        {
            return Ok(s.clone());
        }
        let bytes = fs::read(&path).map_err(io("read", &path))?;
        let standard: Standard =
            serde_json::from_slice(&bytes).map_err(|e| StandardError::Corrupt {
                path: path.clone(),
                why: e.to_string(),
            })?;
        let standard = Arc::new(standard);
        if let Ok(mut c) = self.cache.lock() {
            c.insert(name.to_string(), (stamp.0, stamp.1, standard.clone()));
        }
        Ok(standard)
    }

    /// Ranked hits for `query` in `names` (every standard when empty), best first.
    pub fn search(
        &self,
        names: &[String],
        query: &str,
        limit: usize,
    ) -> Result<Vec<Hit>, StandardError> {
        let names = if names.is_empty() {
            self.names()?
        } else {
            names.to_vec()
        };
        let mut hits = Vec::new();
        for name in &names {
            hits.extend(self.load(name)?.search(query, limit));
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit);
        Ok(hits)
    }
}

impl Standard {
    /// This standard's best `limit` units for `query`.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let q = terms(query);
        self.index
            .search(query, limit)
            .into_iter()
            .filter_map(|(i, score)| {
                let u = self.units.get(i)?;
                Some(Hit {
                    standard: self.meta.name.clone(),
                    reference: u.reference.clone(),
                    title: u.title.clone(),
                    pages: u.pages,
                    score: (score * 1000.0).round() / 1000.0,
                    excerpt: excerpt(&u.text, &q),
                })
            })
            .collect()
    }
}

/// The line of `text` holding most of the query's terms, cut to `EXCERPT_CHARS`.
fn excerpt(text: &str, q: &[String]) -> String {
    let mut best = ("", 0usize);
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let ts = terms(l);
        let n = q.iter().filter(|t| ts.contains(t)).count();
        if best.0.is_empty() || n > best.1 {
            best = (l, n);
        }
    }
    let line = best.0.trim();
    if line.chars().count() <= EXCERPT_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(EXCERPT_CHARS).collect();
    format!("{cut}…")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Write `bytes` to `path` whole: a private file beside it, synced, renamed over it, and the
/// directory synced, so a crash leaves the old file or the new one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StandardError> {
    crate::harness::atomic_file::write_private(path, bytes).map_err(io("write", path))
}
