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

/// Classify a failed preflight sandbox from its exit code and stderr.
pub fn classify_failure(code: i32, stderr: &str) -> PreflightFailure {
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
            diagnose_userns(Path::new("/"))
        ));
    }
    PreflightFailure::Failed(format!("the preflight sandbox exited with {code}: {s}"))
}

/// The AppArmor profile that lets bwrap create user namespaces on a host that restricts them
/// (Ubuntu ships the same shape for its own unprivileged sandboxes), written and loaded.
pub const BWRAP_APPARMOR_FIX: &str = "`printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile bwrap \
     /usr/bin/bwrap flags=(unconfined) {\\n  userns,\\n}\\n' > /etc/apparmor.d/bwrap && \
     apparmor_parser -r /etc/apparmor.d/bwrap`";

/// Name the likely reason user namespaces are refused, and the fix.
pub fn diagnose_userns(root: &Path) -> String {
    let read = |p: &str| {
        std::fs::read_to_string(root.join(p))
            .ok()
            .map(|s| s.trim().to_string())
    };
    if read("proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return format!(
            "Likely cause: AppArmor restricts unprivileged user namespaces \
             (kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 23.10 and later). Fix: \
             give bwrap a profile that grants them, as root: {BWRAP_APPARMOR_FIX}; or turn the \
             restriction off for every program: `sysctl -w \
             kernel.apparmor_restrict_unprivileged_userns=0`"
        );
    }
    if read("proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return "Likely cause: user namespaces are disabled (user.max_user_namespaces = 0). Fix: \
                `sysctl -w user.max_user_namespaces=15000`"
            .into();
    }
    if read("proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return "Likely cause: unprivileged user namespaces are off \
                (kernel.unprivileged_userns_clone = 0). Fix: `sysctl -w \
                kernel.unprivileged_userns_clone=1`"
            .into();
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

    #[test]
    fn refusals_name_the_cause() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(
            d.path()
                .join("proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
            "1\n",
        )
        .unwrap();
        let apparmor = diagnose_userns(d.path());
        assert!(apparmor.contains("apparmor_restrict_unprivileged_userns"));
        assert!(apparmor.contains("profile bwrap /usr/bin/bwrap") && apparmor.contains("userns,"));
        assert!(apparmor.contains("apparmor_parser -r /etc/apparmor.d/bwrap"));
        std::fs::write(
            d.path()
                .join("proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
            "0",
        )
        .unwrap();
        std::fs::create_dir_all(d.path().join("proc/sys/user")).unwrap();
        std::fs::write(d.path().join("proc/sys/user/max_user_namespaces"), "0").unwrap();
        assert!(diagnose_userns(d.path()).contains("max_user_namespaces = 0"));
        std::fs::write(d.path().join("proc/sys/user/max_user_namespaces"), "100").unwrap();
        std::fs::write(d.path().join(".dockerenv"), "").unwrap();
        assert!(diagnose_userns(d.path()).contains("CAP_SYS_ADMIN"));
    }

    #[test]
    fn failures_are_classified() {
        let r = classify_failure(1, "bwrap: setting up uid map: Permission denied");
        assert!(matches!(r, PreflightFailure::Refused(_)) && r.is_terminal());
        let f = classify_failure(3, "spear-preflight: HOME is ''");
        assert!(matches!(f, PreflightFailure::Failed(_)) && !f.is_terminal());
    }
}
