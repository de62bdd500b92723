//! A project, a state directory and the router the binary builds (the library's builder, the
//! real sandbox), with the web settings a test chooses.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use spear::agent::builder::{Place, SessionBuilder};
use spear::config::HarnessSettings;
use spear::harness::audit::AuditRecord;
use spear::harness::command_policy::{Approver, NoApprover};
use spear::harness::primitives::ExecutionMode;
use spear::harness::workspace::Workspace;
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::host::web::{AddressPolicy, WebSettings};
use spear::tools::router::turn::Turn;
use spear::tools::router::{ToolCall, ToolRouter};

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

impl Project {
    pub fn new() -> Project {
        crate::extractor::use_spear_binary();
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

    /// The router as every front end builds it (the library's builder, the real sandbox), with
    /// the web switched as `web_enabled` says and `settings` for the pair.
    pub fn router(&self, web_enabled: bool, settings: WebSettings) -> ToolRouter {
        let place = Place::of(
            Workspace::new(&self.project).unwrap(),
            self.project.clone(),
            self.state.clone(),
        );
        let harness = HarnessSettings {
            web_enabled,
            web: settings,
            ..HarnessSettings::default()
        };
        SessionBuilder::new(place, harness, "web-test")
            .router()
            .unwrap()
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
