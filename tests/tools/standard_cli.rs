//! `spear standard add|list|remove` as a person types them: the library in the state directory,
//! re-adding, a URL fetched from a loopback server only when allowed on purpose (refused by
//! default, also when a public-looking redirect is not involved), and clear failures.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;

use assert_cmd::Command;

use crate::support::Fixture;

fn spear(f: &Fixture, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("spear"))
        .current_dir(&f.base)
        .env("XDG_STATE_HOME", &f.state)
        .env("XDG_CONFIG_HOME", f.base.join("config"))
        .env("HOME", &f.base)
        .arg("standard")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Serves `body` (as `content_type`) to each of `n` connections on loopback.
fn serve(
    body: &'static str,
    content_type: &'static str,
    n: usize,
) -> (String, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/codes/stair-code.md",
        listener.local_addr().unwrap()
    );
    let handle = std::thread::spawn(move || {
        let mut served = 0;
        for _ in 0..n {
            let Ok((mut s, _)) = listener.accept() else {
                break;
            };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            served += 1;
        }
        served
    });
    (url, handle)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn add_list_readd_remove_through_the_binary() {
    let f = Fixture::new();
    let file = write(&f.base, "door-code.md", "# 4.2 Doors\nDoors shall close.\n");
    let (code, out, err) = spear(&f, &["add", &file]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("door-code: added: 1 units, markdown from"),
        "{out}"
    );
    assert!(f.state.join("spear/standards/door-code.json").is_file());

    let (_, out, _) = spear(&f, &["add", &file]);
    assert!(out.contains("unchanged"), "{out}");
    write(
        &f.base,
        "door-code.md",
        "# 4.2 Doors\nDoors shall close slowly.\n",
    );
    let (_, out, _) = spear(&f, &["add", &file, "--json"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["outcome"], "reindexed");
    assert_eq!(v["standard"]["name"], "door-code");

    let (_, out, _) = spear(&f, &["list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["standards"][0]["units"], 1);
    let (code, out, _) = spear(&f, &["remove", "door-code"]);
    assert_eq!(code, 0);
    assert!(out.contains("door-code: removed"), "{out}");
    let (_, out, _) = spear(&f, &["list"]);
    assert!(out.contains("the library is empty"), "{out}");

    let (code, _, err) = spear(&f, &["remove", "door-code"]);
    assert_eq!(code, 1);
    assert!(err.contains("no standard named `door-code`"), "{err}");
    let (code, _, err) = spear(&f, &["add", &file, "--name", "../up"]);
    assert_eq!(code, 1);
    assert!(err.contains("is not a standard name"), "{err}");
    let (code, _, err) = spear(&f, &["add", "/nonexistent/x.md"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read /nonexistent/x.md"), "{err}");
}

#[test]
fn a_url_on_loopback_is_refused_unless_allowed_on_purpose() {
    let f = Fixture::new();
    let (url, server) = serve(
        "# 2.1 Risers\nRisers shall be at most 18 cm.\n",
        "text/markdown",
        1,
    );
    let (code, _, err) = spear(&f, &["add", &url]);
    assert_eq!(code, 1);
    assert!(
        err.contains("refused to connect to 127.0.0.1")
            && err.contains("loopback")
            && err.contains("--allow-private"),
        "{err}"
    );
    assert!(!f.state.join("spear/standards/stair-code.json").exists());
    // Allowed: fetched once, named after the URL's file.
    let (code, out, err) = spear(&f, &["add", &url, "--allow-private"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("stair-code: added: 1 units, markdown from http://127.0.0.1"),
        "{out}"
    );
    assert_eq!(
        server.join().unwrap(),
        1,
        "the refused attempt must not have connected"
    );
    let (code, _, err) = spear(&f, &["add", "ftp://example.invalid/x.md"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read ftp://"), "{err}");
}

#[test]
fn spear_tool_with_a_standard_calls_the_lookups_through_the_router() {
    let f = Fixture::new();
    let file = write(
        &f.base,
        "door-code.md",
        "# 4.2 Doors\nDoors shall close within 30 s.\n",
    );
    assert_eq!(spear(&f, &["add", &file]).0, 0);
    let tool = |extra: &[&str]| {
        let out = Command::new(assert_cmd::cargo::cargo_bin("spear"))
            .current_dir(&f.project)
            .env("XDG_STATE_HOME", &f.state)
            .env("XDG_CONFIG_HOME", f.base.join("config"))
            .env("HOME", &f.base)
            .args(["--workspace", f.project.to_str().unwrap(), "tool"])
            .args(extra)
            .args(["--mode", "safe", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let v = tool(&[
        "standard.search",
        r#"{"query":"doors close"}"#,
        "--standard",
        "door-code",
    ]);
    assert_eq!(v["status"], "ok", "{v}");
    assert!(
        v["stdout"].as_str().unwrap().contains("[door-code §4.2]"),
        "{v}"
    );
    // Without --standard the coding surface is in force: the lookup is not offered.
    let v = tool(&["standard.search", r#"{"query":"doors"}"#]);
    assert_eq!(v["status"], "denied", "{v}");
    assert!(v["reason"].as_str().unwrap().contains("not offered"), "{v}");
}
