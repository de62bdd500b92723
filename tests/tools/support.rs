//! Fixtures for the tool tests: a temporary base with a project, a sibling project and a state
//! directory; a router over the coding tools with an audit log; and executor doubles (a real,
//! unconfined bash for tests only, a flood that streams generated output, a missing sandbox).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use spear::harness::audit::{AuditLogger, AuditRecord};
use spear::harness::command_policy::{
    Approver, CommandPolicy, ExecutionProfile, NoApprover, PolicyConfig,
};
use spear::harness::primitives::{ExecutionMode, ToolResult, ToolStatus};
use spear::harness::rules::RuleBook;
use spear::harness::target_policy::TargetPolicy;
use spear::harness::workspace::Workspace;
use spear::tools::coding;
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::executor::{CommandExecutor, ExecOutcome, OutputSink, OutputStream};
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::host::{HostConfig, SpearHost};
use spear::tools::observer::AuditObserver;
use spear::tools::registry::ToolRegistry;
use spear::tools::results::{ResultStore, StoreLimits};
use spear::tools::router::turn::Turn;
use spear::tools::router::{ToolCall, ToolRouter};

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub base: PathBuf,
    pub project: PathBuf,
    pub state: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("project");
        let state = base.join("state");
        for d in [&project, &state, &base.join("other-repo")] {
            std::fs::create_dir_all(d).unwrap();
        }
        Fixture {
            _dir: dir,
            base,
            project,
            state,
        }
    }

    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.project.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.project.join(rel)).unwrap()
    }

    pub fn host(&self, executor: Box<dyn CommandExecutor>, config: HostConfig) -> SpearHost {
        self.host_with_limits(executor, config, StoreLimits::default())
    }

    pub fn host_with_limits(
        &self,
        executor: Box<dyn CommandExecutor>,
        config: HostConfig,
        limits: StoreLimits,
    ) -> SpearHost {
        self.host_ruled(executor, config, limits, RuleBook::default())
    }

    /// A host whose command policy carries `rules`.
    pub fn host_ruled(
        &self,
        executor: Box<dyn CommandExecutor>,
        config: HostConfig,
        limits: StoreLimits,
        rules: RuleBook,
    ) -> SpearHost {
        let config = HostConfig { rules, ..config };
        SpearHost::new(
            Workspace::new(&self.project).unwrap(),
            TargetPolicy::default(),
            CommandPolicy::new(PolicyConfig {
                workspace_root: Some(self.project.clone()),
                ..PolicyConfig::default()
            }),
            executor,
            ResultStore::open_in(&self.state, &self.project, limits).unwrap(),
            config,
        )
    }

    /// A router over the six coding tools, auditing into the fixture's state directory.
    pub fn router(&self, executor: Box<dyn CommandExecutor>) -> ToolRouter {
        self.router_for(self.host(executor, HostConfig::default()))
    }

    pub fn router_for(&self, host: SpearHost) -> ToolRouter {
        let mut registry = ToolRegistry::new();
        coding::register(&mut registry).unwrap();
        let audit = Arc::new(AuditLogger::open_in(&self.state, &self.project).unwrap());
        ToolRouter::new(registry, Arc::new(host))
            .with_observer(Arc::new(AuditObserver::new(audit, "test")))
            .with_refusal_limit(5)
    }

    /// Every audit record so far.
    pub fn audit(&self) -> Vec<AuditRecord> {
        crate::audit_log::records(&self.state, &self.project)
    }
}

pub fn turn(router: &ToolRouter, mode: ExecutionMode) -> Turn {
    turn_with(router, mode, Arc::new(NoApprover))
}

pub fn turn_with(
    router: &ToolRouter,
    mode: ExecutionMode,
    approver: Arc<dyn Approver + Send + Sync>,
) -> Turn {
    let view = ToolExposurePolicy::view(router.registry(), &ExposureSettings::default());
    Turn::new(mode, view, approver)
}

pub fn call(router: &ToolRouter, turn: &mut Turn, name: &str, args: Value) -> ToolResultEnvelope {
    let c = ToolCall {
        id: "t1".into(),
        name: name.into(),
        arguments: args,
    };
    router.call(turn, &c).unwrap()
}

pub use crate::approver::ScriptedApprover;

/// Runs commands with the host's bash in `cwd`, UNCONFINED: a test double only, used in
/// temporary directories, so host-command and timeout tests see what a real shell would do.
pub struct BashExecutor {
    pub cwd: PathBuf,
    pub path_prefix: Option<PathBuf>,
    pub ran: Arc<Mutex<Vec<String>>>,
}

impl BashExecutor {
    pub fn new(cwd: &Path) -> Self {
        BashExecutor {
            cwd: cwd.to_path_buf(),
            path_prefix: None,
            ran: Arc::default(),
        }
    }
}

impl CommandExecutor for BashExecutor {
    fn run(
        &self,
        command: &str,
        _profile: &ExecutionProfile,
        timeout: Duration,
        sink: &mut dyn OutputSink,
    ) -> ExecOutcome {
        self.ran.lock().unwrap().push(command.to_string());
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(command).current_dir(&self.cwd);
        if let Some(p) = &self.path_prefix {
            let path = std::env::var("PATH").unwrap_or_default();
            cmd.env("PATH", format!("{}:{path}", p.display()));
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            out.read_to_end(&mut all).unwrap();
            all
        });
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let all = reader.join().unwrap();
                sink.write(OutputStream::Stdout, &all).unwrap();
                let mut r = ToolResult::ok(String::from_utf8_lossy(&all));
                r.exit_code = status.code();
                if status.code() != Some(0) {
                    r.status = ToolStatus::Failed;
                    r.reason = Some(format!("exited with {status}"));
                }
                return ExecOutcome::ran(r);
            }
            if start.elapsed() > timeout {
                child.kill().unwrap();
                child.wait().unwrap();
                return ExecOutcome::ran(ToolResult::refused(
                    ToolStatus::Timeout,
                    format!("killed after {} s", timeout.as_secs_f64()),
                ));
            }
            // The child's exit is itself what is awaited (with the timeout beside it); this
            // fake executor has no runtime to wait on a pidfd with a deadline.
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The sandbox is missing: every command fails with the typed marker.
pub struct NoSandbox;

impl CommandExecutor for NoSandbox {
    fn run(
        &self,
        _: &str,
        _: &ExecutionProfile,
        _: Duration,
        _: &mut dyn OutputSink,
    ) -> ExecOutcome {
        ExecOutcome::sandbox_unavailable("bwrap was not found on PATH (install bubblewrap)")
    }
}

/// Records what it was asked to run and returns ok, running nothing.
#[derive(Default, Clone)]
pub struct Recorder {
    pub ran: Arc<Mutex<Vec<(String, Duration, ExecutionProfile)>>>,
}

impl CommandExecutor for Recorder {
    fn run(
        &self,
        command: &str,
        profile: &ExecutionProfile,
        timeout: Duration,
        sink: &mut dyn OutputSink,
    ) -> ExecOutcome {
        self.ran
            .lock()
            .unwrap()
            .push((command.to_string(), timeout, profile.clone()));
        sink.write(OutputStream::Stdout, b"recorded\n").unwrap();
        ExecOutcome::ran(ToolResult {
            exit_code: Some(0),
            ..ToolResult::ok("recorded\n")
        })
    }
}

/// The bytes of `rel` in the fixture's project, if it exists.
pub fn contents(f: &Fixture, rel: &str) -> Option<Vec<u8>> {
    std::fs::read(f.project.join(rel)).ok()
}

/// The call was refused by `rule`, and the reason says how to do it yourself.
pub fn assert_refused_by(env: &spear::tools::envelope::ToolResultEnvelope, rule: &str, what: &str) {
    assert_eq!(
        env.status,
        spear::harness::primitives::ToolStatus::Denied,
        "{what}: {env:?}"
    );
    let reason = env.reason.as_deref().unwrap_or("");
    assert!(reason.contains(rule), "{what}: {reason}");
    assert!(
        reason.contains("outside Spear"),
        "{what}: the reason must say how to do it yourself: {reason}"
    );
}

/// Each of `targets` (a name as the model writes it, and the file it reaches) refused to
/// write_file and patch (and to delete_file when `delete`) in `mode` by `rule`, the file it
/// reaches left as it was.
pub fn file_tools_refuse(
    f: &Fixture,
    router: &ToolRouter,
    mode: ExecutionMode,
    targets: &[(&str, &str)],
    rule: &str,
    delete: bool,
) {
    for (target, reached) in targets {
        let before = contents(f, reached);
        let mut calls = vec![
            (
                "write_file",
                serde_json::json!({"path": target, "content": "[core]\n\tfsmonitor = ./x\n"}),
            ),
            (
                "patch",
                serde_json::json!({"path": target, "edits": [{"old": "[core]", "new": "[core]\n\tfsmonitor = ./x"}]}),
            ),
        ];
        if delete {
            calls.push(("delete_file", serde_json::json!({"path": target})));
        }
        for (tool, args) in calls {
            let mut t = turn(router, mode);
            let env = call(router, &mut t, tool, args);
            assert_refused_by(&env, rule, &format!("{tool} {target} in {mode}"));
        }
        assert_eq!(contents(f, reached), before, "{target} changed in {mode}");
    }
}
