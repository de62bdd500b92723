//! Issue 20 items 2 and 3: what a command leaves under a git directory must not act later with
//! the person's authority. A nested repository with `core.fsmonitor` added as a gitlink would run
//! its program on the person's own `git status`; a rebase stopped with `exec` lines left in its
//! todo would run them on the person's `git rebase --continue`. Each attack is first shown to
//! work when done on the host (so the test can fail), then done through Spear, and judged by
//! the person's own git commands on the host after Spear is done.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;
use spear::harness::command_runner::CommandRunner;
use spear::harness::primitives::ToolStatus;

fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git is needed by these tests (apt-get install git)")
}

fn ok(dir: &Path, args: &[&str]) {
    let out = git(dir, args);
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository with two commits in `ws`.
fn repository(ws: &Path) {
    ok(ws, &["init", "-q", "."]);
    for n in ["one", "two"] {
        std::fs::write(ws.join(format!("{n}.txt")), n).unwrap();
        ok(ws, &["add", "."]);
        ok(ws, &["commit", "-q", "-m", n]);
    }
}

fn runner_with_state(ws: &Path) -> (CommandRunner, PathBuf) {
    let mut c = config(ws);
    c.ledger_dir = Some(state_dir(ws).join("sandboxes"));
    (
        CommandRunner::new(c).unwrap(),
        state_dir(ws).join("quarantine"),
    )
}

/// The nested repository, its fsmonitor pointed at a marker file, added as a gitlink.
/// The hook is set last, so nothing in the command itself runs it.
const NESTED: &str = r#"set -e
git init -q sub
echo x > sub/f
git -C sub add f
git -C sub -c user.name=t -c user.email=t@t commit -q -m x
git add sub
git -C sub config core.fsmonitor "touch $PWD/fsmonitor-ran; false"
test ! -e fsmonitor-ran
echo staged"#;

fn host_shell(dir: &Path, script: &str) {
    let out = Command::new("bash")
        .args(["-c", script])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{script}: {out:?}");
}

#[tokio::test]
async fn a_nested_repository_added_as_a_gitlink_runs_nothing_in_the_persons_git() {
    // On the host, the attack works: the person's `git status` runs the program.
    let control = tempfile::tempdir().unwrap();
    let cws = control.path().canonicalize().unwrap();
    repository(&cws);
    host_shell(&cws, NESTED);
    git(&cws, &["status"]);
    assert!(
        cws.join("fsmonitor-ran").exists(),
        "positive control: this git does not run a nested repository's fsmonitor on `git \
         status`, so the test below proves nothing"
    );

    let (_d, ws) = workspace();
    repository(&ws);
    let (r, quarantine) = runner_with_state(&ws);
    let res = run(&r, writable(), NESTED).await;
    assert!(
        res.stdout.contains("staged"),
        "the command did not run: {res:?}"
    );
    assert_eq!(res.status, ToolStatus::Failed, "{res:?}");
    let reason = res.reason.clone().unwrap_or_default();
    assert!(reason.contains("`sub/.git/config`"), "{reason}");
    assert!(
        reason.contains("`sub`") && reason.contains("removed from the index"),
        "{reason}"
    );
    // The person's own git afterwards.
    git(&ws, &["status"]);
    assert!(
        !ws.join("fsmonitor-ran").exists(),
        "the person's git status ran the program"
    );
    let staged = String::from_utf8_lossy(&git(&ws, &["ls-files", "-s"]).stdout).to_string();
    assert!(
        !staged.contains("160000"),
        "a gitlink is still staged: {staged}"
    );
    let kept: Vec<PathBuf> = std::fs::read_dir(&quarantine)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("sub/.git/config"))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(kept.len(), 1, "the nested config is not in the quarantine");
    assert!(
        std::fs::read_to_string(&kept[0])
            .unwrap()
            .contains("fsmonitor")
    );
    // The nested repository's history is still there (only control files move).
    assert!(git(&ws.join("sub"), &["log", "--oneline"]).status.success());
}

/// A rebase stopped at a `break`, with an `exec` line left to run on `--continue`.
fn rebase_script(dir: &Path) -> String {
    format!(
        r#"set -e
printf '#!/bin/sh\nprintf "break\\nexec touch {0}/rebase-ran\\n" > "$1"\n' > "$TMPDIR/ed"
chmod +x "$TMPDIR/ed"
GIT_SEQUENCE_EDITOR="$TMPDIR/ed" git -c user.name=t -c user.email=t@t rebase -q -i HEAD~1
test -d .git/rebase-merge && echo stopped"#,
        dir.display()
    )
}

/// The person's own stopped rebase in `dir`, made on the host.
fn stop_a_rebase_on_the_host(dir: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .args(["-c", &rebase_script(dir)])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("stopped"),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_rebase_the_command_left_stopped_is_aborted_and_one_the_person_had_is_kept() {
    let control = tempfile::tempdir().unwrap();
    let cws = control.path().canonicalize().unwrap();
    repository(&cws);
    stop_a_rebase_on_the_host(&cws);
    git(&cws, &["rebase", "--continue"]);
    assert!(
        cws.join("rebase-ran").exists(),
        "positive control: `git rebase --continue` did not run the exec line"
    );

    let (_d, ws) = workspace();
    repository(&ws);
    let (r, _quarantine) = runner_with_state(&ws);
    let res = run(&r, writable(), &rebase_script(&ws)).await;
    assert!(
        res.stdout.contains("stopped"),
        "the command did not run: {res:?}"
    );
    assert_eq!(res.status, ToolStatus::Failed, "{res:?}");
    let reason = res.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("rebase-merge") && reason.contains("it was aborted"),
        "{reason}"
    );
    assert!(!ws.join(".git/rebase-merge").exists());
    let _ = git(&ws, &["rebase", "--continue"]);
    assert!(
        !ws.join("rebase-ran").exists(),
        "the person's rebase --continue ran the exec line"
    );
    let log = String::from_utf8_lossy(&git(&ws, &["log", "--format=%s"]).stdout).to_string();
    assert_eq!(log, "two\none\n", "the abort did not restore the branch");

    // A rebase the person had stopped before the run is theirs: read-only to the command, and
    // left in place.
    stop_a_rebase_on_the_host(&ws);
    let todo = ws.join(".git/rebase-merge/git-rebase-todo");
    let before = std::fs::read_to_string(&todo).unwrap();
    let res = run(
        &r,
        writable(),
        "echo 'exec id' >> .git/rebase-merge/git-rebase-todo; echo tried",
    )
    .await;
    assert!(res.stdout.contains("tried"), "{res:?}");
    assert_eq!(std::fs::read_to_string(&todo).unwrap(), before);
    assert!(ws.join(".git/rebase-merge").is_dir());
}
