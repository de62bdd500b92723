//! One loop iteration's own overhead: what `AgentRuntime` adds around a model response and a
//! tool call, with both made free (a model that answers at once, a tool that does nothing). One
//! request here is two model responses (a call, then the answer) and one routed call; the
//! per-request figure is the loop's cost per tool call. Also: ten calls in one request.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use spear::agent::event::EventSink;
use spear::agent::model::{
    ChatMessage, ChatModel, ChatRequest, FinishReason, ModelResponse, StreamDelta, ToolCallRequest,
};
use spear::agent::runtime::{AgentRuntime, RuntimeOptions};
use spear::agent::task::TaskController;
use spear::harness::command_policy::{CommandPolicy, PolicyConfig};
use spear::harness::primitives::{ExecutionMode, ToolResult};
use spear::harness::target_policy::TargetPolicy;
use spear::harness::workspace::Workspace;
use spear::tools::executor::{CommandExecutor, ExecOutcome};
use spear::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use spear::tools::host::{HostConfig, SpearHost};
use spear::tools::refusal::Refusal;
use spear::tools::registry::ToolRegistry;
use spear::tools::results::ResultStore;
use spear::tools::router::ToolRouter;
use spear::tools::spec::{Surface, ToolSpec};

/// Calls `noop` `calls` times (one call per response), then answers.
struct Instant {
    calls: usize,
}

impl ChatModel for Instant {
    type Error = std::io::Error;

    #[allow(clippy::manual_async_fn)]
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: &'a mut (dyn FnMut(StreamDelta) + Send),
    ) -> impl std::future::Future<Output = Result<ModelResponse, Self::Error>> + Send + 'a {
        async move {
            let done = request
                .messages
                .iter()
                .filter(|m| matches!(m, ChatMessage::Tool { .. }))
                .count();
            let call = done < self.calls;
            on_delta(StreamDelta::Text("ok".into()));
            Ok(ModelResponse {
                content: "ok".into(),
                reasoning: String::new(),
                tool_calls: if call {
                    vec![ToolCallRequest {
                        id: format!("call_{done}"),
                        name: "noop".into(),
                        arguments: r#"{"n":1}"#.into(),
                    }]
                } else {
                    Vec::new()
                },
                finish_reason: if call {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                },
                usage: None,
            })
        }
    }

    fn context_window(&self) -> Option<u64> {
        Some(128_000)
    }

    fn model_name(&self) -> &str {
        "instant"
    }
}

struct Noop;
struct NoopAction;

impl ToolHandler for Noop {
    fn plan(&self, _args: &Value, _host: &SpearHost) -> Result<Plan, Refusal> {
        Ok(Plan {
            targets: Vec::new(),
            command: None,
            audit_target: None,
            action: Box::new(NoopAction),
        })
    }
}

impl Action for NoopAction {
    fn run(self: Box<Self>, _host: &SpearHost, _ctx: &RunContext<'_>) -> ActionOutcome {
        ToolResult::ok("done").into()
    }
}

struct NoCommands;

impl CommandExecutor for NoCommands {
    fn run(
        &self,
        _: &str,
        _: &spear::harness::command_policy::ExecutionProfile,
        _: std::time::Duration,
        _: &mut dyn spear::tools::executor::OutputSink,
    ) -> ExecOutcome {
        ExecOutcome::ran(ToolResult::ok(""))
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    let state = dir.path().join("s");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("AGENTS.md"),
        "Run the tests before you finish.\n",
    )
    .unwrap();
    let host = SpearHost::new(
        Workspace::new(&project).unwrap(),
        TargetPolicy::default(),
        CommandPolicy::new(PolicyConfig::default()),
        Box::new(NoCommands),
        ResultStore::open_in(
            &state,
            &project,
            spear::tools::results::StoreLimits::default(),
        )
        .unwrap(),
        HostConfig::default(),
    );
    let mut registry = ToolRegistry::new();
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    registry
        .register(
            ToolSpec::new("noop", "does nothing", schema, Surface::Coding).read_only(),
            Arc::new(Noop),
        )
        .unwrap();
    let router = Arc::new(ToolRouter::new(registry, Arc::new(host)));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("agent_loop");
    for calls in [1usize, 10] {
        let model = Arc::new(Instant { calls });
        group.bench_function(format!("request_with_{calls}_tool_calls"), |b| {
            b.iter_batched(
                || {
                    AgentRuntime::new(
                        model.clone(),
                        router.clone(),
                        RuntimeOptions {
                            max_tool_calls: 50,
                            response_max_tokens: 16_384,
                            context_window: None,
                            cwd: project.clone(),
                        },
                    )
                },
                |mut runtime| {
                    let (sink, mut rx) = EventSink::channel();
                    let task = TaskController::new(ExecutionMode::Auto, sink);
                    let outcome = rt.block_on(runtime.run_task("go", &task));
                    assert_eq!(outcome.tool_calls as usize, calls);
                    while rx.try_recv().is_ok() {}
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
