//! Issue 8, item 8: a command's control characters reach no person's terminal. A command with
//! ESC[2J, BEL, CR, a newline followed by a fake audit line, a C1 CSI and a right-to-left
//! override is refused (SAFE mode) and so audited; every human view shows it escaped, one line
//! per record, and `--json` keeps it exact.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};

/// The hostile command: clear the screen, ring, return to column 0, then a line that looks like
/// an audit record of something harmless, a C1 CSI, and a filename reversed by U+202E.
const HOSTILE: &str = "touch a\x1b[2J\x07\rB\n2026-01-01 00:00:00  allowed    exec          ok                0  \
                       fake-record \u{9b}31m x\u{202e}gnp.exe";

struct Fx {
    _dir: tempfile::TempDir,
    state: PathBuf,
    ws: PathBuf,
}

fn fx() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws = base.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    Fx {
        state: base.join("state"),
        ws,
        _dir: dir,
    }
}

fn spear(f: &Fx) -> Command {
    let mut c = Command::cargo_bin("spear").unwrap();
    c.current_dir(&f.ws)
        .env("XDG_STATE_HOME", &f.state)
        .env_remove("NO_COLOR");
    c
}

/// Nothing a terminal would act on: no C0 but the line ends, no DEL, no C1, no bidi control.
fn assert_inert(what: &str, text: &str) {
    for (i, c) in text.char_indices() {
        let u = u32::from(c);
        let bad = (u < 0x20 && c != '\n')
            || (0x7F..=0x9F).contains(&u)
            || (0x202A..=0x202E).contains(&u)
            || (0x2066..=0x2069).contains(&u);
        assert!(!bad, "{what}: raw U+{u:04X} at byte {i}: {text:?}");
    }
}

fn run(c: &mut Command) -> (Option<i32>, String, String) {
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn audit_lines(f: &Fx, json: bool) -> String {
    let mut c = spear(f);
    c.args(["audit", "--workspace"]).arg(&f.ws);
    if json {
        c.arg("--json");
    }
    let (code, out, err) = run(&mut c);
    assert_eq!(code, Some(0), "{err}");
    out
}

#[test]
fn spear_audit_shows_a_hostile_command_escaped_and_json_keeps_it_exact() {
    let f = fx();
    let (code, out, err) = run(spear(&f).args(["exec", "--mode", "safe", "--", HOSTILE]));
    assert_eq!(code, Some(126), "the command was refused: {err}");
    assert_inert("spear exec stderr", &err);
    assert_inert("spear exec stdout", &out);
    assert!(err.starts_with("spear: denied: "), "{err}");

    let human = audit_lines(&f, false);
    assert_inert("spear audit", &human);
    assert_eq!(human.lines().count(), 1, "one record, one line: {human}");
    let line = human.lines().next().unwrap();
    assert!(line.contains("  denied  "), "{line}");
    for shown in [
        "touch a\\x1b[2J\\x07\\rB\\n2026-01-01 00:00:00  allowed",
        "fake-record \\u{9b}31m x\\u{202e}gnp.exe",
    ] {
        assert!(line.contains(shown), "{shown} in {line}");
    }

    // --json: exactly the command (the summary is the command: no secret, no assignment).
    let json_out = audit_lines(&f, true);
    assert_eq!(json_out.lines().count(), 1);
    let rec: Value = serde_json::from_str(json_out.trim_end()).unwrap();
    assert_eq!(rec["target"], HOSTILE);
    assert_eq!(rec["decision"], "denied");
    assert!(!json_out.trim_end().contains('\n') && !json_out.contains('\x1b'));
}

#[test]
fn a_hostile_path_and_classify_output_are_escaped_and_json_is_exact() {
    let f = fx();
    let path = "src/a\x1b]0;owned\x07\u{2066}b.rs";
    let args = json!({"path": path, "content": "x"}).to_string();
    let (code, out, err) = run(spear(&f).args(["tool", "write_file", &args, "--mode", "safe"]));
    assert_eq!(code, Some(126), "{out}{err}");
    assert_inert("spear tool stderr", &err);
    let human = audit_lines(&f, false);
    assert_inert("spear audit", &human);
    assert!(
        human.contains("src/a\\x1b]0;owned\\x07\\u{2066}b.rs"),
        "{human}"
    );
    let rec: Value = serde_json::from_str(audit_lines(&f, true).trim_end()).unwrap();
    assert_eq!(rec["target"], path);

    // `spear tool --json` keeps the reason as the router made it.
    let (_, out, _) =
        run(spear(&f).args(["tool", "write_file", &args, "--mode", "safe", "--json"]));
    let env: Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(env["status"], "denied");

    let (code, out, err) = run(spear(&f).args(["classify", HOSTILE]));
    assert_eq!(code, Some(0), "{err}");
    assert_inert("spear classify", &out);
    assert!(out.contains("x\\u{202e}gnp.exe"), "{out}");
    let (_, out, _) = run(spear(&f).args(["classify", "--json", HOSTILE]));
    let v: Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(v["command"], HOSTILE);
}

#[test]
fn an_unreadable_line_is_escaped_too() {
    let f = fx();
    // A record written, then a line that is not a record, as a damaged log could hold.
    run(spear(&f).args(["exec", "--mode", "safe", "--", "touch x"]));
    let log = audit_log(&f.state);
    let mut text = std::fs::read(&log).unwrap();
    text.extend_from_slice(b"{\"garbage\":\"\x1b[2J\xe2\x80\xae\"}\n");
    std::fs::write(&log, text).unwrap();
    let human = audit_lines(&f, false);
    assert_inert("spear audit", &human);
    assert!(
        human.contains("?  {\"garbage\":\"\\x1b[2J\\u{202e}\"}"),
        "{human}"
    );
}

fn audit_log(state: &Path) -> PathBuf {
    let dir = state.join("spear/audit");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl") && !p.ends_with("index.jsonl"))
        .unwrap()
}
