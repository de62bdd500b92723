//! The ResultStore under a 500 MB output: the envelope stays bounded, Spear's memory stays
//! bounded while the output streams to disk, and the whole output pages back through read_file.
//! Pruning keeps the store within its budget.

use std::time::{Duration, Instant};

use serde_json::json;
use spear::harness::command_policy::ExecutionProfile;
use spear::harness::primitives::{ExecutionMode::*, ToolResult, ToolStatus};
use spear::tools::executor::{CommandExecutor, CommandOutcome, OutputSink, OutputStream};
use spear::tools::host::HostConfig;

use crate::support::*;

const LINE: usize = 1000;

fn line(n: u64) -> Vec<u8> {
    let mut l = format!("{n:09} ").into_bytes();
    l.resize(LINE - 1, b'x');
    l.push(b'\n');
    l
}

/// Streams `lines` generated lines in 64 KiB chunks, never holding the output.
struct Flood {
    lines: u64,
}

impl CommandExecutor for Flood {
    fn run(
        &self,
        _: &str,
        _: &ExecutionProfile,
        _: Duration,
        sink: &mut dyn OutputSink,
    ) -> CommandOutcome {
        let mut chunk = Vec::with_capacity(64 * 1024);
        for n in 1..=self.lines {
            chunk.extend_from_slice(&line(n));
            if chunk.len() + LINE > 64 * 1024 {
                sink.write(OutputStream::Stdout, &chunk).unwrap();
                chunk.clear();
            }
        }
        sink.write(OutputStream::Stdout, &chunk).unwrap();
        // What a runner returns: a bounded head and tail, not the whole.
        let mut r = ToolResult::ok(String::from_utf8(line(1)).unwrap());
        r.exit_code = Some(0);
        CommandOutcome::ran(r)
    }
}

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let l = s.lines().find(|l| l.starts_with(field)).unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_500_mb_output_is_bounded_in_the_envelope_and_in_memory_and_pages_back_whole() {
    let f = Fixture::new();
    let lines = 500_000u64;
    let r = f.router(Box::new(Flood { lines }));
    let mut t = turn(&r, Auto);
    let (hwm0, rss0) = (status_kib("VmHWM:"), status_kib("VmRSS:"));
    let started = Instant::now();
    let env = call(&r, &mut t, "terminal", json!({"command": "cat big.log"}));
    let flood_time = started.elapsed();
    let (hwm1, rss1) = (status_kib("VmHWM:"), status_kib("VmRSS:"));
    assert!(
        hwm1.saturating_sub(hwm0) < 64 * 1024,
        "peak memory grew {} KiB",
        hwm1 - hwm0
    );
    assert!(
        rss1.saturating_sub(rss0) < 64 * 1024,
        "resident memory grew {} KiB",
        rss1 - rss0
    );
    assert_eq!(env.status, ToolStatus::Ok);
    assert_eq!((env.total_bytes, env.total_lines), (500_000_000, lines));
    assert!(env.truncated);
    assert!(
        env.preview.chars().count() <= 50_000 + 400,
        "{}",
        env.preview.len()
    );
    assert!(env.shown_bytes <= 50_000 && env.stdout.len() <= 50_400);
    let uri = env.result_id.clone().unwrap();
    assert!(
        env.preview.contains(&format!("is stored as {uri}")),
        "marker names the store"
    );
    assert!(env.preview.starts_with("000000001 xx"));
    assert!(env.preview.trim_end().ends_with('x'));
    let id = uri.strip_prefix("result://").unwrap();
    let stored = r.host().results().dir().join(format!("{id}.out"));
    assert_eq!(std::fs::metadata(&stored).unwrap().len(), 500_000_000);
    assert!(
        !stored.starts_with(&f.project),
        "kept outside the workspace"
    );

    // Page the whole output back and check every line, in order.
    let started = Instant::now();
    let (mut next, mut pages) = (1u64, 0);
    while next <= lines {
        let page = call(
            &r,
            &mut t,
            "read_file",
            json!({"path": uri, "offset": next, "limit": 2000}),
        );
        assert_eq!(page.status, ToolStatus::Ok);
        assert!(!page.truncated && page.preview.chars().count() <= 50_000);
        for l in page.preview.lines().filter(|l| !l.starts_with('[')) {
            let (num, text) = l.split_once('\t').unwrap();
            assert_eq!(num.trim().parse::<u64>().unwrap(), next);
            assert_eq!(text.as_bytes(), &line(next)[..LINE - 1], "line {next}");
            next += 1;
        }
        pages += 1;
    }
    assert_eq!(next, lines + 1);
    eprintln!(
        "500 MB: streamed in {flood_time:?}, paged back in {pages} pages in {:?}",
        started.elapsed()
    );
}

#[test]
fn small_output_is_shown_whole_and_not_kept() {
    let f = Fixture::new();
    let r = f.router(Box::new(Flood { lines: 3 }));
    let env = call(
        &r,
        &mut turn(&r, Auto),
        "terminal",
        json!({"command": "cat small.log"}),
    );
    assert!(!env.truncated && env.result_id.is_none());
    assert_eq!(
        std::fs::read_dir(r.host().results().dir()).unwrap().count(),
        0
    );
}

#[test]
fn pruning_keeps_the_store_within_its_budget_and_the_newest_result() {
    let f = Fixture::new();
    let host = f.host_with_budget(
        Box::new(Flood { lines: 60 }),
        HostConfig::default(),
        100_000,
    );
    let r = f.router_for(host);
    let mut t = turn(&r, Auto);
    let ids: Vec<String> = (0..3)
        .map(|_| {
            call(&r, &mut t, "terminal", json!({"command": "cat x"}))
                .result_id
                .unwrap()
        })
        .collect();
    let mut kept =
        |uri: &str| call(&r, &mut t, "read_file", json!({"path": uri})).status == ToolStatus::Ok;
    assert!(!kept(&ids[0]), "the oldest was pruned");
    assert!(kept(&ids[2]), "the newest is kept");
    let total: u64 = std::fs::read_dir(r.host().results().dir())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(total <= 100_000, "{total}");
}

#[test]
fn one_output_larger_than_the_budget_is_kept_up_to_the_budget() {
    let f = Fixture::new();
    let host = f.host_with_budget(
        Box::new(Flood { lines: 200 }),
        HostConfig::default(),
        100_000,
    );
    let r = f.router_for(host);
    let mut t = turn(&r, Auto);
    let env = call(&r, &mut t, "terminal", json!({"command": "cat x"}));
    assert_eq!(env.total_bytes, 200_000);
    let page = call(
        &r,
        &mut t,
        "read_file",
        json!({"path": env.result_id.unwrap(), "offset": 99}),
    );
    assert!(
        page.preview
            .contains("only the first 100000 of 200000 bytes were kept"),
        "{}",
        page.preview
    );
}
