//! Issue 20: a socket file in the workspace (an ssh `ControlPath`, a process manager's or a
//! language server's socket) is a way to a host service that needs no network. Before every
//! run, read-only or writable, each socket file found in the workspace (git-ignored trees
//! included) has a read-only `/dev/null` bound over it: the command's `connect` is refused and
//! the host's listener sees nothing. Judged on the host: nothing was accepted, and the socket
//! files are still there, still sockets.

use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;

use crate::features::record_feature;
use crate::seccomp_filter::require_python;
use crate::support::*;
use spear::harness::primitives::ToolStatus;

/// Connects to each argument in turn and prints `NAME=connected` or `NAME=refused ERRNO`.
const PROBE: &str = r#"python3 - ctl.sock node_modules/.cache/lsp/server.sock link.sock <<'PY'
import socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p)
        s.sendall(b"reached\n")
        print(p + "=connected")
    except OSError as e:
        print(p + "=refused " + str(e.errno))
    finally:
        s.close()
PY"#;

#[tokio::test]
async fn workspace_sockets_are_unreachable_from_every_run() {
    require_python();
    let (_d, ws) = workspace();
    std::fs::write(ws.join(".gitignore"), "node_modules/\n").unwrap();
    std::fs::create_dir_all(ws.join("node_modules/.cache/lsp")).unwrap();
    let listeners = [
        UnixListener::bind(ws.join("ctl.sock")).unwrap(),
        UnixListener::bind(ws.join("node_modules/.cache/lsp/server.sock")).unwrap(),
    ];
    for l in &listeners {
        l.set_nonblocking(true).unwrap();
    }
    // A link to a covered socket reaches the cover, not the service.
    std::os::unix::fs::symlink("ctl.sock", ws.join("link.sock")).unwrap();
    let r = runner(&ws);
    for (name, profile) in [("read-only", read_only()), ("writable", writable())] {
        let res = run(&r, profile, PROBE).await;
        assert_eq!(res.status, ToolStatus::Ok, "{name}: {res:?}");
        for p in [
            "ctl.sock",
            "node_modules/.cache/lsp/server.sock",
            "link.sock",
        ] {
            assert!(
                res.stdout.contains(&format!("{p}=refused")),
                "{name}: {p} was reachable: {}",
                res.stdout
            );
        }
        for l in &listeners {
            assert!(
                l.accept().is_err(),
                "{name}: the host's listener accepted a connection from the sandbox"
            );
        }
    }
    for p in ["ctl.sock", "node_modules/.cache/lsp/server.sock"] {
        let meta = std::fs::symlink_metadata(ws.join(p)).unwrap();
        assert!(meta.file_type().is_socket(), "{p} is no longer a socket");
    }
    // A socket made after the first runs is found too (its directory changed).
    let late = UnixListener::bind(ws.join("late.sock")).unwrap();
    late.set_nonblocking(true).unwrap();
    let res = run(
        &r,
        read_only(),
        &PROBE.replace("ctl.sock node_modules", "late.sock node_modules"),
    )
    .await;
    assert!(res.stdout.contains("late.sock=refused"), "{}", res.stdout);
    assert!(late.accept().is_err(), "the late socket was reached");
    record_feature("workspace_sockets_covered", "read-only and writable runs");
}
