//! Issue 8, item 7: a FIFO, a Unix socket or a device node in the workspace must not hang or
//! trick a file tool. Each tool is called through the router on a real FIFO (`mkfifo`), a real
//! socket and, where this host lets the test create one, a character device; every call runs
//! under a watchdog, so a tool that blocks fails the test instead of hanging the suite.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use serde_json::{Value, json};
use spear::harness::primitives::{ExecutionMode::Auto, ToolStatus};
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::router::ToolRouter;

use crate::support::*;

/// Long enough for a loaded machine, short enough that a hang is reported, not waited out.
const WATCHDOG: Duration = Duration::from_secs(20);

pub fn mkfifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(
        rc,
        0,
        "mkfifo {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    );
}

pub fn mksock(p: &Path) {
    // Binding creates the socket file; it stays after the listener is dropped.
    drop(std::os::unix::net::UnixListener::bind(p).unwrap());
    assert!(
        std::fs::symlink_metadata(p)
            .unwrap()
            .file_type()
            .is_socket()
    );
}

/// A character device with /dev/null's numbers, or `false` when this host refuses mknod
/// (an ordinary user, or a container without CAP_MKNOD).
fn mkchardev(p: &Path) -> bool {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path; mknod only creates a node.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM), "mknod: {e}");
        assert!(
            !rustix::process::geteuid().is_root() || !has_cap_mknod(),
            "root with CAP_MKNOD could not create a device node: {e}"
        );
        return false;
    }
    true
}

fn has_cap_mknod() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
        .unwrap();
    const CAP_MKNOD: u32 = 27;
    eff & (1 << CAP_MKNOD) != 0
}

/// Run `f` on another thread; fail (not hang) when it does not return in time.
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(WATCHDOG) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not return within {WATCHDOG:?}: it blocked on a special file"),
    }
}

fn guarded(r: &Arc<ToolRouter>, tool: &str, args: Value) -> ToolResultEnvelope {
    let r = Arc::clone(r);
    let what = format!("{tool} {args}");
    let tool = tool.to_string();
    within(&what, move || {
        let mut t = turn(&r, Auto);
        call(&r, &mut t, &tool, args)
    })
}

/// The special files of one fixture: (name, kind as the reason says it).
fn specials(f: &Fixture) -> Vec<(&'static str, &'static str)> {
    mkfifo(&f.project.join("pipe"));
    mksock(&f.project.join("sock"));
    let mut v = vec![
        ("pipe", "a FIFO (named pipe)"),
        ("sock", "a Unix domain socket"),
    ];
    if mkchardev(&f.project.join("dev")) {
        v.push(("dev", "a character device"));
    }
    v
}

fn assert_refused(env: &ToolResultEnvelope, name: &str, kind: &str) {
    assert_eq!(env.status, ToolStatus::InvalidPath, "{name}: {env:?}");
    let reason = env.reason.as_deref().unwrap_or("");
    assert!(
        reason.contains(&format!("`{name}` is {kind}, not a regular file")),
        "{name}: {reason}"
    );
}

#[test]
fn read_file_refuses_special_files_by_their_type_without_blocking() {
    let f = Fixture::new();
    f.write("ok.txt", "fine\n");
    let kinds = specials(&f);
    let r = Arc::new(f.router(Box::new(Recorder::default())));
    let control = guarded(&r, "read_file", json!({"path": "ok.txt"}));
    assert_eq!(control.status, ToolStatus::Ok, "{control:?}");
    assert!(control.preview.contains("fine"));
    for (name, kind) in kinds {
        assert_refused(&guarded(&r, "read_file", json!({"path": name})), name, kind);
    }
    // A link to a FIFO is judged by what it reaches.
    std::os::unix::fs::symlink("pipe", f.project.join("link")).unwrap();
    assert_refused(
        &guarded(&r, "read_file", json!({"path": "link"})),
        "link",
        "a FIFO (named pipe)",
    );
}

#[test]
fn patch_write_and_delete_refuse_special_files_and_leave_them_as_they_were() {
    let f = Fixture::new();
    let kinds = specials(&f);
    let r = Arc::new(f.router(Box::new(Recorder::default())));
    for (name, kind) in kinds {
        let patch = json!({"path": name, "edits": [{"old": "a", "new": "b"}]});
        assert_refused(&guarded(&r, "patch", patch), name, kind);
        let write = json!({"path": name, "content": "replaced"});
        assert_refused(&guarded(&r, "write_file", write), name, kind);
        assert_refused(
            &guarded(&r, "delete_file", json!({"path": name})),
            name,
            kind,
        );
        let t = std::fs::symlink_metadata(f.project.join(name))
            .unwrap()
            .file_type();
        assert!(
            t.is_fifo() || t.is_socket() || t.is_char_device(),
            "{name} was replaced or removed: {t:?}"
        );
    }
    // Positive control: the same calls on a regular file do their work.
    f.write("plain.txt", "a\n");
    let env = guarded(
        &r,
        "patch",
        json!({"path": "plain.txt", "edits": [{"old": "a", "new": "b"}]}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert_eq!(f.read("plain.txt"), b"b\n");
}

#[test]
fn search_files_skips_special_files_and_says_how_many() {
    let f = Fixture::new();
    f.write("a.txt", "needle\n");
    f.write("sub/b.txt", "needle\n");
    let n = specials(&f).len();
    mkfifo(&f.project.join("sub/pipe2"));
    let r = Arc::new(f.router(Box::new(Recorder::default())));
    let env = guarded(&r, "search_files", json!({"pattern": "needle"}));
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(env.preview.contains("a.txt:1: needle"), "{}", env.preview);
    assert!(
        env.preview.contains("sub/b.txt:1: needle"),
        "{}",
        env.preview
    );
    assert!(
        env.preview
            .contains(&format!("[skipped {} special files", n + 1)),
        "{}",
        env.preview
    );
    assert!(env.preview.contains("`sub/pipe2` (a FIFO (named pipe))"));
    // The FIFO itself given as the path: skipped and said, not opened.
    let env = guarded(&r, "search_files", json!({"pattern": "x", "path": "pipe"}));
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(
        env.preview.contains("[skipped 1 special files"),
        "{}",
        env.preview
    );
}

/// The `ignore` crate opens `.gitignore` and `.ignore` with a blocking open: a FIFO under either
/// name stopped search_files forever.
#[test]
fn search_files_never_opens_an_ignore_file_that_is_a_fifo() {
    let f = Fixture::new();
    f.write("a.txt", "needle\n");
    f.write("deep/c.txt", "needle\n");
    mkfifo(&f.project.join("deep/.ignore"));
    let r = Arc::new(f.router(Box::new(Recorder::default())));
    let env = guarded(&r, "search_files", json!({"pattern": "needle"}));
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(env.preview.contains("a.txt:1: needle"), "{}", env.preview);
    assert!(
        env.preview.contains(
            "[skipped the directory `deep`: its ignore file is a FIFO (named pipe), not a regular file]"
        ),
        "{}",
        env.preview
    );
    // At the root, no ignore file can be read safely: the search goes on without the rules.
    mkfifo(&f.project.join(".gitignore"));
    let env = guarded(&r, "search_files", json!({"pattern": "needle"}));
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(
        env.preview.contains("deep/c.txt:1: needle"),
        "{}",
        env.preview
    );
    assert!(
        env.preview.contains(
            "[.gitignore rules were not applied: `.gitignore` is a FIFO (named pipe), not a regular file]"
        ),
        "{}",
        env.preview
    );
}

/// The target policy reads a file's first bytes for a "generated" header before any write is
/// allowed; on a FIFO that read blocked the gate of a terminal command writing to it.
#[test]
fn the_write_gate_does_not_open_a_fifo_a_command_writes_to() {
    let f = Fixture::new();
    mkfifo(&f.project.join("pipe"));
    let rec = Recorder::default();
    let r = Arc::new(f.router(Box::new(rec.clone())));
    let env = guarded(&r, "terminal", json!({"command": "echo hi > pipe"}));
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert_eq!(
        rec.ran.lock().unwrap().len(),
        1,
        "the command reached the executor"
    );
}

#[test]
fn spear_knowledge_skips_a_docs_directory_whose_ignore_file_is_a_fifo() {
    let f = Fixture::new();
    f.write("docs/setup.md", "# Setup\nrun the installer\n");
    f.write("docs/inner/more.md", "# More\ninstaller details\n");
    mkfifo(&f.project.join("docs/inner/.gitignore"));
    mkfifo(&f.project.join("docs/pipe.md"));
    let r = Arc::new(f.router(Box::new(Recorder::default())));
    let env = guarded(
        &r,
        "terminal",
        json!({"command": "spear-knowledge search installer"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(env.preview.contains("docs/setup.md:1"), "{}", env.preview);
}
