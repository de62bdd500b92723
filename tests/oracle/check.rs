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

/// The classifier's verdicts the oracle needs: cheap to clone, so the generator can draw
/// commands on its own thread while the sandboxes run the last round.
#[derive(Clone, Default)]
pub struct Verdicts {
    policy: CommandPolicy,
}

impl Verdicts {
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
}

pub struct Oracle {
    pub exceptions: Vec<Exception>,
    pub hits: Vec<usize>,
    pub verdicts: Verdicts,
    boxes: Vec<OracleBox>,
}

/// Commands per sandbox launch: small enough that the sandboxes, each taking the next batch
/// when it is done, finish a round close together; large enough that a launch costs little.
pub const BATCH: usize = 50;

impl Oracle {
    /// An oracle with `parallel` sandboxes run side by side.
    pub fn new(parallel: usize) -> Oracle {
        let exceptions = parse_exceptions(&exceptions_text()).unwrap_or_else(|e| panic!("{e}"));
        Oracle {
            hits: vec![0; exceptions.len()],
            exceptions,
            verdicts: Verdicts::default(),
            boxes: (0..parallel.max(1)).map(|_| OracleBox::new()).collect(),
        }
    }

    /// Traces `commands` and judges each against the programs the classifier named for it.
    pub async fn check(&mut self, commands: &[String]) -> Report {
        let named: Vec<Vec<String>> = commands.iter().map(|c| self.verdicts.named(c)).collect();
        self.check_naming(commands, &named).await
    }

    /// Traces `commands[i]` and judges it against `named[i]`.
    pub async fn check_naming(&mut self, commands: &[String], named: &[Vec<String>]) -> Report {
        let start = Instant::now();
        let mut report = Report::default();
        // Each sandbox takes the next batch when it finishes one, so a slow batch holds up
        // only its own sandbox.
        let queue = std::sync::Mutex::new(commands.chunks(BATCH).zip(named.chunks(BATCH)));
        let queue = &queue;
        let runs = futures_util::future::join_all(self.boxes.iter_mut().map(|b| async move {
            let mut done = Vec::new();
            loop {
                let next = queue.lock().unwrap().next();
                let Some((c, n)) = next else { break };
                let traced = b.run(c).await;
                done.push((traced, b.home.clone(), n));
            }
            done
        }))
        .await;
        for (traced, home, named) in runs.into_iter().flatten() {
            let mounts = Mounts::new(home.expect("the driver printed no HOME"));
            for (t, n) in traced.iter().zip(named) {
                self.judge_one(t, n, &mounts, &mut report);
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
