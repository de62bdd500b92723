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

/// Issue 10, item 4: an action writes or deletes only what its plan named and the router's
/// gates let through. `GatedPath` is made only by the gates; only SpearHost touches the
/// workspace's write operations, and only through a `GatedPath`; no tool resolves a path for
/// writing itself.
#[test]
fn writes_are_reachable_only_through_the_routers_gates() {
    let mut bad = Vec::new();
    for (path, text) in files("src/tools") {
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let at = format!("{path}:{}: {}", i + 1, line.trim());
            if code.contains("GatedPath {") && !path.ends_with("src/tools/host/gates.rs") {
                bad.push(at.clone());
            }
            let host_or_gates = path.ends_with("src/tools/host/mod.rs")
                || path.ends_with("src/tools/host/gates.rs");
            let resolves_for_write = code
                .replace("TargetAccess::Write", "")
                .contains("Access::Write");
            if resolves_for_write && !host_or_gates {
                bad.push(at.clone());
            }
            if (code.contains("workspace.write_atomic") || code.contains("workspace.delete"))
                && !path.ends_with("src/tools/host/mod.rs")
            {
                bad.push(at);
            }
        }
    }
    assert!(
        bad.is_empty(),
        "a write path around the gates:\n{}",
        bad.join("\n")
    );
    // The host's own write operations take a gated path, not a bare WorkspacePath.
    let host = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools/host/mod.rs"),
    )
    .unwrap();
    assert!(host.contains("pub fn write_atomic(&self, p: &GatedPath"));
    assert!(host.contains("pub fn delete(&self, p: &GatedPath"));
}
