//! Patch through the router: fuzzy misses, ambiguous matches, CRLF files, no final newline,
//! non-UTF-8 content, unified diffs, and the working state it leaves.

use serde_json::{Value, json};
use spear::harness::primitives::{ExecutionMode::*, ToolStatus};
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::working_state::content_hash;

use crate::support::*;

fn patch(f: &Fixture, args: Value) -> ToolResultEnvelope {
    let r = f.router(Box::new(Recorder::default()));
    call(&r, &mut turn(&r, Auto), "patch", args)
}

#[test]
fn a_fuzzy_miss_shows_the_nearest_match_and_changes_nothing() {
    let f = Fixture::new();
    let src = "fn main() {\n    let total = add(1, 2);\n    println!(\"{total}\");\n}\n";
    f.write("m.rs", src);
    let env = patch(
        &f,
        json!({"path": "m.rs", "edits": [{"old": "let total = add(1, 3);", "new": "x"}]}),
    );
    assert_eq!(env.status, ToolStatus::Failed);
    let reason = env.reason.unwrap();
    assert!(reason.contains("nearest text is at lines 2-2"), "{reason}");
    assert!(reason.contains("let total = add(1, 2);"), "{reason}");
    assert_eq!(f.read("m.rs"), src.as_bytes());
}

#[test]
fn an_ambiguous_match_is_refused_unless_replace_all() {
    let f = Fixture::new();
    f.write("a.txt", "x = 1\ny = 2\nx = 1\n");
    let env = patch(
        &f,
        json!({"path": "a.txt", "edits": [{"old": "x = 1", "new": "x = 3"}]}),
    );
    assert_eq!(env.status, ToolStatus::Failed);
    assert!(
        env.reason
            .unwrap()
            .contains("matches 2 places in `a.txt` (lines 1, 3)")
    );
    let env = patch(
        &f,
        json!({"path": "a.txt", "edits": [{"old": "x = 1", "new": "x = 3", "replace_all": true}]}),
    );
    assert_eq!(
        (env.status, env.changed_paths),
        (ToolStatus::Ok, vec!["a.txt".to_string()])
    );
    assert_eq!(f.read("a.txt"), b"x = 3\ny = 2\nx = 3\n");
}

#[test]
fn crlf_files_keep_crlf() {
    let f = Fixture::new();
    f.write("w.txt", "one\r\ntwo\r\nthree\r\n");
    let env = patch(
        &f,
        json!({"path": "w.txt", "edits": [{"old": "one\ntwo\n", "new": "1\n2\n2b\n"}]}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert_eq!(f.read("w.txt"), b"1\r\n2\r\n2b\r\nthree\r\n");
    let env = patch(
        &f,
        json!({"path": "w.txt", "diff": "@@ -3,2 +3,2 @@\n 2b\n-three\n+THREE\n"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert_eq!(f.read("w.txt"), b"1\r\n2\r\n2b\r\nTHREE\r\n");
}

#[test]
fn a_file_without_final_newline_stays_without_one() {
    let f = Fixture::new();
    f.write("n.txt", "a\nlast");
    let env = patch(
        &f,
        json!({"path": "n.txt", "edits": [{"old": "last", "new": "LAST"}]}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    assert_eq!(f.read("n.txt"), b"a\nLAST");
    let env = patch(
        &f,
        json!({"path": "n.txt", "diff": "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-LAST\n+end\n"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert_eq!(f.read("n.txt"), b"a\nend");
}

#[test]
fn non_utf8_bytes_elsewhere_in_the_file_survive() {
    let f = Fixture::new();
    let mut content = b"caf\xe9 latin-1 line\nname = old\n\xff\xfe tail\n".to_vec();
    f.write("l1.txt", &content);
    let env = patch(
        &f,
        json!({"path": "l1.txt", "edits": [{"old": "name = old", "new": "name = new"}]}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    content = b"caf\xe9 latin-1 line\nname = new\n\xff\xfe tail\n".to_vec();
    assert_eq!(f.read("l1.txt"), content);
    // Reading it says the file is not UTF-8 instead of failing.
    let r = f.router(Box::new(Recorder::default()));
    let env = call(
        &r,
        &mut turn(&r, Safe),
        "read_file",
        json!({"path": "l1.txt"}),
    );
    assert!(env.preview.contains("not valid UTF-8"), "{}", env.preview);
}

#[test]
fn a_diff_that_does_not_apply_is_refused_with_the_nearest_text() {
    let f = Fixture::new();
    f.write("d.txt", "alpha\nbeta\ngamma\n");
    let env = patch(
        &f,
        json!({"path": "d.txt", "diff": "@@ -2,1 +2,1 @@\n-betta\n+BETA\n"}),
    );
    assert_eq!(env.status, ToolStatus::Failed);
    assert!(env.reason.unwrap().contains("nearest text is at lines 2-2"));
    f.write("dup.txt", "k\nv\nk\nv\n");
    let env = patch(
        &f,
        json!({"path": "dup.txt", "diff": "@@ -9,2 +9,2 @@\n k\n-v\n+V\n"}),
    );
    assert!(env.reason.unwrap().contains("ambiguous"));
    assert_eq!(f.read("dup.txt"), b"k\nv\nk\nv\n");
}

#[test]
fn patches_update_the_working_state_with_hashes() {
    let f = Fixture::new();
    f.write("s.txt", "before\n");
    let r = f.router(Box::new(Recorder::default()));
    let env = call(
        &r,
        &mut turn(&r, Auto),
        "patch",
        json!({"path": "./s.txt", "edits": [{"old": "before", "new": "after"}]}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    let ws = r.host().working_state();
    let c = ws.get("s.txt").unwrap();
    assert_eq!(
        c.before.as_deref(),
        Some(content_hash(b"before\n").as_str())
    );
    assert_eq!(c.after.as_deref(), Some(content_hash(b"after\n").as_str()));
}
