//! Running one test alone in a child process of its own, so that what it measures of its own
//! process (peak memory, resident memory) cannot be moved by tests running in parallel.
#![allow(dead_code)]

use std::process::Command;

/// Set in the child: the exact name of the test it runs.
const ALONE_ENV: &str = "SPEAR_TEST_ALONE";

/// In the parent: run the test `name` (its full path in the test binary, as `cargo test`
/// lists it) alone in a fresh copy of this test binary, assert that exactly that one test ran
/// and passed there, and return `false`. In that child: return `true`, and the caller does the
/// measuring.
pub fn alone_in_own_process(name: &str) -> bool {
    if std::env::var(ALONE_ENV).as_deref() == Ok(name) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    let out = Command::new(&exe)
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE_ENV, name)
        .output()
        .expect("the test binary can run itself");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} failed in its own process:\n{stdout}\n{stderr}"
    );
    // Positive control: the filter named a test, and that one test ran; a misspelt name would
    // run nothing and pass.
    assert!(
        stdout.contains("running 1 test") && stdout.contains("1 passed"),
        "{name} did not run in its own process:\n{stdout}\n{stderr}"
    );
    // What the child measured, for the parent's output.
    for line in stderr.lines().filter(|l| l.starts_with("measured:")) {
        eprintln!("{line}");
    }
    false
}
