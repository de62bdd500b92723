//! Issue 8, item 8: a command killed by a signal is `failed`, its reason names the signal (and
//! the limit, when a limit sent it), and its exit code is kept. Ordinary exits stay `ok`.

use spear::harness::command_runner::CommandRunner;
use spear::harness::primitives::ToolStatus;
use spear::harness::resource_control::ResourceLimits;

use crate::support::*;

#[tokio::test]
async fn a_command_killed_by_a_signal_fails_naming_the_signal() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    for (sig, code, meaning) in [
        ("KILL", 137, "killed outright"),
        ("SEGV", 139, "segmentation fault"),
        ("ABRT", 134, "aborted"),
        ("TERM", 143, "asked to terminate"),
    ] {
        // The shell prints first, so the command is known to have run before it died.
        let res = run(
            &r,
            writable(),
            &format!("echo ran; kill -{sig} $$; echo survived"),
        )
        .await;
        assert_eq!(res.stdout, "ran\n", "SIG{sig}: {res:?}");
        assert_eq!(res.status, ToolStatus::Failed, "SIG{sig}: {res:?}");
        assert_eq!(res.exit_code, Some(code), "SIG{sig}: {res:?}");
        let reason = res.reason.as_deref().unwrap();
        assert!(
            reason.contains(&format!("killed by SIG{sig} ({meaning}")),
            "SIG{sig}: {reason}"
        );
        assert!(
            reason.contains(&format!("exit code {code} is 128 + {}", code - 128)),
            "{reason}"
        );
    }
}

#[tokio::test]
async fn ordinary_exits_stay_ok_with_their_code() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    // 146 would be SIGTSTP, which stops rather than ends a process: it is only ever an exit code.
    for code in [0, 3, 125, 146, 200] {
        let res = run(&r, read_only(), &format!("exit {code}")).await;
        assert_eq!(res.status, ToolStatus::Ok, "exit {code}: {res:?}");
        assert_eq!(res.exit_code, Some(code));
        assert_eq!(res.reason, None);
    }
}

#[tokio::test]
async fn the_cpu_limit_is_named_with_its_signal() {
    let (_d, ws) = workspace();
    let mut cfg = config(&ws);
    cfg.resource_limits = ResourceLimits {
        cpu_seconds: Some(1),
        ..ResourceLimits::default()
    };
    let r = CommandRunner::new(cfg).unwrap();
    let res = run(&r, writable(), "while :; do :; done").await;
    assert_eq!(res.status, ToolStatus::Failed, "{res:?}");
    assert_eq!(res.exit_code, Some(128 + libc::SIGXCPU));
    let reason = res.reason.unwrap();
    assert!(
        reason.starts_with(
            "killed by the CPU time limit (1 s of CPU time): the command was killed by SIGXCPU"
        ),
        "{reason}"
    );
}

#[test]
fn spear_exec_reports_the_signal_and_keeps_the_code() {
    let (_d, ws) = workspace();
    let out = spear_in(&ws)
        .args(["exec", "--mode", "auto", "--json", "--", "kill -SEGV $$"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(139));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["exit_code"], 139);
    assert!(v["reason"].as_str().unwrap().contains("SIGSEGV"), "{v}");
    let human = spear_in(&ws)
        .args(["exec", "--mode", "auto", "--", "kill -KILL $$"])
        .output()
        .unwrap();
    assert_eq!(human.status.code(), Some(137));
    let err = String::from_utf8_lossy(&human.stderr);
    assert!(
        err.contains("spear: failed: the command was killed by SIGKILL"),
        "{err}"
    );
}
