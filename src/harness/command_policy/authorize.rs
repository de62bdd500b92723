//! Authorization: a command's needs intersected with what the mode grants, with the person asked
//! in ASK mode. DANGEROUS is refused before any grant is looked at.

use serde::Serialize;

use super::assessment::{CommandAssessment, CommandClass};
use super::profile::ExecutionProfile;
use crate::harness::primitives::{
    Capability, CapabilityPolicy, CapabilitySet, ExecutionMode, Grant,
};

/// What the approver is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    pub mode: ExecutionMode,
    pub command: String,
    pub class: CommandClass,
    /// The capabilities that need a yes.
    pub asking_for: CapabilitySet,
    pub reasons: Vec<String>,
    pub writes: Vec<String>,
    pub network: bool,
}

/// Where an "always" the person chose is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SaveScope {
    /// For the rest of this session.
    Session,
    /// In the person's rules, for this workspace.
    Workspace,
    /// In the person's rules, for every workspace.
    Global,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    Approve,
    /// Yes, and the same command of the same class needs no question again this session. The
    /// harness treats it as `Approve`; whoever keeps session grants (the tool router) keeps one.
    ApproveForSession,
    /// Yes, and keep an allow rule: `rule` is its command (as a rules file spells it, `*` last
    /// for further arguments), kept where `scope` says. The harness treats it as `Approve`;
    /// the tool router keeps the rule, with this command's class and capabilities as its
    /// ceiling.
    Always {
        rule: String,
        scope: SaveScope,
    },
    /// A considered no, optionally with the person's words.
    Deny(Option<String>),
    /// No answer could be had (no terminal, dialog dismissed, task cancelled).
    Cancel(String),
}

/// Lets the harness ask a person without knowing how (TUI dialog, terminal prompt, test double).
pub trait Approver {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision;
}

/// An approver for contexts with nobody to ask: every question is cancelled, never a silent yes.
pub struct NoApprover;

impl Approver for NoApprover {
    fn approve(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::Cancel(
            "no terminal to ask for confirmation on, so the request was cancelled".into(),
        )
    }
}

/// The outcome of authorization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizationResult {
    Granted {
        capabilities: CapabilitySet,
        profile: ExecutionProfile,
        asked: bool,
    },
    Denied {
        reason: String,
    },
    Cancelled {
        reason: String,
    },
}

impl AuthorizationResult {
    pub fn is_granted(&self) -> bool {
        matches!(self, AuthorizationResult::Granted { .. })
    }
}

/// The capabilities an assessed command needs.
pub fn required_capabilities(assessment: &CommandAssessment) -> CapabilitySet {
    capabilities_for(assessment.class, assessment.network)
}

/// The capabilities a command of `class` needs, with the network if `network`.
pub fn capabilities_for(class: CommandClass, network: bool) -> CapabilitySet {
    let mut set = CapabilitySet::of(&[Capability::WorkspaceRead]);
    match class {
        CommandClass::ReadOnly => {}
        CommandClass::WorkspaceMutating => set = set.with(Capability::WorkspaceWrite),
        // Complex shell can write anything the workspace holds, so it needs both.
        CommandClass::ShellComplex | CommandClass::Dangerous => {
            set = set
                .with(Capability::WorkspaceWrite)
                .with(Capability::ShellComplex)
        }
    }
    if network {
        set = set.with(Capability::Network);
    }
    set
}

pub(crate) fn authorize(
    mode: ExecutionMode,
    network_enabled: bool,
    host_read_paths: &[std::path::PathBuf],
    assessment: &CommandAssessment,
    approver: &dyn Approver,
) -> AuthorizationResult {
    if assessment.class == CommandClass::Dangerous {
        let why = assessment
            .reasons
            .first()
            .cloned()
            .unwrap_or_else(|| "the command is dangerous".into());
        return AuthorizationResult::Denied {
            reason: format!("refused in every mode: {why}"),
        };
    }
    let needed = required_capabilities(assessment);
    if needed.contains(Capability::Network) && !network_enabled {
        return AuthorizationResult::Denied {
            reason: "the command needs the network, which is off for this session \
                     (start with --network or type /network on)"
                .into(),
        };
    }
    let policy = CapabilityPolicy::for_mode(mode);
    let mut asking = CapabilitySet::EMPTY;
    for cap in needed.iter() {
        match policy.grant(cap) {
            Grant::Granted => {}
            Grant::Ask => asking = asking.with(cap),
            Grant::Refused => {
                return AuthorizationResult::Denied {
                    reason: format!(
                        "{mode} mode does not grant {cap}, which this {} command needs",
                        assessment.class
                    ),
                };
            }
        }
    }
    let mut asked = false;
    if !asking.is_empty() {
        asked = true;
        let request = ApprovalRequest {
            mode,
            command: assessment.command.clone(),
            class: assessment.class,
            asking_for: asking,
            reasons: assessment.reasons.clone(),
            writes: assessment.writes.clone(),
            network: assessment.network,
        };
        match approver.approve(&request) {
            ApprovalDecision::Approve
            | ApprovalDecision::ApproveForSession
            | ApprovalDecision::Always { .. } => {}
            ApprovalDecision::Deny(words) => {
                let reason = match words {
                    Some(w) if !w.trim().is_empty() => format!("the user declined: {}", w.trim()),
                    _ => "the user declined".to_string(),
                };
                return AuthorizationResult::Denied { reason };
            }
            ApprovalDecision::Cancel(reason) => return AuthorizationResult::Cancelled { reason },
        }
    }
    AuthorizationResult::Granted {
        capabilities: needed,
        profile: ExecutionProfile::from_granted(needed, host_read_paths.to_vec())
            .with_literal_argv(assessment.literal_argv.clone()),
        asked,
    }
}
