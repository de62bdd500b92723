//! `Workspace::resolve` cost: a plain existing path four levels deep, a file not yet created,
//! a path through a link, and a refused escape.

use criterion::{Criterion, criterion_group, criterion_main};
use spear::harness::workspace::{Access, Workspace};

fn bench(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let root = dir.path().join("project");
    let deep = root.join("src/a/b/c");
    if std::fs::create_dir_all(&deep).is_err()
        || std::fs::write(deep.join("file.rs"), "x").is_err()
        || std::os::unix::fs::symlink("src/a", root.join("link")).is_err()
        || std::os::unix::fs::symlink("/etc", root.join("esc")).is_err()
    {
        return;
    }
    let Ok(ws) = Workspace::new(&root) else {
        return;
    };
    let mut g = c.benchmark_group("resolve");
    for path in [
        "src/a/b/c/file.rs",
        "src/a/new/file.rs",
        "link/b/c/file.rs",
        "esc/passwd",
    ] {
        g.bench_function(path, |b| b.iter(|| ws.resolve(path, Access::Write).is_ok()));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
