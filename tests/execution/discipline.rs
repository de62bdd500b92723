//! Source discipline: signals go through pidfds only, and the execution layer never learns why
//! a command was allowed.

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
}

fn all_sources() -> Vec<(String, String)> {
    let mut out = Vec::new();
    // The unprivileged run reads a copy of the sources (scripts/test-unprivileged).
    let root = std::env::var_os("SPEAR_SOURCE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf());
    sources(&root.join("src"), &mut out);
    assert!(out.len() > 5);
    out
}

#[test]
fn nothing_signals_or_waits_by_numeric_pid() {
    let forbidden = regex::Regex::new(
        r"\bkill\s*\(|libc::kill|killpg|kill_process|kill_current_process_group|waitpid\s*\(|Command::new\(.kill.\)|\bPid::from_raw\(\s*-",
    )
    .unwrap();
    let mut bad = Vec::new();
    for (path, text) in all_sources() {
        for (i, line) in text.lines().enumerate() {
            if forbidden.is_match(line) {
                bad.push(format!("{path}:{}: {}", i + 1, line.trim()));
            }
            // Signal values may appear only where the pidfd is.
            if line.contains("Signal::") && !path.ends_with("src/harness/process/mod.rs") {
                bad.push(format!("{path}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "numeric-PID signalling or waiting found:\n{}",
        bad.join("\n")
    );
}
