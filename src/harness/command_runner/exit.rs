//! How the end of a command is read. bwrap (and bash before it) reports a command killed by
//! signal N as exit code 128 + N, so the number is all there is: codes 129 to 159 whose signal
//! ends a process by default are read as that signal's death and reported `failed`, naming the
//! signal and, when a resource limit sent it, the limit. The exit code is kept as it was.
//!
//! Which codes count: a signal whose default action cannot end a process (SIGCHLD, SIGCONT,
//! SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG, SIGWINCH: codes 145 to 151 and 156) cannot have
//! produced its code, so those stay ordinary exit codes; so does everything from 160 up (the
//! real-time signals are rare, and scripts use those numbers). A script that runs `exit 130`
//! itself reads as a SIGINT death: nothing outside the process can tell the two apart, and the
//! reason says so rather than pretend to know.

use crate::harness::primitives::ToolStatus;
use crate::harness::resource_control::{LimitHit, ResourceLimits};

/// bwrap's report that the program it was to start could not be (`execvp NAME: why`, exit 1),
/// as bash reports the same failure: 127 `not_found` for a program that is not there, 126
/// `failed` for one that is there but cannot be executed. Only a launch without bash meets it:
/// under bash, bash itself reports. `None` for every other ending.
pub fn start_failure(code: i32, stderr: &str) -> Option<(ToolStatus, String, i32)> {
    let why = stderr.trim().strip_prefix("bwrap: execvp ")?;
    if code != 1 || why.contains('\n') {
        return None;
    }
    Some(if why.ends_with(": No such file or directory") {
        (ToolStatus::NotFound, "command not found".into(), 127)
    } else {
        (
            ToolStatus::Failed,
            format!("the command could not be started: {why}"),
            126,
        )
    })
}

/// A signal a command died of: its number, name, and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeathSignal {
    pub number: i32,
    pub name: &'static str,
    pub meaning: &'static str,
}

/// The signals whose default action ends a process (Linux numbering, x86 and arm alike).
const TERMINATING: [(i32, &str, &str); 23] = [
    (1, "SIGHUP", "hangup"),
    (2, "SIGINT", "interrupt"),
    (3, "SIGQUIT", "quit"),
    (4, "SIGILL", "illegal instruction"),
    (5, "SIGTRAP", "trace or breakpoint trap"),
    (
        6,
        "SIGABRT",
        "aborted, often by a failed assertion or a panic",
    ),
    (7, "SIGBUS", "bus error: a bad memory access"),
    (8, "SIGFPE", "arithmetic error, such as a division by zero"),
    (9, "SIGKILL", "killed outright"),
    (10, "SIGUSR1", "user-defined signal 1"),
    (
        11,
        "SIGSEGV",
        "segmentation fault: an invalid memory access",
    ),
    (12, "SIGUSR2", "user-defined signal 2"),
    (
        13,
        "SIGPIPE",
        "broken pipe: it wrote to a pipe nobody reads",
    ),
    (14, "SIGALRM", "alarm clock"),
    (15, "SIGTERM", "asked to terminate"),
    (16, "SIGSTKFLT", "stack fault"),
    (24, "SIGXCPU", "CPU time limit exceeded"),
    (25, "SIGXFSZ", "file size limit exceeded"),
    (26, "SIGVTALRM", "virtual alarm clock"),
    (27, "SIGPROF", "profiling timer expired"),
    (29, "SIGIO", "I/O possible"),
    (30, "SIGPWR", "power failure"),
    (
        31,
        "SIGSYS",
        "bad system call (refused by a seccomp filter, for one)",
    ),
];

/// The signal number `n` by name, for any signal that can end a process.
pub fn signal(n: i32) -> Option<DeathSignal> {
    TERMINATING
        .iter()
        .find(|(num, _, _)| *num == n)
        .map(|&(number, name, meaning)| DeathSignal {
            number,
            name,
            meaning,
        })
}

/// The signal an exit code says the command died of, if it says one.
pub fn death_signal(exit_code: i32) -> Option<DeathSignal> {
    exit_code
        .checked_sub(128)
        .filter(|n| (1..=31).contains(n))
        .and_then(signal)
}

/// The limit's configured value, in words.
fn limit_value(hit: LimitHit, limits: &ResourceLimits) -> Option<String> {
    let mib = |b: u64| format!("{} MiB", b >> 20);
    match hit {
        LimitHit::Cpu => limits.cpu_seconds.map(|s| format!("{s} s of CPU time")),
        LimitHit::Memory => limits
            .data_bytes
            .or(limits.address_space_bytes)
            .map(|b| format!("{} of memory", mib(b))),
        LimitHit::Processes => limits.processes.map(|n| format!("{n} processes")),
        LimitHit::FileSize => limits
            .file_size_bytes
            .map(|b| format!("{} per file", mib(b))),
    }
}

/// Why a command that exited `code` failed, when it did: a limit that stopped it (with the
/// signal, if one was sent) or a signal that killed it. `None` for an ordinary exit.
pub fn failure_reason(code: i32, hit: Option<LimitHit>, limits: &ResourceLimits) -> Option<String> {
    let sig = death_signal(code);
    let killed = sig.map(|s| {
        format!(
            "the command was killed by {} ({}); exit code {code} is 128 + {}, which is how bwrap \
             and bash report a death by signal (a command that itself exits {code} reads the \
             same)",
            s.name, s.meaning, s.number
        )
    });
    match (hit, killed) {
        (Some(hit), killed) => {
            let value = limit_value(hit, limits)
                .map(|v| format!(" ({v})"))
                .unwrap_or_default();
            Some(match killed {
                Some(k) => format!("{}{value}: {k}", hit.describe()),
                None => format!("{}{value}", hit.describe()),
            })
        }
        (None, killed) => killed,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_program_bwrap_could_not_start_is_read_as_bash_reads_it() {
        let (status, why, code) =
            super::start_failure(1, "bwrap: execvp nope: No such file or directory\n").unwrap();
        assert_eq!(
            (status, why.as_str(), code),
            (ToolStatus::NotFound, "command not found", 127)
        );
        let (status, why, code) =
            super::start_failure(1, "bwrap: execvp ./data.txt: Permission denied").unwrap();
        assert_eq!((status, code), (ToolStatus::Failed, 126));
        assert!(why.contains("./data.txt: Permission denied"), "{why}");
        // Another exit code, other words, or the command's own output before them: not ours.
        assert_eq!(
            super::start_failure(2, "bwrap: execvp x: No such file or directory"),
            None
        );
        assert_eq!(
            super::start_failure(1, "bwrap: Can't mount proc: EPERM"),
            None
        );
        assert_eq!(
            super::start_failure(1, "hello\nbwrap: execvp x: No such file or directory"),
            None
        );
    }

    use super::*;

    #[test]
    fn only_codes_a_terminating_signal_can_produce_are_deaths() {
        let named = |c| death_signal(c).map(|s| s.name);
        assert_eq!(named(139), Some("SIGSEGV"));
        assert_eq!(named(137), Some("SIGKILL"));
        assert_eq!(named(134), Some("SIGABRT"));
        assert_eq!(named(152), Some("SIGXCPU"));
        assert_eq!(named(159), Some("SIGSYS"));
        for ordinary in [
            0, 1, 3, 127, 128, 145, 146, 147, 148, 149, 150, 151, 156, 160, 255, -1,
        ] {
            assert_eq!(named(ordinary), None, "{ordinary}");
        }
        let count = (129..=159).filter(|c| death_signal(*c).is_some()).count();
        assert_eq!(count, TERMINATING.len());
    }

    #[test]
    fn reasons_name_the_signal_and_the_limit() {
        let limits = ResourceLimits {
            cpu_seconds: Some(1),
            ..ResourceLimits::default()
        };
        assert_eq!(
            failure_reason(139, None, &limits).unwrap(),
            "the command was killed by SIGSEGV (segmentation fault: an invalid memory access); \
             exit code 139 is 128 + 11, which is how bwrap and bash report a death by signal (a \
             command that itself exits 139 reads the same)"
        );
        assert_eq!(
            failure_reason(152, Some(LimitHit::Cpu), &limits).unwrap(),
            "killed by the CPU time limit (1 s of CPU time): the command was killed by SIGXCPU \
             (CPU time limit exceeded); exit code 152 is 128 + 24, which is how bwrap and bash \
             report a death by signal (a command that itself exits 152 reads the same)"
        );
        assert_eq!(
            failure_reason(1, Some(LimitHit::Memory), &limits).unwrap(),
            "out of memory: the memory limit refused an allocation (8192 MiB of memory)"
        );
        assert_eq!(failure_reason(3, None, &limits), None);
        assert_eq!(failure_reason(146, None, &limits), None);
    }
}
