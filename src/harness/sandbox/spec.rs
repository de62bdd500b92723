//! `SandboxSpec`: everything bubblewrap is told, as plain data. The host is probed here (which
//! system directories are symlinks, which secrets exist, what a protected path is right now), so
//! that `build_argv` can stay a pure function. Invariant: a spec never names a host path that the
//! command may write other than the workspace, and only when `workspace_write` is set.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::tmpfs::TmpfsSizes;
use super::{SandboxError, SpecError};

/// A top-level system path as it exists on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemEntry {
    /// A real directory, bound read-only onto itself.
    Dir(PathBuf),
    /// A symlink (usr-merge: `/bin -> usr/bin`), recreated as the same symlink.
    Symlink { path: PathBuf, target: PathBuf },
}

/// A secret under `/etc` that exists on the host and is hidden in the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Masked {
    /// Covered by a read-only `/dev/null`.
    File(PathBuf),
    /// Covered by an empty read-only tmpfs.
    Dir(PathBuf),
}

/// How one path inside a writable workspace is kept out of the command's reach.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protection {
    /// An existing directory on the way to a protected path, bound read-write onto itself so it
    /// becomes a mount point: it can no longer be renamed or removed from inside.
    Pin(PathBuf),
    /// An existing protected file or directory, bound read-only onto itself.
    ReadOnly(PathBuf),
    /// An absent protected path: a read-only `/dev/null` is bound over it, so nothing can be
    /// created there. bwrap creates an empty file (mode 0444) as the mount point; the runner
    /// removes it once the sandbox is gone (see [`super::placeholders`]).
    Placeholder(PathBuf),
}

impl Protection {
    pub fn path(&self) -> &Path {
        match self {
            Protection::Pin(p) | Protection::ReadOnly(p) | Protection::Placeholder(p) => p,
        }
    }
}

/// The network the command gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxNetwork {
    /// Its own network namespace with only loopback: no route anywhere.
    Closed,
    /// Its own network namespace that slirp4netns attaches to before the command starts.
    /// `resolv_conf_fd` is the fd bwrap copies the DNS configuration from.
    Slirp {
        resolv_conf_fd: i32,
        resolv_conf_dest: PathBuf,
    },
}

/// Where bwrap finds what it binds from the host's workspace and the vetted host paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BindSources {
    /// At their own paths: bwrap runs with Spear's uid, which can reach them.
    #[default]
    InPlace,
    /// Under a stage directory that the launch mounts in a private mount namespace (a root
    /// Spear whose sandbox runs as an unprivileged uid, which could not reach a workspace
    /// under `/root`): the workspace at `{stage}/workspace` (idmapped to that uid), the
    /// vetted host path `i` at `{stage}/read-{i}`.
    Staged(PathBuf),
}

impl BindSources {
    pub const WORKSPACE: &'static str = "workspace";

    pub fn host_read_name(i: usize) -> String {
        format!("read-{i}")
    }
}

/// The complete description of one sandboxed command. Plain data; see `build_argv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Canonical absolute workspace root; also the working directory.
    pub workspace: PathBuf,
    pub workspace_write: bool,
    /// Not bound at all (a long-lived process granted no workspace): the working directory is
    /// then `home`. Every command sees its workspace.
    pub workspace_hidden: bool,
    pub system: Vec<SystemEntry>,
    pub masked: Vec<Masked>,
    /// `$HOME` inside the sandbox: an empty tmpfs.
    pub home: PathBuf,
    /// `$TMPDIR` inside the sandbox (inside the private `/tmp`).
    pub tmpdir: PathBuf,
    /// Size of every writable tmpfs, so a command cannot fill host memory.
    pub tmpfs: TmpfsSizes,
    /// Parts of `/proc` bound read-only over the sandbox's own (see [`super::procfs`]).
    pub proc_read_only: Vec<PathBuf>,
    /// Parts of `/proc` hidden from the sandbox.
    pub proc_masked: Vec<Masked>,
    /// Protections inside a writable workspace, in mount order. Empty when read-only.
    pub protections: Vec<Protection>,
    /// Socket files in the workspace, each covered by a read-only `/dev/null` in read-only and
    /// writable runs alike (see [`super::sockets`]).
    pub covered_sockets: Vec<PathBuf>,
    /// Vetted host paths bound read-only.
    pub host_read_paths: Vec<PathBuf>,
    /// The complete environment of the command, but for `secret_env`.
    pub env: Vec<(String, String)>,
    /// Variables the person handed a long-lived process: set through bwrap's own environment,
    /// never on its command line (which every local user can read in /proc).
    pub secret_env: crate::harness::secrets::Secrets,
    pub network: SandboxNetwork,
    /// The fd bwrap reports `child-pid` and the PID namespace on (`--info-fd`).
    pub info_fd: i32,
    /// The read end of the gate pipe bwrap waits on twice: once right after creating the
    /// namespaces (`--userns-block-fd`, read by bwrap's outer process: Spear writes the id maps
    /// first), and once after its setup, before the command (`--block-fd`, read by the process
    /// that becomes the command: the namespace settings and slirp4netns are made meanwhile).
    /// One pipe for both because bwrap closes its `--block-fd` before the exec but never its
    /// copy of `--userns-block-fd`, which would otherwise reach the command. Each wait consumes
    /// one byte, and the second cannot begin before the first has ended (bwrap's outer process
    /// reads its byte before it lets the inner one go on).
    pub gate_fd: i32,
    /// The fd bwrap reads the seccomp program from (`--seccomp`), applied just before the
    /// command is executed (see [`super::seccomp`]).
    pub seccomp_fd: i32,
    /// Where the binds of the workspace and the host paths come from.
    pub sources: BindSources,
    pub command: Vec<OsString>,
}

impl SandboxSpec {
    /// Where bwrap finds `path`, a path in the workspace (itself, unless staged).
    pub fn workspace_source(&self, path: &Path) -> PathBuf {
        match (&self.sources, path.strip_prefix(&self.workspace)) {
            (BindSources::Staged(stage), Ok(rel)) => {
                let root = stage.join(BindSources::WORKSPACE);
                if rel.as_os_str().is_empty() {
                    root
                } else {
                    root.join(rel)
                }
            }
            _ => path.to_path_buf(),
        }
    }

    /// Where bwrap finds the `i`th vetted host path.
    pub fn host_read_source(&self, i: usize) -> PathBuf {
        match &self.sources {
            BindSources::Staged(stage) => stage.join(BindSources::host_read_name(i)),
            BindSources::InPlace => self.host_read_paths[i].clone(),
        }
    }
}

/// Top-level system paths offered read-only when they exist.
pub const SYSTEM_PATHS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
];

/// Secrets under `/etc` hidden from every command.
pub const ETC_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/security/opasswd",
    "/etc/krb5.keytab",
    "/etc/ipsec.secrets",
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    "/etc/NetworkManager/system-connections",
    "/etc/wpa_supplicant",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/libvirt/secrets",
    "/etc/docker/key.json",
];

/// Paths inside every workspace that no command may write: git would run what they name, or
/// (`info/attributes` naming filter drivers) look up what to run. Absent ones get a placeholder.
pub const ALWAYS_PROTECTED: &[&str] = &[
    ".git/config",
    ".git/hooks",
    ".git/info",
    ".git/config.worktree",
];

/// Control files git cannot tolerate as an empty placeholder (an empty `commondir` makes every
/// git command fail): protected read-only when present, and when absent, removed again if a
/// command created one (it would point the repository at a config the command wrote).
pub const UNPLACEABLE_GIT_CONTROLS: &[&str] = &[".git/commondir"];

/// git's records of an operation in progress, whose instruction files (`git-rebase-todo`
/// with its `exec` lines) a later `--continue` carries out: one that exists before a run is
/// the person's and bound read-only; one a run starts is aborted after it.
pub const SEQUENCER_STATES: &[&str] = &[".git/rebase-merge", ".git/rebase-apply", ".git/sequencer"];

/// The control files of the repository's submodules and linked worktrees that exist now, and
/// an existing `.git/commondir`, relative to the workspace: each names a config or hooks git
/// reads, so each is bound read-only. Bounded: at most 256 submodule directories are looked at.
pub fn existing_git_controls(workspace: &Path) -> Vec<PathBuf> {
    const NAMES: &[&str] = &[
        "config",
        "hooks",
        "info",
        "commondir",
        "gitdir",
        "config.worktree",
    ];
    let git = Path::new(".git");
    let mut out: Vec<PathBuf> = UNPLACEABLE_GIT_CONTROLS
        .iter()
        .chain(SEQUENCER_STATES)
        .map(PathBuf::from)
        .filter(|p| workspace.join(p).symlink_metadata().is_ok())
        .collect();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut stack = vec![git.join("modules")];
    let mut looked = 0usize;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(workspace.join(&d)) else {
            continue;
        };
        for e in entries.flatten() {
            looked += 1;
            if looked > 256 {
                break;
            }
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let rel = d.join(e.file_name());
            if workspace.join(&rel).join("HEAD").is_file() {
                // A submodule's git directory; nested submodules live in its own modules/.
                stack.push(rel.join("modules"));
                dirs.push(rel);
            } else {
                // Submodules with a `/` in their name nest their directories.
                stack.push(rel);
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir(workspace.join(git).join("worktrees")) {
        dirs.extend(
            entries
                .flatten()
                .map(|e| git.join("worktrees").join(e.file_name())),
        );
    }
    for d in dirs {
        for n in NAMES {
            let p = d.join(n);
            if workspace.join(&p).symlink_metadata().is_ok() {
                out.push(p);
            }
        }
    }
    out
}

/// Probe the host's system view under `root` (normally `/`; tests pass a fake tree).
pub fn probe_system(root: &Path) -> Vec<SystemEntry> {
    let mut out = Vec::new();
    for p in SYSTEM_PATHS {
        let host = root.join(p.trim_start_matches('/'));
        let Ok(meta) = std::fs::symlink_metadata(&host) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(&host) {
                out.push(SystemEntry::Symlink {
                    path: PathBuf::from(p),
                    target,
                });
            }
        } else if meta.is_dir() {
            out.push(SystemEntry::Dir(PathBuf::from(p)));
        }
    }
    out
}

/// Probe which secrets under `/etc` exist (under `root`).
pub fn probe_secrets(root: &Path) -> Vec<Masked> {
    let mut out = Vec::new();
    for p in ETC_SECRETS {
        let host = root.join(p.trim_start_matches('/'));
        // A symlinked secret would be followed by the mount; mask what it is, not where it
        // points, so skip links (their target is masked or not visible anyway).
        let Ok(meta) = std::fs::symlink_metadata(&host) else {
            continue;
        };
        if meta.is_dir() {
            out.push(Masked::Dir(PathBuf::from(p)));
        } else if meta.is_file() {
            out.push(Masked::File(PathBuf::from(p)));
        }
    }
    out
}

/// Where the DNS configuration must be written so that `/etc/resolv.conf` reads it: the file
/// itself, or the absolute target of the link when it is one (systemd-resolved's stub).
pub fn resolv_conf_dest(root: &Path) -> PathBuf {
    let etc = PathBuf::from("/etc/resolv.conf");
    match std::fs::read_link(root.join("etc/resolv.conf")) {
        Ok(target) => normalize(&Path::new("/etc").join(target)),
        Err(_) => etc,
    }
}

/// Lexical normalisation of an absolute path (`..` pops, `.` vanishes). No filesystem access.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// Plan the protections for a writable workspace: each protected path (relative to the
/// workspace) is walked component by component on the host as it is now.
///
/// Rules (see `Protection`): existing ancestors are pinned; an existing protected path (file or
/// directory) is bound read-only; the first absent component gets a placeholder; a component
/// that is not a directory before the end is itself made read-only (a `.git` *file* in a git
/// worktree); a symlinked component makes its parent directory read-only, because a mount on a
/// symlink lands on its target and would leave the link itself replaceable. A symlink directly
/// in the workspace root cannot be protected that way, so it is refused.
pub fn plan_protections(
    workspace: &Path,
    protected: &[PathBuf],
) -> Result<Vec<Protection>, SandboxError> {
    let mut pins = std::collections::BTreeSet::new();
    let mut finals = std::collections::BTreeSet::new();
    for rel in protected {
        let parts: Vec<&std::ffi::OsStr> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        if parts.is_empty()
            || rel.is_absolute()
            || rel.components().any(|c| c == Component::ParentDir)
        {
            return Err(SpecError::ProtectedPathOutside(rel.to_path_buf()).into());
        }
        let mut current = workspace.to_path_buf();
        for (i, part) in parts.iter().enumerate() {
            let parent = current.clone();
            current.push(part);
            let last = i + 1 == parts.len();
            match std::fs::symlink_metadata(&current) {
                // A placeholder left by a run that could not clean up counts as absent.
                Err(_) => {
                    finals.insert(Protection::Placeholder(current.clone()));
                    break;
                }
                Ok(_) if super::placeholders::is_placeholder(&current) => {
                    finals.insert(Protection::Placeholder(current.clone()));
                    break;
                }
                Ok(meta) if meta.file_type().is_symlink() => {
                    if parent == workspace {
                        return Err(SpecError::ProtectedBehindSymlink {
                            link: current,
                            protected: rel.to_path_buf(),
                        }
                        .into());
                    }
                    pins.remove(&Protection::Pin(parent.clone()));
                    finals.insert(Protection::ReadOnly(parent));
                    break;
                }
                Ok(meta) if last || !meta.is_dir() => {
                    finals.insert(Protection::ReadOnly(current.clone()));
                    break;
                }
                Ok(_) => {
                    if !finals.contains(&Protection::ReadOnly(current.clone())) {
                        pins.insert(Protection::Pin(current.clone()));
                    }
                }
            }
        }
    }
    // A directory made read-only as a whole needs no pin of its own, and nothing inside it
    // needs (or could get: bwrap cannot create a mount point there) a protection of its own.
    let ro_dirs: Vec<PathBuf> = finals
        .iter()
        .filter_map(|p| match p {
            Protection::ReadOnly(d) => Some(d.clone()),
            _ => None,
        })
        .collect();
    let covered = |p: &Path| ro_dirs.iter().any(|d| p.starts_with(d) && p != d);
    pins.retain(|p| !ro_dirs.iter().any(|d| d == p.path()) && !covered(p.path()));
    finals.retain(|p| !covered(p.path()));
    let mut out: Vec<Protection> = pins.into_iter().collect();
    // Pins outermost first (BTreeSet orders a parent before its children), then the final
    // protections, so a read-only bind is never covered by a later read-write pin.
    out.sort_by_key(|p| p.path().components().count());
    let mut finals: Vec<Protection> = finals.into_iter().collect();
    finals.sort_by_key(|p| p.path().components().count());
    out.extend(finals);
    Ok(out)
}

/// Check that a host path offered for reading resolves where it says (no symlink anywhere on
/// the way, absolute, normalised) and does not hide the system view or the workspace.
pub fn vet_host_read_path(path: &Path, workspace: &Path) -> Result<PathBuf, SandboxError> {
    if !path.is_absolute() {
        return Err(SpecError::HostReadNotAbsolute(path.to_path_buf()).into());
    }
    let canonical =
        std::fs::canonicalize(path).map_err(|source| SpecError::HostReadUnresolvable {
            path: path.to_path_buf(),
            source,
        })?;
    if canonical != normalize(path) || canonical != path {
        return Err(SpecError::HostReadNotResolved {
            path: path.to_path_buf(),
            resolved: canonical,
        }
        .into());
    }
    if canonical == Path::new("/")
        || workspace.starts_with(&canonical)
        || SYSTEM_PATHS
            .iter()
            .any(|s| Path::new(s).starts_with(&canonical))
    {
        return Err(SpecError::HostReadCovers(canonical).into());
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn existing_git_paths_are_read_only_with_pinned_ancestors() {
        let d = ws();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        let plan = plan_protections(&root, &[".git/config".into(), ".git/hooks".into()]).unwrap();
        assert_eq!(
            plan,
            vec![
                Protection::Pin(root.join(".git")),
                Protection::ReadOnly(root.join(".git/config")),
                Protection::ReadOnly(root.join(".git/hooks")),
            ]
        );
    }

    #[test]
    fn absent_paths_get_a_placeholder_at_the_first_missing_component() {
        let d = ws();
        let root = d.path().canonicalize().unwrap();
        let plan = plan_protections(&root, &[".git/config".into(), ".git/hooks".into()]).unwrap();
        assert_eq!(plan, vec![Protection::Placeholder(root.join(".git"))]);
        std::fs::create_dir(root.join(".git")).unwrap();
        let plan = plan_protections(&root, &[".git/hooks".into(), "vendor/x".into()]).unwrap();
        assert_eq!(
            plan,
            vec![
                Protection::Pin(root.join(".git")),
                Protection::Placeholder(root.join("vendor")),
                Protection::Placeholder(root.join(".git/hooks")),
            ]
        );
    }

    #[test]
    fn a_git_file_is_itself_read_only() {
        let d = ws();
        let root = d.path().canonicalize().unwrap();
        std::fs::write(root.join(".git"), "gitdir: /elsewhere").unwrap();
        let plan = plan_protections(&root, &[".git/config".into(), ".git/hooks".into()]).unwrap();
        assert_eq!(plan, vec![Protection::ReadOnly(root.join(".git"))]);
    }

    #[test]
    fn symlinks_make_the_parent_read_only_or_are_refused_at_the_root() {
        let d = ws();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("evil")).unwrap();
        std::os::unix::fs::symlink("../evil", root.join(".git/hooks")).unwrap();
        let plan = plan_protections(&root, &[".git/config".into(), ".git/hooks".into()]).unwrap();
        assert_eq!(plan, vec![Protection::ReadOnly(root.join(".git"))]);
        std::os::unix::fs::symlink("evil", root.join("vendor")).unwrap();
        let err = plan_protections(&root, &["vendor".into()]).unwrap_err();
        assert!(
            err.to_string().contains("symlink in the workspace root"),
            "{err}"
        );
    }

    #[test]
    fn protected_paths_must_be_relative_and_inside() {
        let root = PathBuf::from("/w");
        assert!(plan_protections(&root, &["/etc".into()]).is_err());
        assert!(plan_protections(&root, &["../x".into()]).is_err());
    }

    #[test]
    fn host_read_paths_must_resolve_where_they_say() {
        let d = ws();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        let wsp = PathBuf::from("/nonexistent-ws");
        assert_eq!(
            vet_host_read_path(&root.join("real"), &wsp).unwrap(),
            root.join("real")
        );
        assert!(vet_host_read_path(&root.join("link"), &wsp).is_err());
        assert!(vet_host_read_path(Path::new("relative"), &wsp).is_err());
        assert!(vet_host_read_path(Path::new("/"), &wsp).is_err());
        assert!(vet_host_read_path(Path::new("/usr"), &wsp).is_err());
    }

    #[test]
    fn system_probe_sees_symlinks_and_dirs() {
        let d = ws();
        let root = d.path();
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        std::fs::create_dir_all(root.join("etc/ssh")).unwrap();
        std::fs::write(root.join("etc/shadow"), "x").unwrap();
        std::os::unix::fs::symlink("usr/bin", root.join("bin")).unwrap();
        assert_eq!(
            probe_system(root),
            vec![
                SystemEntry::Dir("/usr".into()),
                SystemEntry::Symlink {
                    path: "/bin".into(),
                    target: "usr/bin".into()
                },
                SystemEntry::Dir("/etc".into()),
            ]
        );
        assert_eq!(
            probe_secrets(root),
            vec![
                Masked::File("/etc/shadow".into()),
                Masked::Dir("/etc/ssh".into())
            ]
        );
        std::os::unix::fs::symlink("../run/resolve/stub.conf", root.join("etc/resolv.conf"))
            .unwrap();
        assert_eq!(
            resolv_conf_dest(root),
            PathBuf::from("/run/resolve/stub.conf")
        );
    }
}
