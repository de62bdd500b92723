//! `spear classify` as a user and a script see it.

use assert_cmd::Command;

fn spear() -> Command {
    Command::cargo_bin("spear").unwrap()
}

fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

#[test]
fn json_prints_one_object_per_command_with_the_contract_fields() {
    let out = spear()
        .args([
            "classify",
            "--json",
            "ls -la",
            "echo x > out.txt",
            "rm -rf /",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 3);
    for l in &lines {
        let keys: Vec<&str> = l.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = [
            "command",
            "class",
            "executables",
            "writes",
            "network",
            "reasons",
        ];
        let mut got = keys.clone();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want);
    }
    assert_eq!(lines[0]["class"], "READ_ONLY");
    assert_eq!(lines[1]["class"], "WORKSPACE_MUTATING");
    assert_eq!(lines[1]["writes"][0], "out.txt");
    assert_eq!(lines[2]["class"], "DANGEROUS");
}

#[test]
fn stdin_gives_one_command_a_line_and_nul_lets_commands_span_lines() {
    let out = spear()
        .args(["classify", "--json"])
        .write_stdin("ls\n\ncurl -s https://example.invalid/\n")
        .output()
        .unwrap();
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["network"], true);

    let input = b"bash <<'EOF'\nrm -rf /\nEOF\n\x00ls\x00".to_vec();
    let out = spear()
        .args(["classify", "--json", "-0"])
        .write_stdin(input)
        .output()
        .unwrap();
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["class"], "DANGEROUS");
    assert_eq!(lines[1]["class"], "READ_ONLY");
}

#[test]
fn unparsable_commands_and_invalid_utf8_are_answers_not_errors() {
    let out = spear()
        .args(["classify", "--json", "echo 'unterminated"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines = json_lines(&out.stdout);
    assert_eq!(lines[0]["class"], "SHELL_COMPLEX");
    assert!(
        lines[0]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("does not parse")
    );

    let input = b"l\xffs -la\n".to_vec();
    let out = spear()
        .args(["classify", "--json"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_ne!(json_lines(&out.stdout)[0]["class"], "READ_ONLY");
}

#[test]
fn bad_usage_exits_2() {
    let out = spear()
        .args(["classify", "--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
}

#[test]
fn the_human_table_is_aligned() {
    let out = spear()
        .args(["classify", "ls", "rm -rf /", "touch x"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let heads: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(heads.len(), 3, "{text}");
    let col = |l: &str, needle: &str| l.find(needle).unwrap();
    assert_eq!(col(heads[0], "ls"), col(heads[1], "rm -rf /"));
    assert_eq!(col(heads[1], "rm -rf /"), col(heads[2], "touch x"));
    assert!(heads[1].starts_with("DANGEROUS"));
    assert!(text.contains("writes: x"));
}

/// Issue 10, item 3: these two once overflowed i64 in brace expansion and killed the binary.
#[test]
fn the_i64_brace_sequences_are_answered_by_the_binary() {
    for cmd in [
        "echo {-9223372036854775808..9223372036854775807}",
        "echo {1..9223372036854775807..4611686018427387904}",
    ] {
        let out = spear().args(["classify", "--json", cmd]).output().unwrap();
        assert!(out.status.success(), "{cmd}: {out:?}");
        let lines = json_lines(&out.stdout);
        assert_eq!(lines.len(), 1, "{cmd}");
        assert_eq!(lines[0]["command"], cmd);
        assert_eq!(lines[0]["executables"], serde_json::json!(["echo"]));
    }
}
