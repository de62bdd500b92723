//! Issue 10, item 2: `.git` is no escape route. A file tool that could rewrite `.git/config`,
//! a hook, `commondir`, a gitdir file or a bare repository's config would make a later git
//! command (sandboxed, or the person's own) run a program. Every such write and delete is
//! refused in every mode with the `git_control` rule, directly, through `./`, `//`, `..` and a
//! symlink, and the file is left exactly as it was.

use serde_json::json;
use spear::harness::primitives::{ExecutionMode, ToolStatus};

use crate::support::*;

/// A repository whose control files hold known contents.
fn repo() -> Fixture {
    let f = Fixture::new();
    f.write(".git/HEAD", "ref: refs/heads/main\n");
    f.write(".git/config", "[core]\n\tbare = false\n");
    f.write(".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
    f.write(".git/info/exclude", "# excludes\n");
    f.write(".git/modules/lib/HEAD", "ref: refs/heads/main\n");
    f.write(".git/modules/lib/config", "[core]\n");
    f.write(".git/worktrees/w/gitdir", "/elsewhere/.git\n");
    f.write("src/main.rs", "fn main() {}\n");
    // A folder laid out as a bare repository.
    f.write("bare/HEAD", "ref: refs/heads/main\n");
    f.write("bare/config", "[core]\n\tbare = true\n");
    std::fs::create_dir_all(f.project.join("bare/objects")).unwrap();
    std::fs::create_dir_all(f.project.join("bare/refs")).unwrap();
    std::os::unix::fs::symlink(".git/config", f.project.join("cfg-link")).unwrap();
    std::os::unix::fs::symlink(".git", f.project.join("gitdir-link")).unwrap();
    f
}

/// Every way of naming a control file a model might try, and the file it reaches.
const TARGETS: &[(&str, &str)] = &[
    (".git/config", ".git/config"),
    ("./.git//config", ".git/config"),
    ("src/../.git/config", ".git/config"),
    ("cfg-link", ".git/config"),
    ("gitdir-link/config", ".git/config"),
    (".git/hooks/pre-commit", ".git/hooks/pre-commit"),
    (".git/hooks/post-checkout", ".git/hooks/post-checkout"),
    (".git/commondir", ".git/commondir"),
    (".git/info/attributes", ".git/info/attributes"),
    (".git/modules/lib/config", ".git/modules/lib/config"),
    (".git/worktrees/w/gitdir", ".git/worktrees/w/gitdir"),
    (".git/config.worktree", ".git/config.worktree"),
    ("sub/.git", "sub/.git"),
    ("bare/config", "bare/config"),
    ("bare/hooks/post-update", "bare/hooks/post-update"),
];

fn assert_refused(env: &spear::tools::envelope::ToolResultEnvelope, what: &str) {
    assert_refused_by(env, "git_control", what);
}

#[test]
fn write_file_and_patch_never_change_a_git_control_file_in_any_mode() {
    for mode in [ExecutionMode::Auto, ExecutionMode::Ask, ExecutionMode::Safe] {
        let f = repo();
        let router = f.router(Box::new(NoSandbox));
        file_tools_refuse(&f, &router, mode, TARGETS, "git_control", false);
        // Positive control: an ordinary file is written in AUTO.
        if mode == ExecutionMode::Auto {
            let mut t = turn(&router, mode);
            let env = call(
                &router,
                &mut t,
                "write_file",
                json!({"path": "src/lib.rs", "content": "pub fn f() {}\n"}),
            );
            assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
        }
    }
}

#[test]
fn delete_file_never_removes_a_hook_a_config_or_the_git_directory() {
    let f = repo();
    let router = f.router(Box::new(NoSandbox));
    for target in [
        ".git/hooks/pre-commit",
        ".git/config",
        ".git",
        "./.git/",
        "gitdir-link/hooks/pre-commit",
        "bare/config",
    ] {
        let mut t = turn(&router, ExecutionMode::Auto);
        let env = call(&router, &mut t, "delete_file", json!({"path": target}));
        assert_refused(&env, &format!("delete_file {target}"));
    }
    assert!(f.project.join(".git/hooks/pre-commit").is_file());
    assert!(f.project.join(".git/config").is_file());
    assert!(f.project.join("bare/config").is_file());
    // Positive control: an ordinary file is deleted.
    let mut t = turn(&router, ExecutionMode::Auto);
    let env = call(
        &router,
        &mut t,
        "delete_file",
        json!({"path": "src/main.rs"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(!f.project.join("src/main.rs").exists());
}

#[test]
fn a_terminal_command_that_writes_a_control_file_is_refused_before_it_runs() {
    let f = repo();
    let rec = Recorder::default();
    let router = f.router(Box::new(rec.clone()));
    for command in [
        "echo '[core] fsmonitor = ./x' >> .git/config",
        "echo ../evil > .git/commondir",
        "cp hook .git/hooks/pre-commit",
        "tee .git/info/attributes < a",
        "echo 'gitdir: ../evil' > sub/.git",
    ] {
        let mut t = turn(&router, ExecutionMode::Auto);
        let env = call(&router, &mut t, "terminal", json!({"command": command}));
        assert_refused(&env, command);
    }
    assert!(rec.ran.lock().unwrap().is_empty(), "a refused command ran");
    // Positive control: an ordinary write is run.
    let mut t = turn(&router, ExecutionMode::Auto);
    let env = call(
        &router,
        &mut t,
        "terminal",
        json!({"command": "echo x > notes.txt"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert_eq!(rec.ran.lock().unwrap().len(), 1);
}
