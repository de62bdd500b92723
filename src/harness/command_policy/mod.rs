//! The decision layer's judge: `classify` turns bash source into a `CommandAssessment` on a real
//! parse, and `authorize` intersects it with what the mode grants. It fails closed: whatever it
//! does not positively know to be read-only is not read-only.

pub mod allowlist;
mod assessment;
mod authorize;
mod awk;
mod brackets;
mod classify;
mod commands;
mod descriptors;
mod downloads;
mod env_args;
mod env_names;
mod git;
mod inline_calls;
mod invocations;
mod literal;
mod options;
mod paths;
mod profile;
mod runners;
mod scripts;
mod tables;
mod wrappers;

pub use assessment::{CommandAssessment, CommandClass};
pub use authorize::{
    ApprovalDecision, ApprovalRequest, Approver, AuthorizationResult, NoApprover, SaveScope,
    capabilities_for, required_capabilities,
};
pub use classify::MAX_NESTED_SCRIPTS;
pub use profile::LiteralArgv;
// The audit summary leaves out the same inline programs the classifier reads.
pub use profile::{ExecutionProfile, NotImplemented, Secrets};
pub(crate) use tables::{SHELLS, interpreter};

use std::path::PathBuf;

use crate::harness::primitives::ExecutionMode;
use crate::harness::shell::Budget;

/// Session facts the policy needs. Built once per session; immutable afterwards.
#[derive(Debug, Clone, Default)]
pub struct PolicyConfig {
    /// The session has network switched on (`--network`, `/network on`, config).
    pub network_enabled: bool,
    /// The canonical workspace root, so absolute paths inside it are not "outside".
    pub workspace_root: Option<PathBuf>,
    /// Vetted host paths handed to the sandbox read-only.
    pub host_read_paths: Vec<PathBuf>,
}

/// Classifies and authorizes commands.
#[derive(Debug, Clone, Default)]
pub struct CommandPolicy {
    config: PolicyConfig,
}

impl CommandPolicy {
    pub fn new(config: PolicyConfig) -> Self {
        CommandPolicy { config }
    }

    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    /// Classify one bash command line (it may hold several commands, lines and nesting), within
    /// the default classification budget.
    pub fn classify(&self, command: &str) -> CommandAssessment {
        self.classify_within(command, &Budget::default())
    }

    /// Classify within `budget`, which says afterwards what was spent (tests count with it).
    pub fn classify_within(&self, command: &str, budget: &Budget) -> CommandAssessment {
        classify::classify(&self.config, command, 0, budget)
    }

    /// Intersect an assessment with what `mode` grants, asking `approver` in ASK mode.
    pub fn authorize(
        &self,
        mode: ExecutionMode,
        assessment: &CommandAssessment,
        approver: &dyn Approver,
    ) -> AuthorizationResult {
        self.authorize_with_network(mode, self.config.network_enabled, assessment, approver)
    }

    /// As [`CommandPolicy::authorize`], with the session's network switch as it is now (the
    /// person may switch it off during a turn) instead of as the policy was built.
    pub fn authorize_with_network(
        &self,
        mode: ExecutionMode,
        network_enabled: bool,
        assessment: &CommandAssessment,
        approver: &dyn Approver,
    ) -> AuthorizationResult {
        authorize::authorize(
            mode,
            network_enabled,
            &self.config.host_read_paths,
            assessment,
            approver,
        )
    }
}
