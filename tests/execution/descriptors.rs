//! Descriptors Spear inherited from whatever started it never reach a sandboxed command
//! (issue 8, item 3). A directory descriptor to a host folder, left open without close-on-exec
//! as a shell or `make` may leave one, let a command create files in that folder and walk
//! `..` to `/`; and bwrap's `--userns-block-fd` pipe used to reach every command. Each test
//! lists the command's descriptors with a shell glob (which itself opens one, at the lowest
//! free number) and expects exactly 0, 1, 2 and that one; and it tries to write through the
//! leaked number, judged from the host.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use crate::support::*;
use spear::harness::primitives::ToolStatus;

/// Lists the descriptors open in the command, one number a line, then tries to create a file
/// through descriptor `fd` (as a leaked directory descriptor would allow), then says `ran`.
fn probe(fd: i32) -> String {
    format!(
        "for f in /proc/self/fd/*; do echo \"fd ${{f##*/}}\"; done; \
         touch /proc/self/fd/{fd}/leaked-marker 2>/dev/null; echo ran"
    )
}

/// A directory outside the workspace opened by this process without close-on-exec.
fn inheritable_dir(dir: &Path) -> OwnedFd {
    let fd: OwnedFd = std::fs::File::open(dir).unwrap().into();
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::empty()).unwrap();
    fd
}

fn descriptors(stdout: &str) -> Vec<i32> {
    let mut fds: Vec<i32> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("fd "))
        .map(|n| n.trim().parse().unwrap())
        .collect();
    fds.sort_unstable();
    fds
}

fn assert_only_stdio(stdout: &str, host_dir: &Path) {
    // Positive control: the probe ran to its end inside the sandbox.
    assert!(stdout.contains("ran"), "the probe did not run: {stdout}");
    assert_eq!(
        descriptors(stdout),
        vec![0, 1, 2, 3],
        "only stdio and the glob's own descriptor may be open in the command: {stdout}"
    );
    assert!(
        !host_dir.join("leaked-marker").exists(),
        "a file was created in a host folder through an inherited descriptor"
    );
}

#[tokio::test]
async fn a_command_run_by_the_runner_inherits_no_descriptor_but_stdio() {
    let (_d, ws) = workspace();
    let host = tempfile::tempdir().unwrap();
    let leaked = inheritable_dir(host.path());
    let r = runner(&ws);
    let res = run(&r, writable(), &probe(leaked.as_raw_fd())).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert_only_stdio(&res.stdout, host.path());
}

#[tokio::test]
async fn a_networked_command_inherits_no_descriptor_but_stdio() {
    require_slirp();
    let (_d, ws) = workspace();
    let host = tempfile::tempdir().unwrap();
    let leaked = inheritable_dir(host.path());
    let r = runner(&ws);
    let res = run(&r, networked(), &probe(leaked.as_raw_fd())).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert_only_stdio(&res.stdout, host.path());
}

/// Through the binary, as a person's shell starts it: `spear exec` itself inherits the
/// directory descriptor (and this test's other inheritable ones) and must not pass them on.
#[test]
fn spear_exec_passes_nothing_it_inherited_into_the_sandbox() {
    let (_d, ws) = workspace();
    let host = tempfile::tempdir().unwrap();
    let leaked = inheritable_dir(host.path());
    for network in [false, true] {
        let mut cmd = spear_in(&ws);
        cmd.args(["exec", "--mode", "auto"]);
        if network {
            require_slirp();
            cmd.arg("--network");
        }
        let out = cmd
            .args(["--", &probe(leaked.as_raw_fd())])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "network={network}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_only_stdio(&stdout, host.path());
    }
}
