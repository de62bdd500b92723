//! Stream assembly throughput: every capture of `shared/data/sse` through the SSE parser, the
//! lenient chunk types and the tool-call assembler (no HTTP), whole and in 64-byte reads.
//! Throughput is reported in bytes of body, so criterion prints MB/s.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use spear::agent::model::StreamDelta;
use spear::agent::provider::StreamAssembler;

fn captures() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/sse");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        panic!(
            "the captured streams are missing: expected {} (shared/ beside the repository)",
            dir.display()
        );
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sse"))
        .collect();
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// Assemble every capture, cut into reads of `read` bytes; returns the tool calls seen so the
/// work cannot be optimised away.
fn assemble_all(bodies: &[Vec<u8>], read: usize) -> usize {
    let mut calls = 0;
    let mut sink = |delta: StreamDelta| {
        if matches!(delta, StreamDelta::ToolCallStarted { .. }) {
            calls += 1;
        }
    };
    for body in bodies {
        let mut stream = StreamAssembler::new();
        for piece in body.chunks(read) {
            if stream.push_bytes(piece, &mut sink).is_err() {
                break;
            }
        }
        let _ = std::hint::black_box(stream.finish(&mut sink));
    }
    calls
}

fn bench(c: &mut Criterion) {
    let bodies = captures();
    let total: usize = bodies.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group("stream_assembly");
    group.throughput(Throughput::Bytes(total as u64));
    group.bench_function("all_captures_whole", |b| {
        b.iter(|| assemble_all(&bodies, usize::MAX))
    });
    group.bench_function("all_captures_64_byte_reads", |b| {
        b.iter(|| assemble_all(&bodies, 64))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
