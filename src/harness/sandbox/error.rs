//! The execution layer's errors: what broke in the machinery (as opposed to a command failing),
//! one variant per cause, the io or process error underneath kept as the source. The text of
//! each is what the tool layer shows the model and the CLI shows the user.

use std::path::PathBuf;

use thiserror::Error;

use super::netns::NetworkSetupError;
use super::preflight::INSTALL_BWRAP;
use super::seccomp::SUPPORTED_ARCHES;
use super::tmpfs::MASK_TMPFS_BYTES;
use crate::harness::process::{NamespaceConfigError, ProcessError};
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

/// The request cannot be turned into a sandbox: a bad workspace, path or size. Each says which
/// and how to fix it.
#[derive(Debug, Error)]
pub enum SpecError {
    #[error("workspace {} cannot be resolved: {source}", path.display())]
    WorkspaceUnresolvable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("workspace {} overlaps the system directories", .0.display())]
    WorkspaceOverlapsSystem(PathBuf),
    #[error(
        "protected path {} must be relative to the workspace and stay inside it",
        .0.display()
    )]
    ProtectedPathOutside(PathBuf),
    /// `link`, in the workspace root, leads to `protected`, which a writable sandbox could
    /// then not keep read-only.
    #[error(
        "{} is a symlink in the workspace root; Spear cannot keep {} read-only in a writable \
         sandbox. Replace the link with the real directory, or run the command without \
         workspace write access",
        link.display(),
        protected.display()
    )]
    ProtectedBehindSymlink { link: PathBuf, protected: PathBuf },
    #[error("host read path {} is not absolute", .0.display())]
    HostReadNotAbsolute(PathBuf),
    #[error("host read path {} cannot be resolved: {source}", path.display())]
    HostReadUnresolvable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "host read path {} resolves to {}; give the resolved path",
        path.display(),
        resolved.display()
    )]
    HostReadNotResolved { path: PathBuf, resolved: PathBuf },
    #[error(
        "host read path {} would cover the system view or the workspace",
        .0.display()
    )]
    HostReadCovers(PathBuf),
    #[error(
        "the tmpfs size for {mount} is {bytes} bytes; give at least {MASK_TMPFS_BYTES} (tmpfs \
         reads 0 as unlimited)"
    )]
    TmpfsTooSmall { mount: &'static str, bytes: u64 },
}

/// Why bwrap's held namespaces could not be given their settings before its command.
#[derive(Debug, Error)]
pub enum NamespacePrepError {
    #[error("the sandbox's namespace init died while it was being prepared")]
    InitDied,
    #[error(transparent)]
    Configure(#[from] NamespaceConfigError),
    /// Writing the id maps (or reading the init's pid) failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The execution layer's error: the machinery broke (as opposed to a command failing).
#[derive(Debug, Error)]
pub enum SandboxError {
    #[error(transparent)]
    Spec(#[from] SpecError),
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
        source: NamespacePrepError,
        /// Why the blocked sandbox's death could not be confirmed afterwards, if it could not.
        unconfirmed: Option<ProcessError>,
    },
    /// Spear runs as root and cannot give its sandbox an unprivileged uid here.
    #[error(
        "Spear runs as root, and its sandbox must not run as the host's root: {0}. Commands \
         are refused until that is fixed (`spear doctor` shows the check), or until \
         `[sandbox] root_uid = \"host\"` in config.toml lets them run as root (every \
         command's audit record then says so)"
    )]
    RootUser(String),
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
