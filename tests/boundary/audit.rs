//! The audit log: redaction (names and value shapes), environment stripping, the hash chain
//! against truncated, edited, reordered, deleted and inserted lines, the incomplete last line,
//! the index, and the `spear audit` command line.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use spear::harness::audit::summary::summarize_command;
use spear::harness::audit::{
    AuditEvent, AuditLogger, AuditTarget, Decision, VerifyFailure, verify,
};
use spear::harness::command_policy::CommandClass;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::harness::secrets::{is_secret_name, redact_text};

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub state: PathBuf,
    pub project: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("project");
        std::fs::create_dir_all(&project).unwrap();
        Fixture {
            _dir: dir,
            state: base.join("state"),
            project,
        }
    }

    pub fn logger(&self) -> AuditLogger {
        AuditLogger::open_in(&self.state, &self.project).unwrap()
    }
}

pub fn event(i: usize) -> AuditEvent {
    let mut e = AuditEvent::new(
        "s-1",
        if i.is_multiple_of(2) {
            "write_file"
        } else {
            "terminal"
        },
        Decision::Allowed,
    );
    e.target = if i.is_multiple_of(2) {
        AuditTarget::Path(format!("src/f{i}.rs"))
    } else {
        AuditTarget::Command(format!("API_KEY=abc{i} cargo test -p x{i}"))
    };
    e.mode = Some(ExecutionMode::Auto);
    e.status = Some(ToolStatus::Ok);
    e.exit_code = Some(0);
    e.duration = Some(Duration::from_millis(12));
    e.changed_paths = Some(1);
    e
}

#[test]
fn secret_names_table() {
    for name in [
        "API_KEY",
        "api_key",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "MYSQL_PASSWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "BASIC_AUTH",
        "COOKIE_JAR",
        "SESSION_ID",
    ] {
        assert!(is_secret_name(name), "{name}");
    }
    for name in ["PATH", "HOME", "RUST_LOG", "CFLAGS", "LANG"] {
        assert!(!is_secret_name(name), "{name}");
    }
}

#[test]
fn value_shape_redaction_table() {
    let cases: &[(&str, &str, &str)] = &[
        // (input, secret that must vanish, text that must remain)
        (
            "curl -H 'Authorization: Bearer abcdefghijk123' https://x.io",
            "abcdefghijk123",
            "https://x.io",
        ),
        (
            "git clone https://ann:hunter2pass@github.com/o/r.git",
            "hunter2pass",
            "https://ann:[REDACTED]@github.com/o/r.git",
        ),
        (
            "echo sk-proj-abcdefghijklmnopqrstuvwx",
            "sk-proj-abcdefghijklmnopqrstuvwx",
            "echo [REDACTED]",
        ),
        (
            "echo ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "ghp_abcdefghij",
            "echo [REDACTED]",
        ),
        (
            "echo github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "github_pat_11",
            "echo",
        ),
        (
            "aws --profile x AKIAIOSFODNN7EXAMPLE",
            "AKIAIOSFODNN7EXAMPLE",
            "--profile x",
        ),
        (
            "post xoxb-123456789012-abcdefghij",
            "xoxb-123456789012",
            "post",
        ),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N",
            "jwt [REDACTED]",
        ),
        (
            "printf '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----'",
            "MIIEowIBAAKCAQEA",
            "printf '[REDACTED]'",
        ),
        (
            "cat <<EOF\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk",
            "b3BlbnNzaC1rZXk",
            "cat <<EOF",
        ),
        ("mysql --password hunter2 -h db", "hunter2", "-h db"),
        (
            "tool --api-key=abc123 run",
            "abc123",
            "tool --api-key=[REDACTED] run",
        ),
        (
            "sh -c 'GITHUB_TOKEN=abc123 gh pr list'",
            "abc123",
            "gh pr list",
        ),
        (
            "curl 'https://api.x.io/v1?access_token=zzz999&x=1'",
            "zzz999",
            "&x=1",
        ),
        (
            "curl -b 'session=s3cr3t' https://x.io",
            "s3cr3t",
            "https://x.io",
        ),
    ];
    for (input, secret, kept) in cases {
        let out = redact_text(input);
        assert!(
            !out.contains(secret),
            "{input:?} -> {out:?} still holds {secret:?}"
        );
        assert!(out.contains(kept), "{input:?} -> {out:?} lost {kept:?}");
        assert!(out.contains("[REDACTED]"), "{out}");
    }
    for benign in [
        "cargo build --release",
        "ls -la src/",
        "git commit -m 'fix key handling'",
        "make -j4 all",
    ] {
        assert_eq!(redact_text(benign), benign);
    }
}

#[test]
fn leading_environment_is_stripped_before_the_summary() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "API_KEY=x FOO=1 curl https://example.com",
            "curl https://example.com",
            &["API_KEY", "FOO"],
        ),
        ("env TOKEN=\"a b\" make test", "make test", &["TOKEN"]),
        ("  CFLAGS=-O2 make", "make", &["CFLAGS"]),
        ("X=sk-abcdefghijklmnopqrstu cmd", "cmd", &["X"]),
        ("echo A=1", "echo A=1", &[]),
        ("env -i ls", "env -i ls", &[]),
        ("FOO=1", "", &["FOO"]),
    ];
    for (cmd, summary, env) in cases {
        let s = summarize_command(cmd);
        assert_eq!(s.summary, *summary, "{cmd}");
        assert_eq!(s.env, *env, "{cmd}");
    }
    let long = format!("echo {}", "x".repeat(5000));
    assert_eq!(summarize_command(&long).summary.chars().count(), 1001);
}

#[test]
fn records_are_metadata_chained_and_named_by_the_root_hash() {
    let f = Fixture::new();
    let logger = f.logger();
    let mut e = event(1);
    e.class = Some(CommandClass::WorkspaceMutating);
    e.refusal_rule = Some("third_party".into());
    let stored = logger.append(&e).unwrap();
    assert_eq!(stored.seq, 1);
    assert_eq!(stored.target.as_deref(), Some("cargo test -p x1"));
    assert_eq!(stored.env, vec!["API_KEY"]);
    let text = std::fs::read_to_string(&logger.paths().log).unwrap();
    assert!(!text.contains("abc1"), "{text}");
    let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
    for key in [
        "time",
        "session",
        "tool",
        "target",
        "class",
        "mode",
        "decision",
        "status",
        "exit_code",
        "duration_ms",
        "changed_paths",
        "refusal_rule",
        "prev",
        "hash",
    ] {
        assert!(v.get(key).is_some(), "{key} missing from {text}");
    }
    let name = logger
        .paths()
        .log
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(name.len(), 64);
    assert!(logger.paths().log.starts_with(f.state.join("spear/audit")));
    let index = std::fs::read_to_string(&logger.paths().index).unwrap();
    assert!(index.contains(&name) && index.contains(f.project.to_str().unwrap()));
    // Opening again does not add the workspace twice.
    drop(f.logger());
    assert_eq!(
        std::fs::read_to_string(&logger.paths().index)
            .unwrap()
            .lines()
            .count(),
        1
    );
}

fn ten_records(f: &Fixture) -> (AuditLogger, Vec<String>) {
    let logger = f.logger();
    for i in 0..10 {
        logger.append(&event(i)).unwrap();
    }
    let lines = std::fs::read_to_string(&logger.paths().log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    (logger, lines)
}

fn verify_lines(
    logger: &AuditLogger,
    lines: &[String],
    newline_at_end: bool,
) -> Result<u64, VerifyFailure> {
    let mut text = lines.join("\n");
    if newline_at_end {
        text.push('\n');
    }
    std::fs::write(&logger.paths().log, text).unwrap();
    verify(&logger.paths().log, &logger.paths().head)
        .unwrap()
        .map(|r| r.records)
}

#[test]
fn verification_names_the_first_bad_line() {
    let f = Fixture::new();
    let (logger, lines) = ten_records(&f);
    assert_eq!(verify_lines(&logger, &lines, true), Ok(10));
    let line_of = |r: Result<u64, VerifyFailure>| r.map_err(|e| (e.line, e.problem));
    // Truncated at a record boundary: only the head can tell.
    let r = line_of(verify_lines(&logger, &lines[..8], true));
    assert!(
        matches!(&r, Err((9, p)) if p.contains("removed from the end")),
        "{r:?}"
    );
    // Truncated inside the last record.
    let mut cut = lines.clone();
    cut[9].truncate(40);
    assert_eq!(
        line_of(verify_lines(&logger, &cut, false)).unwrap_err().0,
        10
    );
    // Edited.
    let mut edited = lines.clone();
    edited[4] = edited[4].replace("src/f", "src/g");
    assert_ne!(edited[4], lines[4]);
    let r = line_of(verify_lines(&logger, &edited, true));
    assert!(matches!(&r, Err((5, p)) if p.contains("edited")), "{r:?}");
    // Reordered.
    let mut swapped = lines.clone();
    swapped.swap(2, 3);
    assert_eq!(
        line_of(verify_lines(&logger, &swapped, true))
            .unwrap_err()
            .0,
        3
    );
    // Deleted.
    let mut deleted = lines.clone();
    deleted.remove(4);
    assert_eq!(
        line_of(verify_lines(&logger, &deleted, true))
            .unwrap_err()
            .0,
        5
    );
    // Inserted (a replayed copy of an earlier line).
    let mut inserted = lines.clone();
    inserted.insert(2, lines[1].clone());
    assert_eq!(
        line_of(verify_lines(&logger, &inserted, true))
            .unwrap_err()
            .0,
        3
    );
    // Back to intact, then the head goes missing.
    assert_eq!(verify_lines(&logger, &lines, true), Ok(10));
    std::fs::remove_file(&logger.paths().head).unwrap();
    assert_eq!(
        line_of(verify_lines(&logger, &lines, true)).unwrap_err().0,
        11
    );
}

#[test]
fn a_head_that_lags_by_several_records_verifies_and_one_ahead_or_off_the_chain_does_not() {
    // The head is not forced to disk after each record, so a machine that stops may leave it
    // naming any earlier record; it still never names one the log does not hold.
    let f = Fixture::new();
    let (logger, lines) = ten_records(&f);
    let hash_of = |line: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["hash"].as_str().unwrap().to_string()
    };
    let head = |seq: u64, hash: &str| {
        std::fs::write(&logger.paths().head, format!("{seq:020} {hash}\n")).unwrap();
    };
    head(7, &hash_of(&lines[6]));
    let report = verify(&logger.paths().log, &logger.paths().head)
        .unwrap()
        .unwrap();
    assert_eq!(
        (report.records, report.head_lagging, report.head_lag),
        (10, true, 3)
    );
    // A head naming record 7 with record 6's hash is off the chain.
    head(7, &hash_of(&lines[5]));
    let failure = verify(&logger.paths().log, &logger.paths().head)
        .unwrap()
        .unwrap_err();
    assert!(
        failure.problem.contains("does not match the head"),
        "{failure:?}"
    );
    // The log cut back behind its head.
    head(10, &hash_of(&lines[9]));
    assert_eq!(verify_lines(&logger, &lines, true), Ok(10));
    let failure = verify_lines(&logger, &lines[..9], true).unwrap_err();
    assert!(
        failure.problem.contains("removed from the end"),
        "{failure:?}"
    );
    // The next append brings the head level again.
    std::fs::write(&logger.paths().log, lines.join("\n") + "\n").unwrap();
    head(7, &hash_of(&lines[6]));
    logger.append(&event(10)).unwrap();
    let report = verify(&logger.paths().log, &logger.paths().head)
        .unwrap()
        .unwrap();
    assert_eq!((report.records, report.head_lag), (11, 0));
}

#[test]
fn an_incomplete_last_line_is_reported_then_set_aside_by_the_next_writer() {
    let f = Fixture::new();
    let (logger, lines) = ten_records(&f);
    let mut text = lines.join("\n");
    text.push_str("\n{\"v\":1,\"seq\":11,\"ti");
    std::fs::write(&logger.paths().log, &text).unwrap();
    let report = verify(&logger.paths().log, &logger.paths().head)
        .unwrap()
        .unwrap();
    assert_eq!((report.records, report.torn_line), (10, Some((11, 19))));
    let stored = logger.append(&event(11)).unwrap();
    assert_eq!(stored.seq, 12);
    let report = verify(&logger.paths().log, &logger.paths().head)
        .unwrap()
        .unwrap();
    assert_eq!((report.records, report.torn_line), (12, None));
    let text = std::fs::read_to_string(&logger.paths().log).unwrap();
    let recovered = text.lines().nth(10).unwrap();
    assert!(
        recovered.contains("\"decision\":\"recovered\"") && recovered.contains("19 bytes"),
        "{recovered}"
    );
}

fn spear(f: &Fixture) -> Command {
    let mut c = Command::cargo_bin("spear").unwrap();
    c.env("XDG_STATE_HOME", &f.state)
        .env("HOME", f.state.parent().unwrap())
        .env_remove("NO_COLOR")
        .arg("audit")
        .arg("--workspace")
        .arg(&f.project);
    c
}

fn stdout_of(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_audit_command_reads_greps_and_verifies() {
    let f = Fixture::new();
    let (logger, _) = ten_records(&f);
    let human = stdout_of(&mut spear(&f));
    assert_eq!(human.lines().count(), 10);
    assert!(
        !human.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    let first = human.lines().next().unwrap();
    assert!(
        first.contains("allowed") && first.contains("write_file") && first.contains("src/f0.rs"),
        "{first}"
    );
    // Aligned: the target starts in the same column on every line.
    let cols: Vec<usize> = human
        .lines()
        .map(|l| l.find(" src/f").or(l.find(" cargo")).unwrap())
        .collect();
    assert!(cols.windows(2).all(|w| w[0] == w[1]), "{human}");
    let tail = stdout_of(spear(&f).args(["--tail", "3", "--json"]));
    let seqs: Vec<u64> = tail
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seqs, vec![8, 9, 10]);
    let grep = stdout_of(spear(&f).args(["--grep", "cargo test", "--tail", "2"]));
    assert_eq!(grep.lines().count(), 2);
    assert!(
        grep.lines().all(|l| l.contains("cargo test -p x")),
        "{grep}"
    );
    let ok = stdout_of(spear(&f).arg("--verify"));
    assert!(ok.starts_with("ok: 10 records"), "{ok}");
    let text = std::fs::read_to_string(&logger.paths().log).unwrap();
    std::fs::write(
        &logger.paths().log,
        text.replacen("src/f2.rs", "src/f9.rs", 1),
    )
    .unwrap();
    let out = spear(&f).arg("--verify").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.contains("line 3"), "{said}");
}

/// Bytes this thread has read through read(2)-family calls (`rchar` of /proc/thread-self/io):
/// per thread, so tests running beside this one do not count.
fn thread_read_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn tail_of_a_million_records_reads_only_the_end() {
    let f = Fixture::new();
    let logger = f.logger();
    logger.append(&event(0)).unwrap();
    let line = std::fs::read(&logger.paths().log).unwrap();
    let mut big = Vec::with_capacity(line.len() * 1_000_000);
    for _ in 0..1_000_000 {
        big.extend_from_slice(&line);
    }
    std::fs::write(&logger.paths().log, &big).unwrap();
    let size = big.len() as u64;
    drop(big);
    // The mechanism, not a stopwatch: the tail is found by reading backwards from the end, so
    // the bytes read are a few blocks, whatever the size of the log.
    let file = std::fs::File::open(&logger.paths().log).unwrap();
    let before = thread_read_bytes();
    let tail = spear::harness::audit::reader::tail(&file, 50, &|_| true).unwrap();
    let read = thread_read_bytes() - before;
    assert_eq!(tail.lines.len(), 50);
    assert!(
        read < 1024 * 1024,
        "read {read} bytes of a {size}-byte log for 50 lines"
    );
    // And the command line gives the same 50 lines.
    let started = Instant::now();
    let out = stdout_of(spear(&f).args(["--tail", "50"]));
    assert_eq!(out.lines().count(), 50);
    eprintln!(
        "spear audit --tail 50 on {size} bytes: {:?} (debug build)",
        started.elapsed()
    );
}

pub fn verify_ok(logger_log: &Path, head: &Path) -> spear::harness::audit::VerifyReport {
    match verify(logger_log, head).unwrap() {
        Ok(r) => r,
        Err(f) => panic!("verify failed at line {}: {}", f.line, f.problem),
    }
}
