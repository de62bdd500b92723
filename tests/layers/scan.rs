//! From source text to references: which module each file is (followed from the crate roots
//! through `mod` declarations, `#[path]` included), and every path that names another module:
//! `use` trees, `crate::…`, `super::…`, `self::…`, a child module's name, and in the binary
//! `spear::…`. Each reference is resolved to an absolute path (`spear::harness::sandbox::…`, or
//! `main::cli::…` in the binary) and keeps its file, line and the text as written. Every other
//! path (`ratatui::style::Color`, `use ::reqwest::Url`, but also `Vec::new`) is kept as written
//! in `outside`, for the judge of external crates.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::lex::{Tok, Token, lex};

/// Source files by path relative to the package root (`src/harness/mod.rs`).
pub type Sources = BTreeMap<PathBuf, String>;

#[derive(Debug, Clone)]
pub struct Reference {
    pub file: PathBuf,
    pub line: usize,
    /// The module the reference is written in, inline modules included.
    pub from: Vec<String>,
    /// The absolute path it names.
    pub target: Vec<String>,
    pub written: String,
}

#[derive(Debug, Default)]
pub struct Scan {
    /// Each file reached from a crate root, with its module path.
    pub modules: BTreeMap<PathBuf, Vec<String>>,
    pub references: Vec<Reference>,
    /// Paths that name nothing of ours, as written from their first segment (`::` dropped):
    /// external crates, and also std, prelude and local names, which the judge passes over.
    pub outside: Vec<Reference>,
    /// Files that could not be read or placed, with why.
    pub problems: Vec<String>,
}

/// A crate: its name as paths spell it, and its root file.
pub struct CrateRoot<'a> {
    pub name: &'a str,
    pub root: &'a str,
}

/// Everything the crates reach, and every file of `sources` none of them reaches (a problem: a
/// file the check cannot place is a file it cannot judge).
pub fn scan(sources: &Sources, crates: &[CrateRoot], library: &str) -> Scan {
    let mut out = Scan::default();
    for krate in crates {
        let mut queue = vec![(PathBuf::from(krate.root), vec![krate.name.to_string()])];
        while let Some((file, module)) = queue.pop() {
            if out.modules.contains_key(&file) {
                out.problems.push(format!(
                    "{}: reached twice by mod declarations",
                    file.display()
                ));
                continue;
            }
            let Some(text) = sources.get(&file) else {
                out.problems
                    .push(format!("{}: declared but missing", file.display()));
                continue;
            };
            let tokens = match lex(text) {
                Ok(t) => t,
                Err(e) => {
                    out.problems.push(format!("{}: {e}", file.display()));
                    continue;
                }
            };
            let is_bin = krate.name != library;
            let found = FileScan::new(&file, &module, &tokens, is_bin, library).run();
            for child in found.children {
                let mut m = module.clone();
                m.extend(child.inline.iter().cloned());
                m.push(child.name.clone());
                queue.push((child_file(&file, &child, sources), m));
            }
            out.references.extend(found.references);
            out.outside.extend(found.outside);
            out.modules.insert(file, module);
        }
    }
    for file in sources.keys() {
        if !out.modules.contains_key(file) {
            out.problems.push(format!(
                "{}: no `mod` declaration reaches this file",
                file.display()
            ));
        }
    }
    out
}

struct Child {
    name: String,
    path_attr: Option<String>,
    /// The inline modules the declaration sits in (`mod a { mod b; }`).
    inline: Vec<String>,
}

/// Where `mod name;` in `file` lives: Rust's rules for mod.rs-style and non-mod-rs files
/// (`name.rs`, else `name/mod.rs`), and `#[path]` relative to the declaring file's directory.
fn child_file(file: &Path, child: &Child, sources: &Sources) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new(""));
    if let (Some(p), true) = (&child.path_attr, child.inline.is_empty()) {
        return dir.join(p);
    }
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let mut base = if matches!(stem, "mod" | "lib" | "main") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    base.extend(&child.inline);
    if let Some(p) = &child.path_attr {
        return base.join(p);
    }
    let flat = base.join(format!("{}.rs", child.name));
    let nested = base.join(&child.name).join("mod.rs");
    if !sources.contains_key(&flat) && sources.contains_key(&nested) {
        nested
    } else {
        flat
    }
}

struct Found {
    children: Vec<Child>,
    references: Vec<Reference>,
    outside: Vec<Reference>,
}

struct FileScan<'a> {
    file: &'a Path,
    module: &'a [String],
    toks: &'a [Token],
    is_bin: bool,
    library: &'a str,
    /// Inline modules open around the cursor: name and the brace depth inside them.
    inline: Vec<(String, usize)>,
    depth: usize,
    /// Child modules declared in this file, by the inline module they were declared in.
    declared: Vec<(Vec<String>, String)>,
    found: Found,
}

impl<'a> FileScan<'a> {
    fn new(
        file: &'a Path,
        module: &'a [String],
        toks: &'a [Token],
        is_bin: bool,
        library: &'a str,
    ) -> Self {
        FileScan {
            file,
            module,
            toks,
            is_bin,
            library,
            inline: Vec::new(),
            depth: 0,
            declared: Vec::new(),
            found: Found {
                children: Vec::new(),
                references: Vec::new(),
                outside: Vec::new(),
            },
        }
    }

    fn ident(&self, i: usize) -> Option<&str> {
        match self.toks.get(i).map(|t| &t.tok) {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    fn is(&self, i: usize, tok: &Tok) -> bool {
        self.toks.get(i).map(|t| &t.tok) == Some(tok)
    }

    fn current(&self) -> Vec<String> {
        let mut m = self.module.to_vec();
        m.extend(self.inline.iter().map(|(n, _)| n.clone()));
        m
    }

    fn inline_names(&self) -> Vec<String> {
        self.inline.iter().map(|(n, _)| n.clone()).collect()
    }

    fn run(mut self) -> Found {
        // Child names first, so a relative path to a child declared further down is seen.
        self.collect_declarations();
        let mut pending_path: Option<String> = None;
        let mut i = 0;
        while i < self.toks.len() {
            match &self.toks[i].tok {
                Tok::Punct('#') if self.is(i + 1, &Tok::Punct('[')) => {
                    if self.ident(i + 2) == Some("path")
                        && self.is(i + 3, &Tok::Punct('='))
                        && let Some(Tok::Str(p)) = self.toks.get(i + 4).map(|t| &t.tok)
                    {
                        pending_path = Some(p.clone());
                    }
                    i += 2;
                }
                Tok::Ident(k) if k == "mod" && self.ident(i + 1).is_some() => {
                    let name = self.ident(i + 1).unwrap_or_default().to_string();
                    if self.is(i + 2, &Tok::Punct(';')) {
                        self.found.children.push(Child {
                            name,
                            path_attr: pending_path.take(),
                            inline: self.inline_names(),
                        });
                        i += 3;
                    } else if self.is(i + 2, &Tok::Punct('{')) {
                        self.depth += 1;
                        self.inline.push((name, self.depth));
                        pending_path = None;
                        i += 3;
                    } else {
                        i += 1;
                    }
                }
                Tok::Ident(k) if k == "use" => {
                    let line = self.toks[i].line;
                    let (trees, next) = self.use_tree(i + 1, Vec::new());
                    for (path, written) in trees {
                        self.reference(line, path, written);
                    }
                    i = next;
                    pending_path = None;
                }
                Tok::Ident(first)
                    if self.is(i + 1, &Tok::Path)
                        && !self.is(i.wrapping_sub(1), &Tok::Path)
                        && !self.is(i.wrapping_sub(1), &Tok::Punct('$')) =>
                {
                    let line = self.toks[i].line;
                    let mut path = vec![first.clone()];
                    let mut j = i + 1;
                    while self.is(j, &Tok::Path) {
                        match self.ident(j + 1) {
                            Some(s) => path.push(s.to_string()),
                            None => break,
                        }
                        j += 2;
                    }
                    let written = path.join("::");
                    self.reference(line, path, written);
                    i = j;
                }
                Tok::Punct('{') => {
                    self.depth += 1;
                    i += 1;
                }
                Tok::Punct('}') => {
                    if self.inline.last().is_some_and(|(_, d)| *d == self.depth) {
                        self.inline.pop();
                    }
                    self.depth = self.depth.saturating_sub(1);
                    pending_path = None;
                    i += 1;
                }
                Tok::Punct(';') => {
                    pending_path = None;
                    i += 1;
                }
                _ => i += 1,
            }
        }
        self.found
    }

    /// Every `mod name` in the file with the inline modules around it.
    fn collect_declarations(&mut self) {
        let (mut stack, mut depth) = (Vec::<(String, usize)>::new(), 0usize);
        for i in 0..self.toks.len() {
            match &self.toks[i].tok {
                Tok::Ident(k) if k == "mod" => {
                    if let Some(name) = self.ident(i + 1).map(str::to_string) {
                        let outer = stack.iter().map(|(n, _)| n.clone()).collect();
                        if self.is(i + 2, &Tok::Punct('{')) {
                            stack.push((name.clone(), depth + 1));
                        }
                        self.declared.push((outer, name));
                    }
                }
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    if stack.last().is_some_and(|(_, d)| *d == depth) {
                        stack.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
        }
    }

    /// Parse one use tree from `i`, prefixed by `prefix`: the expanded paths (each with its
    /// written form) and the index after the tree (past the `;` at the top level).
    fn use_tree(&self, mut i: usize, prefix: Vec<String>) -> (Vec<(Vec<String>, String)>, usize) {
        let top = prefix.is_empty();
        let mut path = prefix;
        let mut out = Vec::new();
        if self.is(i, &Tok::Path) {
            // `use ::std::…`: an extern crate.
            path.push("::".into());
            i += 1;
        }
        loop {
            match self.toks.get(i).map(|t| &t.tok) {
                Some(Tok::Ident(s)) if s == "as" => {
                    i += 2;
                }
                Some(Tok::Ident(s)) => {
                    if s == "self" && !path.is_empty() {
                        // `a::{self, …}` names `a` itself.
                    } else {
                        path.push(s.clone());
                    }
                    i += 1;
                }
                Some(Tok::Path) => i += 1,
                Some(Tok::Punct('*')) => i += 1,
                Some(Tok::Punct('{')) => {
                    i += 1;
                    loop {
                        let (mut sub, next) = self.use_tree(i, path.clone());
                        out.append(&mut sub);
                        i = next;
                        match self.toks.get(i).map(|t| &t.tok) {
                            Some(Tok::Punct(',')) => i += 1,
                            _ => break,
                        }
                        if self.is(i, &Tok::Punct('}')) {
                            break;
                        }
                    }
                    i += 1; // the closing brace
                    if top {
                        while i < self.toks.len() && !self.is(i, &Tok::Punct(';')) {
                            i += 1;
                        }
                        return (out, i + 1);
                    }
                    return (out, i);
                }
                _ => break,
            }
        }
        if !path.is_empty() {
            let written = path.join("::");
            out.push((path, written));
        }
        if top {
            while i < self.toks.len() && !self.is(i, &Tok::Punct(';')) {
                i += 1;
            }
            i += 1;
        }
        (out, i)
    }

    /// Resolve a path as written to an absolute one; record it when it names a module of ours.
    fn reference(&mut self, line: usize, path: Vec<String>, written: String) {
        let here = self.current();
        let (mut target, rest) = match path[0].as_str() {
            "crate" => (vec![self.module[0].clone()], &path[1..]),
            "self" | "super" => (here.clone(), &path[..]),
            name if self.is_bin && name == self.library => (Vec::new(), &path[..]),
            name if self.is_child(name) => (here.clone(), &path[..]),
            _ => {
                let named: Vec<String> = path.iter().filter(|s| *s != "::").cloned().collect();
                // `use ::a::b` is kept as written, not as the tree's `::` segment joined.
                let written = if path[0] == "::" {
                    format!("::{}", named.join("::"))
                } else {
                    written
                };
                if !named.is_empty() {
                    self.found.outside.push(Reference {
                        file: self.file.to_path_buf(),
                        line,
                        from: here,
                        target: named,
                        written,
                    });
                }
                return;
            }
        };
        let mut leading = true;
        for seg in rest {
            match seg.as_str() {
                "self" if leading => {}
                "super" if leading => {
                    if target.len() <= 1 {
                        target = vec!["<above the crate root>".into()];
                        break;
                    }
                    target.pop();
                }
                _ => {
                    leading = false;
                    target.push(seg.clone());
                }
            }
        }
        self.found.references.push(Reference {
            file: self.file.to_path_buf(),
            line,
            from: here,
            target,
            written,
        });
    }

    fn is_child(&self, name: &str) -> bool {
        let outer = self.inline_names();
        self.declared.iter().any(|(o, n)| *o == outer && n == name)
    }
}
