//! What Spear adds to an MCP server (issue 24), against the server's own time, in one run:
//!
//! - a call of the test server's `echo` (read-only in the config, so AUTO runs it unasked)
//!   through the whole router (`spear-capability call` typed in the terminal tool: parsed,
//!   classified, decided, run, audited, its envelope built), against the same call made on the
//!   session's `McpClients` directly (the same confined server, no router) and on a plain rmcp
//!   client of the same program run unconfined (the server's own time). Target: the router adds
//!   under 5 ms per call.
//! - starting the confined server (bwrap, seccomp filter, ledger, then `initialize` and
//!   `tools/list`) on a runner whose sandbox preflight is done, against starting the same
//!   program unconfined with the same handshake. Target: under 100 ms more. A session's first
//!   start on a fresh runner (the preflight included) is printed too.
//!
//! The server is this build's own binary, `spear __mcp-test-server` (hence
//! `required-features = ["test-hooks"]`): cargo builds it for benches with the same profile and
//! features and names it in `CARGO_BIN_EXE_spear`.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value, json};
use spear::agent::builder::{Place, SessionBuilder, runner_config};
use spear::config::HarnessSettings;
use spear::harness::command_policy::NoApprover;
use spear::harness::command_runner::CommandRunner;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::harness::workspace::Workspace;
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy, ToolView};
use spear::tools::host::mcp::McpClients;
use spear::tools::router::turn::Turn;
use spear::tools::router::{ToolCall, ToolRouter};
use tokio::net::unix::pipe;

const SERVER: &str = "test";
const TAG: &str = "bench-mcp";

fn spear_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_spear"))
}

fn echo_args() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("text".into(), json!("hello"));
    m
}

/// A workspace, Spear's state, and the harness settings of a config naming the test server,
/// read by the library's own loader.
struct Setup {
    _dir: tempfile::TempDir,
    project: PathBuf,
    state: PathBuf,
    harness: HarnessSettings,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let (project, state, config) = (base.join("work"), base.join("state"), base.join("config"));
        for d in [&project, &state, &config] {
            std::fs::create_dir_all(d).expect("dirs");
        }
        let bin = spear_bin();
        let text = format!(
            "[mcp.servers.{SERVER}]\ncommand = {:?}\nargs = [\"__mcp-test-server\", {TAG:?}]\n\
             read_paths = [{:?}]\nread_only_tools = [\"echo\"]\n",
            bin.display().to_string(),
            bin.parent().expect("bin dir").display().to_string(),
        );
        let path = config.join("config.toml");
        std::fs::write(&path, text).expect("config");
        let harness = spear::config::load_harness(&path).expect("the config reads");
        Setup {
            _dir: dir,
            project,
            state,
            harness,
        }
    }

    fn builder(&self) -> SessionBuilder {
        let place = Place::of(
            Workspace::new(&self.project).expect("workspace"),
            self.project.clone(),
            self.state.clone(),
        );
        SessionBuilder::new(place, self.harness.clone(), "bench-mcp")
    }

    /// A fresh `McpClients` over `runner`, no server started.
    fn clients(&self, runner: &Arc<CommandRunner>) -> McpClients {
        McpClients::new(
            self.harness.mcp_servers.clone(),
            runner.clone(),
            &self.state,
        )
        .expect("clients")
    }
}

/// The router the binary builds, the view of one coding turn, and the call the model makes.
struct Routed {
    router: ToolRouter,
    view: ToolView,
    call: ToolCall,
}

impl Routed {
    fn new(setup: &Setup) -> Routed {
        let router = setup.builder().router().expect("router");
        let view = ToolExposurePolicy::view(router.registry(), &ExposureSettings::default());
        let command = format!(
            "spear-capability call {SERVER}.echo '{}'",
            Value::Object(echo_args())
        );
        let call = ToolCall {
            id: "bench-1".into(),
            name: "terminal".into(),
            arguments: json!({ "command": command }),
        };
        Routed { router, view, call }
    }

    fn call(&self) {
        let mut turn = Turn::new(ExecutionMode::Auto, self.view.clone(), NoApprover);
        let env = self.router.call(&mut turn, &self.call).expect("routed");
        assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    }

    fn mcp(&self) -> &McpClients {
        self.router
            .host()
            .mcp()
            .expect("the MCP servers are configured")
    }

    /// The same call on the session's `McpClients`, past the router.
    fn direct(&self, hash: &str) {
        let r = self
            .mcp()
            .call(
                SERVER,
                "echo",
                hash,
                echo_args(),
                &spear::harness::process::CancelToken::new(),
            )
            .expect("direct call");
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }

    /// The version hash of `echo` (starting the server).
    fn echo_hash(&self) -> String {
        let tools = self.mcp().tools(SERVER, false).expect("the server starts");
        tools
            .into_iter()
            .find(|t| t.name == "echo")
            .expect("echo")
            .hash
    }
}

/// The test server run unconfined, spoken to over the same pipe types and the same rmcp
/// client handshake as the confined one.
struct Plain {
    child: std::process::Child,
    service: RunningService<RoleClient, ()>,
}

impl Plain {
    async fn start(cwd: &Path) -> Plain {
        let mut child = std::process::Command::new(spear_bin())
            .args(["__mcp-test-server", TAG])
            .current_dir(cwd)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn the test server");
        let stdout = pipe::Receiver::from_owned_fd(child.stdout.take().expect("stdout").into())
            .expect("stdout pipe");
        let stdin = pipe::Sender::from_owned_fd(child.stdin.take().expect("stdin").into())
            .expect("stdin pipe");
        let service = ().serve((stdout, stdin)).await.expect("initialize");
        let tools = service.list_all_tools().await.expect("tools/list");
        assert!(tools.iter().any(|t| t.name == "echo"));
        Plain { child, service }
    }

    async fn call(&self) {
        let params = CallToolRequestParams::new("echo").with_arguments(echo_args());
        let r = self.service.call_tool(params).await.expect("raw call");
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }

    async fn stop(self) {
        let Plain { mut child, service } = self;
        let _ = service.cancel().await;
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The time of one confined start (`tools()` on fresh clients over `runner`), the stop not
/// counted.
fn confined_start(setup: &Setup, runner: &Arc<CommandRunner>) -> Duration {
    let clients = setup.clients(runner);
    let s = Instant::now();
    let tools = clients
        .tools(SERVER, false)
        .expect("the confined server starts");
    let took = s.elapsed();
    assert!(tools.iter().any(|t| t.name == "echo"));
    drop(clients);
    took
}

/// The time of one unconfined start, the stop not counted.
fn plain_start(rt: &tokio::runtime::Runtime, cwd: &Path) -> Duration {
    let s = Instant::now();
    let plain = rt.block_on(Plain::start(cwd));
    let took = s.elapsed();
    rt.block_on(plain.stop());
    took
}

/// The headline figures, each pair interleaved in one run so that load from elsewhere on the
/// machine falls on both sides alike.
fn report(setup: &Setup, routed: &Routed, hash: &str, runner: &Arc<CommandRunner>) {
    let rt = runtime();
    let plain = rt.block_on(Plain::start(&setup.project));
    const BLOCKS: u32 = 10;
    const PER_BLOCK: u32 = 20;
    let (mut t_router, mut t_direct, mut t_plain) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for _ in 0..BLOCKS {
        let s = Instant::now();
        for _ in 0..PER_BLOCK {
            routed.call();
        }
        t_router += s.elapsed();
        let s = Instant::now();
        for _ in 0..PER_BLOCK {
            routed.direct(hash);
        }
        t_direct += s.elapsed();
        let s = Instant::now();
        for _ in 0..PER_BLOCK {
            rt.block_on(plain.call());
        }
        t_plain += s.elapsed();
    }
    rt.block_on(plain.stop());
    let n = BLOCKS * PER_BLOCK;
    let (a, b, raw) = (t_router / n, t_direct / n, t_plain / n);
    eprintln!(
        "mcp call, {n} each: router {:.3} ms, McpClients::call {:.3} ms, plain rmcp to an \
         unconfined server {:.3} ms",
        ms(a),
        ms(b),
        ms(raw)
    );
    eprintln!(
        "router overhead per call = router - McpClients::call = {:.3} ms (target < 5 ms); \
         beyond the server's own time (router - plain) = {:.3} ms",
        ms(a) - ms(b),
        ms(a) - ms(raw)
    );

    const STARTS: usize = 10;
    let (mut confined, mut unconfined) = (Vec::new(), Vec::new());
    for _ in 0..STARTS {
        confined.push(confined_start(setup, runner));
        unconfined.push(plain_start(&rt, &setup.project));
    }
    let (c, u) = (median(confined), median(unconfined));
    // A session's first start: a fresh runner, its sandbox preflight not yet done.
    let cold = median(
        (0..3)
            .map(|_| {
                let fresh = Arc::new(
                    CommandRunner::new(runner_config(&setup.project, &setup.harness))
                        .expect("runner"),
                );
                confined_start(setup, &fresh)
            })
            .collect(),
    );
    eprintln!(
        "mcp start, median of {STARTS} each: confined {:.1} ms, unconfined {:.1} ms, \
         confinement overhead = {:.1} ms (target < 100 ms); first start on a fresh runner \
         (sandbox preflight included), median of 3: {:.1} ms",
        ms(c),
        ms(u),
        ms(c) - ms(u),
        ms(cold)
    );
}

fn bench(c: &mut Criterion) {
    let setup = Setup::new();
    let routed = Routed::new(&setup);
    let hash = routed.echo_hash();
    routed.call();
    let runner = Arc::new(
        CommandRunner::new(runner_config(&setup.project, &setup.harness)).expect("runner"),
    );
    // The preflight, once, outside every figure but the cold start's.
    let _ = confined_start(&setup, &runner);

    // `cargo test --all-targets` runs benches once as smoke tests: the headline only when
    // benchmarking.
    if std::env::args().any(|a| a == "--bench") {
        report(&setup, &routed, &hash, &runner);
    }

    let rt = runtime();
    let plain = rt.block_on(Plain::start(&setup.project));
    let mut g = c.benchmark_group("mcp_call");
    g.sample_size(20);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    g.bench_function("router_echo", |b| b.iter(|| routed.call()));
    g.bench_function("mcp_clients_echo", |b| b.iter(|| routed.direct(&hash)));
    g.bench_function("plain_rmcp_echo", |b| b.iter(|| rt.block_on(plain.call())));
    g.finish();
    rt.block_on(plain.stop());

    let mut g = c.benchmark_group("mcp_start");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(4));
    g.bench_function("confined", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| confined_start(&setup, &runner)).sum())
    });
    g.bench_function("unconfined", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| plain_start(&rt, &setup.project)).sum())
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
