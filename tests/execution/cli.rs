//! `spear exec` and `spear doctor` from the outside.

use assert_cmd::Command;

use crate::support::{require_bwrap, workspace};

/// The spear binary: Cargo's, or a copy named by `SPEAR_BIN` (scripts/test-unprivileged).
fn spear_bin() -> std::path::PathBuf {
    std::env::var_os("SPEAR_BIN")
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_spear").into())
}

fn spear(dir: &std::path::Path) -> Command {
    require_bwrap();
    let mut c = Command::new(spear_bin());
    c.current_dir(dir);
    c
}

#[test]
fn exec_exit_codes_follow_the_design() {
    let (_d, ws) = workspace();
    spear(&ws)
        .args(["exec", "--mode", "auto", "--", "exit 3"])
        .assert()
        .code(3);
    spear(&ws)
        .args([
            "exec",
            "--mode",
            "auto",
            "--timeout",
            "0.3",
            "--",
            "sleep 5",
        ])
        .assert()
        .code(124);
    spear(&ws)
        .args(["exec", "--mode", "safe", "--", "touch x"])
        .assert()
        .code(126);
    spear(&ws)
        .args(["exec", "--mode", "auto", "--", "no-such-command-x"])
        .assert()
        .code(127);
    // ASK without a terminal (setsid: no controlling tty): cancelled, never a silent yes.
    let bin = spear_bin();
    let status = std::process::Command::new("setsid")
        .arg("-w")
        .arg(bin)
        .args(["exec", "--mode", "ask", "--", "touch x"])
        .current_dir(&ws)
        .stdin(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(126));
    assert!(!ws.join("x").exists());
}

#[test]
fn exec_json_prints_the_result_and_the_class() {
    let (_d, ws) = workspace();
    let out = spear(&ws)
        .args(["exec", "--mode", "auto", "--json", "--", "echo", "a b"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["stdout"], "a b\n");
    assert!(v["class"].is_string());
}

#[test]
fn doctor_tells_the_truth_about_this_machine() {
    let (_d, ws) = workspace();
    let out = spear(&ws).args(["doctor", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_name = |n: &str| {
        v["mechanisms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mechanism"] == n)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_name("bwrap")["status"], "works", "{v}");
    assert_eq!(by_name("pidfd")["status"], "works", "{v}");
    let pid1 = std::fs::read_to_string("/proc/1/comm").unwrap();
    if pid1.trim() != "systemd" {
        let cg = by_name("cgroups_systemd");
        assert_eq!(cg["status"], "missing", "{v}");
        assert!(
            cg["detail"].as_str().unwrap().contains("systemd as PID 1"),
            "{v}"
        );
    }
}
