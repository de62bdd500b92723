//! Where a written path points, judged on the path as written (the classifier never touches the
//! filesystem; the workspace layer resolves links before anything is opened).

use std::path::{Component, Path, PathBuf};

use crate::harness::shell::Word;

/// Where a path written in a command lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A sink that is not a write: `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`.
    Harmless,
    /// `/dev/tcp/…`, `/dev/udp/…`: bash opens a network connection.
    NetworkDevice,
    /// Another device node.
    Device,
    /// System locations: `/`, `/etc`, `/usr`, `/boot`, `/proc`, `/sys`, …
    System,
    /// The home directory (`~`, `$HOME`).
    Home,
    /// Outside the workspace by an absolute path or by `..`.
    Outside,
    /// Known only at run time.
    Dynamic,
    Inside,
}

const SYSTEM_ROOTS: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/proc",
    "/sys", "/root", "/var", "/opt", "/srv", "/snap", "/run", "/mnt", "/media",
];

const HARMLESS: &[&str] = &[
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/zero",
    "/dev/full",
];

/// Lexically normalise an absolute or relative path: drop `.`, fold `..`. A relative path that
/// climbs above its start keeps its leading `..`.
pub(crate) fn normalize(p: &str) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in Path::new(p).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) => {}
                _ => out.push(c),
            },
            other => out.push(other),
        }
    }
    out.iter().collect()
}

/// The word names the home directory: an unquoted leading tilde, or an expanded `$HOME`.
/// `'~'` and `\~` are a directory literally named `~`. A word built from a bare string (an
/// option's value) has no quoting left to tell, so a leading `~` or `$HOME` counts.
fn starts_with_home(word: &Word) -> bool {
    let value = word.value.as_str();
    let bare = word.raw == word.value;
    let tilde = value.starts_with('~') && (word.tilde || bare);
    let home_var = ["$HOME", "${HOME}"]
        .iter()
        .any(|h| (value == *h || value.starts_with(&format!("{h}/"))) && (word.expands || bare));
    tilde || home_var
}

/// Judge a written path against the workspace root (when known).
pub(crate) fn scope(word: &Word, workspace: Option<&Path>) -> Scope {
    let v = word.value.as_str();
    if v.starts_with("/dev/tcp/") || v.starts_with("/dev/udp/") {
        return Scope::NetworkDevice;
    }
    if starts_with_home(word) {
        return Scope::Home;
    }
    // A glob is judged on its static text, unless an expansion is part of it (`"$D"/*`).
    if word.dynamic && (!word.glob || word.expands) {
        // A leading static absolute part still tells us something (`/etc/$x`).
        let static_prefix: String = v.chars().take_while(|c| *c != '$' && *c != '`').collect();
        if static_prefix.starts_with('/') && static_prefix.len() > 1 {
            let judged = scope_static(&static_prefix, workspace);
            if judged != Scope::Inside {
                return judged;
            }
        }
        return Scope::Dynamic;
    }
    scope_static(v, workspace)
}

fn scope_static(v: &str, workspace: Option<&Path>) -> Scope {
    if HARMLESS.contains(&v) || v.starts_with("/dev/fd/") || v.starts_with("/proc/self/fd/") {
        return Scope::Harmless;
    }
    let n = normalize(v);
    if n.is_absolute() {
        if let Some(root) = workspace
            && n.starts_with(root)
        {
            return Scope::Inside;
        }
        if n.starts_with("/dev") {
            return Scope::Device;
        }
        if n == Path::new("/") || n.as_os_str() == "/*" {
            return Scope::System;
        }
        if n.starts_with("/var/tmp") {
            return Scope::Outside;
        }
        if SYSTEM_ROOTS.iter().any(|r| n.starts_with(r)) {
            return Scope::System;
        }
        // `/*`, `/e*`: a glob directly under the root reaches system directories.
        if n.parent() == Some(Path::new("/")) && v.contains(['*', '?', '[']) {
            return Scope::System;
        }
        return Scope::Outside;
    }
    if matches!(n.components().next(), Some(Component::ParentDir)) {
        return Scope::Outside;
    }
    Scope::Inside
}

/// A path naming the home directory or a tree that holds the workspace (`~`, `$HOME`, `..`,
/// `/`): moving it away removes everything in it from where it was.
pub(crate) fn whole_tree(w: &Word) -> bool {
    let v = w.value.trim_end_matches('/');
    let home = ["~", "$HOME", "${HOME}", "\"$HOME\"", "\"${HOME}\""];
    v.is_empty()
        || home.contains(&v)
        || home.contains(&w.raw.trim_end_matches('/'))
        || v.split('/').all(|part| part == "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Word {
        Word::literal(s)
    }

    #[test]
    fn scopes() {
        let ws = Some(Path::new("/work/proj"));
        assert_eq!(scope(&lit("/dev/null"), ws), Scope::Harmless);
        assert_eq!(scope(&lit("/dev/tcp/1.2.3.4/80"), ws), Scope::NetworkDevice);
        assert_eq!(scope(&lit("/dev/sda"), ws), Scope::Device);
        assert_eq!(scope(&lit("/"), ws), Scope::System);
        assert_eq!(scope(&lit("/etc/passwd"), ws), Scope::System);
        assert_eq!(scope(&lit("/work/proj/a"), ws), Scope::Inside);
        assert_eq!(scope(&lit("/work/proj/../other"), ws), Scope::Outside);
        assert_eq!(scope(&lit("/tmp/x"), ws), Scope::Outside);
        assert_eq!(scope(&lit(".."), ws), Scope::Outside);
        assert_eq!(scope(&lit("a/../../b"), ws), Scope::Outside);
        assert_eq!(scope(&lit("a/../b"), ws), Scope::Inside);
        assert_eq!(scope(&lit("~"), ws), Scope::Home);
        assert_eq!(scope(&lit("$HOME/x"), ws), Scope::Home);
        assert_eq!(scope(&lit("/usr/../etc"), None), Scope::System);
    }
}
