//! Checkpoints and `spear undo`: every route that changes the working tree (the file tools, a
//! sandboxed command's `sed -i`, `mv`, `chmod`, `rm`, `git checkout`) is taken back byte for
//! byte, mode and link target included; a restore never follows a link out of the workspace nor
//! writes a file in place; a rewind across turns leaves what someone else changed alone unless
//! forced; what a checkpoint could not take is said, and the CLI refuses to half-undo; the
//! store lies out of the sandbox's reach, and no session name leads out of it; a torn log tail
//! and two writers on one store are survived; an ignore file the session edits neither hides a
//! later edit from the undo nor makes it delete what the file ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use spear::harness::checkpoint::{CallRecord, Checkpoints, Limits, Plan, Record, Report};

// ---------------------------------------------------------------------------------------------
// The tree as a person sees it.

/// One path's state: what an undo must bring back exactly.
#[derive(Clone, PartialEq, Eq)]
enum Node {
    Dir { mode: u32 },
    File { mode: u32, bytes: Vec<u8> },
    Link { target: PathBuf },
    Other { mode: u32 },
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Node::Dir { mode } => write!(f, "dir {mode:o}"),
            Node::File { mode, bytes } => {
                write!(f, "file {mode:o} {:?}", String::from_utf8_lossy(bytes))
            }
            Node::Link { target } => write!(f, "link -> {}", target.display()),
            Node::Other { mode } => write!(f, "special {mode:o}"),
        }
    }
}

type Tree = BTreeMap<String, Node>;

/// Everything under `root` but `.git`: kind, `mode & 0o7777`, content or link target.
fn tree(root: &Path) -> Tree {
    let mut out = Tree::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Tree) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".git" {
            continue;
        }
        let p = entry.path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let md = fs::symlink_metadata(&p).unwrap();
        let mode = md.mode() & 0o7777;
        let ft = md.file_type();
        let node = if ft.is_symlink() {
            Node::Link {
                target: fs::read_link(&p).unwrap(),
            }
        } else if ft.is_dir() {
            walk(root, &p, out);
            Node::Dir { mode }
        } else if ft.is_file() {
            Node::File {
                mode,
                bytes: fs::read(&p).unwrap(),
            }
        } else {
            Node::Other { mode }
        };
        out.insert(rel, node);
    }
}

/// The paths where `got` is not `want`, each with both states.
fn differences(want: &Tree, got: &Tree) -> Vec<String> {
    let paths: BTreeSet<&String> = want.keys().chain(got.keys()).collect();
    paths
        .into_iter()
        .filter(|p| want.get(*p) != got.get(*p))
        .map(|p| format!("  {p}: was {:?}, is {:?}", want.get(p), got.get(p)))
        .collect()
}

fn assert_same_tree(want: &Tree, got: &Tree, what: &str) {
    let diff = differences(want, got);
    assert!(
        diff.is_empty(),
        "{what}: the tree is not what it was:\n{}",
        diff.join("\n")
    );
}

fn set_mode(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

fn write(root: &Path, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, bytes).unwrap();
    p
}

// ---------------------------------------------------------------------------------------------
// The binary, with its state, config and home in a temporary base outside the workspace.

struct Cli {
    _dir: tempfile::TempDir,
    base: PathBuf,
    ws: PathBuf,
}

impl Cli {
    fn new() -> Cli {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        for d in [&ws, &base.join("state"), &base.join("config")] {
            fs::create_dir_all(d).unwrap();
        }
        Cli {
            _dir: dir,
            base,
            ws,
        }
    }

    /// `spear ARGS` in the workspace.
    fn spear(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_spear"))
            .current_dir(&self.ws)
            .env("HOME", &self.base)
            .env("XDG_STATE_HOME", self.base.join("state"))
            .env("XDG_CONFIG_HOME", self.base.join("config"))
            .stdin(Stdio::null())
            .args(args)
            .output()
            .unwrap()
    }

    /// `spear ARGS`, which must succeed.
    fn ok(&self, args: &[&str]) -> Output {
        let out = self.spear(args);
        assert!(out.status.success(), "spear {args:?}: {}", said(&out));
        out
    }

    /// `spear exec --mode auto --json -- SCRIPT`: the result object and the whole output.
    fn exec(&self, script: &str) -> (Value, Output) {
        let out = self.spear(&["exec", "--mode", "auto", "--json", "--", script]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{script}: {e}: {}", said(&out)));
        (v, out)
    }

    /// `spear tool NAME ARGS --mode auto --json`: the envelope.
    fn tool(&self, name: &str, args: &Value) -> (Value, Output) {
        let out = self.spear(&["tool", name, &args.to_string(), "--mode", "auto", "--json"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{name} {args}: {e}: {}", said(&out)));
        (v, out)
    }

    /// `spear checkpoints --json`.
    fn listing(&self) -> Value {
        let out = self.ok(&["checkpoints", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", said(&out)))
    }

    /// The workspace's checkpoint store, as `spear checkpoints --json` names it.
    fn store(&self) -> PathBuf {
        PathBuf::from(self.listing()["store"].as_str().unwrap())
    }
}

fn said(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The workspace a route test starts from: a 0600 file, an executable, a link, an empty
/// directory with its own mode, nested files.
fn seed(ws: &Path) {
    set_mode(&write(ws, "a.txt", "hello\nworld\n"), 0o600);
    write(ws, "src/lib.rs", "pub fn a() {}\n");
    write(ws, "src/deep/mod.rs", "// deep\n");
    set_mode(&write(ws, "bin/run.sh", "#!/bin/sh\necho run\n"), 0o755);
    write(ws, "doomed.txt", "soon gone\n");
    symlink("a.txt", ws.join("link")).unwrap();
    symlink("../src", ws.join("bin/src-link")).unwrap();
    fs::create_dir(ws.join("empty")).unwrap();
    set_mode(&ws.join("empty"), 0o750);
    set_mode(&ws.join("src/deep"), 0o700);
}

/// Run `route`, check it changed the tree, `spear undo`, and check the tree is back.
fn run_then_undo(cli: &Cli, what: &str, route: impl FnOnce()) {
    let before = tree(&cli.ws);
    route();
    let changed = tree(&cli.ws);
    assert!(
        !differences(&before, &changed).is_empty(),
        "{what}: the route changed nothing, so the test proves nothing"
    );
    let out = cli.ok(&["undo"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Took back"),
        "{what}: {}",
        said(&out)
    );
    assert_same_tree(&before, &tree(&cli.ws), &format!("after undoing {what}"));
}

#[test]
fn the_file_tools_are_taken_back_exactly() {
    let cli = Cli::new();
    seed(&cli.ws);
    let calls: [(&str, Value); 6] = [
        (
            "write_file",
            json!({"path": "new/dir/n.txt", "content": "made by the model\n"}),
        ),
        (
            "write_file",
            json!({"path": "a.txt", "content": "overwritten\n"}),
        ),
        (
            "patch",
            json!({"path": "src/lib.rs", "edits": [{"old": "pub fn a()", "new": "pub fn b()"}]}),
        ),
        (
            "patch",
            json!({"path": "src/deep/mod.rs", "diff": "--- a/src/deep/mod.rs\n+++ b/src/deep/mod.rs\n@@ -1 +1,2 @@\n // deep\n+// deeper\n"}),
        ),
        ("delete_file", json!({"path": "doomed.txt"})),
        ("delete_file", json!({"path": "bin/run.sh"})),
    ];
    for (name, args) in calls {
        run_then_undo(&cli, &format!("{name} {args}"), || {
            let (v, out) = cli.tool(name, &args);
            assert_eq!(v["status"], "ok", "{name} {args}: {}", said(&out));
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("checkpointed under session"),
                "{name}: {}",
                said(&out)
            );
        });
    }
    // A 0600 file stays 0600 through a write and its undo.
    assert_eq!(
        fs::metadata(cli.ws.join("a.txt")).unwrap().mode() & 0o7777,
        0o600
    );
}

#[test]
fn sandboxed_commands_are_taken_back_exactly() {
    let cli = Cli::new();
    seed(&cli.ws);
    let routes = [
        "sed -i 's/hello/bye/' a.txt",
        "echo created > created.txt",
        "rm doomed.txt",
        "mv src/lib.rs src/renamed.rs",
        "mv src moved-src",
        "chmod 0644 a.txt",
        "chmod +x src/lib.rs && chmod 0755 src/deep",
        "rm bin/run.sh && ln -s ../a.txt bin/run.sh",
        "ln -sfn src/lib.rs link",
        "rm link && echo 'no longer a link' > link",
        "rm -rf empty && ln -s src empty",
        "rm -rf src/deep && echo 'a file now' > src/deep",
        "rm a.txt && mkdir -p a.txt/inner && echo x > a.txt/inner/x",
        "mkdir -p a/b/c && echo one > a/b/c/one && echo two > a/b/two && chmod 0700 a/b",
        "rm -rf src bin",
        // Many at once, in one call.
        "sed -i 's/world/there/' a.txt && echo n > n.txt && rm doomed.txt && mv bin/run.sh run.sh \
         && chmod 0640 src/lib.rs && mkdir -p x/y/z && echo deep > x/y/z/f",
    ];
    for script in routes {
        run_then_undo(&cli, script, || {
            let (v, out) = cli.exec(script);
            assert_eq!(
                (v["status"].as_str(), v["exit_code"].as_i64()),
                (Some("ok"), Some(0)),
                "{script}: {}",
                said(&out)
            );
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("checkpointed under session"),
                "{script}: {}",
                said(&out)
            );
        });
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .env("HOME", dir.parent().unwrap())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", said(&out));
}

#[test]
fn a_git_checkout_of_another_branch_is_taken_back_in_the_work_tree() {
    let cli = Cli::new();
    let ws = &cli.ws;
    git(ws, &["init", "-q", "-b", "main"]);
    write(ws, "common.txt", "on main\n");
    write(ws, "only-main.txt", "main only\n");
    set_mode(&write(ws, "tool.sh", "#!/bin/sh\n"), 0o755);
    write(ws, "dir/kept.txt", "kept\n");
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-q", "-m", "main"]);
    git(ws, &["checkout", "-q", "-b", "other"]);
    write(ws, "common.txt", "on other\n");
    fs::remove_file(ws.join("only-main.txt")).unwrap();
    write(ws, "only-other/a/b.txt", "other only\n");
    set_mode(&ws.join("tool.sh"), 0o644);
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-q", "-m", "other"]);
    git(ws, &["checkout", "-q", "main"]);
    // A change of the person's, not committed, that the checkout carries along.
    write(ws, "dir/kept.txt", "kept, edited\n");

    run_then_undo(&cli, "git checkout other", || {
        let (v, out) = cli.exec("git checkout other");
        assert_eq!(v["exit_code"].as_i64(), Some(0), "{}", said(&out));
        assert_eq!(fs::read(ws.join("common.txt")).unwrap(), b"on other\n");
    });
    assert!(ws.join(".git").is_dir(), "the repository is still there");
}

// ---------------------------------------------------------------------------------------------
// The library: restore traps, rewinds, incomplete checkpoints, two writers.

struct Lib {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    store: PathBuf,
    cp: Checkpoints,
}

/// Every directory under `dir` writable by its owner again, so the temporary directory can be
/// removed whatever a failed restore left read-only.
fn make_writable(dir: &Path) {
    let Ok(md) = fs::symlink_metadata(dir) else {
        return;
    };
    if !md.is_dir() {
        return;
    }
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(md.mode() | 0o700));
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        make_writable(&e.path());
    }
}

impl Drop for Lib {
    fn drop(&mut self) {
        make_writable(&self.root);
    }
}

fn lib(limits: Limits) -> Lib {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    let outside = base.join("outside");
    let store = base.join("state").join("checkpoints");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    let cp = Checkpoints::open(&root, &store, limits).unwrap();
    Lib {
        _dir: dir,
        root,
        outside,
        store,
        cp,
    }
}

/// One call of `session`'s turn `turn`: a checkpoint before, `change`, a checkpoint after.
fn call(cp: &Checkpoints, session: &str, turn: u64, id: &str, change: impl FnOnce()) -> CallRecord {
    let taken = cp
        .before_call(session, turn, id, "terminal", Some("a command"))
        .unwrap();
    change();
    cp.after_call(taken).unwrap()
}

fn undo_clean(cp: &Checkpoints, session: &str) -> (Plan, Report) {
    let plan = cp.plan_undo(session, None).unwrap();
    assert!(plan.conflicts.is_empty(), "{plan:?}");
    assert!(plan.unrestorable.is_empty(), "{plan:?}");
    let report = cp.undo(&plan, false).unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    (plan, report)
}

#[test]
fn a_directory_replaced_by_a_link_out_of_the_workspace_comes_back_and_the_outside_is_untouched() {
    let l = lib(Limits::default());
    write(&l.root, "d/f1", "one\n");
    set_mode(&write(&l.root, "d/f2", "two\n"), 0o600);
    write(&l.root, "d/sub/f3", "three\n");
    set_mode(&l.root.join("d"), 0o750);
    // The outside directory holds files of the same names: a restore that followed the link
    // would overwrite them.
    let od = l.outside.join("od");
    write(&od, "f1", "OUTSIDE one\n");
    write(&od, "sub/f3", "OUTSIDE three\n");
    write(&od, "mine", "outside only\n");
    let ws_before = tree(&l.root);
    let outside_before = tree(&l.outside);

    call(&l.cp, "s", 1, "c1", || {
        fs::write(l.root.join("d/f1"), "changed first\n").unwrap();
        fs::remove_dir_all(l.root.join("d")).unwrap();
        symlink(&od, l.root.join("d")).unwrap();
    });
    let (_, report) = undo_clean(&l.cp, "s");
    assert!(
        fs::symlink_metadata(l.root.join("d")).unwrap().is_dir(),
        "d is a real directory again"
    );
    assert_same_tree(&ws_before, &tree(&l.root), "the workspace");
    assert_same_tree(&outside_before, &tree(&l.outside), "outside the workspace");
    assert!(report.restored.contains(&"d".to_string()), "{report:?}");
}

#[test]
fn a_restore_never_writes_a_file_in_place_so_a_hard_link_outside_keeps_its_content() {
    let l = lib(Limits::default());
    let outside_file = write(&l.outside, "shared.txt", "original\n");
    set_mode(&outside_file, 0o640);
    let inside = l.root.join("h.txt");
    fs::hard_link(&outside_file, &inside).unwrap();
    write(&l.root, "other.txt", "other\n");
    let ws_before = tree(&l.root);

    call(&l.cp, "s", 1, "c1", || {
        // The model writes the workspace file in place (through the shared inode).
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&inside)
            .unwrap();
        f.write_all(b"the model wrote this\n").unwrap();
    });
    let outside_before_undo = fs::read(&outside_file).unwrap();
    assert_eq!(outside_before_undo, b"the model wrote this\n");
    let ino_before_undo = fs::metadata(&inside).unwrap().ino();

    undo_clean(&l.cp, "s");
    assert_same_tree(&ws_before, &tree(&l.root), "the workspace");
    let inside_md = fs::metadata(&inside).unwrap();
    assert_ne!(
        inside_md.ino(),
        ino_before_undo,
        "the restore wrote the file in place instead of renaming a new one over it"
    );
    assert_eq!(inside_md.mode() & 0o7777, 0o640);
    assert_eq!(
        fs::read(&outside_file).unwrap(),
        outside_before_undo,
        "the restore changed the file outside the workspace"
    );
    assert_eq!(fs::metadata(&outside_file).unwrap().nlink(), 1);
}

#[test]
fn a_link_the_model_made_to_a_directory_outside_is_removed_itself() {
    let l = lib(Limits::default());
    write(&l.root, "keep.txt", "keep\n");
    let od = l.outside.join("od");
    write(&od, "precious.txt", "precious\n");
    write(&od, "nested/deeper.txt", "deeper\n");
    let ws_before = tree(&l.root);
    let outside_before = tree(&l.outside);

    call(&l.cp, "s", 1, "c1", || {
        symlink(&od, l.root.join("escape")).unwrap();
        symlink(od.join("precious.txt"), l.root.join("escape-file")).unwrap();
    });
    let (_, report) = undo_clean(&l.cp, "s");
    assert!(fs::symlink_metadata(l.root.join("escape")).is_err());
    assert!(fs::symlink_metadata(l.root.join("escape-file")).is_err());
    assert_eq!(report.removed.len(), 2, "{report:?}");
    assert_same_tree(&ws_before, &tree(&l.root), "the workspace");
    assert_same_tree(&outside_before, &tree(&l.outside), "outside the workspace");
}

#[test]
fn a_restore_under_a_directory_someone_replaced_by_a_link_out_is_refused_not_written_outside() {
    let l = lib(Limits::default());
    write(&l.root, "d/f", "the session deletes me\n");
    write(&l.root, "d/g", "g\n");
    call(&l.cp, "s", 1, "c1", || {
        fs::remove_file(l.root.join("d/f")).unwrap();
    });
    // Then someone else puts a link to an outside directory where `d` was.
    let od = l.outside.join("od");
    fs::create_dir(&od).unwrap();
    fs::rename(l.root.join("d"), l.outside.join("old-d")).unwrap();
    symlink(&od, l.root.join("d")).unwrap();
    let outside_before = tree(&l.outside);

    let plan = l.cp.plan_undo("s", None).unwrap();
    let report = l.cp.undo(&plan, true).unwrap();
    assert!(
        report.failed.iter().any(|(p, _)| p == "d/f"),
        "bringing d/f back through the link should have failed: {report:?}"
    );
    assert!(
        !od.join("f").exists(),
        "the restore wrote outside the workspace"
    );
    assert_same_tree(&outside_before, &tree(&l.outside), "outside the workspace");
    assert!(fs::symlink_metadata(l.root.join("d")).unwrap().is_symlink());
}

/// Run `f` on a thread without the capabilities that let root ignore file permissions, as an
/// ordinary user would (capabilities are per thread; for an ordinary user this changes nothing).
fn as_ordinary_user<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            use rustix::thread::{CapabilitySet, capabilities, set_capabilities};
            let mut caps = capabilities(None).unwrap();
            caps.effective -= CapabilitySet::DAC_OVERRIDE
                | CapabilitySet::DAC_READ_SEARCH
                | CapabilitySet::FOWNER;
            set_capabilities(None, caps).unwrap();
            f()
        })
        .join()
        .unwrap()
    })
}

#[test]
fn a_deleted_read_only_directory_comes_back_with_its_files() {
    let l = lib(Limits::default());
    write(&l.root, "ro/f", "inside a read-only directory\n");
    write(&l.root, "ro/sub/g", "deeper\n");
    set_mode(&l.root.join("ro/sub"), 0o555);
    set_mode(&l.root.join("ro"), 0o555);
    let before = tree(&l.root);
    call(&l.cp, "s", 1, "c1", || {
        set_mode(&l.root.join("ro"), 0o755);
        set_mode(&l.root.join("ro/sub"), 0o755);
        fs::remove_dir_all(l.root.join("ro")).unwrap();
    });
    let report = as_ordinary_user(|| {
        let plan = l.cp.plan_undo("s", None).unwrap();
        l.cp.undo(&plan, false).unwrap()
    });
    assert!(
        report.failed.is_empty(),
        "the directory's mode was set before its files were put back: {report:?}"
    );
    assert_same_tree(&before, &tree(&l.root), "the workspace");
}

#[test]
fn a_read_only_directory_the_model_made_or_locked_is_taken_back() {
    let l = lib(Limits::default());
    write(&l.root, "open/keep.txt", "keep\n");
    let before = tree(&l.root);
    call(&l.cp, "s", 1, "c1", || {
        // A new directory, filled, then made read-only; and an existing one locked after a
        // file was added to it.
        write(&l.root, "made/f", "new\n");
        set_mode(&l.root.join("made"), 0o555);
        write(&l.root, "open/added.txt", "added\n");
        set_mode(&l.root.join("open"), 0o555);
    });
    let report = as_ordinary_user(|| {
        let plan = l.cp.plan_undo("s", None).unwrap();
        l.cp.undo(&plan, false).unwrap()
    });
    assert!(
        report.failed.is_empty(),
        "what the session added inside a directory it made read-only was not removed: {report:?}"
    );
    assert_same_tree(&before, &tree(&l.root), "the workspace");
}

/// Three turns with a person's edits around them. Returns the tree just before turn 2.
fn three_turns(l: &Lib) -> Tree {
    let r = &l.root;
    write(r, "f1", "f1 original\n");
    write(r, "f2", "f2 original\n");
    write(r, "f3", "f3 original\n");
    write(r, "keep", "keep\n");

    let c = call(&l.cp, "s", 101, "c1", || {
        write(r, "f1", "f1 by turn 1\n");
        write(r, "n1", "made by turn 1\n");
    });
    assert_eq!(c.turn, 1);
    // The person edits f2 before turn 2 changes it: that edit is the state turn 2 started from.
    write(r, "f2", "f2 by the person before turn 2\n");
    let before_two = tree(r);

    let c = call(&l.cp, "s", 102, "c2", || {
        write(r, "f2", "f2 by turn 2\n");
        write(r, "f3", "f3 by turn 2\n");
    });
    assert_eq!(c.turn, 2);
    // The person edits f3 between turn 2 and turn 3, which changes it again.
    write(r, "f3", "f3 by the person between turns 2 and 3\n");

    let c = call(&l.cp, "s", 103, "c3a", || {
        write(r, "f3", "f3 by turn 3\n");
    });
    assert_eq!(c.turn, 3);
    let c = call(&l.cp, "s", 103, "c3b", || {
        write(r, "n3/deep/n3", "made by turn 3\n");
        fs::remove_file(r.join("f1")).unwrap();
    });
    assert_eq!(c.turn, 3, "a second call of the same turn keeps its number");
    // And edits f2 after the session's last call.
    write(r, "f2", "f2 by the person after turn 3\n");
    before_two
}

#[test]
fn a_rewind_across_turns_leaves_what_someone_else_changed_alone() {
    let l = lib(Limits::default());
    three_turns(&l);
    let plan = l.cp.plan_undo("s", Some(2)).unwrap();
    assert_eq!((plan.back_to_turn, plan.turns.clone()), (2, vec![2, 3]));
    let conflicts: BTreeSet<&str> = plan.conflicts.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        conflicts,
        BTreeSet::from(["f2", "f3"]),
        "{:?}",
        plan.conflicts
    );
    assert!(plan.unrestorable.is_empty(), "{plan:?}");

    let report = l.cp.undo(&plan, false).unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    assert_eq!(report.left.len(), 2, "{report:?}");
    let r = &l.root;
    // The conflicts are left as they are.
    assert_eq!(
        fs::read(r.join("f2")).unwrap(),
        b"f2 by the person after turn 3\n"
    );
    assert_eq!(fs::read(r.join("f3")).unwrap(), b"f3 by turn 3\n");
    // The rest of turns 2 and 3 is taken back; turn 1 is not.
    assert!(!r.join("n3").exists());
    assert_eq!(fs::read(r.join("f1")).unwrap(), b"f1 by turn 1\n");
    assert!(r.join("n1").exists());
    // Turns 2 and 3 are no longer live: only turn 1 can be taken back now.
    let live: Vec<u32> =
        l.cp.session_log("s")
            .unwrap()
            .live_calls()
            .iter()
            .map(|c| c.turn)
            .collect();
    assert_eq!(live, [1]);
    assert!(l.cp.plan_undo("s", Some(2)).is_err());
}

#[test]
fn a_forced_rewind_brings_back_the_state_before_the_turn() {
    let l = lib(Limits::default());
    let before_two = three_turns(&l);
    let plan = l.cp.plan_undo("s", Some(2)).unwrap();
    let report = l.cp.undo(&plan, true).unwrap();
    assert!(
        report.failed.is_empty() && report.left.is_empty(),
        "{report:?}"
    );
    assert_same_tree(&before_two, &tree(&l.root), "the tree just before turn 2");
    // Then turn 1 too: the person's edit to f2 (made before turn 2, not by the session) stays.
    let (plan, _) = undo_clean(&l.cp, "s");
    assert_eq!(plan.turns, [1]);
    let r = &l.root;
    assert_eq!(fs::read(r.join("f1")).unwrap(), b"f1 original\n");
    assert!(!r.join("n1").exists());
    assert_eq!(
        fs::read(r.join("f2")).unwrap(),
        b"f2 by the person before turn 2\n"
    );
    let log = l.cp.session_log("s").unwrap();
    let undos = log
        .records
        .iter()
        .filter(|r| matches!(r, Record::Undo { .. }))
        .count();
    assert_eq!(undos, 2);
    assert!(log.live_calls().is_empty());
}

#[test]
fn a_file_too_large_to_keep_that_the_call_shrank_or_removed_is_listed_as_unrestorable() {
    let l = lib(Limits {
        max_file_bytes: 10,
        ..Limits::default()
    });
    write(&l.root, "big.txt", "more than ten bytes\n");
    write(&l.root, "gone.txt", "more than ten bytes too\n");
    write(&l.root, "small", "small\n");
    let rec = call(&l.cp, "s", 1, "c1", || {
        write(&l.root, "big.txt", "tiny\n");
        fs::remove_file(l.root.join("gone.txt")).unwrap();
        write(&l.root, "small", "edited\n");
    });
    assert_eq!(rec.uncovered, ["big.txt", "gone.txt"]);
    let plan = l.cp.plan_undo("s", None).unwrap();
    let unrestorable: Vec<&str> = plan.unrestorable.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(unrestorable, ["big.txt", "gone.txt"], "{plan:?}");
    assert!(plan.steps.iter().any(|s| s.path == "small"), "{plan:?}");
    // Forced, the rest is taken back and the uncovered files are left as they are.
    let report = l.cp.undo(&plan, true).unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    assert_eq!(fs::read(l.root.join("small")).unwrap(), b"small\n");
    assert_eq!(fs::read(l.root.join("big.txt")).unwrap(), b"tiny\n");
}

#[test]
fn a_file_too_large_to_keep_that_the_call_changed_is_listed_as_unrestorable() {
    let l = lib(Limits {
        max_file_bytes: 10,
        ..Limits::default()
    });
    write(&l.root, "big.txt", "more than ten bytes\n");
    write(&l.root, "small", "small\n");
    call(&l.cp, "s", 1, "c1", || {
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(l.root.join("big.txt"))
            .unwrap();
        f.write_all(b"and more, still too large\n").unwrap();
        write(&l.root, "small", "edited\n");
    });
    let plan = l.cp.plan_undo("s", None).unwrap();
    let unrestorable: Vec<&str> = plan.unrestorable.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        unrestorable,
        ["big.txt"],
        "the call changed big.txt, which no checkpoint holds, yet the plan does not say so: {plan:?}"
    );
}

#[test]
fn spear_undo_refuses_to_half_undo_without_force() {
    let cli = Cli::new();
    let ws = &cli.ws;
    // Larger than the most a checkpoint keeps of one file (64 MiB), and sparse: nothing is
    // read or written of it.
    let big = fs::File::create(ws.join("big")).unwrap();
    big.set_len(65 << 20).unwrap();
    drop(big);
    write(ws, "small", "small\n");
    let (v, out) = cli.exec("rm big && echo edited > small");
    assert_eq!(v["exit_code"].as_i64(), Some(0), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("could not take: big"),
        "{}",
        said(&out)
    );
    let listed = cli.listing();
    assert_eq!(
        listed["sessions"][0]["turns"][0]["calls"][0]["uncovered"],
        json!(["big"]),
        "{listed}"
    );

    let out = cli.spear(&["undo"]);
    assert!(!out.status.success(), "{}", said(&out));
    let text = said(&out);
    assert!(text.contains("nothing was restored"), "{text}");
    assert!(text.contains("big"), "{text}");
    assert_eq!(fs::read(ws.join("small")).unwrap(), b"edited\n", "{text}");
    // The plan can be looked at, and is what was refused.
    let out = cli.ok(&["undo", "--dry-run", "--json"]);
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["unrestorable"][0][0], "big", "{plan}");

    let out = cli.ok(&["undo", "--force"]);
    assert_eq!(
        fs::read(ws.join("small")).unwrap(),
        b"small\n",
        "{}",
        said(&out)
    );
    assert!(!ws.join("big").exists());
}

#[test]
fn the_model_cannot_reach_the_checkpoint_store() {
    let cli = Cli::new();
    write(&cli.ws, "a.txt", "a\n");
    let (v, out) = cli.exec("echo changed > a.txt");
    assert_eq!(v["exit_code"].as_i64(), Some(0), "{}", said(&out));
    let store = cli.store();
    assert!(store.join("sessions").is_dir(), "{}", store.display());
    assert!(!store.starts_with(&cli.ws));
    let logs_before = tree(&store.join("sessions"));
    assert_eq!(logs_before.len(), 1, "{logs_before:?}");
    let s = store.display().to_string();

    // Run in the sandbox, where the state directory does not exist.
    for script in [
        format!("cat {s}/sessions/*.jsonl"),
        format!("ls {s}"),
        format!("cd {s}/manifests && cat *.json"),
        format!("p={s}; echo forged >> $p/sessions/x.jsonl"),
    ] {
        let (v, out) = cli.exec(&script);
        assert_eq!(v["status"], "ok", "{script}: {}", said(&out));
        assert!(
            v["exit_code"].as_i64().is_some_and(|c| c != 0),
            "{script}: reached the store: {}",
            said(&out)
        );
        let stderr = v["stderr"].as_str().unwrap_or_default();
        assert!(
            stderr.contains("No such file or directory"),
            "{script}: {stderr}"
        );
        assert_eq!(v["stdout"], "", "{script}: {v}");
    }
    // Named plainly, a write there is refused before anything runs.
    let (v, out) = cli.exec(&format!("echo forged >> {s}/sessions/x.jsonl"));
    assert_eq!(v["status"], "denied", "{}", said(&out));
    let log = fs::read_dir(store.join("sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let (v, out) = cli.tool("read_file", &json!({ "path": log.display().to_string() }));
    assert_eq!(out.status.code(), Some(126), "{}", said(&out));
    assert_eq!(v["status"], "invalid_path", "{v}");
    assert_eq!(v["stdout"], "", "{v}");
    let (v, out) = cli.tool(
        "write_file",
        &json!({ "path": store.join("sessions/forged.jsonl").display().to_string(), "content": "{}\n" }),
    );
    assert_eq!(out.status.code(), Some(126), "{}", said(&out));
    assert_eq!(v["status"], "invalid_path", "{v}");
    // The first session's log is as it was; no forged line was written anywhere in the store
    // (the later calls log under their own sessions, their command text included).
    let sessions = tree(&store.join("sessions"));
    for (name, node) in &logs_before {
        assert_eq!(sessions.get(name), Some(node), "{name} changed");
    }
    for name in ["x.jsonl", "forged.jsonl"] {
        assert!(
            !sessions.contains_key(name),
            "{name} was written: {sessions:?}"
        );
    }
    for (name, node) in &sessions {
        if let Node::File { bytes, .. } = node {
            assert!(
                !String::from_utf8_lossy(bytes)
                    .lines()
                    .any(|l| l == "forged"),
                "{name}: {node:?}"
            );
        }
    }
}

#[test]
fn a_torn_session_log_tail_is_survived() {
    let cli = Cli::new();
    write(&cli.ws, "a.txt", "a\n");
    let before = tree(&cli.ws);
    let (v, out) = cli.exec("echo changed > a.txt && echo new > b.txt");
    assert_eq!(v["exit_code"].as_i64(), Some(0), "{}", said(&out));
    let listed = cli.listing();
    let id = listed["sessions"][0]["id"].as_str().unwrap().to_string();
    let log = cli.store().join("sessions").join(format!("{id}.jsonl"));
    // A crash in the middle of appending the next record.
    let torn = b"{\"kind\":\"call\",\"turn\":2,\"call\":\"exe";
    fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(torn)
        .unwrap();

    let listed = cli.listing();
    let s = &listed["sessions"][0];
    assert_eq!(s["id"], id.as_str(), "{listed}");
    assert_eq!(s["torn_line"], torn.len(), "{listed}");
    assert_eq!(s["turns"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(
        s["turns"][0]["calls"][0]["changed"],
        json!(["a.txt", "b.txt"]),
        "{listed}"
    );

    cli.ok(&["undo"]);
    assert_same_tree(&before, &tree(&cli.ws), "after the undo");
    // The undo's record replaced the torn line: the log reads whole again.
    let listed = cli.listing();
    let s = &listed["sessions"][0];
    assert_eq!(s["torn_line"], Value::Null, "{listed}");
    assert_eq!(s["turns"], json!([]), "{listed}");
    let text = fs::read_to_string(&log).unwrap();
    for line in text.lines() {
        serde_json::from_str::<Record>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
}

#[test]
fn two_writers_on_one_store_leave_it_whole() {
    const ROUNDS: u64 = 15;
    let l = lib(Limits::default());
    write(&l.root, "base.txt", "base\n");
    // Both sessions' numbered directories live in one each of these, made beforehand.
    fs::create_dir(l.root.join("beta-dir")).unwrap();
    let second = Checkpoints::open(&l.root, &l.store, Limits::default()).unwrap();
    let root = &l.root;
    std::thread::scope(|s| {
        for (cp, name) in [(&l.cp, "alpha"), (&second, "beta")] {
            s.spawn(move || {
                for i in 0..ROUNDS {
                    call(cp, name, 1000 + i, &format!("{name}-{i}"), || {
                        write(root, &format!("{name}.txt"), format!("{name} {i}\n"));
                        write(root, "shared.txt", format!("{name} {i}\n"));
                        write(root, &format!("{name}-dir/{i}/f"), format!("{i}\n"));
                        if i > 0 {
                            fs::remove_dir_all(root.join(format!("{name}-dir/{}", i - 1))).unwrap();
                        }
                    });
                }
            });
        }
    });

    // Beta's last call, once alpha is done: what alpha's undo must not take back.
    call(&second, "beta", 2000, "beta-final", || {
        write(root, "beta.txt", "beta final\n");
        write(root, "shared.txt", "beta final\n");
        write(root, "beta-dir/final/f", "final\n");
        fs::remove_dir_all(root.join(format!("beta-dir/{}", ROUNDS - 1))).unwrap();
    });

    for (cp, name, calls) in [(&l.cp, "alpha", ROUNDS), (&second, "beta", ROUNDS + 1)] {
        let log = cp.session_log(name).unwrap();
        assert_eq!(log.torn, None, "{name}");
        let turns: Vec<u32> = log
            .records
            .iter()
            .map(|r| match r {
                Record::Call(c) => {
                    assert!(c.after.is_some(), "{name}: {c:?}");
                    c.turn
                }
                Record::Undo { .. } => panic!("{name}: an undo nobody made"),
                Record::Request { .. } => panic!("{name}: a request nobody made"),
            })
            .collect();
        assert_eq!(turns, (1..=calls as u32).collect::<Vec<_>>(), "{name}");
        assert!(cp.plan_undo(name, Some(1)).is_ok(), "{name}");
        assert!(cp.plan_undo(name, None).is_ok(), "{name}");
    }
    // Every manifest reads back, and every content it names is there and whole.
    let mut manifests = 0u64;
    for e in fs::read_dir(l.store.join("manifests")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let id = name.strip_suffix(".json").unwrap();
        let m = l.cp.store().manifest(id).unwrap();
        for (p, entry) in &m.entries {
            if let Some(hash) = &entry.hash {
                l.cp.store()
                    .blob(hash)
                    .unwrap_or_else(|e| panic!("{id} {p}: {e}"));
            }
        }
        manifests += 1;
    }
    assert_eq!(
        manifests,
        2 * (2 * ROUNDS + 1),
        "one before and one after each call"
    );
    assert_eq!(
        fs::read_dir(l.store.join("tmp")).unwrap().count(),
        0,
        "temporary files left in the store"
    );
    // Alpha takes back its own: its files go, beta's last changes stay. (What beta did while
    // one of alpha's calls ran cannot be told from alpha's own changes, so alpha's undo may
    // try to bring back beta's numbered directories; no more is asserted of those.)
    let plan = l.cp.plan_undo("alpha", Some(1)).unwrap();
    let report = l.cp.undo(&plan, false).unwrap();
    assert!(
        report
            .failed
            .iter()
            .all(|(p, _)| p.starts_with("beta-dir/")),
        "{report:?}"
    );
    assert!(!root.join("alpha.txt").exists(), "{report:?}");
    assert!(!root.join("alpha-dir").exists(), "{report:?}");
    assert_eq!(fs::read(root.join("beta.txt")).unwrap(), b"beta final\n");
    assert_eq!(fs::read(root.join("shared.txt")).unwrap(), b"beta final\n");
    assert!(root.join("beta-dir/final/f").exists());
}

#[test]
fn an_ignore_rule_the_session_added_does_not_hide_a_later_edit_from_the_undo() {
    let l = lib(Limits::default());
    write(&l.root, "notes.txt", "the person's notes, first version\n");
    write(&l.root, "src/main.rs", "fn main() {}\n");
    call(&l.cp, "s", 1, "c1", || {
        // The model adds an ignore rule that covers a file it did not touch.
        write(&l.root, ".gitignore", "*.txt\n");
    });
    // The person edits that file afterwards.
    write(
        &l.root,
        "notes.txt",
        "the person's notes, edited after the call\n",
    );

    let plan = l.cp.plan_undo("s", None).unwrap();
    let report = l.cp.undo(&plan, false).unwrap();
    assert!(!l.root.join(".gitignore").exists(), "{report:?}");
    assert_eq!(
        fs::read_to_string(l.root.join("notes.txt")).unwrap(),
        "the person's notes, edited after the call\n",
        "the undo overwrote an edit made after the session's call, unasked: {plan:?}"
    );
}

#[test]
fn a_session_name_cannot_lead_out_of_the_store() {
    let l = lib(Limits::default());
    write(&l.root, "a.txt", "a\n");
    call(&l.cp, "s", 1, "c1", || {
        write(&l.root, "a.txt", "changed\n");
    });
    // A copy of the real log, outside the store, named through `..`.
    fs::copy(
        l.store.join("sessions/s.jsonl"),
        l.outside.join("elsewhere.jsonl"),
    )
    .unwrap();
    let name = "../../../outside/elsewhere";
    assert!(
        l.store
            .join("sessions")
            .join(format!("{name}.jsonl"))
            .exists(),
        "the test's path does not reach the copy"
    );
    assert!(
        l.cp.session_log(name).is_err(),
        "a session name with `..` read a log outside the store"
    );
    assert!(
        l.cp.plan_undo(name, None).is_err(),
        "a session name with `..` was planned from a log outside the store"
    );
}

#[test]
fn spear_checkpoints_prune_removes_only_the_stores_own_sessions() {
    let cli = Cli::new();
    write(&cli.ws, "a.txt", "a\n");
    let (v, out) = cli.exec("echo changed > a.txt");
    assert_eq!(v["exit_code"].as_i64(), Some(0), "{}", said(&out));
    let store = cli.store();
    // A file outside the store, reached from its `sessions/` through `..`.
    let victim = cli.base.join("victim.jsonl");
    fs::write(&victim, "not a session\n").unwrap();
    let up = store
        .join("sessions")
        .strip_prefix(&cli.base)
        .unwrap()
        .components()
        .map(|_| "..")
        .collect::<Vec<_>>()
        .join("/");
    let name = format!("{up}/victim");
    assert!(
        store
            .join("sessions")
            .join(format!("{name}.jsonl"))
            .exists()
    );

    let out = cli.spear(&["checkpoints", "prune", "--session", &name]);
    assert!(
        victim.exists(),
        "`spear checkpoints prune --session {name}` removed a file outside the store: {}",
        said(&out)
    );
    assert!(!out.status.success(), "{}", said(&out));
}

#[test]
fn an_ignore_rule_the_session_removed_does_not_make_the_undo_delete_what_it_hid() {
    let l = lib(Limits::default());
    write(&l.root, ".gitignore", "data/\n");
    write(&l.root, "data/important.csv", "years of measurements\n");
    write(&l.root, "src/main.rs", "fn main() {}\n");
    let before = tree(&l.root);
    call(&l.cp, "s", 1, "c1", || {
        // The model tidies the ignore file; it never touches data/.
        write(&l.root, ".gitignore", "");
    });
    let plan = l.cp.plan_undo("s", None).unwrap();
    let report = l.cp.undo(&plan, false).unwrap();
    assert_same_tree(
        &before,
        &tree(&l.root),
        &format!("after the undo {report:?}"),
    );
}

#[test]
fn spear_undo_of_an_ignore_file_edit_keeps_what_the_file_ignored() {
    let cli = Cli::new();
    write(&cli.ws, ".gitignore", "data/\n");
    write(&cli.ws, "data/important.csv", "years of measurements\n");
    let before = tree(&cli.ws);
    let (v, out) = cli.exec("sed -i '/data/d' .gitignore");
    assert_eq!(v["exit_code"].as_i64(), Some(0), "{}", said(&out));
    let out = cli.spear(&["undo"]);
    assert_same_tree(&before, &tree(&cli.ws), &said(&out));
}

/// A set-id file the session changed comes back with its content and mode, less the set-id
/// bits: an undo never hands out what the sandbox's filter refuses to create.
#[test]
fn an_undo_never_gives_back_a_set_id_bit() {
    let l = lib(Limits::default());
    let tool = write(&l.root, "bin/tool", "#!/bin/sh\necho first\n");
    set_mode(&tool, 0o6755);
    assert_eq!(
        fs::metadata(&tool).unwrap().mode() & 0o7777,
        0o6755,
        "this host keeps set-id bits on a file of one's own"
    );
    call(&l.cp, "s", 1, "c1", || {
        fs::remove_file(&tool).unwrap();
    });
    let (_, report) = undo_clean(&l.cp, "s");
    assert_eq!(
        report.setid_dropped,
        vec!["bin/tool".to_string()],
        "{report:?}"
    );
    assert_eq!(
        fs::read_to_string(&tool).unwrap(),
        "#!/bin/sh\necho first\n"
    );
    assert_eq!(fs::metadata(&tool).unwrap().mode() & 0o7777, 0o755);
}

/// A restore cut off half way (its journal left behind, one of its steps done) is finished by
/// the next undo before that one's own steps: here the cut-off one went back over two turns,
/// the next over the last only, and the tree ends as it was before both.
#[test]
fn an_interrupted_restore_is_finished_by_the_next_undo() {
    let l = lib(Limits::default());
    write(&l.root, "a.txt", "a before\n");
    write(&l.root, "b.txt", "b before\n");
    let before = tree(&l.root);
    call(&l.cp, "s", 1, "c1", || {
        write(&l.root, "a.txt", "a after\n");
        write(&l.root, "new.txt", "made by turn 1\n");
    });
    call(&l.cp, "s", 2, "c2", || {
        write(&l.root, "b.txt", "b after\n");
    });
    let both = l.cp.plan_undo("s", Some(1)).unwrap();
    assert_eq!(both.steps.len(), 3, "{both:?}");
    // The restore that was cut off: its journal written, one step done, then nothing.
    let journal = l.store.join("journal").join("s.json");
    fs::write(
        &journal,
        serde_json::to_vec(&json!({ "steps": both.steps })).unwrap(),
    )
    .unwrap();
    write(&l.root, "b.txt", "b before\n");

    let last = l.cp.plan_undo("s", None).unwrap();
    assert_eq!(last.turns, vec![2], "{last:?}");
    let report = l.cp.undo(&last, false).unwrap();
    assert!(report.resumed, "{report:?}");
    assert!(report.failed.is_empty(), "{report:?}");
    assert!(
        !journal.exists(),
        "the journal is gone once the restore is whole"
    );
    assert_same_tree(&before, &tree(&l.root), "turn 1's changes too");
}
