//! A project, a state directory and a router over the coding tools and the web pair, as the
//! binary wires them, with the web settings a test chooses.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use spear::harness::audit::{AuditLogger, AuditRecord};
use spear::harness::command_policy::{
    Approver, CommandPolicy, ExecutionProfile, NoApprover, PolicyConfig,
};
use spear::harness::primitives::{ExecutionMode, ToolResult};
use spear::harness::target_policy::TargetPolicy;
use spear::harness::workspace::Workspace;
use spear::tools::coding;
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::executor::{CommandExecutor, ExecOutcome, OutputSink};
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::host::web::{AddressPolicy, WebSettings};
use spear::tools::host::{HostConfig, SpearHost};
use spear::tools::observer::AuditObserver;
use spear::tools::registry::ToolRegistry;
use spear::tools::results::{ResultStore, StoreLimits};
use spear::tools::router::turn::Turn;
use spear::tools::router::{ToolCall, ToolRouter};
use spear::tools::web;

pub struct Project {
    _dir: tempfile::TempDir,
    pub project: PathBuf,
    pub state: PathBuf,
}

/// The web settings the tests use: private addresses refused, except exactly 127.0.0.1 (where
/// the test server listens), and short limits.
pub fn loopback_only() -> WebSettings {
    let mut s = WebSettings {
        addresses: AddressPolicy {
            allow_private: false,
            allow: vec!["127.0.0.1".parse().unwrap()],
        },
        ..WebSettings::default()
    };
    s.limits.timeout = Duration::from_secs(3);
    s.limits.max_bytes = 4 << 20;
    s
}

/// Runs nothing: the web pair never needs the sandbox's shell.
pub struct NoShell;

impl CommandExecutor for NoShell {
    fn run(
        &self,
        command: &str,
        _profile: &ExecutionProfile,
        _timeout: Duration,
        _sink: &mut dyn OutputSink,
    ) -> ExecOutcome {
        ExecOutcome::ran(ToolResult::failed(format!(
            "test executor: `{command}` reached the shell"
        )))
    }
}

impl Project {
    pub fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (project, state) = (base.join("project"), base.join("state"));
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::write(project.join(".git/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(&state).unwrap();
        Project {
            _dir: dir,
            project,
            state,
        }
    }

    pub fn router(&self, web_enabled: bool, settings: WebSettings) -> ToolRouter {
        let host = SpearHost::new(
            Workspace::new(&self.project).unwrap(),
            TargetPolicy::default(),
            CommandPolicy::new(PolicyConfig {
                workspace_root: Some(self.project.clone()),
                ..PolicyConfig::default()
            }),
            Box::new(NoShell),
            ResultStore::open_in(&self.state, &self.project, StoreLimits::default()).unwrap(),
            HostConfig {
                session: "web-test".into(),
                web_enabled,
                web: settings,
                ..HostConfig::default()
            },
        );
        let mut registry = ToolRegistry::new();
        coding::register(&mut registry).unwrap();
        web::register(&mut registry).unwrap();
        let audit = Arc::new(AuditLogger::open_in(&self.state, &self.project).unwrap());
        ToolRouter::new(registry, Arc::new(host))
            .with_observer(Arc::new(AuditObserver::new(audit, "web-test")))
    }

    pub fn audit(&self) -> Vec<AuditRecord> {
        crate::audit_log::records(&self.state, &self.project)
    }
}

/// A turn on the normative surface with the web on (where the pair is a tool).
pub fn normative_turn(
    router: &ToolRouter,
    mode: ExecutionMode,
    approver: Arc<dyn Approver + Send + Sync>,
) -> Turn {
    let settings = ExposureSettings {
        standard_engaged: true,
        web_enabled: true,
        purely_normative: false,
    };
    Turn::new(
        mode,
        ToolExposurePolicy::view(router.registry(), &settings),
        approver,
    )
}

/// A turn on the coding surface (where the pair is `spear-capability run`).
pub fn coding_turn(
    router: &ToolRouter,
    mode: ExecutionMode,
    approver: Arc<dyn Approver + Send + Sync>,
) -> Turn {
    let settings = ExposureSettings {
        web_enabled: router.host().config().web_enabled,
        ..ExposureSettings::default()
    };
    Turn::new(
        mode,
        ToolExposurePolicy::view(router.registry(), &settings),
        approver,
    )
}

pub fn call(router: &ToolRouter, turn: &mut Turn, name: &str, args: Value) -> ToolResultEnvelope {
    let c = ToolCall {
        id: "w1".into(),
        name: name.into(),
        arguments: args,
    };
    router.call(turn, &c).unwrap()
}

pub fn no_approver() -> Arc<dyn Approver + Send + Sync> {
    Arc::new(NoApprover)
}

pub use crate::approver::ScriptedApprover;

/// The `next pages: "A-B"` a slice names, if any.
pub fn next_pages(text: &str) -> Option<String> {
    let rest = text.split("next pages: \"").nth(1)?;
    Some(rest.split('"').next()?.to_string())
}
