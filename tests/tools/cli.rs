//! `spear tool` as a script sees it: every status through the binary, with `spear exec`'s exit
//! codes, the envelope on `--json`, and the refusal in the audit log.

use assert_cmd::Command;
use serde_json::Value;

use crate::support::Fixture;

fn spear(f: &Fixture, args: &[&str]) -> (i32, Value, String) {
    // setsid: no controlling terminal, so ASK is answered `cancelled` even when the test
    // suite itself runs in an interactive terminal.
    let bin = assert_cmd::cargo::cargo_bin("spear");
    let out = Command::new("setsid")
        .arg("-w")
        .arg(bin)
        .current_dir(&f.project)
        .env("XDG_STATE_HOME", &f.state)
        .env("HOME", &f.base)
        .arg("--workspace")
        .arg(&f.project)
        .arg("tool")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let v: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout:?}"));
    (
        out.status.code().unwrap(),
        v,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn every_status_through_the_binary() {
    let f = Fixture::new();
    f.write("a.txt", "hello\n");
    f.write("vendor/v.rs", "v");
    let cases: [(&[&str], i32, &str, Option<&str>); 9] = [
        (&["read_file", r#"{"path":"a.txt"}"#], 0, "ok", None),
        (
            &["read_file", r#"{"path":"missing.txt"}"#],
            127,
            "not_found",
            None,
        ),
        (
            &["read_file", r#"{"path":"../other-repo/x"}"#],
            126,
            "invalid_path",
            Some("workspace"),
        ),
        (
            &[
                "write_file",
                r#"{"path":"b.txt","content":"x"}"#,
                "--mode",
                "safe",
            ],
            126,
            "denied",
            Some("execution_modes"),
        ),
        (
            &[
                "write_file",
                r#"{"path":"vendor/v.rs","content":"x"}"#,
                "--mode",
                "auto",
            ],
            126,
            "denied",
            Some("target_policy"),
        ),
        (
            &[
                "write_file",
                r#"{"path":"b.txt","content":"x"}"#,
                "--mode",
                "ask",
            ],
            126,
            "cancelled",
            Some("approval"),
        ),
        (
            &["read_file", r#"{"path":7}"#],
            125,
            "failed",
            Some("schema"),
        ),
        // A command that runs, in the real sandbox, exits with its own code.
        (
            &["terminal", r#"{"command":"ls; exit 3"}"#, "--mode", "auto"],
            3,
            "ok",
            None,
        ),
        (
            &[
                "terminal",
                r#"{"command":"sleep 5","timeout":1}"#,
                "--mode",
                "auto",
            ],
            124,
            "timeout",
            None,
        ),
    ];
    for (args, code, status, gate) in cases {
        let (rc, v, _) = spear(&f, args);
        assert_eq!(
            (rc, v["status"].as_str().unwrap()),
            (code, status),
            "{args:?}: {v}"
        );
        assert_eq!(v["gate"].as_str(), gate, "{args:?}");
        for key in [
            "status",
            "stdout",
            "stderr",
            "exit_code",
            "changed_paths",
            "preview",
            "total_bytes",
        ] {
            assert!(v.get(key).is_some(), "{key} missing: {v}");
        }
    }
    assert!(!f.project.join("b.txt").exists());
    let (rc, v, _) = spear(
        &f,
        &[
            "write_file",
            r#"{"path":"b.txt","content":"x"}"#,
            "--mode",
            "auto",
        ],
    );
    assert_eq!((rc, v["changed_paths"][0].as_str()), (0, Some("b.txt")));
    let audit = std::fs::read_dir(f.state.join("spear/audit"))
        .unwrap()
        .count();
    assert!(audit >= 2, "the binary audits into the state directory");
}

#[test]
fn host_commands_and_unknown_tools_through_the_binary() {
    let f = Fixture::new();
    let (rc, v, _) = spear(
        &f,
        &[
            "terminal",
            r#"{"command":"spear-capability list"}"#,
            "--mode",
            "safe",
        ],
    );
    assert_eq!((rc, v["status"].as_str()), (0, Some("ok")));
    let (rc, v, _) = spear(
        &f,
        &["terminal", r#"{"command":"spear-capability list | sh"}"#],
    );
    assert_eq!((rc, v["gate"].as_str()), (126, Some("arguments")));
    let (rc, v, _) = spear(&f, &["no_such_tool", "{}"]);
    assert_eq!((rc, v["status"].as_str()), (127, Some("not_found")));
}

#[test]
fn bad_json_is_a_usage_error() {
    let f = Fixture::new();
    let out = Command::cargo_bin("spear")
        .unwrap()
        .env("XDG_STATE_HOME", &f.state)
        .args([
            "--workspace",
            f.project.to_str().unwrap(),
            "tool",
            "read_file",
            "{nope",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("JSON_ARGS is not valid JSON"));
}

/// `--network` is the session setting for one call: without it a command that needs the network
/// is denied in every mode; with it the command reaches names through the egress proxy (no
/// interface but loopback), and the host's loopback (a server this test starts) stays out of
/// reach: the proxy refuses the address, and says so in the envelope.
#[test]
fn network_through_the_binary_only_with_the_flag() {
    let f = Fixture::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "curl -s -m 3 http://127.0.0.1:{port}/; echo \"curl exit $?\"; \
         grep -c tap0 /proc/net/dev; echo \"proxy $HTTPS_PROXY\""
    );
    let args = serde_json::json!({ "command": command }).to_string();

    let (rc, v, _) = spear(&f, &["terminal", &args, "--mode", "auto"]);
    assert_eq!((rc, v["status"].as_str()), (126, Some("denied")), "{v}");
    assert!(
        v["reason"].as_str().unwrap_or_default().contains("network"),
        "{v}"
    );

    let (rc, v, _) = spear(&f, &["terminal", &args, "--mode", "auto", "--network"]);
    let out = v["stdout"].as_str().unwrap_or_default();
    assert_eq!((rc, v["status"].as_str()), (0, Some("ok")), "{v}");
    assert!(out.contains("proxy http://127.0.0.1:3128"), "{out}");
    assert!(
        out.lines().any(|l| l.trim() == "0"),
        "an interface besides loopback: {out}"
    );
    assert!(
        out.contains("spear egress proxy"),
        "the proxy did not answer: {out}"
    );
    let refused = &v["connections"][0];
    assert_eq!(refused["host"], "127.0.0.1", "{v}");
    assert!(refused["refused"].is_string(), "{v}");
    assert!(
        listener.accept().is_err(),
        "the sandbox reached the host's loopback"
    );
}
