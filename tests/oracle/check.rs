//! The oracle proper: commands in, through the sandbox and strace, judged, misses out. It
//! proves each command really ran under strace (the wrapper's two executions are in its
//! trace) before it trusts an empty verdict, and counts how often each exception matched.

use std::time::{Duration, Instant};

use spear::harness::command_policy::{CommandClass, CommandPolicy};

use crate::judge::{Exception, Judge, Mounts, Violation, parse_exceptions};
use crate::runner::{OracleBox, Traced};

const EXCEPTIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/oracle_exceptions.txt"
);

/// The exceptions file: its own path, or `SPEAR_SOURCE_DIR`'s (scripts/test-unprivileged runs
/// a copy of this binary elsewhere).
fn exceptions_text() -> String {
    let copied = std::env::var_os("SPEAR_SOURCE_DIR")
        .map(|d| std::path::Path::new(&d).join("tests/data/oracle_exceptions.txt"));
    let path = copied
        .filter(|p| p.exists())
        .unwrap_or_else(|| EXCEPTIONS.into());
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A READ_ONLY command that attempted something it must not.
#[derive(Debug)]
pub struct Miss {
    pub command: String,
    pub violations: Vec<Violation>,
}

#[derive(Debug, Default)]
pub struct Report {
    pub count: usize,
    pub misses: Vec<Miss>,
    pub timeouts: usize,
    pub elapsed: Duration,
    /// The slowest commands (microseconds, command), slowest first.
    pub slowest: Vec<(u64, String)>,
}

impl Report {
    pub fn rate(&self) -> f64 {
        self.count as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn misses_text(&self) -> String {
        let mut s = String::new();
        for m in &self.misses {
            s.push_str(&format!("MISS {:?}\n", m.command));
            for v in &m.violations {
                s.push_str(&format!("    {v}\n"));
            }
        }
        s
    }
}

pub struct Oracle {
    pub exceptions: Vec<Exception>,
    pub hits: Vec<usize>,
    policy: CommandPolicy,
    boxes: Vec<OracleBox>,
}

/// Commands per sandbox launch.
pub const BATCH: usize = 100;

impl Oracle {
    /// An oracle with `parallel` sandboxes run side by side.
    pub fn new(parallel: usize) -> Oracle {
        let exceptions = parse_exceptions(&exceptions_text()).unwrap_or_else(|e| panic!("{e}"));
        Oracle {
            hits: vec![0; exceptions.len()],
            exceptions,
            policy: CommandPolicy::default(),
            boxes: (0..parallel.max(1)).map(|_| OracleBox::new()).collect(),
        }
    }

    /// READ_ONLY without the network: what runs unasked in a closed sandbox. (A READ_ONLY
    /// command the classifier says needs the network, `curl -s URL`, connects by design.)
    pub fn read_only(&self, command: &str) -> bool {
        let a = self.policy.classify(command);
        a.class == CommandClass::ReadOnly && !a.network
    }

    /// The programs the classification named for `command`.
    pub fn named(&self, command: &str) -> Vec<String> {
        self.policy.classify(command).executables
    }

    /// Traces `commands` and judges each against the programs the classifier named for it.
    pub async fn check(&mut self, commands: &[String]) -> Report {
        let named: Vec<Vec<String>> = commands.iter().map(|c| self.named(c)).collect();
        self.check_naming(commands, &named).await
    }

    /// Traces `commands[i]` and judges it against `named[i]`.
    pub async fn check_naming(&mut self, commands: &[String], named: &[Vec<String>]) -> Report {
        let start = Instant::now();
        let mut report = Report::default();
        let mut chunks = commands.chunks(BATCH).zip(named.chunks(BATCH)).peekable();
        while chunks.peek().is_some() {
            let mut round = Vec::new();
            for b in self.boxes.iter_mut() {
                if let Some((c, n)) = chunks.next() {
                    round.push((b, c, n));
                }
            }
            let runs = futures_util::future::join_all(
                round
                    .into_iter()
                    .map(|(b, c, n)| async move { (b.run(c).await, b.home.clone(), n) }),
            )
            .await;
            for (traced, home, named) in runs {
                let mounts = Mounts {
                    home: home.expect("the driver printed no HOME"),
                };
                for (t, n) in traced.iter().zip(named) {
                    self.judge_one(t, n, &mounts, &mut report);
                }
            }
        }
        report.elapsed = start.elapsed();
        report
    }

    fn judge_one(&mut self, t: &Traced, named: &[String], mounts: &Mounts, report: &mut Report) {
        let execs = t
            .trace
            .calls
            .iter()
            .filter(|c| c.name == "execve" && c.ret == "0")
            .count();
        assert!(
            execs >= 2 && t.trace.calls.first().is_some_and(|c| c.name == "execve"),
            "the command {:?} did not run under strace (no wrapper execution in its trace); \
             its output:\n{}",
            t.command,
            t.raw.chars().take(4000).collect::<String>()
        );
        report.count += 1;
        report.slowest.push((t.micros, t.command.clone()));
        report.slowest.sort_by(|a, b| b.0.cmp(&a.0));
        report.slowest.truncate(3);
        if t.status == Some(124) || t.status == Some(137) {
            report.timeouts += 1;
        }
        let mut judge = Judge {
            mounts,
            exceptions: &self.exceptions,
            hits: &mut self.hits,
        };
        let violations = judge.judge(&t.trace, named, &t.scratch);
        if !violations.is_empty() {
            report.misses.push(Miss {
                command: t.command.clone(),
                violations,
            });
        }
    }

    /// Exceptions that matched nothing so far.
    pub fn unmatched(&self) -> Vec<&Exception> {
        self.exceptions
            .iter()
            .zip(&self.hits)
            .filter(|(_, h)| **h == 0)
            .map(|(e, _)| e)
            .collect()
    }
}
