//! Issue 10, item 8: a workspace file hard-linked to a file outside the workspace. Spear reads
//! it and says so; it never writes it in place (write_file, patch and every classified write a
//! command makes are refused with the `hard_link` rule, the outside file untouched); deleting
//! the workspace's name is allowed and leaves the other file as it was.

use serde_json::json;
use spear::harness::primitives::{ExecutionMode::Auto, ToolStatus};

use crate::support::*;

fn linked() -> (Fixture, std::path::PathBuf) {
    let f = Fixture::new();
    let outside = f.base.join("outside.txt");
    std::fs::write(&outside, "outside = 1\n").unwrap();
    std::fs::hard_link(&outside, f.project.join("linked.txt")).unwrap();
    (f, outside)
}

#[test]
fn a_hard_linked_file_is_read_with_a_note_and_never_written_in_place() {
    let (f, outside) = linked();
    let rec = Recorder::default();
    let r = f.router(Box::new(rec.clone()));
    let env = call(
        &r,
        &mut turn(&r, Auto),
        "read_file",
        json!({"path": "linked.txt"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(
        env.stdout.contains("outside = 1") && env.stdout.contains("2 hard links"),
        "{env:?}"
    );
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "linked.txt", "content": "x\n"}),
        ),
        (
            "patch",
            json!({"path": "linked.txt", "edits": [{"old": "outside = 1", "new": "outside = 2"}]}),
        ),
        ("terminal", json!({"command": "echo x >> linked.txt"})),
    ] {
        let env = call(&r, &mut turn(&r, Auto), tool, args);
        assert_eq!(env.status, ToolStatus::Denied, "{tool}: {env:?}");
        assert!(
            env.reason.as_deref().unwrap_or("").contains("hard_link"),
            "{tool}: {env:?}"
        );
    }
    assert!(
        rec.ran.lock().unwrap().is_empty(),
        "the refused command ran"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside = 1\n");
    // Deleting the workspace's name is fine: the other file stays.
    let env = call(
        &r,
        &mut turn(&r, Auto),
        "delete_file",
        json!({"path": "linked.txt"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(!f.project.join("linked.txt").exists());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside = 1\n");
    // Positive control: once the file is the project's own, it is written.
    let env = call(
        &r,
        &mut turn(&r, Auto),
        "write_file",
        json!({"path": "linked.txt", "content": "mine\n"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
}
