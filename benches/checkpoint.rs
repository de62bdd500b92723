//! What checkpoints cost, against `git stash create` in the same run. A git repository of
//! 10,000 small text files (100 directories of 100, committed, each content distinct):
//! - the first checkpoint (every file read and stored), printed once, and the first checkpoint
//!   of a new process whose store already holds every blob;
//! - a checkpoint after the first with 10 files changed (target < 50 ms), against `git stash
//!   create` on the same tree with the same 10 changes, interleaved for the ratio; the store
//!   must gain exactly those 10 blobs;
//! - the same with a 1 GiB `target/` the `.gitignore` excludes (sparse files, so no disk is
//!   used): the time must not move and no blob may be stored for it;
//! - `plan_undo` + `undo` of a turn that changed 100 files (target < 1 s).
//!
//! The store and the tree are on the same file system (the temporary directory), so the
//! `fdatasync` each blob and manifest gets is paid as it would be in use.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{
    BatchSize, BenchmarkGroup, Criterion, SamplingMode, criterion_group, criterion_main,
};
use spear::harness::checkpoint::{Checkpoints, Limits, scan};

const FILES_PER_DIR: usize = 100;
const SESSION: &str = "bench";

/// `git` with no system or user configuration and a fixed identity.
fn git(root: &Path, args: &[&str]) -> Output {
    let out = Command::new("git")
        .args(["-c", "gc.auto=0", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The text of file `f` in directory `d`: a few hundred bytes, distinct from every other.
fn text(d: usize, f: usize) -> String {
    let mut s = format!("//! Module m{d:03}, file f{f:03}.\n\npub fn value() -> usize {{\n");
    for i in 0..8 {
        s.push_str(&format!(
            "    let x{i} = {d} * {f} + {i}; // keep the compiler busy\n"
        ));
    }
    s.push_str("    x0 + x7\n}\n");
    s
}

fn file(root: &Path, d: usize, f: usize) -> PathBuf {
    root.join(format!("src/m{d:03}/f{f:03}.rs"))
}

/// `dirs` directories of `FILES_PER_DIR` files, a `.gitignore` excluding `target/`, and, with
/// `with_git`, all of it committed.
fn build_tree(root: &Path, dirs: usize, with_git: bool) {
    for d in 0..dirs {
        std::fs::create_dir_all(root.join(format!("src/m{d:03}"))).unwrap();
        for f in 0..FILES_PER_DIR {
            std::fs::write(file(root, d, f), text(d, f)).unwrap();
        }
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    if with_git {
        git(root, &["init", "-q"]);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "init"]);
        // Bring the index's stat data up to date, as a working repository's is.
        git(root, &["update-index", "-q", "--refresh"]);
    }
}

/// A build directory of 1 GiB: 16 files of 64 MiB (exactly the largest a checkpoint would
/// keep, so without the ignore rule every one would be read), sparse. Returns its apparent
/// size and the bytes it really takes.
fn build_target(dir: &Path) -> (u64, u64) {
    let (mut size, mut used) = (0, 0);
    for (i, sub) in [
        "debug/deps",
        "debug/build",
        "release/deps",
        "release/incremental",
    ]
    .iter()
    .enumerate()
    {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        for j in 0..4 {
            let p = d.join(format!("libcrate{i}{j}.rlib"));
            let f = std::fs::File::create(&p).unwrap();
            f.set_len(Limits::default().max_file_bytes).unwrap();
            let m = f.metadata().unwrap();
            size += m.len();
            used += m.blocks() * 512;
        }
    }
    (size, used)
}

/// Give each of `paths` content it never had (`n` makes it new); returns the bytes written.
fn change(paths: &[PathBuf], n: u64) -> u64 {
    let mut total = 0;
    for (i, p) in paths.iter().enumerate() {
        let s = format!("// edit {n} of {i}\npub fn edited() -> u64 {{ {n} }}\n");
        std::fs::write(p, &s).unwrap();
        total += s.len() as u64;
    }
    total
}

/// Blobs in the store at `dir` (its `blobs/ab/cdef…` files).
fn blob_count(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("blobs"))
        .unwrap()
        .flatten()
        .map(|fan| std::fs::read_dir(fan.path()).map_or(0, Iterator::count))
        .sum()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn checkpoint(cp: &Checkpoints) -> spear::harness::checkpoint::Taken {
    cp.before_call(SESSION, 1, "c", "bash", None)
        .expect("checkpoint")
}

/// Benchmark `timed`, each iteration after the 10 files got new content (not timed).
fn after_change<R>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    ten: &[PathBuf],
    n: &mut u64,
    mut timed: impl FnMut() -> R,
) {
    g.bench_function(name, |b| {
        b.iter_batched(
            || {
                *n += 1;
                change(ten, *n);
            },
            |()| timed(),
            BatchSize::PerIteration,
        )
    });
}

fn bench(c: &mut Criterion) {
    // `cargo test --all-targets` runs benches once as smoke tests: a smaller tree there, and
    // the interleaved comparisons skipped.
    let benching = std::env::args().any(|a| a == "--bench");
    let dirs = if benching { 100 } else { 10 };
    let have_git = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_git {
        println!("git is not installed: the `git stash create` baseline is skipped");
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("project");
    let store_dir = dir.path().join("store");
    let target_in = root.join("target");
    let target_out = dir.path().join("target-aside");
    let s = Instant::now();
    build_tree(&root, dirs, have_git);
    let (size, used) = build_target(&target_out);
    let files = dirs * FILES_PER_DIR + 1;
    println!(
        "tree: {files} files in {dirs} directories{} ({:.1} s to build); build directory: {} MiB apparent, {} KiB on disk",
        if have_git { ", committed" } else { "" },
        s.elapsed().as_secs_f64(),
        size >> 20,
        used >> 10
    );
    // Nothing in the tree is racily new for the first checkpoint (written within its tick).
    std::thread::sleep(Duration::from_millis(200));

    // 1. The first checkpoint: every file read and stored.
    let cp = Checkpoints::open(&root, &store_dir, Limits::default()).expect("open");
    let s = Instant::now();
    let first = checkpoint(&cp);
    let t_first = s.elapsed();
    assert_eq!(first.read, files, "the first checkpoint reads every file");
    assert!(first.uncovered.is_empty(), "{:?}", first.uncovered);
    assert_eq!(
        blob_count(&store_dir),
        files,
        "one blob per distinct content"
    );
    println!(
        "first checkpoint, empty store: {:.0} ms ({} files read, {} blobs, {} KiB stored)",
        ms(t_first),
        first.read,
        blob_count(&store_dir),
        cp.store().blob_bytes() >> 10
    );
    if benching {
        // A new process in the same workspace: its first checkpoint reads the whole tree again,
        // but finds every blob stored already.
        let again = Checkpoints::open(&root, &store_dir, Limits::default()).expect("open");
        let s = Instant::now();
        let t = checkpoint(&again);
        println!(
            "first checkpoint of a new process, store already full: {:.0} ms ({} files read)",
            ms(s.elapsed()),
            t.read
        );
    }

    // The 10 files every incremental round changes, spread over the tree.
    let ten: Vec<PathBuf> = (0..10).map(|i| file(&root, i * dirs / 10, 50)).collect();
    let mut n = 0u64;

    // The store gains exactly the 10 new contents, read from exactly those 10 files.
    let store_holds_only_the_changes = |n: u64, what: &str| {
        let (blobs, bytes) = (blob_count(&store_dir), cp.store().blob_bytes());
        let written = change(&ten, n);
        let t = checkpoint(&cp);
        assert_eq!(t.read, 10, "{what}: files read");
        assert_eq!(blob_count(&store_dir) - blobs, 10, "{what}: blobs added");
        assert_eq!(
            cp.store().blob_bytes() - bytes,
            written,
            "{what}: bytes added"
        );
        let m = cp.store().manifest(&t.record.before).expect("manifest");
        assert!(
            !m.entries
                .keys()
                .any(|p| p == "target" || p.starts_with("target/"))
                && m.uncovered.is_empty(),
            "{what}: the ignored build directory was recorded"
        );
        let delta = store_dir
            .join("manifests")
            .join(format!("{}.json", t.record.before));
        println!(
            "incremental checkpoint, {what}: {} files read, +10 blobs (+{written} bytes), manifest file {} bytes, {} paths recorded",
            t.read,
            std::fs::metadata(delta).map_or(0, |m| m.len()),
            m.entries.len()
        );
    };
    n += 1;
    store_holds_only_the_changes(n, "no build directory");
    std::fs::rename(&target_out, &target_in).unwrap();
    n += 1;
    store_holds_only_the_changes(n, "1 GiB ignored target/");
    std::fs::rename(&target_in, &target_out).unwrap();

    // 2. Interleaved, in blocks of 5, so load from elsewhere on the machine hits all alike.
    if benching {
        let (mut t_cp, mut t_git, mut t_big) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let rounds = 10;
        for _ in 0..rounds {
            for _ in 0..5 {
                n += 1;
                change(&ten, n);
                let s = Instant::now();
                checkpoint(&cp);
                t_cp += s.elapsed();
            }
            if have_git {
                for _ in 0..5 {
                    n += 1;
                    change(&ten, n);
                    let s = Instant::now();
                    let out = git(&root, &["stash", "create"]);
                    t_git += s.elapsed();
                    assert!(!out.stdout.is_empty(), "git stash create made no commit");
                }
            }
            std::fs::rename(&target_out, &target_in).unwrap();
            for _ in 0..5 {
                n += 1;
                change(&ten, n);
                let s = Instant::now();
                checkpoint(&cp);
                t_big += s.elapsed();
            }
            std::fs::rename(&target_in, &target_out).unwrap();
        }
        let per = |t: Duration| ms(t) / f64::from(rounds * 5);
        println!(
            "interleaved, {} calls each, 10 files changed: checkpoint {:.2} ms (target < 50 ms), \
             with a 1 GiB ignored target/ {:.2} ms ({:+.2} ms)",
            rounds * 5,
            per(t_cp),
            per(t_big),
            per(t_big) - per(t_cp)
        );
        if have_git {
            println!(
                "interleaved: git stash create {:.2} ms; checkpoint / git stash create = {:.2}x",
                per(t_git),
                t_cp.as_secs_f64() / t_git.as_secs_f64()
            );
        }

        // Where a checkpoint's time goes when nothing changed (once the files the last round
        // wrote are past the racy tick): the whole checkpoint, the walk alone, and the walk
        // without the store (which skips the per-file check that its blob is still there).
        std::thread::sleep(Duration::from_millis(200));
        let settled = checkpoint(&cp);
        let prev = cp
            .store()
            .manifest(&settled.record.before)
            .expect("manifest");
        let bytes = cp.store().blob_bytes();
        let (mut t_whole, mut t_walk, mut t_bare) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        for _ in 0..rounds {
            let s = Instant::now();
            let t = checkpoint(&cp);
            t_whole += s.elapsed();
            assert_eq!(t.read, 0, "nothing changed, nothing read");
            let s = Instant::now();
            let w = scan::scan(&root, Some(&prev), Some(cp.store()), bytes, cp.limits()).unwrap();
            t_walk += s.elapsed();
            assert_eq!(w.read, 0);
            let s = Instant::now();
            let w = scan::scan(&root, Some(&prev), None, 0, cp.limits()).unwrap();
            t_bare += s.elapsed();
            assert_eq!(w.read, 0);
        }
        let per = |t: Duration| ms(t) / f64::from(rounds);
        println!(
            "nothing changed, {rounds} each: checkpoint {:.2} ms; scan::scan alone {:.2} ms; \
             scan::scan without the store (no per-file has_blob) {:.2} ms",
            per(t_whole),
            per(t_walk),
            per(t_bare)
        );
    }

    let mut g = c.benchmark_group("checkpoint");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(5));
    after_change(
        &mut g,
        "incremental, 10k files, 10 changed",
        &ten,
        &mut n,
        || checkpoint(&cp),
    );
    if have_git {
        after_change(
            &mut g,
            "git stash create, 10k files, 10 changed",
            &ten,
            &mut n,
            || git(&root, &["stash", "create"]),
        );
    }
    std::fs::rename(&target_out, &target_in).unwrap();
    after_change(
        &mut g,
        "incremental, 10k files, 10 changed, 1 GiB ignored target/",
        &ten,
        &mut n,
        || checkpoint(&cp),
    );
    std::fs::rename(&target_in, &target_out).unwrap();
    g.finish();

    // 3. Undo of a turn that changed 100 files (none of the 10 above): each iteration's setup
    // is the turn itself (a checkpoint, 100 edits, a checkpoint), the timed part the undo.
    let hundred: Vec<PathBuf> = (0..100)
        .map(|i| file(&root, i % dirs, 20 + i / dirs))
        .collect();
    let mut turn = 1u64;
    let mut one_turn = || {
        turn += 1;
        n += 1;
        let taken = cp
            .before_call(SESSION, turn, &format!("call{turn}"), "bash", None)
            .expect("before");
        change(&hundred, n);
        cp.after_call(taken).expect("after");
    };
    let undo = |cp: &Checkpoints| {
        let plan = cp.plan_undo(SESSION, None).expect("plan");
        let report = cp.undo(&plan, false).expect("undo");
        assert_eq!(report.restored.len(), 100, "{report:?}");
        assert!(
            report.failed.is_empty() && report.left.is_empty(),
            "{report:?}"
        );
    };
    one_turn();
    let s = Instant::now();
    undo(&cp);
    println!(
        "undo of 100 files, once: {:.0} ms (target < 1 s)",
        ms(s.elapsed())
    );
    for (i, p) in hundred.iter().enumerate() {
        let (d, f) = (i % dirs, 20 + i / dirs);
        assert_eq!(std::fs::read_to_string(p).unwrap(), text(d, f), "{p:?}");
    }

    let mut g = c.benchmark_group("undo");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(6));
    g.bench_function("plan_undo + undo, 10k files, turn of 100 changed", |b| {
        b.iter_batched(&mut one_turn, |()| undo(&cp), BatchSize::PerIteration)
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
