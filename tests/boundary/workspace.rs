//! `Workspace::resolve` refusal kinds, one table row per case, and the operations on accepted
//! paths under both open strategies (openat2 and the O_NOFOLLOW walk).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use spear::harness::workspace::{
    Access, FsError, OpenStrategy, PathRefusalKind, RootAccess, Workspace,
};

use crate::support::Layout;

fn kind(ws: &Workspace, path: &str, access: Access) -> Result<String, String> {
    match ws.resolve(path, access) {
        Ok(p) => Ok(p.resolved().display().to_string()),
        Err(r) => Err(r.kind.as_str().to_string()),
    }
}

#[test]
fn refusal_kinds_table() {
    let l = Layout::new();
    l.write("project/src/main.rs", "fn main() {}\n");
    l.write("outside/secret.txt", "s\n");
    l.write("notes.txt", "n\n");
    std::fs::create_dir_all(l.base.join("shared")).unwrap();
    l.link("../outside", "project/esc");
    l.link("/etc", "project/abs");
    l.link("b", "project/a");
    l.link("../outside/deep", "project/b");
    l.link("/nonexistent-spear-dir/new", "project/dangling");
    l.link("../../../outside", "project/d1/d2/up");
    l.link("loop2", "project/loop1");
    l.link("loop1", "project/loop2");
    l.link("src", "project/inlink");
    l.link("../other-repo", "project/sib");
    let ws = Workspace::new(&l.project)
        .unwrap()
        .with_root(l.base.join("shared"), RootAccess::ReadOnly)
        .unwrap()
        .with_launch_dir(&l.base)
        .unwrap();
    let p = |rel: &str| l.project.join(rel).display().to_string();
    let abs = |rel: &str| l.base.join(rel).display().to_string();
    let rows: Vec<(String, Access, Result<String, String>)> = vec![
        ("src/main.rs".into(), Access::Write, Ok(p("src/main.rs"))),
        (
            "./src/../src/main.rs".into(),
            Access::Read,
            Ok(p("src/main.rs")),
        ),
        (
            "new/dir/file.txt".into(),
            Access::Write,
            Ok(p("new/dir/file.txt")),
        ),
        ("inlink/main.rs".into(), Access::Write, Ok(p("src/main.rs"))),
        (p("src/main.rs"), Access::Write, Ok(p("src/main.rs"))),
        ("".into(), Access::Read, Err("invalid".into())),
        ("..".into(), Access::Read, Err("traversal".into())),
        (
            "../../etc/passwd".into(),
            Access::Read,
            Err("traversal".into()),
        ),
        ("src/../../..".into(), Access::Read, Err("traversal".into())),
        (
            "../other-repo/src/lib.rs".into(),
            Access::Write,
            Err("sibling_target".into()),
        ),
        (
            abs("other-repo/x"),
            Access::Read,
            Err("sibling_target".into()),
        ),
        (
            "/etc/passwd".into(),
            Access::Read,
            Err("host_absolute".into()),
        ),
        (abs("notes.txt"), Access::Read, Err("host_absolute".into())),
        (
            "esc/secret.txt".into(),
            Access::Read,
            Err("symlink_escape".into()),
        ),
        (
            "esc/new.txt".into(),
            Access::Write,
            Err("symlink_escape".into()),
        ),
        ("esc/..".into(), Access::Read, Err("symlink_escape".into())),
        (
            "abs/passwd".into(),
            Access::Read,
            Err("symlink_escape".into()),
        ),
        ("a/x".into(), Access::Write, Err("symlink_escape".into())),
        (
            "dangling".into(),
            Access::Write,
            Err("symlink_escape".into()),
        ),
        (
            "d1/d2/up/secret.txt".into(),
            Access::Read,
            Err("symlink_escape".into()),
        ),
        ("sib/x".into(), Access::Read, Err("symlink_escape".into())),
        ("loop1".into(), Access::Read, Err("symlink_loop".into())),
        ("loop1/x".into(), Access::Write, Err("symlink_loop".into())),
        (abs("shared/x"), Access::Read, Ok(abs("shared/x"))),
        ("../shared/x".into(), Access::Read, Ok(abs("shared/x"))),
        (abs("shared/x"), Access::Write, Err("read_only_root".into())),
    ];
    for (path, access, want) in rows {
        assert_eq!(
            kind(&ws, &path, access),
            want,
            "path {path:?} for {access:?}"
        );
    }
}

#[test]
fn refusals_name_what_matters() {
    let l = Layout::new();
    let ws = Workspace::new(&l.project)
        .unwrap()
        .with_launch_dir(&l.base)
        .unwrap();
    let r = ws
        .resolve("../other-repo/src/lib.rs", Access::Write)
        .unwrap_err();
    assert_eq!(
        r.kind,
        PathRefusalKind::SiblingTarget {
            sibling: "other-repo".into()
        }
    );
    assert!(r.reason.contains("other-repo"), "{}", r.reason);
    assert_eq!(r.written, Path::new("../other-repo/src/lib.rs"));
    let launch = ws
        .resolve(l.base.join("notes.txt"), Access::Read)
        .unwrap_err();
    assert!(launch.reason.contains("launched from"), "{}", launch.reason);
    l.link("../outside", "project/esc");
    let esc = ws.resolve("esc/x", Access::Read).unwrap_err();
    assert_eq!(esc.resolved.as_deref(), Some(l.outside.join("x").as_path()));
    assert!(esc.reason.contains("outside"), "{}", esc.reason);
}

#[test]
fn launch_dir_is_read_only_and_absolute_only_when_allowed() {
    let l = Layout::new();
    l.write("notes.txt", "n\n");
    let ws = Workspace::new(&l.project)
        .unwrap()
        .with_launch_dir(&l.base)
        .unwrap()
        .allow_launch_dir()
        .unwrap();
    let notes = l.base.join("notes.txt");
    let got = ws.resolve(&notes, Access::Read).unwrap();
    assert_eq!(ws.read(&got).unwrap(), b"n\n");
    let w = ws.resolve(&notes, Access::Write).unwrap_err();
    assert_eq!(w.kind, PathRefusalKind::ReadOnlyRoot);
    let rel = ws.resolve("../notes.txt", Access::Read).unwrap_err();
    assert_eq!(rel.kind, PathRefusalKind::Traversal);
}

fn both_strategies(l: &Layout) -> Vec<Workspace> {
    [OpenStrategy::Auto, OpenStrategy::NoFollowWalk]
        .into_iter()
        .map(|s| Workspace::new(&l.project).unwrap().with_open_strategy(s))
        .collect()
}

#[test]
fn atomic_write_creates_parents_keeps_mode_and_leaves_no_temp_files() {
    let l = Layout::new();
    for (i, ws) in both_strategies(&l).into_iter().enumerate() {
        let rel = format!("d{i}/sub/run.sh");
        let p = ws.resolve(&rel, Access::Write).unwrap();
        assert!(!p.exists());
        let out = ws.write_atomic(&p, b"#!/bin/sh\n").unwrap();
        assert!(out.created && out.bytes == 10);
        let abs = l.project.join(&rel);
        std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(0o751)).unwrap();
        let p = ws.resolve(&rel, Access::Write).unwrap();
        let out = ws.write_atomic(&p, b"#!/bin/sh\necho hi\n").unwrap();
        assert!(!out.created);
        let meta = std::fs::metadata(&abs).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o751);
        assert_eq!(ws.read(&p).unwrap(), b"#!/bin/sh\necho hi\n");
        let leftovers: Vec<_> = std::fs::read_dir(abs.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
        ws.delete(&p).unwrap();
        assert!(!abs.exists());
    }
}

#[test]
fn write_needs_a_write_resolution_and_delete_refuses_directories() {
    let l = Layout::new();
    l.write("project/f.txt", "x");
    std::fs::create_dir_all(l.project.join("dir")).unwrap();
    let ws = Workspace::new(&l.project).unwrap();
    let read = ws.resolve("f.txt", Access::Read).unwrap();
    assert!(matches!(
        ws.write_atomic(&read, b"y"),
        Err(FsError::NotResolvedForWrite(_))
    ));
    let dir = ws.resolve("dir", Access::Write).unwrap();
    assert!(matches!(ws.delete(&dir), Err(FsError::NotAFile(_))));
    let gone = ws.resolve("gone.txt", Access::Write).unwrap();
    assert!(matches!(ws.delete(&gone), Err(FsError::NotFound(_))));
}

#[test]
fn a_link_swapped_in_after_resolve_cannot_redirect_the_operation() {
    let l = Layout::new();
    for (i, ws) in both_strategies(&l).into_iter().enumerate() {
        let dir = format!("swap{i}");
        l.write(&format!("project/{dir}/f.txt"), "inside");
        l.write("outside/f.txt", "outside");
        let write = ws.resolve(format!("{dir}/f.txt"), Access::Write).unwrap();
        let read = ws.resolve(format!("{dir}/f.txt"), Access::Read).unwrap();
        // The directory becomes a link to outside between check and use.
        std::fs::remove_dir_all(l.project.join(&dir)).unwrap();
        l.link(&l.outside, &format!("project/{dir}"));
        let w = ws.write_atomic(&write, b"pwned");
        assert!(matches!(w, Err(FsError::Escaped(_))), "{i}: {w:?}");
        assert!(matches!(ws.read(&read), Err(FsError::Escaped(_))), "{i}");
        assert!(matches!(ws.delete(&write), Err(FsError::Escaped(_))), "{i}");
        assert_eq!(
            std::fs::read_to_string(l.outside.join("f.txt")).unwrap(),
            "outside"
        );
        // The file itself becomes a link: the write replaces the link, never follows it.
        std::fs::remove_file(l.project.join(&dir)).unwrap();
        l.write(&format!("project/{dir}/g.txt"), "inside");
        let g = ws.resolve(format!("{dir}/g.txt"), Access::Write).unwrap();
        std::fs::remove_file(l.project.join(&dir).join("g.txt")).unwrap();
        l.link(l.outside.join("f.txt"), &format!("project/{dir}/g.txt"));
        assert!(matches!(
            ws.write_atomic(&g, b"pwned"),
            Err(FsError::Escaped(_))
        ));
        assert_eq!(
            std::fs::read_to_string(l.outside.join("f.txt")).unwrap(),
            "outside"
        );
    }
}
