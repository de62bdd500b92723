//! The ResultStore under floods. Issue 8, item 7: one result keeps at most its cap (head and
//! tail) and all results together at most the total budget, both while the output streams, not
//! only after; the oldest results are evicted first and never one of the current turn; the
//! envelope says what was kept and dropped; an evicted id reads back as a clear not_found.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use spear::harness::command_policy::ExecutionProfile;
use spear::harness::primitives::{ExecutionMode::*, ToolResult, ToolStatus};
use spear::harness::process::BoundedCapture;
use spear::harness::sandbox::{CAPTURE_HEAD, CAPTURE_TAIL};
use spear::tools::executor::{CommandExecutor, ExecOutcome, OutputSink, OutputStream};
use spear::tools::host::HostConfig;
use spear::tools::results::{ResultStore, StoreLimits};
use spear::tools::router::ToolRouter;

use crate::support::*;

const LINE: usize = 1000;
const MIB: u64 = 1 << 20;

fn line(n: u64) -> Vec<u8> {
    let mut l = format!("{n:09} ").into_bytes();
    l.resize(LINE - 1, b'x');
    l.push(b'\n');
    l
}

/// Bytes of every file in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.metadata().map_or(0, |m| m.len()))
                .sum()
        })
        .unwrap_or(0)
}

/// Streams `lines` generated lines in 64 KiB chunks, never holding the output. When `watch` is
/// set, it measures the store directory every megabyte it writes and keeps the largest size
/// seen, so the bound is checked while the output streams.
struct Flood {
    lines: u64,
    watch: Option<(PathBuf, Arc<Mutex<u64>>)>,
}

impl Flood {
    fn new(lines: u64) -> Self {
        Flood { lines, watch: None }
    }
}

impl CommandExecutor for Flood {
    fn run(
        &self,
        _: &str,
        _: &ExecutionProfile,
        _: Duration,
        sink: &mut dyn OutputSink,
    ) -> ExecOutcome {
        let mut chunk = Vec::with_capacity(64 * 1024);
        let (mut sent, mut next_check) = (0u64, MIB);
        for n in 1..=self.lines {
            chunk.extend_from_slice(&line(n));
            if chunk.len() + LINE > 64 * 1024 {
                sink.write(OutputStream::Stdout, &chunk).unwrap();
                sent += chunk.len() as u64;
                chunk.clear();
                if let Some((dir, max)) = self.watch.as_ref().filter(|_| sent >= next_check) {
                    next_check += MIB;
                    let mut m = max.lock().unwrap();
                    *m = (*m).max(dir_bytes(dir));
                }
            }
        }
        sink.write(OutputStream::Stdout, &chunk).unwrap();
        // What a runner returns: a bounded head and tail, not the whole.
        let mut r = ToolResult::ok(String::from_utf8(line(1)).unwrap());
        r.exit_code = Some(0);
        ExecOutcome::ran(r)
    }
}

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let l = s.lines().find(|l| l.starts_with(field)).unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Every line of a stored result, paged back through read_file: (line number, text).
fn page_back(r: &ToolRouter, uri: &str) -> Vec<(u64, String)> {
    let mut t = turn(r, Auto);
    let (mut next, mut out) = (1u64, Vec::new());
    loop {
        let page = call(
            r,
            &mut t,
            "read_file",
            json!({"path": uri, "offset": next, "limit": 2000}),
        );
        assert_eq!(page.status, ToolStatus::Ok, "{page:?}");
        assert!(!page.truncated && page.preview.chars().count() <= 50_000);
        let before = out.len();
        for l in page.preview.lines().filter(|l| !l.starts_with('[')) {
            let (num, text) = l.split_once('\t').unwrap();
            assert_eq!(num.trim().parse::<u64>().unwrap(), next);
            out.push((next, text.to_string()));
            next += 1;
        }
        if out.len() == before || page.preview.contains("; end]") {
            return out;
        }
    }
}

#[test]
fn a_500_mb_flood_is_cut_to_the_cap_while_it_streams_and_says_so() {
    // VmHWM and VmRSS are the whole process's, and parallel tests move them: the flood is
    // measured in a process that runs this test alone.
    let name = "result_store::a_500_mb_flood_is_cut_to_the_cap_while_it_streams_and_says_so";
    if !crate::alone::alone_in_own_process(name) {
        return;
    }
    let f = Fixture::new();
    let lines = 500_000u64;
    let limits = StoreLimits::default();
    let results_dir = ResultStore::open_in(&f.state, &f.project, limits)
        .unwrap()
        .dir()
        .to_path_buf();
    let seen = Arc::new(Mutex::new(0u64));
    let flood = Flood {
        lines,
        watch: Some((results_dir.clone(), seen.clone())),
    };
    let r = f.router_for(f.host_with_limits(Box::new(flood), HostConfig::default(), limits));
    let mut t = turn(&r, Auto);
    let (hwm0, rss0) = (status_kib("VmHWM:"), status_kib("VmRSS:"));
    let started = Instant::now();
    let env = call(&r, &mut t, "terminal", json!({"command": "cat big.log"}));
    let flood_time = started.elapsed();
    let (hwm1, rss1) = (status_kib("VmHWM:"), status_kib("VmRSS:"));
    eprintln!(
        "measured: peak memory grew {} KiB, resident memory {} KiB, through 500 MB",
        hwm1.saturating_sub(hwm0),
        rss1 as i64 - rss0 as i64
    );
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
        env.preview.chars().count() <= 50_000 + 600,
        "{}",
        env.preview.len()
    );
    assert!(env.shown_bytes <= 50_000 && env.stdout.len() <= 50_600);
    assert!(env.preview.starts_with("000000001 xx"));
    assert!(env.preview.trim_end().ends_with('x'));

    // Disk: bounded during the flood (measured every MiB) and after it.
    let cap = limits.per_result_bytes;
    let during = *seen.lock().unwrap();
    assert!(
        during > 0,
        "the watcher measured the store while it streamed"
    );
    assert!(
        during <= cap + cap / 64 + 4096,
        "{during} bytes on disk during the flood"
    );
    let uri = env.result_id.clone().unwrap();
    let id = uri.strip_prefix("result://").unwrap();
    let stored = std::fs::metadata(results_dir.join(format!("{id}.out")))
        .unwrap()
        .len();
    assert!(stored <= cap + 1024, "{stored}");
    assert!(
        stored >= cap * 3 / 4,
        "{stored}: the cap is used, not wasted"
    );
    assert!(dir_bytes(&results_dir) <= cap + cap / 64 + 4096);
    let leftovers: Vec<_> = std::fs::read_dir(&results_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.ends_with(".out") && !n.ends_with(".idx"))
        .collect();
    assert!(leftovers.is_empty(), "tail segments left: {leftovers:?}");

    // The envelope says what was kept and dropped, to the model and in JSON.
    let rep = env.store.expect("the cap was hit, so the envelope says so");
    assert_eq!(rep.kept_head_bytes, cap / 2);
    assert!(rep.kept_tail_bytes > 0 && rep.kept_tail_bytes <= cap / 2);
    assert_eq!(
        rep.kept_head_bytes + rep.kept_tail_bytes + rep.dropped_bytes,
        500_000_000
    );
    assert_eq!((rep.cap_bytes, rep.evicted_results), (cap, 0));
    let note = env.store_note.clone().unwrap();
    assert!(note.contains(&format!(
        "{} bytes in between were dropped",
        rep.dropped_bytes
    )));
    assert!(
        env.model_text()
            .contains("[result store: the stored output keeps its first")
    );
    assert!(
        env.preview
            .contains(&format!("so {uri} keeps its first {}", cap / 2))
    );
    let json = serde_json::to_value(&env).unwrap();
    assert_eq!(json["store"]["dropped_bytes"], rep.dropped_bytes);

    // Paged back: the head from line 1 on, a marker, then the tail up to the last line.
    let started = Instant::now();
    let all = page_back(&r, &uri);
    let marker = all.iter().position(|(_, t)| t.starts_with("[… ")).unwrap();
    assert!(
        all[marker]
            .1
            .contains("lines) of the output were not kept here"),
        "{}",
        all[marker].1
    );
    for (i, (_, text)) in all[..marker].iter().enumerate() {
        let want = line(i as u64 + 1);
        if text.len() == LINE - 1 {
            assert_eq!(text.as_bytes(), &want[..LINE - 1]);
        }
    }
    let tail = &all[marker + 1..];
    let first: u64 = tail[0].1[..9].parse().unwrap();
    for (k, (_, text)) in tail.iter().enumerate() {
        assert_eq!(text.as_bytes(), &line(first + k as u64)[..LINE - 1]);
    }
    assert_eq!(
        first + tail.len() as u64 - 1,
        lines,
        "the tail ends with the last line"
    );
    let page = call(&r, &mut t, "read_file", json!({"path": uri, "offset": 2}));
    assert!(
        page.preview.contains("was 500000000 bytes: only its first"),
        "{}",
        page.preview
    );
    eprintln!(
        "500 MB: streamed in {flood_time:?}, {} stored lines paged back in {:?}",
        all.len(),
        started.elapsed()
    );
}

#[test]
fn small_output_is_shown_whole_and_not_kept() {
    let f = Fixture::new();
    let r = f.router(Box::new(Flood::new(3)));
    let env = call(
        &r,
        &mut turn(&r, Auto),
        "terminal",
        json!({"command": "cat small.log"}),
    );
    assert!(!env.truncated && env.result_id.is_none() && env.store.is_none());
    assert_eq!(
        std::fs::read_dir(r.host().results().dir()).unwrap().count(),
        0
    );
}

/// The stored text of a capped output, whole: head, one marker line, tail from a line start.
#[test]
fn a_capped_result_is_its_head_a_marker_and_its_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (state, root) = (dir.path().join("state"), dir.path().join("ws"));
    std::fs::create_dir_all(&root).unwrap();
    let limits = StoreLimits {
        per_result_bytes: 1600,
        total_bytes: 1 << 20,
    };
    let store = ResultStore::open_in(&state, &root, limits).unwrap();
    let mut w = store.create().unwrap();
    let text: String = (0..1000).map(|i| format!("line {i:04}\n")).collect();
    for chunk in text.as_bytes().chunks(7) {
        w.push(chunk);
    }
    let out = w.finish().unwrap();
    let stored = std::fs::read_to_string(store.dir().join(format!("{}.out", out.id))).unwrap();
    let (head, rest) = stored.split_at(800);
    assert_eq!(head, &text[..800]);
    let (marker, tail) = rest.split_once('\n').unwrap();
    assert!(
        text.ends_with(tail) && tail.starts_with("line "),
        "{tail:?}"
    );
    let r = out.report;
    assert_eq!(
        (r.kept_head_bytes, r.kept_tail_bytes),
        (800, tail.len() as u64)
    );
    assert_eq!(
        r.kept_head_bytes + r.kept_tail_bytes + r.dropped_bytes,
        10_000
    );
    assert!(tail.len() >= 500 && tail.len() <= 700, "{}", tail.len());
    assert_eq!(
        marker,
        format!(
            "[… {} bytes ({} lines) of the output were not kept here: it was larger than the \
             1600 bytes one stored result may keep; above are its first 800 bytes, below its \
             last {} …]",
            r.dropped_bytes,
            r.dropped_bytes / 10,
            tail.len()
        )
    );
    let index = store.index(&out.id).unwrap();
    assert_eq!(index.lines_stored(), 80 + 1 + tail.len() as u64 / 10);
    assert_eq!((index.total_bytes, index.total_lines), (10_000, 1000));
}

/// Each call in its own turn, each result just under the cap: the store fills, then each new
/// result evicts the oldest, never one of its own turn.
#[test]
fn eviction_takes_the_oldest_first_and_never_the_current_turn() {
    let f = Fixture::new();
    let limits = StoreLimits {
        per_result_bytes: 64_000,
        total_bytes: 300_000,
    };
    let host = f.host_with_limits(Box::new(Flood::new(60)), HostConfig::default(), limits);
    let r = f.router_for(host);
    let dir = r.host().results().dir().to_path_buf();
    let mut ids = Vec::new();
    for _ in 0..8 {
        let env = call(
            &r,
            &mut turn(&r, Auto),
            "terminal",
            json!({"command": "cat x"}),
        );
        assert!(env.store.is_none_or(|s| s.dropped_bytes == 0), "{env:?}");
        ids.push(env.result_id.unwrap());
        assert!(dir_bytes(&dir) <= limits.total_bytes, "{}", dir_bytes(&dir));
    }
    let kept = |uri: &str| {
        call(&r, &mut turn(&r, Auto), "read_file", json!({"path": uri})).status == ToolStatus::Ok
    };
    let alive: Vec<bool> = ids.iter().map(|id| kept(id)).collect();
    let first_alive = alive.iter().position(|a| *a).unwrap();
    assert!(
        first_alive >= 2,
        "the store holds four results at most: {alive:?}"
    );
    assert!(
        alive[first_alive..].iter().all(|a| *a),
        "oldest first: {alive:?}"
    );

    // One turn making more than the budget: none of its own results is evicted; the last
    // ones get what room is left and say so.
    let mut t = turn(&r, Auto);
    let mut this_turn = Vec::new();
    let mut squeezed = None;
    for _ in 0..6 {
        let env = call(&r, &mut t, "terminal", json!({"command": "cat x"}));
        assert!(dir_bytes(&dir) <= limits.total_bytes, "{}", dir_bytes(&dir));
        if let Some(s) = env.store.filter(|s| s.cap_bytes < limits.per_result_bytes) {
            squeezed = Some((s, env.store_note.clone().unwrap()));
        }
        this_turn.push(env.result_id.unwrap());
    }
    for id in &this_turn {
        let page = call(&r, &mut t, "read_file", json!({"path": id}));
        assert_eq!(page.status, ToolStatus::Ok, "{id} of this turn was evicted");
    }
    let (s, note) = squeezed.expect("the budget squeezed a result of this turn");
    assert!(s.dropped_bytes > 0);
    assert!(
        note.contains("results of this turn are never evicted"),
        "{note}"
    );
    assert!(
        ids.iter().all(|id| !kept(id)),
        "every older result made room"
    );

    // An evicted id reads back as not_found, saying why.
    let gone = call(&r, &mut t, "read_file", json!({"path": ids[0]}));
    assert_eq!(gone.status, ToolStatus::NotFound);
    let why = gone.reason.unwrap();
    assert!(
        why.contains(
            "is not in the result store: it was evicted to keep the store within its budget"
        ),
        "{why}"
    );
}

#[test]
fn the_envelope_says_when_older_results_were_evicted_for_a_new_one() {
    let f = Fixture::new();
    let limits = StoreLimits {
        per_result_bytes: 100_000,
        total_bytes: 250_000,
    };
    let host = f.host_with_limits(Box::new(Flood::new(90)), HostConfig::default(), limits);
    let r = f.router_for(host);
    let first = call(&r, &mut turn(&r, Auto), "terminal", json!({"command": "a"}));
    assert!(first.store.is_none(), "{:?}", first.store);
    let _second = call(&r, &mut turn(&r, Auto), "terminal", json!({"command": "b"}));
    let third = call(&r, &mut turn(&r, Auto), "terminal", json!({"command": "c"}));
    let s = third.store.expect("an eviction is stated");
    assert!(s.evicted_results >= 1 && s.evicted_bytes >= 90_000, "{s:?}");
    assert!(
        third
            .store_note
            .as_deref()
            .unwrap()
            .contains("older stored results")
    );
    assert!(
        third
            .model_text()
            .contains("were evicted to keep the result store within its total budget")
    );
    let gone = call(
        &r,
        &mut turn(&r, Auto),
        "read_file",
        json!({"path": first.result_id.unwrap()}),
    );
    assert_eq!(gone.status, ToolStatus::NotFound);
}

/// Writes `text` as a command's output, in chunks that split characters, and returns what the
/// sandbox runner returns: the head and tail its capture keeps.
struct Prints(String);

impl CommandExecutor for Prints {
    fn run(
        &self,
        _: &str,
        _: &ExecutionProfile,
        _: Duration,
        sink: &mut dyn OutputSink,
    ) -> ExecOutcome {
        for chunk in self.0.as_bytes().chunks(4093) {
            sink.write(OutputStream::Stdout, chunk).unwrap();
        }
        let mut capture = BoundedCapture::new(CAPTURE_HEAD, CAPTURE_TAIL);
        capture.push(self.0.as_bytes());
        let mut r = ToolResult::ok(capture.render());
        r.exit_code = Some(0);
        ExecOutcome::ran(r)
    }
}

fn terminal_output(text: String) -> spear::tools::envelope::ToolResultEnvelope {
    let f = Fixture::new();
    let r = f.router(Box::new(Prints(text)));
    let mut t = turn(&r, Auto);
    let env = call(&r, &mut t, "terminal", json!({"command": "cat text"}));
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    env
}

/// Issue 10, item 7: 40,000 characters (119,998 bytes, nearly all three-byte) are within the 50,000
/// characters and are shown whole; counting bytes cut them to a third.
#[test]
fn multibyte_output_within_50000_characters_is_shown_whole() {
    let text = format!("{}\n", "語".repeat(39_999));
    let env = terminal_output(text.clone());
    assert!(!env.truncated, "{} bytes shown", env.shown_bytes);
    // (Compared as booleans: a failure must not print 120,000 bytes.)
    let (p, o) = (&env.preview, &env.stdout);
    assert!(
        *p == text && *o == text,
        "preview: {} chars, {:?}…; stdout: {} chars",
        p.chars().count(),
        p.chars().rev().take(80).collect::<String>(),
        o.chars().count()
    );
    assert_eq!(env.shown_bytes, text.len() as u64);
}

/// Issue 10, item 7: a longer multi-byte output keeps 25,000 characters of head and 25,000 of
/// tail around the marker.
#[test]
fn multibyte_output_keeps_25000_characters_of_head_and_of_tail() {
    let line = format!("{}\n", "é".repeat(99));
    let text = format!("H{}{}T", line.repeat(1_500), "ü".repeat(5));
    let total_chars = text.chars().count();
    assert!(total_chars > 150_000);
    let env = terminal_output(text.clone());
    assert!(env.truncated);
    let (head, rest) = env.preview.split_once("\n[… ").expect("a cut marker");
    let (_, tail) = rest.split_once(" …]\n").expect("the marker's end");
    assert_eq!(head.chars().count(), 25_000);
    assert_eq!(tail.chars().count(), 25_000);
    assert!(text.starts_with(head) && text.ends_with(tail));
    assert_eq!(env.shown_bytes, (head.len() + tail.len()) as u64);
}

/// The helper that runs a test in a process of its own must fail, not pass, when the name it is
/// given matches no test (the child would run nothing and succeed).
#[test]
fn a_test_run_alone_under_a_wrong_name_fails() {
    let caught = std::panic::catch_unwind(|| {
        crate::alone::alone_in_own_process("result_store::no_such_test_exists_here")
    });
    let why = caught.expect_err("a misspelt name passed");
    let why = why.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(why.contains("did not run in its own process"), "{why}");
}
