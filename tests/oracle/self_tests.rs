//! The oracle's own tests, run as root and (scripts/test-unprivileged) as an ordinary user: a
//! command that writes through each family of calls is caught, a command that only reads is
//! not, and the trace is out of the traced command's reach. The commands here are run in the
//! sandbox over a scratch copy only, never on the host.

use crate::check::Oracle;

/// One writer per family the oracle must catch, with the words its report must carry.
const WRITERS: &[(&str, &str)] = &[
    ("echo x > out.txt", "an open for writing"),
    ("cat a.txt >> b.txt", "an open for writing"),
    ("mkdir newdir", "a create"),
    ("truncate -s 0 a.txt", "a truncate"),
    ("rm b.txt", "a delete"),
    ("rmdir docs 2>/dev/null; rm -r docs", "a delete"),
    ("mv a.txt c.txt", "a rename"),
    ("chmod 600 a.txt", "a mode change"),
    ("chown \"$(id -u)\" a.txt", "an owner change"),
    ("ln a.txt hard.txt", "a link"),
    ("ln -s a.txt soft.txt", "a link"),
    ("touch -d 2020-01-01 a.txt", "a time change"),
    (
        "/usr/bin/python3 -c 'import os; os.setxattr(\"a.txt\", \"user.oracle\", b\"1\")'",
        "an xattr change",
    ),
    (
        "/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")'",
        "a socket bind",
    ),
    (
        "/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"/var/lib/x.sock\")'",
        "a connect",
    ),
    ("exec 3<>/dev/tcp/192.0.2.1/80", "a connect"),
    (
        "/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (\"192.0.2.1\", 53))'",
        "a send to an internet address",
    ),
    ("kill -TERM 1", "a signal to a process it did not start"),
];

#[tokio::test]
async fn a_write_through_each_family_is_caught() {
    let mut oracle = Oracle::new(1);
    let commands: Vec<String> = WRITERS.iter().map(|(c, _)| c.to_string()).collect();
    let mut named: Vec<Vec<String>> = commands.iter().map(|c| oracle.verdicts.named(c)).collect();
    let mut commands = commands;
    // And one that runs a program the classification did not name.
    commands.push("ls".into());
    named.push(vec!["cat".into()]);
    let report = oracle.check_naming(&commands, &named).await;
    assert_eq!(report.count, commands.len());
    let mut uncaught = Vec::new();
    for (i, c) in commands.iter().enumerate() {
        let want = WRITERS
            .get(i)
            .map(|(_, w)| *w)
            .unwrap_or("an execve of a program the classification did not name");
        let caught = report
            .misses
            .iter()
            .find(|m| &m.command == c)
            .is_some_and(|m| m.violations.iter().any(|v| v.what == want));
        if !caught {
            uncaught.push(format!("{c:?} (want {want})"));
        }
    }
    assert!(
        uncaught.is_empty(),
        "writers the oracle did not catch:\n{}\nits report:\n{}",
        uncaught.join("\n"),
        report.misses_text()
    );
}

#[tokio::test]
async fn a_command_that_only_reads_is_not_caught() {
    let mut oracle = Oracle::new(1);
    let readers: Vec<String> = [
        "cat a.txt; ls -la; head -c 4 bin.dat",
        "grep -rn TODO . | sort",
        "git log --oneline -3 && git diff --stat",
        "find . -name '*.rs' -newer Cargo.toml",
        "wc -l *.txt 2>/dev/null",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let report = oracle.check(&readers).await;
    assert_eq!(report.count, readers.len());
    assert!(
        report.misses.is_empty(),
        "read-only commands reported:\n{}",
        report.misses_text()
    );
}

#[tokio::test]
async fn the_trace_is_out_of_the_commands_reach() {
    let mut oracle = Oracle::new(1);
    // Every descriptor a command could hold of the trace: none may open.
    let probe =
        "cat /proc/self/fd/3 /proc/self/fd/4 /proc/self/fd/5 /proc/self/fd/9 /proc/self/fd/2";
    let report = oracle.check(&[probe.to_string()]).await;
    assert_eq!(report.count, 1);
    // A fresh run to see the calls themselves.
    let mut b = crate::runner::OracleBox::new();
    let traced = b.run(&[probe.to_string()]).await;
    let opens: Vec<_> = traced[0]
        .trace
        .calls
        .iter()
        .filter(|c| c.name == "openat" && c.text.contains("/proc/self/fd/"))
        .collect();
    assert_eq!(
        opens.len(),
        5,
        "cat's opens are not all in the trace: {opens:?}"
    );
    for o in opens {
        let fd2 = o.text.contains("/proc/self/fd/2");
        // fd 2 is the command's own standard error: /dev/null, never strace's pipe.
        assert!(
            if fd2 {
                o.ret_path().as_deref() == Some("/dev/null")
            } else {
                o.failed()
            },
            "the traced command could open {}",
            o.text
        );
    }
}

#[tokio::test]
async fn git_status_takes_no_optional_lock() {
    let mut oracle = Oracle::new(1);
    let git_hits = |o: &Oracle| -> usize {
        o.exceptions
            .iter()
            .zip(&o.hits)
            .filter(|(e, _)| e.program == "git")
            .map(|(_, h)| *h)
            .sum()
    };
    // The positive control: with the optional lock allowed again, git status refreshes the
    // seed's stale index (a change, and every file copied anew) and writes it back.
    let control = "GIT_OPTIONAL_LOCKS=1 git status".to_string();
    let report = oracle.check_naming(&[control], &[vec!["git".into()]]).await;
    assert_eq!(report.count, 1);
    assert!(
        git_hits(&oracle) > 0,
        "git status wrote no index even with GIT_OPTIONAL_LOCKS=1: the control did not work"
    );
    // The sandbox's GIT_OPTIONAL_LOCKS=0: no write, no exception needed.
    let before = git_hits(&oracle);
    let report = oracle.check(&["git status".to_string()]).await;
    assert_eq!(report.count, 1);
    assert!(
        report.misses.is_empty() && git_hits(&oracle) == before,
        "git status wrote the index under the sandbox's GIT_OPTIONAL_LOCKS=0\n{}",
        report.misses_text()
    );
}
