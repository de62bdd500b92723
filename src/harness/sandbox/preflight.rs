//! Preflight: run a real minimal sandbox and classify what went wrong. Probing what the kernel
//! permits is the only honest test; a version string does not say whether user namespaces work.
//! Invariant: ABSENT, INEXECUTABLE and REFUSED are terminal (remembered by the sandbox);
//! anything else may be transient and is probed again next time.

use std::path::Path;

use serde::Serialize;

/// Why the sandbox cannot run commands here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "reason", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PreflightFailure {
    /// bwrap is not installed.
    Absent(String),
    /// bwrap exists but cannot be executed.
    Inexecutable(String),
    /// The kernel or a security module refuses the namespaces bwrap needs.
    Refused(String),
    /// The sandbox started but did not behave (a failed assertion, a hung mount, a timeout).
    Failed(String),
}

impl PreflightFailure {
    pub fn is_terminal(&self) -> bool {
        !matches!(self, PreflightFailure::Failed(_))
    }

    pub fn reason(&self) -> &str {
        match self {
            PreflightFailure::Absent(r)
            | PreflightFailure::Inexecutable(r)
            | PreflightFailure::Refused(r)
            | PreflightFailure::Failed(r) => r,
        }
    }
}

pub const INSTALL_BWRAP: &str = "install bubblewrap: `apt-get install bubblewrap` (Debian/Ubuntu), `dnf install bubblewrap` \
     (Fedora), `pacman -S bubblewrap` (Arch)";

/// The script the preflight sandbox runs: `$1` workspace, `$2` home, `$3` "rw" or "ro".
pub const PREFLIGHT_SCRIPT: &str = r#"
fail() { echo "spear-preflight: $*" >&2; exit 3; }
[ "$PWD" = "$1" ] || fail "working directory is '$PWD', expected '$1'"
[ "$HOME" = "$2" ] || fail "HOME is '$HOME', expected '$2'"
[ -d "$HOME" ] && [ -w "$HOME" ] || fail "HOME $HOME is not a writable directory"
[ -n "$TMPDIR" ] && [ -d "$TMPDIR" ] && [ -w "$TMPDIR" ] || fail "TMPDIR '$TMPDIR' is not a writable directory"
if [ "$3" = rw ]; then [ -w "$1" ] || fail "the workspace is not writable though write was granted"
else ! [ -w "$1" ] || fail "the workspace is writable though write was not granted"; fi
exit 0
"#;

/// Classify a failed preflight sandbox (run by the bwrap at `bwrap_path`) from its exit code
/// and stderr.
pub fn classify_failure(code: i32, stderr: &str, bwrap_path: &Path) -> PreflightFailure {
    let s = stderr.trim();
    if s.contains("spear-preflight:") {
        return PreflightFailure::Failed(s.to_string());
    }
    let lower = s.to_ascii_lowercase();
    let refused = lower.contains("namespace")
        || lower.contains("uid map")
        || lower.contains("operation not permitted")
        || (lower.starts_with("bwrap:") && lower.contains("permission denied"));
    if refused {
        return PreflightFailure::Refused(format!(
            "bwrap: {s}. {}",
            diagnose_userns_for(
                Path::new("/"),
                rustix::process::geteuid().is_root(),
                bwrap_path
            )
        ));
    }
    PreflightFailure::Failed(format!("the preflight sandbox exited with {code}: {s}"))
}

/// The AppArmor profile that lets bwrap create user namespaces on a host that restricts them
/// (Ubuntu ships the same shape for its own unprivileged sandboxes), written and loaded.
pub const BWRAP_APPARMOR_FIX: &str = "`printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile bwrap \
     /usr/bin/bwrap flags=(unconfined) {\\n  userns,\\n}\\n' > /etc/apparmor.d/bwrap && \
     apparmor_parser -r /etc/apparmor.d/bwrap`";

/// A host setting that restricts user namespaces, which bwrap needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsernsRestriction {
    /// `kernel.apparmor_restrict_unprivileged_userns = 1` (Ubuntu 23.10 and later): a program
    /// without CAP_SYS_ADMIN gets a user namespace only under an AppArmor profile granting it.
    AppArmor,
    /// `user.max_user_namespaces = 0`: nobody, root included, may create one.
    MaxUserNamespacesZero,
    /// `kernel.unprivileged_userns_clone = 0` (Debian's and older Ubuntu kernels): only root
    /// may create one.
    UnprivilegedCloneOff,
}

impl UsernsRestriction {
    /// The setting, as `sysctl` names it and its value.
    pub fn setting(self) -> &'static str {
        match self {
            UsernsRestriction::AppArmor => "kernel.apparmor_restrict_unprivileged_userns = 1",
            UsernsRestriction::MaxUserNamespacesZero => "user.max_user_namespaces = 0",
            UsernsRestriction::UnprivilegedCloneOff => "kernel.unprivileged_userns_clone = 0",
        }
    }

    /// Whether it stops a process that holds every capability (root) too.
    pub fn binds_root(self) -> bool {
        matches!(self, UsernsRestriction::MaxUserNamespacesZero)
    }

    /// The exact fix, for `bwrap` at `bwrap_path`.
    pub fn fix(self, bwrap_path: &Path) -> String {
        match self {
            UsernsRestriction::AppArmor => format!(
                "give bwrap a profile that grants user namespaces, as root: {}; or turn the \
                 restriction off for every program: `sysctl -w \
                 kernel.apparmor_restrict_unprivileged_userns=0`",
                apparmor_fix(bwrap_path)
            ),
            UsernsRestriction::MaxUserNamespacesZero => {
                "`sysctl -w user.max_user_namespaces=15000` (and the same line in \
                 /etc/sysctl.d/99-userns.conf to keep it)"
                    .into()
            }
            UsernsRestriction::UnprivilegedCloneOff => {
                "`sysctl -w kernel.unprivileged_userns_clone=1` (and the same line in \
                 /etc/sysctl.d/99-userns.conf to keep it)"
                    .into()
            }
        }
    }
}

/// The restrictions of user namespaces this host's settings under `root` show (`/` on a real
/// host), most binding first.
pub fn userns_restrictions(root: &Path) -> Vec<UsernsRestriction> {
    let read = |p: &str| {
        std::fs::read_to_string(root.join(p))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let mut found = Vec::new();
    if read("proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        found.push(UsernsRestriction::MaxUserNamespacesZero);
    }
    if read("proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        found.push(UsernsRestriction::UnprivilegedCloneOff);
    }
    if read("proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        found.push(UsernsRestriction::AppArmor);
    }
    found
}

/// The AppArmor profile for the bwrap at `bwrap_path`, written and loaded.
fn apparmor_fix(bwrap_path: &Path) -> String {
    if bwrap_path == Path::new("/usr/bin/bwrap") {
        return BWRAP_APPARMOR_FIX.to_string();
    }
    BWRAP_APPARMOR_FIX.replace("/usr/bin/bwrap", &bwrap_path.display().to_string())
}

/// Name the likely reason user namespaces are refused on the host under `root`, and the fix.
/// `privileged`: Spear runs with every capability (root), which the unprivileged-only
/// restrictions do not bind.
pub fn diagnose_userns_for(root: &Path, privileged: bool, bwrap_path: &Path) -> String {
    let read = |p: &str| {
        std::fs::read_to_string(root.join(p))
            .ok()
            .map(|s| s.trim().to_string())
    };
    if let Some(r) = userns_restrictions(root)
        .into_iter()
        .find(|r| r.binds_root() || !privileged)
    {
        let what = match r {
            UsernsRestriction::AppArmor => {
                "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later)"
            }
            UsernsRestriction::MaxUserNamespacesZero => "user namespaces are disabled",
            UsernsRestriction::UnprivilegedCloneOff => "unprivileged user namespaces are off",
        };
        return format!(
            "Likely cause: {what} ({}). Fix: {}",
            r.setting(),
            r.fix(bwrap_path)
        );
    }
    let in_container = root.join(".dockerenv").exists()
        || root.join("run/.containerenv").exists()
        || read("proc/1/environ").is_some_and(|e| e.contains("container="));
    if in_container {
        return "Likely cause: a container without CAP_SYS_ADMIN or with a seccomp profile that \
                blocks unshare/mount. Fix: run the container with `--security-opt \
                seccomp=unconfined --security-opt apparmor=unconfined` or `--cap-add SYS_ADMIN`"
            .into();
    }
    "Likely cause: a security module or seccomp filter refuses user namespaces; check \
     `dmesg` for denials"
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's `/proc/sys` (and container markers) under a temporary root.
    fn host(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = d.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        d
    }

    const APPARMOR: &str = "proc/sys/kernel/apparmor_restrict_unprivileged_userns";
    const MAX_USERNS: &str = "proc/sys/user/max_user_namespaces";
    const CLONE: &str = "proc/sys/kernel/unprivileged_userns_clone";

    #[test]
    fn each_restricting_host_is_named_with_its_exact_fix() {
        let bwrap = Path::new("/usr/bin/bwrap");
        // (host files, privileged, what the diagnosis must contain, what it must not)
        type Case<'a> = (&'a [(&'a str, &'a str)], bool, &'a [&'a str], &'a str);
        let table: &[Case] = &[
            // Ubuntu 24.04, an ordinary user.
            (
                &[(APPARMOR, "1\n"), (MAX_USERNS, "63431\n")],
                false,
                &[
                    "apparmor_restrict_unprivileged_userns = 1",
                    "profile bwrap /usr/bin/bwrap flags=(unconfined)",
                    "userns,",
                    "apparmor_parser -r /etc/apparmor.d/bwrap",
                ],
                "max_user_namespaces",
            ),
            // Debian 10 / old Ubuntu kernels, an ordinary user.
            (
                &[(CLONE, "0\n"), (MAX_USERNS, "63431\n")],
                false,
                &[
                    "unprivileged_userns_clone = 0",
                    "sysctl -w kernel.unprivileged_userns_clone=1",
                ],
                "AppArmor",
            ),
            // User namespaces off for everyone: binds root too.
            (
                &[(MAX_USERNS, "0\n"), (APPARMOR, "1\n")],
                true,
                &[
                    "user.max_user_namespaces = 0",
                    "sysctl -w user.max_user_namespaces=15000",
                ],
                "apparmor_parser",
            ),
            // AppArmor's restriction does not bind root: the cause is elsewhere (a container).
            (
                &[(APPARMOR, "1\n"), (".dockerenv", "")],
                true,
                &["container", "CAP_SYS_ADMIN"],
                "apparmor_parser",
            ),
            (
                &[(CLONE, "0\n")],
                true,
                &["dmesg"],
                "unprivileged_userns_clone",
            ),
            (
                &[(MAX_USERNS, "63431\n")],
                false,
                &["dmesg"],
                "Fix: `sysctl",
            ),
        ];
        for (files, privileged, wants, never) in table {
            let d = host(files);
            let got = diagnose_userns_for(d.path(), *privileged, bwrap);
            for want in *wants {
                assert!(
                    got.contains(want),
                    "{files:?} privileged={privileged}: {got}"
                );
            }
            assert!(!got.contains(never), "{files:?}: {got}");
        }
    }

    #[test]
    fn restrictions_are_read_from_the_host_files() {
        let d = host(&[(APPARMOR, "1\n"), (CLONE, "0\n"), (MAX_USERNS, "0\n")]);
        assert_eq!(
            userns_restrictions(d.path()),
            [
                UsernsRestriction::MaxUserNamespacesZero,
                UsernsRestriction::UnprivilegedCloneOff,
                UsernsRestriction::AppArmor
            ]
        );
        let d = host(&[(APPARMOR, "0\n"), (CLONE, "1\n"), (MAX_USERNS, "15000\n")]);
        assert!(userns_restrictions(d.path()).is_empty());
    }

    #[test]
    fn the_apparmor_profile_names_the_bwrap_found() {
        let fix = UsernsRestriction::AppArmor.fix(Path::new("/usr/local/bin/bwrap"));
        assert!(
            fix.contains("profile bwrap /usr/local/bin/bwrap flags=(unconfined)"),
            "{fix}"
        );
    }

    #[test]
    fn failures_are_classified() {
        let r = classify_failure(
            1,
            "bwrap: setting up uid map: Permission denied",
            Path::new("/usr/bin/bwrap"),
        );
        assert!(matches!(r, PreflightFailure::Refused(_)) && r.is_terminal());
        let f = classify_failure(
            3,
            "spear-preflight: HOME is ''",
            Path::new("/usr/bin/bwrap"),
        );
        assert!(matches!(f, PreflightFailure::Failed(_)) && !f.is_terminal());
    }
}
