//! `spear exec` and `spear doctor` from the outside.

use assert_cmd::Command;

use crate::features::{host_has_openat2, pid1_name, systemd_is_pid1};
use crate::support::{spear_bin, spear_in, state_dir, workspace};

pub(crate) fn spear(dir: &std::path::Path) -> Command {
    spear_in(dir)
}

/// The audit records `spear exec` left for the workspace, as JSON values.
fn audit_records(ws: &std::path::Path) -> Vec<serde_json::Value> {
    let out = spear(ws).args(["audit", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn exec_audits_every_attempt_and_refusal() {
    let (_d, ws) = workspace();
    spear(&ws)
        .args(["exec", "--mode", "auto", "--", "echo hi > a.txt"])
        .assert()
        .code(0);
    // Positive control for the refusals below: an allowed write lands.
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "hi\n");
    spear(&ws)
        .args(["exec", "--mode", "safe", "--", "touch b"])
        .assert()
        .code(126);
    std::fs::create_dir(ws.join("vendor")).unwrap();
    spear(&ws)
        .args(["exec", "--mode", "auto", "--", "echo x > vendor/lib.rs"])
        .assert()
        .code(126);
    assert!(!ws.join("vendor/lib.rs").exists());
    let records = audit_records(&ws);
    assert_eq!(records.len(), 3, "{records:?}");
    assert_eq!(records[0]["decision"], "allowed");
    assert_eq!(records[0]["status"], "ok");
    assert_eq!(records[0]["class"], "WORKSPACE_MUTATING");
    assert_eq!(records[1]["decision"], "denied");
    assert_eq!(records[2]["decision"], "refused");
    assert_eq!(records[2]["refusal_rule"], "third_party");
    // Metadata only: the output of the first command is nowhere in the log.
    let log = std::fs::read_dir(state_dir(&ws).join("spear/audit"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect::<String>();
    assert!(!log.contains("\"hi\\n\""));
    spear(&ws).args(["audit", "--verify"]).assert().code(0);
}

#[test]
fn protected_directories_stay_read_only_when_the_classifier_cannot_see_the_write() {
    let (_d, ws) = workspace();
    std::fs::create_dir_all(ws.join("src/generated")).unwrap();
    std::fs::write(ws.join("src/generated/api.rs"), "// generated\n").unwrap();
    // The target is computed at run time, so only the sandbox can stop it.
    spear(&ws)
        .args([
            "exec",
            "--mode",
            "auto",
            "--",
            "echo ran > ran.txt; d=src/gen; echo x > ${d}erated/api.rs; echo y > ${d}erated/new.rs",
        ])
        .assert()
        .failure();
    // Positive control: the command ran in a writable sandbox.
    assert_eq!(
        std::fs::read_to_string(ws.join("ran.txt")).unwrap(),
        "ran\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("src/generated/api.rs")).unwrap(),
        "// generated\n"
    );
    assert!(!ws.join("src/generated/new.rs").exists());
}

#[test]
fn exec_refuses_to_run_without_an_audit_log_outside_the_workspace() {
    let (_d, ws) = workspace();
    spear(&ws)
        .env("XDG_STATE_HOME", ws.join(".state"))
        .args(["exec", "--mode", "auto", "--", "touch marker"])
        .assert()
        .failure();
    assert!(!ws.join("marker").exists());
    // Positive control: with the audit log beside the workspace the same command runs.
    spear(&ws)
        .args(["exec", "--mode", "auto", "--", "touch marker"])
        .assert()
        .code(0);
    assert!(ws.join("marker").exists());
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
    // Positive control: the same command, allowed, does create it.
    spear(&ws)
        .args(["exec", "--mode", "auto", "--", "touch x"])
        .assert()
        .code(0);
    assert!(ws.join("x").exists());
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

/// The check named `name` in `spear doctor --json` output.
pub(crate) fn doctor_check(v: &serde_json::Value, name: &str) -> serde_json::Value {
    v["mechanisms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mechanism"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("doctor has no {name} check: {v}"))
}

/// What `cgroups_systemd` must say on this host: `Ok` when systemd scopes can be made here, or
/// the words the refusal must contain. Worked out from the host, apart from Spear's check: root
/// asks the system manager (systemd as PID 1), an ordinary user their own user manager, which
/// only has to be reachable.
fn expected_cgroups_systemd() -> Result<(), &'static str> {
    let systemd_run = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join("systemd-run").is_file());
    let manager = if rustix::process::geteuid().is_root() {
        (systemd_is_pid1() && std::path::Path::new("/run/systemd/system").is_dir())
            .then_some(())
            .ok_or("systemd as PID 1")
    } else {
        let uid = rustix::process::getuid().as_raw();
        let runtime = std::env::var_os("XDG_RUNTIME_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| format!("/run/user/{uid}").into());
        (runtime.join("systemd/private").exists() || runtime.join("bus").exists())
            .then_some(())
            .ok_or("systemd user manager")
    };
    manager?;
    if systemd_run {
        Ok(())
    } else {
        Err("systemd-run is not installed")
    }
}

#[test]
fn doctor_tells_the_truth_about_this_machine() {
    let (_d, ws) = workspace();
    let out = spear(&ws).args(["doctor", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_name = |n: &str| doctor_check(&v, n);
    assert_eq!(by_name("bwrap")["status"], "works", "{v}");
    assert_eq!(by_name("pidfd")["status"], "works", "{v}");
    let cg = by_name("cgroups_systemd");
    match expected_cgroups_systemd() {
        Ok(()) => assert_eq!(cg["status"], "works", "PID 1 is {}: {v}", pid1_name()),
        Err(why) => {
            assert_eq!(cg["status"], "missing", "{v}");
            assert!(cg["detail"].as_str().unwrap().contains(why), "{why}: {v}");
        }
    }
    // As root the sandbox runs as an unprivileged uid of Spear's own where the workspace can
    // be idmapped to it, and doctor says which; elsewhere it says why commands are refused.
    let user = by_name("sandbox_user");
    let detail = user["detail"].as_str().unwrap_or_default();
    if rustix::process::geteuid().is_root() {
        let ids = spear::harness::sandbox::root_uid::choose_for_host().unwrap();
        match spear::harness::sandbox::root_uid::probe_idmapped_workspace(&ws, ids) {
            Ok(()) => {
                assert_eq!(user["status"], "works", "{v}");
                assert!(detail.contains(&ids.uid.to_string()), "{v}");
            }
            Err(_) => {
                assert_eq!(user["status"], "missing", "{v}");
                assert!(detail.contains("refused"), "{v}");
            }
        }
    } else {
        assert_eq!(user["status"], "works", "{v}");
        let own = rustix::process::geteuid().as_raw().to_string();
        assert!(detail.contains(&own), "{v}");
    }
    // Absent (ENOSYS) is `missing`; a filter's EPERM is `refused`: either way not `works`.
    let openat2 = by_name("openat2");
    assert_eq!(
        openat2["status"] == "works",
        host_has_openat2(),
        "openat2 on this host: {v}"
    );
}

/// `[sandbox] root_uid = "host"`: a root Spear runs commands as the host's root, and every
/// command's audit record says so; without it (or for an ordinary user) no record does.
#[test]
fn root_uid_host_is_said_in_every_commands_audit_record() {
    let (d, ws) = workspace();
    let config = d.path().join("config");
    std::fs::create_dir_all(config.join("spear")).unwrap();
    let me = rustix::process::geteuid();
    let exec = |ws: &std::path::Path| {
        let out = spear(ws)
            .env("XDG_CONFIG_HOME", &config)
            .args(["exec", "--mode", "auto", "--", "id -u"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    std::fs::write(
        config.join("spear/config.toml"),
        "[sandbox]\nroot_uid = \"host\"\n",
    )
    .unwrap();
    assert_eq!(exec(&ws), me.as_raw().to_string());
    std::fs::write(config.join("spear/config.toml"), "[sandbox]\n").unwrap();
    let default_uid = exec(&ws);
    let records = audit_records(&ws);
    assert_eq!(records.len(), 2, "{records:?}");
    if me.is_root() {
        assert_eq!(
            records[0]["sandbox_user"], "host-root (root_uid = \"host\")",
            "{records:?}"
        );
        assert_ne!(default_uid, "0", "the default runs as an unprivileged uid");
    } else {
        assert!(records[0].get("sandbox_user").is_none(), "{records:?}");
        assert_eq!(default_uid, me.as_raw().to_string());
    }
    assert!(records[1].get("sandbox_user").is_none(), "{records:?}");
    spear(&ws).args(["audit", "--verify"]).assert().code(0);
}

/// `spear doctor` warns when an MCP server's read path would show it the person's keys
/// (`~/.ssh`, `~/.gnupg`, `~/.aws`), as written or through a link, and stays healthy: the
/// warning is the person's to act on.
#[test]
fn doctor_warns_of_an_mcp_read_path_over_keys() {
    let (d, ws) = workspace();
    let base = d.path().canonicalize().unwrap();
    let home = base.join("home");
    let config = base.join("config");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join("tools")).unwrap();
    std::fs::create_dir_all(config.join("spear")).unwrap();
    let write = |paths: &[std::path::PathBuf]| {
        let listed: Vec<String> = paths
            .iter()
            .map(|p| format!("{:?}", p.display().to_string()))
            .collect();
        std::fs::write(
            config.join("spear/config.toml"),
            format!(
                "[mcp.servers.docs]\ncommand = \"/bin/true\"\nread_paths = [{}]\n",
                listed.join(", ")
            ),
        )
        .unwrap();
    };
    let doctor = || {
        let out = spear(&ws)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &config)
            .args(["doctor", "--json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (doctor_check(&v, "mcp_servers"), v)
    };
    write(std::slice::from_ref(&home));
    let (c, v) = doctor();
    assert_eq!(c["status"], "warning", "{v}");
    let detail = c["detail"].as_str().unwrap_or_default();
    for dir in [".ssh", ".gnupg", ".aws"] {
        assert!(detail.contains(dir), "{dir}: {v}");
    }
    assert_eq!(v["healthy"], true, "{v}");
    // Through a link that looks harmless.
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("tools/keys")).unwrap();
    write(&[home.join("tools/keys")]);
    let (c, v) = doctor();
    assert_eq!(c["status"], "warning", "{v}");
    // A path beside them is fine.
    write(&[home.join("tools")]);
    let (c, v) = doctor();
    assert_eq!(c["status"], "works", "{v}");
}
