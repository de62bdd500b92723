//! Issue 19, the version-manager family: a file in the workspace never chooses which program a
//! name runs. With rustup, a read-only `cargo --version` in a workspace whose
//! `rust-toolchain.toml` says `path = "<workspace>/tc"` would run `tc/bin/cargo`; the sandbox
//! pins every version manager it knows, so the proxy refuses instead.

use std::path::{Path, PathBuf};

use crate::support::*;
use spear::harness::primitives::ToolStatus;

/// The pins as a command inside the sandbox sees them, on any host.
#[tokio::test]
async fn the_sandbox_pins_every_version_manager() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let res = run(&r, read_only(), "env").await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    let asdf = format!(
        "ASDF_DEFAULT_TOOL_VERSIONS_FILENAME={}proc/self/spear-no-tool-versions",
        "../".repeat(64)
    );
    for line in [
        "RUSTUP_TOOLCHAIN=stable",
        "RUSTUP_AUTO_INSTALL=0",
        "PYENV_VERSION=system",
        "RBENV_VERSION=system",
        "NODENV_VERSION=system",
        asdf.as_str(),
        "MISE_PARANOID=1",
    ] {
        assert!(
            res.stdout.lines().any(|l| l == line),
            "{line} missing: {res:?}"
        );
    }
}

/// rustup on this host, if the test's user can read it.
fn host_rustup() -> Option<PathBuf> {
    let mut places: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("rustup"))
                .collect()
        })
        .unwrap_or_default();
    if let Some(cargo_home) = std::env::var_os("CARGO_HOME") {
        places.push(Path::new(&cargo_home).join("bin/rustup"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        places.push(Path::new(&home).join(".cargo/bin/rustup"));
    }
    places.into_iter().find(|p| std::fs::File::open(p).is_ok())
}

/// The attack itself, with the host's rustup as the sandbox would meet it (a proxy named
/// `cargo` in a directory handed in read-only). Without rustup on the host there is no proxy to
/// redirect, and the test above is what holds.
#[tokio::test]
async fn a_workspace_toolchain_file_cannot_choose_the_cargo_that_runs() {
    let Some(rustup) = host_rustup() else {
        eprintln!("no readable rustup on this host: the pins are checked by the test above");
        return;
    };
    let (d, ws) = workspace();
    let bin = d.path().join("proxy");
    std::fs::create_dir(&bin).unwrap();
    // rustup acts as the proxy its name says.
    std::fs::copy(&rustup, bin.join("cargo")).unwrap();
    let tc = ws.join("tc/bin");
    std::fs::create_dir_all(&tc).unwrap();
    for name in ["cargo", "rustc"] {
        let p = tc.join(name);
        std::fs::write(&p, "#!/bin/sh\necho WORKSPACE-CARGO-RAN\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(
        ws.join("rust-toolchain.toml"),
        format!("[toolchain]\npath = \"{}\"\n", ws.join("tc").display()),
    )
    .unwrap();
    let r = runner(&ws);
    let mut profile = read_only();
    profile.host_read_paths = vec![bin.clone()];
    let cmd = format!("{} --version", bin.join("cargo").display());
    let res = run(&r, profile.clone(), &cmd).await;
    let all = format!("{}{}", res.stdout, res.stderr);
    assert!(!all.contains("WORKSPACE-CARGO-RAN"), "{res:?}");
    assert!(
        all.contains("not installed"),
        "rustup's own refusal expected: {res:?}"
    );
    // Positive control: the same proxy with the pin taken away does run the workspace's
    // program, so the refusal above is the pin's doing.
    let res = run(&r, profile, &format!("env -u RUSTUP_TOOLCHAIN {cmd}")).await;
    assert!(res.stdout.contains("WORKSPACE-CARGO-RAN"), "{res:?}");
}
