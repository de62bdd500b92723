//! The sandbox environment: an allow-list over the host's variables. Invariant: a variable
//! reaches a command only when its name is on the list, its name does not look secret and its
//! value does not look like a credential; `PATH`, `HOME`, `TMPDIR` are always Spear's own.

use std::path::{Path, PathBuf};

use crate::harness::secrets;

/// Names passed through from the host when present (besides every `LC_*`).
const ALLOWED: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "USER",
    "LOGNAME",
    "CARGO_TERM_COLOR",
    "RUST_BACKTRACE",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "CI",
];

/// Version managers, pinned so that a file in the workspace never chooses which program a name
/// runs (issue 19). A shim or proxy on `PATH` (rustup's `cargo`, pyenv's `python`) reads a
/// version file from the working directory upwards, and some accept a path there: a
/// `rust-toolchain.toml` naming `path = "/…/workspace/tc"` makes a read-only `cargo --version`
/// run `tc/bin/cargo`, a program the command never named. Inside the sandbox `$HOME` is Spear's
/// own, so no manager finds a version installed on the host anyway: the pins cost nothing that
/// worked, and they turn the workspace's choice into the manager's own "not installed" error.
/// Set for every command, like git's settings above, so confinement learns nothing of why one
/// was allowed. Should the host's toolchain homes ever be handed in, these become targeted
/// (pin only a version file that names a path) rather than dropped.
const VERSION_PINS: &[(&str, &str)] = &[
    // Over every toolchain file; with auto-install off a missing toolchain is an error, not a
    // download.
    ("RUSTUP_TOOLCHAIN", "stable"),
    ("RUSTUP_AUTO_INSTALL", "0"),
    // The `*env` family: `system` is the program found on PATH after the shims, and each reads
    // this variable before any `.X-version` file (pyenv's had a path-traversal CVE, 2022-35861).
    ("PYENV_VERSION", "system"),
    ("RBENV_VERSION", "system"),
    ("NODENV_VERSION", "system"),
    ("GOENV_VERSION", "system"),
    ("PLENV_VERSION", "system"),
    ("JENV_VERSION", "system"),
    // asdf joins this name to each directory it searches: climbing past `/` from any of them,
    // it names a file under /proc/self, which nobody can create (a repository could ship any
    // name of its own, `.spear/…` included), so no `.tool-versions` (`path:`, `ref:`
    // versions) is read from the workspace.
    ("ASDF_DEFAULT_TOOL_VERSIONS_FILENAME", ASDF_NOWHERE),
    // mise reads workspace config (`.tool-versions` included) only once trusted, and trust
    // lives in the sandbox's empty home.
    ("MISE_PARANOID", "1"),
];

/// 64 levels up from any directory (deeper than any path the sandbox holds), then a name
/// in /proc/self, where no file can be created.
const ASDF_NOWHERE: &str = concat!(
    "../../../../../../../../../../../../../../../../",
    "../../../../../../../../../../../../../../../../",
    "../../../../../../../../../../../../../../../../",
    "../../../../../../../../../../../../../../../../",
    "proc/self/spear-no-tool-versions"
);

/// The default `PATH` inside the sandbox: the system directories that are always bound.
pub const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A secret-looking name, by `secrets`' rules: one definition of "secret" for what the audit
/// log records and for what may enter a sandbox.
pub fn name_looks_secret(name: &str) -> bool {
    secrets::is_secret_name(name)
}

/// A value holding a credential (`sk-…`, `ghp_…`, PEM, JWT, `Bearer …`, URL passwords): one
/// redaction (the audit log's too) would change.
pub fn value_looks_secret(value: &str) -> bool {
    secrets::redact_text(value) != value
}

/// The `PATH` for the sandbox: the system path, plus host `PATH` entries that lie inside a
/// host read path (so a toolchain handed in read-only is found), in host order.
pub fn sandbox_path(host_path: Option<&str>, host_read_paths: &[PathBuf]) -> String {
    let mut out = String::from(SYSTEM_PATH);
    if let Some(host) = host_path {
        for entry in host.split(':') {
            let p = Path::new(entry);
            if p.is_absolute()
                && host_read_paths.iter().any(|r| p.starts_with(r))
                && !out.split(':').any(|e| e == entry)
            {
                out.push(':');
                out.push_str(entry);
            }
        }
    }
    out
}

/// Filter the host environment into the sandbox environment, sorted by name.
pub fn sandbox_env(
    host: &[(String, String)],
    home: &Path,
    tmpdir: &Path,
    host_read_paths: &[PathBuf],
) -> Vec<(String, String)> {
    let host_path = host
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str());
    let mut env: Vec<(String, String)> = host
        .iter()
        .filter(|(k, v)| {
            (ALLOWED.contains(&k.as_str()) || k.starts_with("LC_"))
                && !name_looks_secret(k)
                && !value_looks_secret(v)
        })
        .cloned()
        .collect();
    env.push(("PATH".into(), sandbox_path(host_path, host_read_paths)));
    env.push(("HOME".into(), home.display().to_string()));
    env.push(("TMPDIR".into(), tmpdir.display().to_string()));
    // Git must never prompt for credentials inside a sandbox nobody can type into.
    env.push(("GIT_TERMINAL_PROMPT".into(), "0".into()));
    // `git status` and its kin refresh the index when they can and write it back under
    // `index.lock`, which runs a `post-index-change` hook (found by the write-attempt oracle,
    // issue 19). The lock is optional: git skips it when told to. Set for every command, so
    // confinement learns nothing of why one was allowed; a git command that must write the
    // index (add, commit) takes its lock anyway.
    env.push(("GIT_OPTIONAL_LOCKS".into(), "0".into()));
    // A workspace folder laid out as a bare repository would otherwise give a read-only
    // `git -C folder diff` its config (and with it `diff.external`): git must be told which
    // repository to use before it uses a bare one. Command-line scope, which only the
    // command's own environment can override, and that makes it at least SHELL_COMPLEX.
    // And a nested repository's or a submodule's own config (`core.fsmonitor`, which
    // `git -C sub status` and the superproject's `git status` run) names no program to run:
    // the monitor is only a speed-up, so it is off for every command.
    env.push(("GIT_CONFIG_COUNT".into(), "2".into()));
    env.push(("GIT_CONFIG_KEY_0".into(), "safe.bareRepository".into()));
    env.push(("GIT_CONFIG_VALUE_0".into(), "explicit".into()));
    env.push(("GIT_CONFIG_KEY_1".into(), "core.fsmonitor".into()));
    env.push(("GIT_CONFIG_VALUE_1".into(), "false".into()));
    env.extend(
        VERSION_PINS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    env.sort();
    env.dedup_by(|a, b| a.0 == b.0);
    env
}

/// What bash adds to the environment of the one program `bash -c` runs for a single simple
/// command: the working directory, and `SHLVL` as it leaves it when it replaces itself with
/// that program. A program started without bash gets the same, so the two launches differ
/// only in `_`, which bash sets to the path it found. `env` stays sorted by name.
pub fn add_shell_exports(env: &mut Vec<(String, String)>, cwd: &Path) {
    for (k, v) in [("PWD", cwd.display().to_string()), ("SHLVL", "0".into())] {
        env.retain(|(name, _)| name != k);
        env.push((k.into(), v));
    }
    env.sort();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn version_managers_are_pinned_whatever_the_host_says() {
        let host = vec![
            kv("RUSTUP_TOOLCHAIN", "/work/tc"),
            kv("PYENV_VERSION", "../../ws/evil"),
            kv("ASDF_DEFAULT_TOOL_VERSIONS_FILENAME", ".tool-versions"),
        ];
        let env = sandbox_env(&host, Path::new("/h"), Path::new("/tmp"), &[]);
        for (k, v) in VERSION_PINS {
            let found: Vec<_> = env.iter().filter(|(name, _)| name == k).collect();
            assert_eq!(found, vec![&kv(k, v)], "{k}");
        }
        let value_of = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(value_of("RUSTUP_TOOLCHAIN"), Some("stable"));
        assert_eq!(value_of("PYENV_VERSION"), Some("system"));
        // asdf's file name climbs past `/` from any directory into /proc/self.
        let asdf = value_of("ASDF_DEFAULT_TOOL_VERSIONS_FILENAME").unwrap_or_default();
        assert!(
            asdf.ends_with("/proc/self/spear-no-tool-versions"),
            "{asdf}"
        );
        assert_eq!(asdf.matches("../").count(), 64);
    }

    #[test]
    fn only_allowed_harmless_variables_pass() {
        let host = vec![
            kv("PATH", "/root/.cargo/bin:/usr/bin:/opt/tool/bin"),
            kv("HOME", "/root"),
            kv("LANG", "C.UTF-8"),
            kv("LC_ALL", "C"),
            kv("TERM", "xterm"),
            kv("OPENAI_API_KEY", "sk-abcdefghijklmnopqrstuvwxyz"),
            kv("SSH_AUTH_SOCK", "/run/ssh.sock"),
            kv("LC_SESSION_TOKEN", "x"),
            kv("USER", "ghp_abcdefghijklmnopqrstuvwxyz0123"),
            kv("AWS_SECRET_ACCESS_KEY", "x"),
            kv("LD_PRELOAD", "/tmp/evil.so"),
            kv("TZ", "UTC"),
        ];
        let env = sandbox_env(
            &host,
            Path::new("/home/u"),
            Path::new("/tmp"),
            &[PathBuf::from("/opt/tool")],
        );
        let pinned = |k: &str| VERSION_PINS.iter().any(|(name, _)| *name == k);
        let env: Vec<_> = env.into_iter().filter(|(k, _)| !pinned(k)).collect();
        assert_eq!(
            env,
            vec![
                kv("GIT_CONFIG_COUNT", "2"),
                kv("GIT_CONFIG_KEY_0", "safe.bareRepository"),
                kv("GIT_CONFIG_KEY_1", "core.fsmonitor"),
                kv("GIT_CONFIG_VALUE_0", "explicit"),
                kv("GIT_CONFIG_VALUE_1", "false"),
                kv("GIT_OPTIONAL_LOCKS", "0"),
                kv("GIT_TERMINAL_PROMPT", "0"),
                kv("HOME", "/home/u"),
                kv("LANG", "C.UTF-8"),
                kv("LC_ALL", "C"),
                kv("PATH", &format!("{SYSTEM_PATH}:/opt/tool/bin")),
                kv("TERM", "xterm"),
                kv("TMPDIR", "/tmp"),
                kv("TZ", "UTC"),
            ]
        );
    }

    #[test]
    fn a_program_started_without_bash_gets_what_bash_exports() {
        let mut env = vec![kv("HOME", "/h"), kv("PWD", "/elsewhere"), kv("TZ", "UTC")];
        add_shell_exports(&mut env, Path::new("/w"));
        assert_eq!(
            env,
            vec![
                kv("HOME", "/h"),
                kv("PWD", "/w"),
                kv("SHLVL", "0"),
                kv("TZ", "UTC")
            ]
        );
    }

    #[test]
    fn credential_shapes_are_recognised() {
        for v in [
            "sk-proj-abcdefghijklmnop",
            "Bearer abcdef0123456789xyz",
            "-----BEGIN PRIVATE KEY-----",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
            "https://user:hunter2@example.com/x",
            "AKIAABCDEFGHIJKLMNOP",
        ] {
            assert!(value_looks_secret(v), "{v}");
        }
        for v in ["C.UTF-8", "xterm-256color", "https://example.com/a:b", "1"] {
            assert!(!value_looks_secret(v), "{v}");
        }
    }
}
