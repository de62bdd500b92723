//! `ExecutionProfile`: the pure contract the execution layer receives. It says what a command may
//! touch, never why it was allowed; it is built only from capabilities that were granted.

use std::path::PathBuf;

use serde::{Serialize, Serializer};

pub use crate::harness::egress::Egress;
use crate::harness::primitives::{Capability, CapabilitySet};
pub use crate::harness::secrets::Secrets;

/// A capability the type names but Spear does not implement: it is always off, and no code can
/// switch it on. It serialises as `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NotImplemented;

impl NotImplemented {
    pub fn enabled(self) -> bool {
        false
    }
}

impl Serialize for NotImplemented {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(false)
    }
}

/// What the execution layer may give a command. Derived from granted capabilities only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutionProfile {
    pub workspace_read: bool,
    pub workspace_write: bool,
    pub shell_complex: bool,
    pub network: bool,
    /// Host paths bound read-only; the sandbox checks that each resolves where it says.
    pub host_read_paths: Vec<PathBuf>,
    pub gpu: NotImplemented,
    pub ssh: NotImplemented,
    pub container_runtime: NotImplemented,
    pub secrets_allowed: Secrets,
    /// With `network`: the path it takes and, on the proxy, the names it may reach and who is
    /// asked about the rest. Without `network` it is never used.
    pub egress: Egress,
    /// The classifier found the command to be exactly this argv: it may be started without a
    /// shell (only for the command line it was read from).
    pub literal_argv: Option<LiteralArgv>,
}

impl ExecutionProfile {
    /// The profile for a set of granted capabilities.
    pub fn from_granted(granted: CapabilitySet, host_read_paths: Vec<PathBuf>) -> Self {
        ExecutionProfile {
            workspace_read: granted.contains(Capability::WorkspaceRead),
            workspace_write: granted.contains(Capability::WorkspaceWrite),
            shell_complex: granted.contains(Capability::ShellComplex),
            network: granted.contains(Capability::Network),
            host_read_paths,
            gpu: NotImplemented,
            ssh: NotImplemented,
            container_runtime: NotImplemented,
            secrets_allowed: Secrets::default(),
            egress: Egress::default(),
            literal_argv: None,
        }
    }

    /// The same profile handing `secrets` to the process (a long-lived one only).
    pub fn with_secrets(mut self, secrets: Secrets) -> Self {
        self.secrets_allowed = secrets;
        self
    }

    /// The same profile reaching the network by `egress` (when it has the network at all).
    pub fn with_egress(mut self, egress: Egress) -> Self {
        self.egress = egress;
        self
    }

    /// The same profile carrying the classifier's literal-argv fact for the command.
    pub fn with_literal_argv(mut self, argv: Option<LiteralArgv>) -> Self {
        self.literal_argv = argv;
        self
    }

    /// The most restrictive profile: read the workspace, nothing else.
    pub fn read_only() -> Self {
        Self::from_granted(CapabilitySet::of(&[Capability::WorkspaceRead]), Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_follows_granted_capabilities_and_never_enables_the_unimplemented() {
        let p = ExecutionProfile::from_granted(
            CapabilitySet::of(&[Capability::WorkspaceRead, Capability::Network]),
            vec![PathBuf::from("/opt/data")],
        );
        assert!(p.workspace_read && p.network && !p.workspace_write && !p.shell_complex);
        assert!(!p.gpu.enabled() && !p.ssh.enabled() && !p.container_runtime.enabled());
        assert!(!p.secrets_allowed.enabled());
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["secrets_allowed"], false);
        assert_eq!(v["host_read_paths"][0], "/opt/data");
    }
}

/// One program and its arguments, exactly as bash would have run them for `source`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiteralArgv {
    #[serde(skip)]
    pub(crate) source: String,
    pub(crate) argv: Vec<String>,
}

impl LiteralArgv {
    /// The program (a name without `/`, looked up on the sandbox's `PATH`), then its
    /// arguments.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The command line this argv was read from: a runner handed another line ignores it.
    pub fn source(&self) -> &str {
        &self.source
    }
}
