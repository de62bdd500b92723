//! The layer rules, read from the source: `harness` never imports `tools`, and the coding tools
//! use nothing of the harness but its vocabulary (results, modes, path and writer types); every
//! operation goes through SpearHost.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn files(dir: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), &mut v);
    assert!(!v.is_empty(), "no sources under {dir}");
    v.into_iter()
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect()
}

#[test]
fn harness_never_imports_tools() {
    for (path, text) in files("src/harness") {
        assert!(
            !text.contains("crate::tools") && !text.contains("spear::tools"),
            "{path}"
        );
    }
}

#[test]
fn coding_tools_reach_the_harness_only_through_spear_host() {
    const VOCABULARY: [&str; 4] = [
        "harness::primitives::",
        "harness::workspace::WorkspacePath",
        "harness::workspace::{",
        "harness::target_policy::Writer",
    ];
    const OPERATIONS: [&str; 6] = [
        "Workspace::new",
        "TargetPolicy",
        "CommandPolicy",
        "AuditLogger",
        "std::fs::write",
        "std::fs::remove_file",
    ];
    for (path, text) in files("src/tools/coding") {
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(at) = line.find("harness::") {
                let used = &line[at..];
                assert!(
                    VOCABULARY.iter().any(|v| used.starts_with(v)),
                    "{path}:{}: {line}",
                    i + 1
                );
                if used.starts_with("harness::workspace::{") {
                    assert!(
                        !used.contains("Workspace,") && !used.contains("Workspace}"),
                        "{path}:{}",
                        i + 1
                    );
                }
            }
            for op in OPERATIONS {
                assert!(
                    !line.contains(op),
                    "{path}:{}: {op} outside SpearHost",
                    i + 1
                );
            }
        }
    }
}
