//! Property tests: random trees of random links (relative, absolute, chained, looping, dangling)
//! inside and outside a root. No accepted path reaches outside the root, accepted paths agree with
//! the kernel's own resolution, and every plain in-root path is accepted as itself.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use spear::harness::workspace::{Access, Workspace};

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

#[derive(Debug, Clone)]
enum Target {
    /// `../` repeated, then names: may climb out of the root.
    Relative(u8, Vec<usize>),
    /// Absolute, into the root (0), the outside directory (1) or the base above both (2).
    Absolute(u8, Vec<usize>),
    Nowhere,
}

#[derive(Debug, Clone)]
enum Kind {
    Dir,
    File,
    Link(Target),
}

#[derive(Debug, Clone)]
struct Node {
    in_root: bool,
    path: Vec<usize>,
    kind: Kind,
}

fn names() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..NAMES.len(), 0..3)
}

fn node() -> impl Strategy<Value = Node> {
    let target = prop_oneof![
        (0u8..4, names()).prop_map(|(u, n)| Target::Relative(u, n)),
        (0u8..3, names()).prop_map(|(w, n)| Target::Absolute(w, n)),
        Just(Target::Nowhere),
    ];
    let kind = prop_oneof![
        2 => Just(Kind::Dir),
        1 => Just(Kind::File),
        3 => target.prop_map(Kind::Link),
    ];
    (
        prop::bool::weighted(0.7),
        prop::collection::vec(0..NAMES.len(), 1..4),
        kind,
    )
        .prop_map(|(in_root, path, kind)| Node {
            in_root,
            path,
            kind,
        })
}

fn join(base: &Path, idx: &[usize]) -> PathBuf {
    idx.iter()
        .fold(base.to_path_buf(), |p, &i| p.join(NAMES[i]))
}

fn build(base: &Path, nodes: &[Node]) -> (PathBuf, PathBuf) {
    let root = base.join("root");
    let out = base.join("out");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    for n in nodes {
        let at = join(if n.in_root { &root } else { &out }, &n.path);
        // Parents may be files or links already; a node that cannot be made is simply absent.
        // Parents are made without following links: a link planted earlier (`d -> ../../..`)
        // must never carry the fixture itself outside the temporary base.
        if !make_parents_without_following(base, &at) {
            continue;
        }
        let _ = match &n.kind {
            Kind::Dir => std::fs::create_dir(&at),
            Kind::File => std::fs::write(&at, "f"),
            Kind::Link(t) => {
                let target = match t {
                    Target::Relative(ups, idx) => {
                        join(&PathBuf::from("../".repeat(*ups as usize)), idx)
                    }
                    Target::Absolute(w, idx) => {
                        let b = match w {
                            0 => root.clone(),
                            1 => out.clone(),
                            _ => base.to_path_buf(),
                        };
                        join(&b, idx)
                    }
                    Target::Nowhere => PathBuf::from("/nonexistent-spear/x"),
                };
                std::os::unix::fs::symlink(target, &at)
            }
        };
    }
    (root, out)
}

/// Create the directories between `base` and `at` one by one, refusing (false) when any
/// existing component is a link or not a directory.
fn make_parents_without_following(base: &Path, at: &Path) -> bool {
    let Some(parent) = at.parent() else {
        return false;
    };
    let Ok(rel) = parent.strip_prefix(base) else {
        return false;
    };
    let mut cur = base.to_path_buf();
    for comp in rel.components() {
        cur.push(comp);
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => return false,
            Err(_) => {
                if std::fs::create_dir(&cur).is_err() {
                    return false;
                }
            }
        }
    }
    // The node itself must not already exist (as a link a create would follow).
    std::fs::symlink_metadata(at).is_err()
}

/// The deepest existing ancestor of `p`, canonicalised by the kernel.
fn kernel_existing_prefix(p: &Path) -> PathBuf {
    let mut cur = p.to_path_buf();
    loop {
        if let Ok(c) = cur.canonicalize() {
            return c;
        }
        if !cur.pop() {
            return PathBuf::from("/");
        }
    }
}

fn query() -> impl Strategy<Value = (u8, Vec<&'static str>)> {
    let comp = prop::sample::select(vec!["a", "b", "c", "d", "..", ".", "new"]);
    (0u8..4, prop::collection::vec(comp, 1..7))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn no_accepted_path_resolves_outside(
        nodes in prop::collection::vec(node(), 0..25),
        queries in prop::collection::vec(query(), 1..25),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (root, out) = build(&base, &nodes);
        let ws = Workspace::new(&root).unwrap();
        for (prefix, comps) in queries {
            let rel: PathBuf = comps.iter().collect();
            let written = match prefix {
                0 | 1 => rel.clone(),
                2 => root.join(&rel),
                _ => out.join(&rel),
            };
            let Ok(p) = ws.resolve(&written, Access::Write) else { continue };
            prop_assert!(p.resolved().starts_with(&root), "{written:?} -> {:?}", p.resolved());
            // What the kernel reaches agrees: the existing part of the resolution is in the root.
            let existing = kernel_existing_prefix(p.resolved());
            prop_assert!(existing.starts_with(&root), "{written:?}: kernel reaches {existing:?}");
            if let Ok(kernel) = root.join(&written).canonicalize() {
                prop_assert_eq!(&kernel, p.resolved(), "{:?}", written);
            }
        }
    }

    #[test]
    fn every_plain_in_root_path_is_accepted(nodes in prop::collection::vec(node(), 0..25)) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (root, _) = build(&base, &nodes);
        let ws = Workspace::new(&root).unwrap();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let fresh = dir.join("fresh-file");
            let rel_fresh = fresh.strip_prefix(&root).unwrap();
            let p = ws.resolve(rel_fresh, Access::Write);
            prop_assert_eq!(p.map(|p| p.resolved().to_path_buf()).ok(), Some(fresh.clone()));
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.file_type().is_symlink() {
                    continue;
                }
                let rel = path.strip_prefix(&root).unwrap();
                for written in [rel.to_path_buf(), path.clone()] {
                    let got = ws.resolve(&written, Access::Write);
                    prop_assert!(got.is_ok(), "{:?} refused: {:?}", written, got.err());
                    if let Ok(got) = got {
                        prop_assert_eq!(got.resolved(), path.as_path());
                        prop_assert!(got.exists());
                    }
                }
                if meta.is_dir() {
                    stack.push(path);
                }
            }
        }
    }
}
