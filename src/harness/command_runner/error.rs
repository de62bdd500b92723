//! Why a runner refuses a command before anything is spawned: a mechanism its contract needs
//! is missing here. Each variant names the mechanism; the text says what to do about it.

use thiserror::Error;

use crate::harness::resource_control::process_cap::ProcessCapUnavailable;
use crate::harness::resource_control::{RlimitRefused, ScopeError};
use crate::harness::sandbox::HelperMissing;
use crate::harness::sandbox::netns::NetworkSupportError;

#[derive(Debug, Clone, Error)]
pub enum MechanismError {
    /// bwrap (the sandbox itself) is missing.
    #[error(transparent)]
    HelperMissing(#[from] HelperMissing),
    /// A test declared rlimits unavailable (`Mechanism::Rlimits`).
    #[error(
        "resource limits are configured but rlimits cannot be set here (simulated); refusing \
         to run without them"
    )]
    RlimitsSimulated,
    #[error("resource limits are configured but cannot be applied: {0}")]
    RlimitRefused(#[source] RlimitRefused),
    #[error(transparent)]
    ProcessCapUnavailable(#[from] ProcessCapUnavailable),
    /// Cgroup limits are configured and no systemd scope can be made.
    #[error(transparent)]
    ScopeUnavailable(#[from] ScopeError),
    /// An earlier network sandbox was told to die and its death could not be confirmed.
    #[error(
        "network is refused for this session: an earlier network sandbox could not be \
         confirmed dead (network_containment_failed)"
    )]
    NetworkPoisoned,
    #[error(transparent)]
    NetworkUnsupported(#[from] NetworkSupportError),
}

/// Why a long-lived process was not started.
#[derive(Debug, thiserror::Error)]
pub enum LongLivedError {
    /// The profile asks for what a long-lived process may not have.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    #[error("the sandbox cannot run here: {0}")]
    Preflight(String),
    #[error(transparent)]
    Sandbox(#[from] crate::harness::sandbox::SandboxError),
}
