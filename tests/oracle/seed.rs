//! The pristine tree each traced command gets a fresh copy of, seeded so that conditional
//! branches fire: files matching the common globs, a directory tree, names that begin with `-`,
//! a name with a space, symlinks, a git repository with a commit, a config, a tag, a change in
//! the work tree, an untracked file and an executable hook.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const FILES: &[(&str, &str)] = &[
    ("a.txt", "alpha\nbeta\ngamma\nTODO: one\n"),
    ("b.txt", "beta\ndelta\n"),
    ("empty.txt", ""),
    ("notes with space.md", "# Notes\n\nsome text\n"),
    ("README.md", "# Project\n\nTODO: write\n"),
    ("data.json", "{\"name\": \"x\", \"list\": [1, 2, 3]}\n"),
    ("data.csv", "a,b,c\n1,2,3\n4,5,6\n"),
    ("app.log", "INFO start\nWARN slow\nERROR failed\n"),
    ("main.py", "import os\nprint('hi')\n"),
    ("script.sh", "#!/bin/sh\necho hi\n"),
    ("lib.rs", "pub fn f() {}\n"),
    (
        "Cargo.toml",
        "[package]\nname = \"seed\"\nversion = \"0.1.0\"\n",
    ),
    ("Makefile", "all:\n\ttrue\n"),
    ("package.json", "{\"name\": \"seed\"}\n"),
    (".gitignore", "target/\n*.log\n"),
    (".hidden", "h\n"),
    (
        "src/main.rs",
        "fn main() {\n    println!(\"hi\"); // TODO\n}\n",
    ),
    ("src/lib.rs", "pub mod util;\n"),
    ("src/util/mod.rs", "pub fn u() {}\n"),
    ("docs/guide.md", "Guide\n"),
    ("target/debug/out", "built\n"),
    ("-n", "dash n\n"),
    ("-rf", "dash rf\n"),
    ("--help", "dash dash help\n"),
    ("-e", "dash e\n"),
    ("--", "two dashes\n"),
];

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .output()
        .unwrap_or_else(|e| panic!("git is needed to build the oracle's seed: {e}"));
    assert!(
        out.status.success(),
        "git {args:?} failed building the seed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the seed at `root` (which must not exist).
pub fn build(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    for (name, body) in FILES {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
    }
    std::fs::write(root.join("bin.dat"), [0u8, 1, 2, 255, 254, 0, 10]).unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("etc-link")).unwrap();
    std::fs::set_permissions(
        root.join("script.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    // Archives for `tar -t`: one plain, one that tar lists through `gzip -d`.
    for (name, flags) in [("a.tar", "-cf"), ("a.tgz", "-czf")] {
        let out = Command::new("tar")
            .args([flags, name, "a.txt", "src"])
            .current_dir(root)
            .output()
            .unwrap_or_else(|e| panic!("tar is needed to build the oracle's seed: {e}"));
        assert!(
            out.status.success(),
            "tar {flags} {name} failed building the seed"
        );
    }
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["config", "user.name", "Seed"]);
    git(root, &["config", "user.email", "seed@example.invalid"]);
    git(root, &["config", "core.autocrlf", "false"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "seed"]);
    git(root, &["tag", "v1"]);
    git(root, &["branch", "feature"]);
    // A change, an untracked file, and a hook that runs whenever git writes the index.
    std::fs::write(root.join("a.txt"), "alpha\nBETA\ngamma\n").unwrap();
    std::fs::write(root.join("untracked.txt"), "new\n").unwrap();
    let hook = root.join(".git/hooks/post-index-change");
    std::fs::write(
        &hook,
        "#!/bin/sh\n: > \"$(git rev-parse --show-toplevel)/hook-ran\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}
