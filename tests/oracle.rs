//! The write-attempt oracle (issue 19 item 2): commands the classifier calls READ_ONLY, run
//! only inside the sandbox over a writable throwaway copy of a seeded tree, traced by strace,
//! must attempt no write, delete, rename, mode, owner, time or xattr change, link, bind outside
//! the sandbox's private tmpfs mounts, no connect to an internet address or an outside socket
//! path, no signal to a process they did not start and no execution of a program the
//! classification did not name. It reads the corpus, the composed corpus and a grammar-based
//! generator's commands. A missing bwrap or strace, or a host that refuses ptrace in the
//! sandbox, fails it with the reason. `scripts/oracle --minutes N` runs it at length.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(not(feature = "test-hooks"))]
compile_error!("the oracle needs `--features test-hooks` (`make test` passes it)");

#[path = "oracle/check.rs"]
mod check;
#[path = "classify/compose.rs"]
#[allow(dead_code)]
mod compose;
#[path = "oracle/generator.rs"]
mod generator;
#[path = "oracle/judge.rs"]
mod judge;
#[path = "oracle/runner.rs"]
mod runner;
#[path = "oracle/seed.rs"]
mod seed;
#[path = "oracle/self_tests.rs"]
mod self_tests;
#[path = "oracle/trace.rs"]
mod trace;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use check::{Oracle, Report, Verdicts};
use generator::{Grammar, Rng};

/// The fixed seed and size of `make test`'s generated sample.
const SAMPLE_SEED: u64 = 19;
const SAMPLE_SIZE: usize = 2000;
/// Composed corpus commands in `make test`'s run.
const COMPOSED: usize = 200;
/// Sandboxes run side by side.
const PARALLEL: usize = 3;
/// Generated commands in one round at length (a tenth more come from the composed corpus).
const ROUND: usize = 400;

/// The corpus's READ_ONLY commands (written with `\n`/`\t` escapes) and the everyday list's
/// commands the classifier calls READ_ONLY.
fn corpus(oracle: &Verdicts) -> Vec<String> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{dir}/tests/data/classify_corpus.txt")).unwrap();
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("READ_ONLY\t"))
        .map(|l| l.split('\t').next().unwrap_or(l))
        .map(|c| c.replace("\\n", "\n").replace("\\t", "\t"))
        .filter(|c| oracle.read_only(c))
        .collect();
    let everyday =
        std::fs::read_to_string(format!("{dir}/tests/data/everyday_commands.txt")).unwrap();
    out.extend(
        everyday
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(str::to_string)
            .filter(|c| oracle.read_only(c)),
    );
    dedup(out)
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    v.into_iter().filter(|c| seen.insert(c.clone())).collect()
}

/// READ_ONLY compositions of composable corpus commands: pairs joined by a list operator, and
/// one command inside a construct.
fn composed(oracle: &Verdicts, parts: &[String], n: usize, rng: &mut Rng) -> Vec<String> {
    let parts: Vec<&String> = parts.iter().filter(|c| compose::composable(c)).collect();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut tries = 0;
    while out.len() < n && tries < n * 50 && !parts.is_empty() {
        tries += 1;
        let a = *rng.pick(&parts);
        let c = if rng.chance(50) {
            let b = *rng.pick(&parts);
            let op = *rng.pick::<&str>(&["&&", "||", ";", "|", "\n"]);
            format!("{a} {op} {b}")
        } else {
            match compose::wrap(rng.pick::<&str>(compose::WRAPS), a) {
                Some(w) => w,
                None => continue,
            }
        };
        if oracle.read_only(&c) && seen.insert(c.clone()) {
            out.push(c);
        }
    }
    out
}

/// `n` distinct generated commands the classifier calls READ_ONLY, and how many were drawn.
fn generated(
    oracle: &Verdicts,
    grammar: &Grammar,
    n: usize,
    rng: &mut Rng,
) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut drawn = 0;
    while out.len() < n && drawn < n * 200 {
        drawn += 1;
        let c = grammar.line(rng);
        if !c.contains('\0') && seen.insert(c.clone()) && oracle.read_only(&c) {
            out.push(c);
        }
    }
    (out, drawn)
}

/// The generator, with the corpus's composable commands among its pieces.
fn grammar(corpus: &[String]) -> Grammar {
    let parts = corpus.iter().filter(|c| compose::composable(c));
    Grammar::new(parts.cloned().collect())
}

fn print_figures(what: &str, seed: Option<u64>, r: &Report) {
    let seed = seed.map(|s| format!(", seed {s}")).unwrap_or_default();
    eprintln!(
        "oracle: {what}: {} READ_ONLY commands{seed}, {:.1} commands/s over {:.0} s, {} timed out, {} misses",
        r.count,
        r.rate(),
        r.elapsed.as_secs_f64(),
        r.timeouts,
        r.misses.len()
    );
    for (micros, command) in &r.slowest {
        eprintln!("oracle:   slow: {:.2} s {command:?}", *micros as f64 / 1e6);
    }
}

/// Whether a program an exception names is on this host's system path (a glob matches a
/// file there): an exception for a program the host lacks has nothing to match here.
fn installed(program: &str) -> bool {
    program == "*"
        || [
            "/usr/local/sbin",
            "/usr/local/bin",
            "/usr/sbin",
            "/usr/bin",
            "/sbin",
            "/bin",
        ]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .any(|e| judge::glob(program, &e.file_name().to_string_lossy()))
}

fn assert_exceptions_used(oracle: &Oracle) {
    let unused: Vec<String> = oracle
        .unmatched()
        .iter()
        .filter(|e| installed(&e.program))
        .map(|e| {
            format!(
                "line {}: {} {} {} ({})",
                e.line, e.program, e.call, e.target, e.reason
            )
        })
        .collect();
    assert!(
        unused.is_empty(),
        "exceptions in tests/data/oracle_exceptions.txt that matched nothing (remove them, or \
         the call they excuse no longer happens):\n{}",
        unused.join("\n")
    );
}

/// `make test`'s run: the corpus, a composed sample and 2,000 generated commands at a fixed
/// seed. Prints the count, the seed and the rate; asserts no time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corpus_and_a_fixed_seed_sample_attempt_no_write() {
    let mut oracle = Oracle::new(PARALLEL);
    let corpus = corpus(&oracle.verdicts);
    let mut rng = Rng::new(SAMPLE_SEED);
    let composed = composed(&oracle.verdicts, &corpus, COMPOSED, &mut rng);
    let grammar = grammar(&corpus);
    let (sample, drawn) = generated(&oracle.verdicts, &grammar, SAMPLE_SIZE, &mut rng);
    assert_eq!(
        sample.len(),
        SAMPLE_SIZE,
        "the generator found too few READ_ONLY commands"
    );
    let mut text = String::new();
    let mut total = 0;
    for (what, commands, seed) in [
        ("corpus", &corpus, None),
        ("composed corpus", &composed, Some(SAMPLE_SEED)),
        ("generated sample", &sample, Some(SAMPLE_SEED)),
    ] {
        let report = oracle.check(commands).await;
        assert_eq!(
            report.count,
            commands.len(),
            "{what}: not every command ran"
        );
        print_figures(what, seed, &report);
        total += report.misses.len();
        text.push_str(&report.misses_text());
    }
    eprintln!(
        "oracle: the generator drew {drawn} commands for {SAMPLE_SIZE} READ_ONLY ones \
         ({:.0}% READ_ONLY)",
        100.0 * SAMPLE_SIZE as f64 / drawn as f64
    );
    assert!(
        total == 0,
        "{total} READ_ONLY commands attempted what a read-only command must not (each becomes \
         a corpus entry and a classifier fix):\n{text}"
    );
    assert_exceptions_used(&oracle);
}

/// At length (`scripts/oracle --minutes N [--seed S]`): the corpus, then generated and composed
/// commands until the time is up, printing figures after each round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs for minutes; scripts/oracle runs it"]
async fn at_length() {
    let minutes: f64 = std::env::var("SPEAR_ORACLE_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(10.0);
    let seed: u64 = std::env::var("SPEAR_ORACLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(1)
        });
    let mut oracle = Oracle::new(PARALLEL);
    let corpus = corpus(&oracle.verdicts);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(minutes * 60.0);
    // The generator draws and classifies the next round on its own thread while the sandboxes
    // run this one (one round ahead: the channel holds one).
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<String>>(1);
    let producer = {
        let (verdicts, corpus) = (oracle.verdicts.clone(), corpus.clone());
        std::thread::spawn(move || {
            let grammar = grammar(&corpus);
            let mut rng = Rng::new(seed);
            loop {
                let (mut round, _) = generated(&verdicts, &grammar, ROUND, &mut rng);
                round.extend(composed(&verdicts, &corpus, ROUND / 10, &mut rng));
                if tx.blocking_send(round).is_err() {
                    break;
                }
            }
        })
    };
    // The corpus first: every run at length covers it, and with it every exception's case.
    let mut total = oracle.check(&corpus).await;
    let mut text = total.misses_text();
    eprint!("{text}");
    print_figures("corpus", None, &total);
    while Instant::now() < deadline {
        let round = rx.recv().await.expect("the generator stopped");
        let r = oracle.check(&round).await;
        total.count += r.count;
        total.timeouts += r.timeouts;
        // The rate over the whole run, generation and classification included.
        total.elapsed = start.elapsed();
        text.push_str(&r.misses_text());
        eprint!("{}", r.misses_text());
        total.misses.extend(r.misses);
        total.slowest.extend(r.slowest);
        total.slowest.sort_by(|a, b| b.0.cmp(&a.0));
        total.slowest.truncate(3);
        print_figures("so far", Some(seed), &total);
    }
    drop(rx);
    producer.join().expect("the generator panicked");
    print_figures("at length", Some(seed), &total);
    assert!(
        total.misses.is_empty(),
        "{} misses:\n{text}",
        total.misses.len()
    );
    assert_exceptions_used(&oracle);
}
