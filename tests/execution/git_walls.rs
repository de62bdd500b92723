//! Issue 10, item 2, the sandbox's side: a command cannot make a later git command run a
//! program. The control files of the repository, its submodules and worktrees stay read-only;
//! a `.git/commondir` a command creates is removed again and the run fails saying so; and git
//! in the sandbox refuses a folder laid out as a bare repository unless told to use it.

use std::path::Path;
use std::process::Command;

use crate::support::*;
use spear::harness::primitives::ToolStatus;

fn git(ws: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new("git")
        .current_dir(ws)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", ws.parent().unwrap())
        .output()
        .expect("git is needed by these tests (apt-get install git)");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    out
}

/// A real repository with one commit, a submodule-like git directory and a linked worktree.
fn repository() -> (tempfile::TempDir, std::path::PathBuf) {
    let (d, ws) = workspace();
    git(&ws, &["init", "-q", "."]);
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    git(&ws, &["add", "a.txt"]);
    git(
        &ws,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "one",
        ],
    );
    for d in [
        ".git/modules/lib/objects",
        ".git/modules/lib/refs",
        ".git/worktrees/w",
    ] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::write(ws.join(".git/modules/lib/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(ws.join(".git/modules/lib/config"), "[core]\n").unwrap();
    std::fs::write(ws.join(".git/worktrees/w/gitdir"), "/nowhere/.git\n").unwrap();
    (d, ws)
}

#[tokio::test]
async fn every_control_file_of_the_repository_stays_read_only() {
    let (_d, ws) = repository();
    let r = runner(&ws);
    // Positive control: git itself still works in the writable sandbox.
    let ok = run(
        &r,
        writable(),
        "git status --porcelain && git log --oneline | wc -l",
    )
    .await;
    assert_eq!(ok.status, ToolStatus::Ok, "{ok:?}");
    assert!(ok.stdout.trim_end().ends_with('1'), "{ok:?}");
    for (file, trick) in [
        (".git/info/exclude", "echo x >> .git/info/exclude"),
        (
            ".git/info/attributes",
            "echo '* filter=x' > .git/info/attributes",
        ),
        (
            ".git/modules/lib/config",
            "echo '[core] fsmonitor = ./x' >> .git/modules/lib/config",
        ),
        (
            ".git/worktrees/w/gitdir",
            "echo /tmp/evil > .git/worktrees/w/gitdir",
        ),
        (
            ".git/config.worktree",
            "echo '[core] hooksPath = .' > .git/config.worktree",
        ),
    ] {
        let before = std::fs::read(ws.join(file)).ok();
        let res = run(&r, writable(), trick).await;
        assert_ne!(res.exit_code, Some(0), "{trick} succeeded: {res:?}");
        let after = std::fs::read(ws.join(file)).ok();
        // An absent one is a placeholder while the sandbox runs and gone after it.
        assert_eq!(after, before, "{file} changed");
    }
}

#[tokio::test]
async fn a_commondir_a_command_creates_is_removed_and_the_run_fails() {
    let (_d, ws) = repository();
    let r = runner(&ws);
    let res = run(
        &r,
        writable(),
        "mkdir -p evil && echo ../evil > .git/commondir && echo done",
    )
    .await;
    // The command itself ran (positive control) ...
    assert!(res.stdout.contains("done"), "{res:?}");
    // ... and its redirect of the repository was taken back.
    assert_eq!(res.status, ToolStatus::Failed, "{res:?}");
    assert!(
        res.reason
            .as_deref()
            .unwrap_or("")
            .contains(".git/commondir"),
        "{res:?}"
    );
    assert!(!ws.join(".git/commondir").exists());
    // The person's git still works on the host.
    git(&ws, &["status", "--porcelain"]);
    // An existing commondir (a linked worktree's) is read-only instead.
    std::fs::write(ws.join(".git/commondir"), ".\n").unwrap();
    let res = run(&r, writable(), "echo ../evil > .git/commondir").await;
    assert_ne!(res.exit_code, Some(0), "{res:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/commondir")).unwrap(),
        ".\n"
    );
}

#[tokio::test]
async fn git_in_the_sandbox_refuses_a_folder_laid_out_as_a_bare_repository() {
    let (_d, ws) = workspace();
    git(&ws, &["init", "-q", "--bare", "sub"]);
    let r = runner(&ws);
    // The read-only reading the classifier allows in SAFE.
    let res = run(&r, read_only(), "git -C sub rev-parse --is-bare-repository").await;
    assert_ne!(res.exit_code, Some(0), "{res:?}");
    assert!(res.stderr.contains("bare repository"), "{res:?}");
    // Positive control: the same repository is used once git is told to use it.
    let res = run(
        &r,
        read_only(),
        "git --git-dir=sub rev-parse --is-bare-repository",
    )
    .await;
    assert_eq!(res.stdout.trim(), "true", "{res:?}");
}

/// A nested repository's own config names an fsmonitor program; a read-only `git -C sub
/// status` (and a superproject's `git status`) would run it. The sandbox turns the monitor off
/// for every command, so it never runs; positive control: with the setting given on git's own
/// command line again (overriding the sandbox's), the program runs and says so.
#[tokio::test]
async fn a_nested_repositorys_fsmonitor_program_does_not_run_in_the_sandbox() {
    let (_d, ws) = workspace();
    let sub = ws.join("sub");
    std::fs::create_dir(&sub).unwrap();
    git(&sub, &["init", "-q", "."]);
    std::fs::write(
        sub.join("monitor.sh"),
        "#!/bin/sh\necho FSMONITOR-RAN >&2\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        sub.join("monitor.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let monitor = sub.join("monitor.sh").to_string_lossy().into_owned();
    git(&sub, &["config", "core.fsmonitor", &monitor]);
    let r = runner(&ws);
    let res = run(&r, read_only(), "git -C sub status").await;
    assert!(!res.stderr.contains("FSMONITOR-RAN"), "{res:?}");
    assert_eq!(res.exit_code, Some(0), "{res:?}");
    let cmd = format!("git -C sub -c core.fsmonitor={monitor} status");
    let res = run(&r, read_only(), &cmd).await;
    assert!(res.stderr.contains("FSMONITOR-RAN"), "{res:?}");
}

/// Issue 10, item 8, the sandbox's side: a hard-linked file stays read-only in a writable
/// sandbox, so a command the classifier could not see writing it cannot change the file
/// outside the workspace either.
#[tokio::test]
async fn a_hard_linked_file_stays_read_only_in_a_writable_sandbox() {
    let (_d, ws) = workspace();
    let outside = ws.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    std::fs::hard_link(&outside, ws.join("linked.txt")).unwrap();
    std::fs::write(ws.join("own.txt"), "own\n").unwrap();
    let r = runner(&ws);
    let res = run(
        &r,
        writable(),
        "cat linked.txt && echo x >> own.txt && echo more >> linked.txt",
    )
    .await;
    // Positive control: the command ran, read the file and wrote the workspace.
    assert!(res.stdout.contains("outside"), "{res:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("own.txt")).unwrap(),
        "own\nx\n"
    );
    assert_ne!(res.exit_code, Some(0), "{res:?}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
}
