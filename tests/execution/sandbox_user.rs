//! Issue 20: who the sandbox's processes are on the host. An ordinary user's sandbox runs as
//! that user. A root Spear's runs as an unprivileged uid of its own, with the workspace bound
//! through a mount idmapped to it: a file only root may read stays unreadable, the files the
//! command makes are the workspace owner's on disk, git inside sees its own repository, and a
//! command still reopens its own output. Where this host cannot idmap the workspace, a root
//! Spear refuses commands and says why; `[sandbox] root_uid = "host"` is the opt-out.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::features::record_feature;
use crate::support::*;
use spear::harness::command_policy::ExecutionProfile;
use spear::harness::command_runner::CommandRunner;
use spear::harness::primitives::{Capability, CapabilitySet, ToolStatus};
use spear::harness::sandbox::root_uid;

/// The uid the sandbox must run as here, or `None` when a root Spear must refuse (this host
/// cannot idmap `ws`).
fn expected_uid(ws: &Path) -> Option<u32> {
    let me = rustix::process::geteuid();
    if !me.is_root() {
        return Some(me.as_raw());
    }
    let ids = root_uid::choose_for_host().expect("root gets a sandbox uid on this host");
    root_uid::probe_idmapped_workspace(ws, ids)
        .ok()
        .map(|()| ids.uid)
}

fn owner(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().uid()
}

#[tokio::test]
async fn the_sandbox_runs_as_its_own_uid_and_leaves_files_the_owners() {
    let (_d, ws) = workspace();
    std::fs::write(ws.join("mine.txt"), "x").unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(git.success());
    let r = runner(&ws);
    let script = "id -u; stat -c 'mine=%u' mine.txt; touch made.txt; mkdir made.d; \
                  git status --porcelain >/dev/null && echo git=ok; \
                  echo reopened-out >/dev/stdout; echo reopened-err >/dev/stderr";
    let res = run(&r, writable(), script).await;
    let Some(uid) = expected_uid(&ws) else {
        assert_failed_saying(&res, "must not run as the host's root");
        record_feature(
            "sandbox_user",
            "root refused: the workspace cannot be idmapped here",
        );
        return;
    };
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    let mut lines = res.stdout.lines();
    assert_eq!(lines.next(), Some(uid.to_string().as_str()), "{res:?}");
    // The owner's file is the sandbox uid's inside.
    assert_eq!(
        lines.next(),
        Some(format!("mine={uid}").as_str()),
        "{res:?}"
    );
    assert!(
        res.stdout.contains("git=ok"),
        "git refused its repository: {res:?}"
    );
    assert!(res.stdout.contains("reopened-out"), "{res:?}");
    assert!(res.stderr.contains("reopened-err"), "{res:?}");
    // On disk, what the command made is the workspace owner's (root's, for a root Spear).
    let ws_owner = owner(&ws);
    for made in ["made.txt", "made.d"] {
        assert_eq!(owner(&ws.join(made)), ws_owner, "{made}");
    }
    record_feature(
        "sandbox_user",
        if rustix::process::geteuid().is_root() {
            "root: an unprivileged uid with an idmapped workspace"
        } else {
            "the user's own uid"
        },
    );
}

/// A host path bound read-only keeps its permissions: a root Spear's sandbox cannot read a
/// file only root may read (the issue's `/etc/default/cacerts`), though it reads the file
/// beside it; an ordinary user's reads what that user can.
#[tokio::test]
async fn a_file_only_root_may_read_stays_unread() {
    let (d, ws) = workspace();
    let host = d.path().canonicalize().unwrap().join("host-dir");
    std::fs::create_dir(&host).unwrap();
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(host.join("private"), "PRIVATE-CONTENT").unwrap();
    std::fs::set_permissions(host.join("private"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(host.join("public"), "PUBLIC-CONTENT").unwrap();
    std::fs::set_permissions(host.join("public"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = runner(&ws);
    let profile = ExecutionProfile::from_granted(
        CapabilitySet::of(&[Capability::WorkspaceRead]),
        vec![host.clone()],
    );
    let script = format!(
        "cat {0}/public; echo; cat {0}/private; echo; echo done",
        host.display()
    );
    let res = run(&r, profile, &script).await;
    let Some(_) = expected_uid(&ws) else {
        assert_failed_saying(&res, "must not run as the host's root");
        return;
    };
    assert!(res.stdout.contains("PUBLIC-CONTENT"), "{res:?}");
    assert!(res.stdout.contains("done"), "{res:?}");
    if rustix::process::geteuid().is_root() {
        assert!(
            !res.stdout.contains("PRIVATE-CONTENT"),
            "a root-only file was read: {res:?}"
        );
        assert!(res.stderr.contains("Permission denied"), "{res:?}");
    } else {
        // The user's own file: the sandbox reads what the user can.
        assert!(res.stdout.contains("PRIVATE-CONTENT"), "{res:?}");
    }
}

/// The opt-out: a root Spear with `root_uid = "host"` runs commands as the host's root.
/// For an ordinary user the setting changes nothing.
#[tokio::test]
async fn root_uid_host_runs_commands_as_the_hosts_root() {
    let (_d, ws) = workspace();
    let mut config = config(&ws);
    config.root_uid_host = true;
    let r = CommandRunner::new(config).unwrap();
    let res = run(&r, read_only(), "id -u").await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    let me = rustix::process::geteuid().as_raw();
    assert_eq!(res.stdout.trim(), me.to_string(), "{res:?}");
}
