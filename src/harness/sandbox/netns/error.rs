//! Why the network path cannot work here, why one launch's network could not be set up, and
//! why the network preflight failed. The host-level answers are remembered (once per process,
//! once per workspace), so they are `Clone` and share the io error underneath.

use std::sync::Arc;

use thiserror::Error;

use super::routes::RoutesMissing;
use crate::harness::process::{Exit, ProcessError};
use crate::harness::sandbox::{End, HelperMissing, SandboxError};

/// The network path cannot work on this host (checked once per process).
#[derive(Debug, Clone, Error)]
pub enum NetworkSupportError {
    #[error(transparent)]
    HelperMissing(#[from] HelperMissing),
    #[error("slirp4netns cannot be run: {0}")]
    SlirpUnrunnable(#[source] Arc<std::io::Error>),
    #[error(
        "this slirp4netns cannot attach to a pinned namespace (no --netns-type=path / \
         --userns-path); install slirp4netns 0.4 or newer"
    )]
    NoPinnedNamespaces,
    #[error(
        "this slirp4netns cannot confine itself (no --enable-sandbox / --enable-seccomp), and \
         Spear never runs it unconfined; install slirp4netns 0.4 or newer built with libseccomp"
    )]
    NoSelfConfinement,
    /// Unprivileged, slirp4netns opens the device inside the sandbox's namespaces.
    #[error(
        "slirp4netns cannot open /dev/net/tun as this user ({0}); the device should be mode \
         0666 as distributions ship it: `chmod 0666 /dev/net/tun` as root"
    )]
    TunUnopenable(#[source] Arc<std::io::Error>),
    #[error("namespace handles cannot be opened here (/proc/self/ns/{ns}: {source})")]
    NamespaceHandle {
        ns: &'static str,
        #[source]
        source: Arc<std::io::Error>,
    },
}

/// One launch's network could not be attached before its command (nothing ran).
#[derive(Debug, Error)]
pub enum NetworkSetupError {
    #[error("bwrap ended before reporting its namespace")]
    EndedBeforeReport,
    #[error("cannot open the sandbox's network namespace: {0}")]
    NetnsOpen(#[source] std::io::Error),
    #[error("cannot open the owner of the sandbox's network namespace: {0}")]
    OwnerUserns(#[source] std::io::Error),
    #[error("the sandbox died during its setup")]
    DiedDuringSetup,
    #[error("the sandbox's loopback never came up")]
    LoopbackNeverUp,
    #[error("the sandbox's namespace init died while its namespaces were pinned")]
    DiedWhilePinned,
    /// slirp4netns could not be started.
    #[error(transparent)]
    HelperSpawn(#[from] ProcessError),
    /// `said` is what slirp4netns wrote to its log, each time below.
    #[error("{source}: {said}")]
    ReadyRead {
        #[source]
        source: std::io::Error,
        said: String,
    },
    #[error("slirp4netns exited early ({exit:?}): {said}")]
    HelperExited {
        exit: Result<Exit, ProcessError>,
        said: String,
    },
    #[error("slirp4netns did not become ready: {said}")]
    HelperNotReady { said: String },
    #[error("slirp4netns closed its ready fd without configuring: {said}")]
    ReadyFdClosed { said: String },
    #[error("cannot read the sandbox's routing table ({table}): {source}")]
    RouteTableUnreadable {
        table: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the sandbox's namespace init died while its routes were checked")]
    DiedWhileRoutesChecked,
    #[error(transparent)]
    RoutesMissing(#[from] RoutesMissing),
    /// A pipe, memfd or descriptor the setup needs could not be made.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The network preflight (the full network path, once per sandbox and workspace) failed.
/// Remembered per workspace, so the launch error underneath is shared.
#[derive(Debug, Clone, Error)]
pub enum NetworkPreflightError {
    /// The preflight's own sandbox could not be described (not remembered: nothing ran).
    #[error(transparent)]
    Spec(Arc<SandboxError>),
    #[error("the network preflight failed: {0}")]
    Launch(#[source] Arc<SandboxError>),
    /// It ran and its checks failed; `stderr` is what the check script said.
    #[error("the network preflight failed ({end:?}): {stderr}")]
    Failed { end: End, stderr: String },
}
