//! The audit log across processes: writers killed with SIGKILL in the middle of a loop of
//! 10,000 appends, and two processes appending at once. The writers are this test binary
//! re-executed (`current_exe`) with `helper_audit_writer` selected and its work in the environment.

use std::process::{Child, Command};
use std::time::Duration;

use spear::harness::audit::AuditLogger;

use crate::audit::{Fixture, event, verify_ok};

const HELPER_ENV: &str = "SPEAR_AUDIT_WRITER";

/// Not a test of its own: the body of a writer process. Without `SPEAR_AUDIT_WRITER` it returns
/// at once; with `STATE|PROJECT|N` it appends N records to that workspace's log.
#[test]
fn helper_audit_writer() {
    let Ok(spec) = std::env::var(HELPER_ENV) else {
        return;
    };
    let mut parts = spec.split('|');
    let (state, project, n) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap().parse::<usize>().unwrap(),
    );
    let logger = AuditLogger::open_in(state.as_ref(), project.as_ref()).unwrap();
    for i in 0..n {
        logger.append(&event(i)).unwrap();
    }
}

fn writer(f: &Fixture, n: usize) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "audit_process::helper_audit_writer",
            "--test-threads=1",
            "--quiet",
        ])
        .env(
            HELPER_ENV,
            format!("{}|{}|{n}", f.state.display(), f.project.display()),
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn records(f: &Fixture) -> usize {
    let logger = f.logger();
    std::fs::read_to_string(&logger.paths().log)
        .unwrap()
        .lines()
        .count()
}

#[test]
fn writers_killed_mid_loop_lose_no_earlier_record() {
    let f = Fixture::new();
    let logger = f.logger();
    let mut before = 0;
    for round in 0..6u64 {
        let mut child = writer(&f, 10_000);
        // Let it get into the loop, then kill it wherever it is: not a wait for anything, the
        // kill is meant to land at an arbitrary moment (the check after it holds at any).
        std::thread::sleep(Duration::from_millis(150 + 37 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        let report = verify_ok(&logger.paths().log, &logger.paths().head);
        assert!(
            report.records as usize >= before,
            "records were lost: {} < {before}",
            report.records
        );
        before = report.records as usize;
    }
    assert!(before > 0, "the killed writers never appended anything");
    // The next writer carries on from whatever the last one left.
    logger.append(&event(0)).unwrap();
    let report = verify_ok(&logger.paths().log, &logger.paths().head);
    assert_eq!(report.torn_line, None);
    assert!(report.records as usize > before);
}

#[test]
fn two_processes_append_concurrently_without_losing_or_breaking_records() {
    let f = Fixture::new();
    let (mut a, mut b) = (writer(&f, 150), writer(&f, 150));
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    let logger = f.logger();
    let report = verify_ok(&logger.paths().log, &logger.paths().head);
    assert_eq!(
        (report.records, report.torn_line, report.head_lagging),
        (300, None, false)
    );
    assert_eq!(records(&f), 300);
}
