//! The execution layer's errors: what broke in the machinery (as opposed to a command failing),
//! one variant per cause, the io or process error underneath kept as the source. The text of
//! each is what the tool layer shows the model and the CLI shows the user.

use thiserror::Error;

use super::netns::NetworkSetupError;
use super::preflight::INSTALL_BWRAP;
use super::seccomp::SUPPORTED_ARCHES;
use crate::harness::process::ProcessError;
use crate::harness::resource_control::ScopeError;
use crate::harness::resource_control::pids_cgroup::CgroupCreateError;

/// A helper program the sandbox needs was not found on the search path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum HelperMissing {
    #[error(
        "bubblewrap (bwrap) is not installed or not on PATH, so no command can run confined; \
         {INSTALL_BWRAP}"
    )]
    Bwrap,
    #[error(
        "slirp4netns is not installed or not on PATH, so a command that needs the network \
         cannot get it; install it: `apt-get install slirp4netns`"
    )]
    Slirp,
}

#[derive(Debug, Error)]
pub enum SandboxError {
    /// The request cannot be turned into a sandbox (a bad path or size); the message says
    /// which and how to fix it.
    #[error("{0}")]
    Spec(String),
    #[error(transparent)]
    HelperMissing(#[from] HelperMissing),
    /// Cgroup limits were asked for and no systemd scope can be made.
    #[error(transparent)]
    ScopeUnavailable(#[from] ScopeError),
    #[error(transparent)]
    CgroupCreate(#[from] CgroupCreateError),
    #[error("cannot record the launch in the sandbox ledger: {0}")]
    Ledger(#[source] std::io::Error),
    #[error(
        "Spear has no seccomp filter for the {arch} architecture (it has one for {}), and it \
         does not run commands without one",
        SUPPORTED_ARCHES.join(" and ")
    )]
    NoSeccompFilter { arch: String },
    #[error("the seccomp filter could not be built: {0}")]
    SeccompBuild(#[source] seccompiler::BackendError),
    /// An earlier network sandbox was told to die and its death could not be confirmed.
    #[error("network is refused: an earlier network sandbox could not be confirmed dead")]
    NetworkPoisoned,
    #[error(
        "the host's addresses cannot be listed, so they cannot be refused to the network \
         path: {0}"
    )]
    HostAddresses(#[source] std::io::Error),
    #[error("the network path could not be set up: {0}")]
    NetworkSetup(#[source] NetworkSetupError),
    /// bwrap ended or hung before its command, and killing it could not be confirmed. A
    /// failure of this launch, not a missing mechanism, so a preflight may be tried again.
    #[error(
        "bwrap ended or hung before its command started. The sandbox's death could not be \
         confirmed: {0}."
    )]
    EndedUnconfirmed(#[source] ProcessError),
    /// bwrap started, but its namespaces could not be given their settings: a failure of this
    /// launch, not a missing mechanism, so a preflight that meets it may be tried again.
    #[error(
        "the sandbox's namespaces could not be prepared: {source}.{}",
        unconfirmed_suffix(unconfirmed.as_ref())
    )]
    NamespaceSetup {
        #[source]
        source: std::io::Error,
        /// Why the blocked sandbox's death could not be confirmed afterwards, if it could not.
        unconfirmed: Option<ProcessError>,
    },
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn unconfirmed_suffix(unconfirmed: Option<&ProcessError>) -> String {
    unconfirmed.map_or_else(String::new, |e| {
        format!(" The sandbox's death could not be confirmed: {e}.")
    })
}
