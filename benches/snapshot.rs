//! The cost `changed_paths` adds to a writable command: a snapshot of a workspace of 10,000
//! files (100 directories of 100), and the whole before/after comparison (two walks and the
//! diff). A read-only command pays nothing: no snapshot is taken. Beside them, in the same run,
//! the after-run mode check (issue 20) every writable command pays: one unbounded walk of the
//! same tree looking for set-id files and widened guarded directories; the after-run git
//! check (one more unbounded walk, here finding nothing to move); and the socket survey every
//! command pays before launch, walked afresh and from its per-directory cache.

use criterion::{Criterion, criterion_group, criterion_main};
use spear::harness::sandbox::sockets::SocketSurvey;
use spear::harness::workspace::WorkspaceSnapshot;
use spear::harness::workspace::git_leftovers::quarantine_after_run;
use spear::harness::workspace::modes::{CtimeMark, repair_after_run};
use spear::harness::workspace::snapshot::DEFAULT_MAX_ENTRIES;

fn bench(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let root = dir.path().join("project");
    for d in 0..100 {
        let sub = root.join(format!("src/m{d:03}"));
        if std::fs::create_dir_all(&sub).is_err() {
            return;
        }
        for f in 0..100 {
            if std::fs::write(sub.join(format!("f{f:03}.rs")), "fn main() {}\n").is_err() {
                return;
            }
        }
    }
    let mut g = c.benchmark_group("snapshot");
    g.sample_size(20);
    g.bench_function("take 10k files", |b| {
        b.iter(|| WorkspaceSnapshot::take(&root, &[], DEFAULT_MAX_ENTRIES).len())
    });
    g.bench_function("before+after+diff 10k files", |b| {
        b.iter(|| {
            let before = WorkspaceSnapshot::take(&root, &[], DEFAULT_MAX_ENTRIES);
            let after = WorkspaceSnapshot::take_after(&root, &before, &[], DEFAULT_MAX_ENTRIES);
            WorkspaceSnapshot::changes(&before, &after).all().len()
        })
    });
    g.bench_function("mode check 10k files", |b| {
        b.iter(|| repair_after_run(&root, CtimeMark::now(), &[]).map(|f| f.len()))
    });
    let quarantine = dir.path().join("quarantine");
    g.bench_function("git check 10k files", |b| {
        b.iter(|| quarantine_after_run(&root, CtimeMark::now(), &quarantine, &[]).map(|f| f.len()))
    });
    g.bench_function("socket survey 10k files, first walk", |b| {
        b.iter(|| SocketSurvey::new().survey(&root).len())
    });
    // Directories written just now are distrusted for two seconds (a coarse clock could hide a
    // change): wait them out so the cached walk is what a repeated run pays.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let mut cached = SocketSurvey::new();
    cached.survey(&root);
    g.bench_function("socket survey 10k files, cached", |b| {
        b.iter(|| cached.survey(&root).len())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
