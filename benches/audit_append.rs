//! `AuditLogger::append` cost: lock, read the tail, one write, fdatasync of the log and the head.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use spear::harness::audit::{AuditEvent, AuditLogger, AuditTarget, Decision};

fn bench(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let project = dir.path().join("project");
    if std::fs::create_dir_all(&project).is_err() {
        return;
    }
    let Ok(logger) = AuditLogger::open_in(&dir.path().join("state"), &project) else {
        return;
    };
    let mut event = AuditEvent::new("s-bench", "terminal", Decision::Allowed);
    event.target = AuditTarget::Command("API_KEY=abc FOO=1 cargo test -p spear".into());
    event.exit_code = Some(0);
    event.duration = Some(Duration::from_millis(40));
    let mut g = c.benchmark_group("audit");
    g.sample_size(30);
    g.bench_function("append", |b| b.iter(|| logger.append(&event).is_ok()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
