//! The workspace's own knowledge for `spear-knowledge`: README*, AGENTS.md, docs/ and configured
//! paths, split into sections (a Markdown heading or 40 lines), ranked by BM25 against a query.
//! Every file is read through the Workspace; answers are bounded (10 hits, 200 lines a section).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::harness::workspace::{Access, Workspace};

const MAX_FILES: usize = 2_000;
const MAX_FILE_BYTES: u64 = 1 << 20;
const SECTION_LINES: usize = 40;
pub const MAX_HITS: usize = 10;
pub const MAX_SHOW_LINES: usize = 200;

/// One section of one knowledge file.
#[derive(Debug, Clone)]
pub struct Section {
    /// `path:line`, what `spear-knowledge show` takes.
    pub id: String,
    pub heading: String,
    pub lines: Vec<String>,
}

/// The knowledge files of a workspace (relative to the project root).
pub fn knowledge_files(ws: &Workspace, configured: &[String]) -> Vec<PathBuf> {
    let root = ws.project_root();
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(root) {
        let mut top: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| PathBuf::from(e.file_name()))
            .filter(|p| {
                let n = p.to_string_lossy();
                n.starts_with("README") || n == "AGENTS.md"
            })
            .collect();
        top.sort();
        files.extend(top);
    }
    let dirs = std::iter::once("docs".to_string()).chain(configured.iter().cloned());
    for dir in dirs {
        let Ok(p) = ws.resolve(&dir, Access::Read) else {
            continue;
        };
        if p.resolved().is_file() {
            files.push(p.relative().to_path_buf());
            continue;
        }
        // A special ignore file in docs/ must not hang the host command either.
        let walk = crate::tools::walk::safe_walk(p.resolved()).0.build();
        for entry in walk.flatten() {
            if entry.file_type().is_some_and(|t| t.is_file())
                && let Ok(rel) = entry.path().strip_prefix(root)
            {
                files.push(rel.to_path_buf());
            }
            if files.len() >= MAX_FILES {
                break;
            }
        }
    }
    files.dedup();
    files.truncate(MAX_FILES);
    files
}

/// The sections of one file, or nothing if it is not readable text.
pub fn sections(ws: &Workspace, rel: &Path) -> Vec<Section> {
    let Ok(p) = ws.resolve(rel, Access::Read) else {
        return Vec::new();
    };
    let Ok(bytes) = ws.read_prefix(&p, MAX_FILE_BYTES) else {
        return Vec::new();
    };
    if bytes.contains(&0) {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let name = rel.display().to_string();
    let mut out: Vec<Section> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let heading = line.starts_with('#');
        let full = out.last().is_none_or(|s| s.lines.len() >= SECTION_LINES);
        if heading || full {
            let title = if heading {
                line.trim_start_matches('#').trim().to_string()
            } else {
                out.last().map(|s| s.heading.clone()).unwrap_or_default()
            };
            out.push(Section {
                id: format!("{name}:{}", i + 1),
                heading: title,
                lines: Vec::new(),
            });
        }
        if let Some(s) = out.last_mut() {
            s.lines.push(line.to_string());
        }
    }
    out
}

fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

/// The best sections for `query`, best first, with their scores.
pub fn search(all: &[Section], query: &str) -> Vec<(f64, usize)> {
    let q = terms(query);
    if q.is_empty() || all.is_empty() {
        return Vec::new();
    }
    let docs: Vec<(HashMap<String, usize>, usize, String)> = all
        .iter()
        .map(|s| {
            let mut tf = HashMap::new();
            let words = terms(&s.lines.join("\n"));
            for w in &words {
                *tf.entry(w.clone()).or_insert(0) += 1;
            }
            (tf, words.len(), s.heading.to_lowercase())
        })
        .collect();
    let n = docs.len() as f64;
    let avg = docs.iter().map(|d| d.1 as f64).sum::<f64>() / n;
    let (k1, b) = (1.2, 0.75);
    let mut scored: Vec<(f64, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, (tf, len, heading))| {
            let score: f64 = q
                .iter()
                .map(|t| {
                    let df = docs.iter().filter(|d| d.0.contains_key(t)).count() as f64;
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    let f = *tf.get(t).unwrap_or(&0) as f64;
                    let bonus = if heading.contains(t.as_str()) {
                        1.0
                    } else {
                        0.0
                    };
                    idf * (f * (k1 + 1.0) / (f + k1 * (1.0 - b + b * *len as f64 / avg.max(1.0)))
                        + bonus)
                })
                .sum();
            (score, i)
        })
        .filter(|(s, _)| *s > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(MAX_HITS);
    scored
}
