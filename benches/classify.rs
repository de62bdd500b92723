//! Classification speed over the test corpus: throughput (commands per second, from criterion)
//! and the p99 time of one command (measured here over every corpus command, many rounds).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group};
use spear::harness::command_policy::CommandPolicy;

fn corpus() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/classify_corpus.txt"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('\t').nth(1))
        .map(|c| c.replace("\\n", "\n").replace("\\t", "\t"))
        .collect()
}

fn throughput(c: &mut Criterion) {
    let commands = corpus();
    let policy = CommandPolicy::default();
    let mut group = c.benchmark_group("classify");
    group.throughput(Throughput::Elements(commands.len() as u64));
    group.bench_function("corpus", |b| {
        b.iter(|| {
            for cmd in &commands {
                black_box(policy.classify(black_box(cmd)));
            }
        })
    });
    group.finish();
}

/// Per-command latency distribution: every corpus command timed alone, over several rounds.
fn latency_report() {
    let commands = corpus();
    let policy = CommandPolicy::default();
    let rounds = if std::env::args().any(|a| a == "--bench") {
        50
    } else {
        1
    };
    let mut samples: Vec<Duration> = Vec::with_capacity(commands.len() * rounds);
    for _ in 0..rounds {
        for cmd in &commands {
            let start = Instant::now();
            black_box(policy.classify(black_box(cmd)));
            samples.push(start.elapsed());
        }
    }
    samples.sort_unstable();
    let pick = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    let worst = commands
        .iter()
        .map(|c| {
            let start = Instant::now();
            black_box(policy.classify(c));
            (start.elapsed(), c)
        })
        .max_by_key(|(d, _)| *d);
    println!(
        "classify latency over {} samples ({} commands): p50 {:?}  p99 {:?}  max {:?}",
        samples.len(),
        commands.len(),
        pick(0.5),
        pick(0.99),
        pick(1.0)
    );
    if let Some((d, c)) = worst {
        println!(
            "slowest single command ({d:?}): {:?}",
            c.chars().take(80).collect::<String>()
        );
    }
}

criterion_group!(benches, throughput);

fn main() {
    latency_report();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
