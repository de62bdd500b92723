//! Issue 8, item 7: `Workspace` opens only regular files. A FIFO or socket is refused by its
//! type, under both open strategies, without blocking; and a FIFO swapped in for a file while it
//! is being opened cannot block the read either.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use spear::harness::workspace::{Access, FsError, OpenStrategy, Workspace};

use crate::support::Layout;

fn mkfifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Run `f` on another thread and fail when it does not return in time (instead of hanging).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} blocked on a special file"))
}

fn kind_of(e: &FsError) -> Option<&'static str> {
    match e {
        FsError::NotRegular { kind, .. } => Some(kind),
        _ => None,
    }
}

#[test]
fn reads_and_writes_refuse_fifos_and_sockets_under_both_strategies() {
    let l = Layout::new();
    mkfifo(&l.project.join("pipe"));
    drop(std::os::unix::net::UnixListener::bind(l.project.join("sock")).unwrap());
    l.write("project/plain.txt", "text");
    for strategy in [OpenStrategy::Auto, OpenStrategy::NoFollowWalk] {
        let ws = Workspace::new(&l.project)
            .unwrap()
            .with_open_strategy(strategy);
        let ws = Arc::new(ws);
        for (name, kind) in [
            ("pipe", "a FIFO (named pipe)"),
            ("sock", "a Unix domain socket"),
        ] {
            let w = Arc::clone(&ws);
            let (read, prefix, write) = within(name, move || {
                let r = w.resolve(name, Access::Read).unwrap();
                let wp = w.resolve(name, Access::Write).unwrap();
                (
                    w.read(&r).unwrap_err(),
                    w.read_prefix(&r, 16).unwrap_err(),
                    w.write_atomic(&wp, b"x").unwrap_err(),
                )
            });
            for e in [&read, &prefix, &write] {
                assert_eq!(kind_of(e), Some(kind), "{strategy:?} {name}: {e}");
            }
            assert_eq!(
                read.to_string(),
                format!(
                    "`{name}` is {kind}, not a regular file; Spear reads and writes regular files only"
                )
            );
        }
        // The special files are still what they were; the plain file reads.
        assert!(
            std::fs::symlink_metadata(l.project.join("pipe"))
                .unwrap()
                .file_type()
                .is_fifo()
        );
        let p = ws.resolve("plain.txt", Access::Read).unwrap();
        assert_eq!(ws.read(&p).unwrap(), b"text");
    }
}

/// A thread swaps a regular file and a FIFO (RENAME_EXCHANGE, so the name never goes missing)
/// while reads go on: each read gives the file's content or refuses the FIFO, none blocks, and
/// both outcomes must be seen for the race to count.
#[test]
fn a_fifo_swapped_in_during_the_open_never_blocks_a_read() {
    let l = Layout::new();
    let file = l.write("project/f", "content");
    let other = l.project.join("f.swap");
    mkfifo(&other);
    let ws = Arc::new(Workspace::new(&l.project).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &file,
                    rustix::fs::CWD,
                    &other,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
            }
        })
    };
    let w = Arc::clone(&ws);
    let (read, refused) = within("reads during the swap", move || {
        let (mut read, mut refused) = (0u32, 0u32);
        let deadline = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < deadline || read == 0 || refused == 0 {
            let Ok(p) = w.resolve("f", Access::Read) else {
                continue;
            };
            match w.read(&p) {
                Ok(bytes) => {
                    assert_eq!(bytes, b"content");
                    read += 1;
                }
                Err(FsError::NotRegular { .. } | FsError::Changed(_) | FsError::NotFound(_)) => {
                    refused += 1
                }
                Err(e) => panic!("unexpected: {e}"),
            }
        }
        (read, refused)
    });
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(read > 0 && refused > 0, "read {read}, refused {refused}");
}
