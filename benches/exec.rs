//! Per-call cost of the sandbox, in process: sandboxed `true` through one `CommandRunner`
//! (preflight cached) against raw bwrap spawns with the same namespaces and mounts, and the
//! network path. Target: runner within 1.15x of a raw bwrap spawn; network path ready < 40 ms.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::ffi::OsString;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use spear::harness::command_policy::ExecutionProfile;
use spear::harness::command_runner::{CommandRunner, RunRequest, RunnerConfig};
use spear::harness::primitives::{Capability, CapabilitySet};
use spear::harness::process::NullSink;
use spear::harness::sandbox::build_argv;

fn profile(network: bool) -> ExecutionProfile {
    let mut caps = vec![
        Capability::WorkspaceRead,
        Capability::WorkspaceWrite,
        Capability::ShellComplex,
    ];
    if network {
        caps.push(Capability::Network);
    }
    ExecutionProfile::from_granted(CapabilitySet::of(&caps), Vec::new())
}

/// The runner's own argv for `true`, minus the gates only the runner can open and the seccomp
/// filter's descriptor (bwrap reads it once, from a descriptor only a launch makes).
fn raw_argv(runner: &CommandRunner) -> Vec<OsString> {
    let cmd: Vec<OsString> = vec!["/bin/bash".into(), "-c".into(), "true".into()];
    let spec = runner.build_spec(&profile(false), cmd).expect("spec");
    let argv = build_argv(&spec);
    let mut out = Vec::new();
    let mut it = argv.into_iter();
    while let Some(a) = it.next() {
        if a == "--info-fd" || a == "--userns-block-fd" || a == "--block-fd" || a == "--seccomp" {
            it.next();
            continue;
        }
        out.push(a);
    }
    out
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join(".git/hooks")).expect("hooks");
    std::fs::write(dir.path().join(".git/config"), "[core]\n").expect("config");
    let runner = CommandRunner::new(RunnerConfig::for_workspace(dir.path())).expect("runner");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(runner.ensure_sandbox()).expect("preflight");
    let bwrap = runner.sandbox().bwrap().expect("bwrap").to_path_buf();
    let argv = raw_argv(&runner);
    let req = |network| RunRequest {
        command: "true".into(),
        profile: profile(network),
        timeout: None,
    };

    // `cargo test --all-targets` runs benches once as smoke tests: skip the long comparisons.
    let benching = std::env::args().any(|a| a == "--bench");
    // The headline comparison: 200 calls each, interleaved in blocks of 20 so that load from
    // other processes on the machine hits both sides alike.
    let (mut t_runner, mut t_raw) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..(if benching { 10 } else { 0 }) {
        let s = Instant::now();
        for _ in 0..20 {
            let r = rt.block_on(runner.run(&req(false), &mut NullSink));
            assert!(r.is_ok(), "{r:?}");
        }
        t_runner += s.elapsed();
        let s = Instant::now();
        for _ in 0..20 {
            let st = std::process::Command::new(&bwrap)
                .args(&argv)
                .env_clear()
                .status()
                .expect("bwrap");
            assert!(st.success());
        }
        t_raw += s.elapsed();
    }
    if benching {
        println!(
            "200 calls: CommandRunner {:.2} ms/call, raw bwrap {:.2} ms/call, ratio {:.3}x (target <= 1.15x)",
            t_runner.as_secs_f64() * 1000.0 / 200.0,
            t_raw.as_secs_f64() * 1000.0 / 200.0,
            t_runner.as_secs_f64() / t_raw.as_secs_f64()
        );
    }

    // As root: what running the sandbox as its own uid costs (the private mount namespace, the
    // stage and its idmapped clone, the uid change), against the opt-out's host-root launch,
    // interleaved in the same run.
    if benching && rustix::process::geteuid().is_root() {
        let mut host = RunnerConfig::for_workspace(dir.path());
        host.root_uid_host = true;
        let host = CommandRunner::new(host).expect("runner");
        rt.block_on(host.ensure_sandbox()).expect("preflight");
        let (mut t_own, mut t_host) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..10 {
            for (r, t) in [(&runner, &mut t_own), (&host, &mut t_host)] {
                let s = Instant::now();
                for _ in 0..20 {
                    let res = rt.block_on(r.run(&req(false), &mut NullSink));
                    assert!(res.is_ok(), "{res:?}");
                }
                *t += s.elapsed();
            }
        }
        println!(
            "root, 200 calls each: sandbox as its own uid {:.2} ms/call, as host root {:.2} ms/call, \
             +{:.2} ms ({:.3}x)",
            t_own.as_secs_f64() * 1000.0 / 200.0,
            t_host.as_secs_f64() * 1000.0 / 200.0,
            (t_own.as_secs_f64() - t_host.as_secs_f64()) * 1000.0 / 200.0,
            t_own.as_secs_f64() / t_host.as_secs_f64()
        );
    }

    if benching && runner.sandbox().slirp().is_ok() {
        rt.block_on(runner.ensure_network())
            .expect("network preflight");
        let mut ready = Vec::new();
        for _ in 0..30 {
            let cmd: Vec<OsString> = vec!["/bin/true".into()];
            let spec = runner.build_spec(&profile(true), cmd).expect("spec");
            let o = rt
                .block_on(spear::harness::sandbox::netns::run_with_slirp(
                    runner.sandbox(),
                    spec,
                    &Default::default(),
                    &mut NullSink,
                    Duration::from_secs(10),
                    false,
                    &[],
                ))
                .expect("network run");
            ready.extend(o.setup_time);
        }
        ready.sort();
        println!(
            "network path ready (spawn to command start): median {:.1} ms, p90 {:.1} ms (target < 40 ms)",
            ready[ready.len() / 2].as_secs_f64() * 1000.0,
            ready[ready.len() * 9 / 10].as_secs_f64() * 1000.0
        );
    }

    let mut g = c.benchmark_group("exec");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(8));
    g.bench_function("runner_true", |b| {
        b.iter(|| rt.block_on(runner.run(&req(false), &mut NullSink)))
    });
    g.bench_function("raw_bwrap_true", |b| {
        b.iter(|| {
            std::process::Command::new(&bwrap)
                .args(&argv)
                .env_clear()
                .status()
        })
    });
    if runner.sandbox().slirp().is_ok() {
        g.bench_function("runner_network_true", |b| {
            b.iter(|| rt.block_on(runner.run(&req(true), &mut NullSink)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
