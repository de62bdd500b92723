//! A command line that is one program with literal words is started without bash. What it
//! runs in must not change: the same mounts, namespaces, seccomp filter, capabilities, rlimits,
//! environment and audit record as the same command under bash.

use spear::harness::command_policy::{
    AuthorizationResult, CommandPolicy, ExecutionProfile, NoApprover,
};
use spear::harness::primitives::{ExecutionMode, ToolStatus};

use crate::cli::spear;
use crate::support::{read_only, run, runner, workspace};

/// The profile AUTO grants `cmd`, with the classifier's literal argv when it found one.
fn granted(cmd: &str) -> ExecutionProfile {
    let policy = CommandPolicy::default();
    match policy.authorize(ExecutionMode::Auto, &policy.classify(cmd), &NoApprover) {
        AuthorizationResult::Granted { profile, .. } => profile,
        other => panic!("{cmd:?} was not granted: {other:?}"),
    }
}

/// `cmd` run once without bash and once under bash, with otherwise the same profile.
async fn both_ways(cmd: &str) -> (String, String) {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let direct = granted(cmd);
    assert!(
        direct.literal_argv.is_some(),
        "{cmd:?} should take the direct path"
    );
    let under_bash = direct.clone().with_literal_argv(None);
    let a = run(&r, direct, cmd).await;
    let b = run(&r, under_bash, cmd).await;
    assert_eq!(a.status, ToolStatus::Ok, "direct: {a:?}");
    assert_eq!(b.status, ToolStatus::Ok, "bash: {b:?}");
    (a.stdout, b.stdout)
}

#[tokio::test]
async fn the_environment_is_the_one_bash_would_give_but_for_underscore() {
    let (direct, bash) = both_ways("env").await;
    let lines = |s: &str| {
        let mut v: Vec<String> = s.lines().map(String::from).collect();
        v.sort();
        v
    };
    let (direct, bash) = (lines(&direct), lines(&bash));
    // Proof that each path is what it says: bash sets `_` to the program it ran; nothing does
    // without it.
    assert!(bash.contains(&"_=/usr/bin/env".to_string()), "{bash:?}");
    assert!(!direct.iter().any(|l| l.starts_with("_=")), "{direct:?}");
    let without_underscore: Vec<String> =
        bash.into_iter().filter(|l| !l.starts_with("_=")).collect();
    assert_eq!(direct, without_underscore);
    assert!(direct.iter().any(|l| l.starts_with("PWD=/")), "{direct:?}");
}

#[tokio::test]
async fn the_kernel_view_filter_capabilities_and_limits_are_the_same() {
    // Everything in these files that is not a number of this process or a counter.
    let keep = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| {
                [
                    "Uid:",
                    "Gid:",
                    "Groups:",
                    "NoNewPrivs:",
                    "Seccomp:",
                    "Seccomp_filters:",
                    "Cap",
                    "NSpid:",
                    "NSpgid:",
                    "NSsid:",
                ]
                .iter()
                .any(|k| l.starts_with(k))
            })
            .map(String::from)
            .collect()
    };
    let (direct, bash) = both_ways("cat /proc/self/status").await;
    assert_eq!(keep(&direct), keep(&bash));
    assert!(
        keep(&direct).iter().any(|l| l == "Seccomp:\t2"),
        "the filter is loaded: {direct}"
    );
    assert!(
        keep(&direct)
            .iter()
            .any(|l| l == "CapEff:\t0000000000000000"),
        "{direct}"
    );
    let (direct, bash) = both_ways("cat /proc/self/limits").await;
    assert_eq!(direct, bash);
    let (direct, bash) = both_ways("cat /proc/self/mountinfo").await;
    let mounts = |s: &str| -> Vec<String> {
        // Mount ids differ between two sandboxes; the mount points and options do not.
        s.lines()
            .map(|l| l.split(' ').skip(3).collect::<Vec<_>>().join(" "))
            .collect()
    };
    assert_eq!(mounts(&direct), mounts(&bash));
    let (direct, bash) = both_ways("hostname").await;
    assert_eq!(
        (direct.trim(), bash.trim()),
        ("spear-sandbox", "spear-sandbox")
    );
}

#[tokio::test]
async fn a_read_only_grant_stays_read_only_without_bash() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let argv = CommandPolicy::default().classify("touch made").literal_argv;
    assert!(argv.is_some());
    let res = run(&r, read_only().with_literal_argv(argv), "touch made").await;
    assert_ne!(res.exit_code, Some(0), "{res:?}");
    assert!(res.stderr.contains("Read-only file system"), "{res:?}");
    assert!(!ws.join("made").exists());
}

#[tokio::test]
async fn a_missing_program_is_reported_as_bash_would() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let res = run(&r, granted("no-such-program-x7"), "no-such-program-x7").await;
    assert_eq!(
        (res.status, res.exit_code),
        (ToolStatus::NotFound, Some(127)),
        "{res:?}"
    );
    // bwrap's own words go to stderr, as bash's would.
    assert!(res.stderr.contains("no-such-program-x7"), "{res:?}");
}

#[tokio::test]
async fn a_profile_read_from_another_line_is_not_trusted_for_this_one() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    // The argv of `env`, handed over with a different command line: the line runs, under
    // bash, and the other argv does not.
    let res = run(&r, granted("env"), "echo from-bash").await;
    assert_eq!(res.stdout, "from-bash\n", "{res:?}");
}

#[test]
fn spear_exec_audits_a_direct_command_like_any_other() {
    let (_d, ws) = workspace();
    let out = spear(&ws)
        .args([
            "exec",
            "--mode",
            "auto",
            "--json",
            "--",
            "cat",
            "/proc/self/status",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stdout = v["stdout"].as_str().unwrap();
    assert!(stdout.contains("Seccomp:\t2"), "{stdout}");
    assert!(stdout.contains("NoNewPrivs:\t1"), "{stdout}");
    let log = spear(&ws).args(["audit", "--json"]).output().unwrap();
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&log.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["target"], "cat /proc/self/status");
    assert_eq!(records[0]["class"], "READ_ONLY");
    assert_eq!(records[0]["status"], "ok");
    assert_eq!(records[0]["exit_code"], 0);
    spear(&ws).args(["audit", "--verify"]).assert().code(0);
}
