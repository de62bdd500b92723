//! Where a written path points, judged on the path as written (the classifier never touches the
//! filesystem; the workspace layer resolves links before anything is opened).
//!
//! The invariant (issue 19): a path is judged on its words, never on a prefix. The kernel's own
//! links (`/dev/fd`, `/dev/stdin|stdout|stderr`, `/proc/self`, `/proc/thread-self`) are expanded
//! first; `.` is dropped; `..` is folded only where nothing before it can be a link (`/`, the
//! workspace root and its ancestors, the working directory itself). Any other `..` makes the place
//! [`Scope::Unknown`]: never a sink, never inside the workspace. Only the exact discard devices are
//! a [`Scope::Harmless`] sink, and only for a redirection: a writer that names one (`rm /dev/null`)
//! acts on the device node. `/dev/stdout` and friends are [`Scope::Descriptor`]: what they write is
//! whatever file that descriptor holds, which the caller works out from the line's redirections.

use std::path::{Component, Path, PathBuf};

use crate::harness::shell::Word;

/// Where a path written in a command lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A discard device (`/dev/null`, ...): redirecting output there writes nothing.
    Harmless,
    /// The file behind descriptor N of the process: `/dev/fd/N`, `/dev/stdout` (1),
    /// `/proc/self/fd/N`. Opening it reopens that file (on Linux, with `O_TRUNC` for `>`).
    Descriptor(u32),
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
    /// A `..` after a component that may be a link: where it lands cannot be told from its words.
    Unknown,
    /// Known only at run time.
    Dynamic,
    Inside,
}

const SYSTEM_ROOTS: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/proc",
    "/sys", "/root", "/var", "/opt", "/srv", "/snap", "/run", "/mnt", "/media",
];

/// Devices whose writes change nothing: they discard (`null`, `zero`), fail (`full`) or go to
/// the terminal (`tty`). Exact paths after resolution, never prefixes.
const HARMLESS: &[&str] = &["/dev/null", "/dev/tty", "/dev/zero", "/dev/full"];

/// A path after the kernel's links are expanded and `..` folded where that is sound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The lexical result (every `..` folded): exact when `exact`, a guess otherwise.
    pub path: PathBuf,
    /// No `..` followed a component that may be a link.
    pub exact: bool,
}

/// Replace the kernel's own links at the start of an absolute path by what they point at:
/// `/dev/fd` is `/proc/self/fd`, `/dev/stdout` is `/proc/self/fd/1`, `/proc/thread-self` shares
/// `/proc/self`'s descriptors. Every other component is kept as written.
fn expand_kernel_links(parts: Vec<String>) -> Vec<String> {
    let strs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (head, rest): (&[&str], &[String]) = match strs.as_slice() {
        ["/", "dev", "fd", ..] => (&["/", "proc", "self", "fd"], &parts[3..]),
        ["/", "dev", "stdin", ..] => (&["/", "proc", "self", "fd", "0"], &parts[3..]),
        ["/", "dev", "stdout", ..] => (&["/", "proc", "self", "fd", "1"], &parts[3..]),
        ["/", "dev", "stderr", ..] => (&["/", "proc", "self", "fd", "2"], &parts[3..]),
        ["/", "proc", "thread-self", ..] => (&["/", "proc", "self"], &parts[3..]),
        _ => return parts,
    };
    head.iter()
        .map(|s| (*s).to_string())
        .chain(rest.iter().cloned())
        .collect()
}

/// Resolve `v` on its words: expand the kernel's links, drop `.`, and fold each `..` only where
/// the directory before it is known to be no link: `/`, the workspace root or one of its
/// ancestors (a canonical path has no links in it), or the working directory a relative path
/// starts from. Any other `..` (after `src`, `/usr`, `/proc/self/fd`) leaves the result inexact.
pub(crate) fn resolve(v: &str, workspace: Option<&Path>) -> Resolved {
    let mut parts: Vec<String> = Vec::new();
    for c in Path::new(v).components() {
        match c {
            Component::CurDir => {}
            Component::RootDir => parts.push("/".to_string()),
            Component::ParentDir => parts.push("..".to_string()),
            Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
            // Not on Unix; keep the path whole so nothing is lost.
            Component::Prefix(_) => parts.push(c.as_os_str().to_string_lossy().into_owned()),
        }
    }
    let parts = expand_kernel_links(parts);
    let mut out = PathBuf::new();
    let mut exact = true;
    // The directory built so far is known to hold no link.
    let mut sound = true;
    for part in &parts {
        match part.as_str() {
            "/" => {
                out.push("/");
                sound = true;
            }
            ".." => {
                exact &= sound;
                let climbs = out.as_os_str().is_empty()
                    || out.components().next_back() == Some(Component::ParentDir);
                if climbs {
                    // A relative path above its start: the working directory's parent.
                    out.push("..");
                } else if !out.pop() {
                    out.push("/");
                }
            }
            name => {
                out.push(name);
                sound = out.is_absolute() && workspace.is_some_and(|r| r.starts_with(&out));
            }
        }
    }
    Resolved { path: out, exact }
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
            // A prefix can make a path stricter, never a sink: `/dev/null$x` is not `/dev/null`.
            if !matches!(
                judged,
                Scope::Inside | Scope::Harmless | Scope::Descriptor(_)
            ) {
                return judged;
            }
        }
        return Scope::Dynamic;
    }
    scope_static(v, workspace)
}

fn scope_static(v: &str, workspace: Option<&Path>) -> Scope {
    let Resolved { path: n, exact } = resolve(v, workspace);
    let judged = scope_of(&n, v, workspace);
    if exact {
        return judged;
    }
    // A guess can only make the verdict stricter: a climb that lands on a system path or a
    // device is judged as one; any other inexact place is unknown, never a sink.
    match judged {
        Scope::System | Scope::Device => judged,
        _ => Scope::Unknown,
    }
}

/// The scope of a resolved path `n` (written as `v`).
fn scope_of(n: &Path, v: &str, workspace: Option<&Path>) -> Scope {
    if n.is_absolute() {
        if HARMLESS.iter().any(|h| n == Path::new(h)) {
            return Scope::Harmless;
        }
        if let Ok(rest) = n.strip_prefix("/proc/self/fd")
            && let Some(Component::Normal(first)) = rest.components().next()
            && let Some(fd) = first
                .to_str()
                .filter(|f| f.bytes().all(|b| b.is_ascii_digit()))
            && let Ok(fd) = fd.parse::<u32>()
        {
            // `/proc/self/fd/3/x` is `x` in the directory descriptor 3 holds: somewhere only
            // the running process knows.
            return if rest.components().count() == 1 {
                Scope::Descriptor(fd)
            } else {
                Scope::Unknown
            };
        }
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

/// Opening the path arms the hardware watchdog (`/dev/watchdog`, `/dev/watchdog0`): on a real
/// host the machine reboots when nothing keeps writing to it. Judged on the resolved words, and
/// on an option's attached value (`--file=/dev/watchdog`).
pub(crate) fn opens_watchdog(v: &str) -> bool {
    let candidates = std::iter::once(v).chain(v.split_once('=').map(|(_, value)| value));
    candidates.into_iter().any(|c| {
        let n = resolve(c, None).path;
        n.parent() == Some(Path::new("/dev"))
            && n.file_name()
                .and_then(|f| f.to_str())
                .and_then(|f| f.strip_prefix("watchdog"))
                .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Devices whose opening does nothing but hand out or swallow bytes (and `/dev/fd/N`, judged
/// as descriptors elsewhere; `/dev/shm` holds ordinary files; `/dev/tcp|udp` are bash's
/// connections, judged elsewhere).
const QUIET_DEVICES: &[&str] = &[
    "null", "zero", "full", "random", "urandom", "tty", "stdin", "stdout", "stderr", "fd", "shm",
    "tcp", "udp",
];

/// Device paths a glob is tried against: if it can name one, it can name a device whose
/// opening acts.
const LOUD_DEVICES: &[&str] = &[
    "/dev/sda",
    "/dev/nvme0n1",
    "/dev/st0",
    "/dev/nst0",
    "/dev/sr0",
    "/dev/tty0",
    "/dev/ttyS0",
    "/dev/input/event0",
    "/dev/hidraw0",
    "/dev/mem",
    "/dev/kmsg",
    "/dev/rtc0",
    "/dev/video0",
    "/dev/snd/pcmC0D0c",
    "/dev/bus/usb/001/001",
    "/dev/console",
    "/dev/loop0",
    "/dev/fuse",
];

/// What opening a word's path (or an option's attached value) may do to a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeviceOpen {
    /// The hardware watchdog: opening it arms a reboot timer on a real host.
    Watchdog,
    /// Any other device but the quiet ones: a tape rewinds on close, a tray closes, a terminal
    /// or input device gives another person's keystrokes.
    Acting,
}

/// Does the word name, or as a glob may it name, a device whose opening acts? Judged on the
/// resolved words (`/dev/fd/../watchdog` included) and on an attached value
/// (`--file=/dev/st0`).
pub(crate) fn opens_device(w: &Word) -> Option<DeviceOpen> {
    if opens_watchdog(&w.value) {
        return Some(DeviceOpen::Watchdog);
    }
    if w.glob {
        let pattern: Vec<char> = w.pattern.chars().collect();
        let pattern = match w.pattern.split_once('=') {
            Some((_, value)) if !w.pattern.starts_with('/') => value.chars().collect(),
            _ => pattern,
        };
        let could = |path: &str| glob_matches(&pattern, &path.chars().collect::<Vec<_>>());
        if ["/dev/watchdog", "/dev/watchdog0"].iter().any(|p| could(p)) {
            return Some(DeviceOpen::Watchdog);
        }
        if LOUD_DEVICES.iter().any(|p| could(p)) {
            return Some(DeviceOpen::Acting);
        }
    }
    let candidates =
        std::iter::once(w.value.as_str()).chain(w.value.split_once('=').map(|(_, v)| v));
    for c in candidates {
        let n = resolve(c, None).path;
        let Ok(under) = n.strip_prefix("/dev") else {
            continue;
        };
        let Some(first) = under.components().next() else {
            continue;
        };
        let first = first.as_os_str().to_string_lossy();
        if !QUIET_DEVICES.contains(&first.as_ref()) {
            return Some(DeviceOpen::Acting);
        }
    }
    None
}

/// Does the shell pattern (quoted characters backslash-escaped, as `Word::pattern`) match the
/// whole of `name`? `*` and `?` do not match `/`, as in pathname expansion.
fn glob_matches(p: &[char], name: &[char]) -> bool {
    match p.first() {
        None => name.is_empty(),
        Some('*') => (0..=name.len())
            .take_while(|&k| k == 0 || name[k - 1] != '/')
            .any(|k| glob_matches(&p[1..], &name[k..])),
        Some('?') => name.first().is_some_and(|&c| c != '/') && glob_matches(&p[1..], &name[1..]),
        Some('[') => match (
            bracket_matches(&p[1..], name.first().copied()),
            name.first(),
        ) {
            (Some((true, used)), Some(_)) => glob_matches(&p[1 + used..], &name[1..]),
            (Some((false, _)), _) | (_, None) => false,
            // No closing `]`: the `[` is an ordinary character.
            (None, Some(&c)) => c == '[' && glob_matches(&p[1..], &name[1..]),
        },
        Some('\\') => match (p.get(1), name.first()) {
            (Some(e), Some(c)) => e == c && glob_matches(&p[2..], &name[1..]),
            _ => false,
        },
        Some(&c) => name.first() == Some(&c) && glob_matches(&p[1..], &name[1..]),
    }
}

/// Whether `c` is in the bracket expression starting just after a `[`, and how many pattern
/// characters the expression took (its `]` included); `None` when it does not close.
fn bracket_matches(p: &[char], c: Option<char>) -> Option<(bool, usize)> {
    let mut i = 0;
    let negated = matches!(p.first(), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            let inside = hit != negated && c.is_some_and(|c| c != '/');
            return Some((inside, i + 1));
        }
        first = false;
        let lo = p[i];
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|&x| x != ']') {
            let hi = p[i + 2];
            hit |= c.is_some_and(|c| lo <= c && c <= hi);
            i += 3;
        } else if lo == '[' && matches!(p.get(i + 1), Some(':' | '=' | '.')) {
            // A class (`[:alpha:]`) is read whole and taken to match anything: only wider.
            let kind = p[i + 1];
            let close =
                (i + 2..p.len().saturating_sub(1)).find(|&j| p[j] == kind && p[j + 1] == ']')?;
            hit |= c.is_some();
            i = close + 2;
        } else {
            hit |= c == Some(lo);
            i += 1;
        }
    }
    None
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
        assert_eq!(scope(&lit("a/../../b"), ws), Scope::Unknown);
        // `a` may be a link: its `..` is not the workspace.
        assert_eq!(scope(&lit("a/../b"), ws), Scope::Unknown);
        assert_eq!(scope(&lit("~"), ws), Scope::Home);
        assert_eq!(scope(&lit("$HOME/x"), ws), Scope::Home);
        assert_eq!(scope(&lit("/usr/../etc"), None), Scope::System);
    }

    #[test]
    fn kernel_links_are_expanded_before_dot_dot() {
        let ws = Some(Path::new("/work/proj"));
        // `/dev/fd/../../..` is `/proc/self/fd/../../..`: `/` by the kernel's reading, and never
        // a sink by its prefix.
        assert_eq!(scope(&lit("/dev/fd/../../.."), ws), Scope::System);
        assert_eq!(
            scope(&lit("/dev/fd/../../../etc/sudoers"), ws),
            Scope::System
        );
        assert_eq!(
            scope(&lit("/proc/self/fd/../cwd/.git/hooks/x"), ws),
            Scope::System
        );
        assert_eq!(scope(&lit("/tmp/../dev/null"), ws), Scope::Unknown);
        assert_eq!(scope(&lit("/dev/fd/3/.."), ws), Scope::System);
        assert_eq!(scope(&lit("/dev/./null"), ws), Scope::Harmless);
        assert_eq!(scope(&lit("/dev/null/"), ws), Scope::Harmless);
    }

    #[test]
    fn descriptors_are_named_by_number() {
        let ws = Some(Path::new("/work/proj"));
        assert_eq!(scope(&lit("/dev/stdout"), ws), Scope::Descriptor(1));
        assert_eq!(scope(&lit("/dev/stderr"), ws), Scope::Descriptor(2));
        assert_eq!(scope(&lit("/dev/stdin"), ws), Scope::Descriptor(0));
        assert_eq!(scope(&lit("/dev/fd/3"), ws), Scope::Descriptor(3));
        assert_eq!(scope(&lit("/proc/self/fd/7"), ws), Scope::Descriptor(7));
        assert_eq!(
            scope(&lit("/proc/thread-self/fd/1"), ws),
            Scope::Descriptor(1)
        );
        assert_eq!(scope(&lit("/dev/fd/x"), ws), Scope::System);
        assert_eq!(scope(&lit("/dev/fd/3/x"), ws), Scope::Unknown);
    }

    #[test]
    fn dot_dot_folds_only_after_names_that_are_no_link() {
        let ws = Some(Path::new("/work/proj"));
        let exact = |p: &str| resolve(p, ws).exact;
        assert!(exact("/work/proj/../other"));
        assert!(exact("../x"));
        assert!(exact("./../.."));
        assert!(exact("/.."));
        assert!(!exact("src/../.."));
        assert!(!exact("/usr/../etc"));
        assert!(!exact("/work/proj/src/../x"));
        assert_eq!(
            resolve("/work/proj/../other", ws).path,
            Path::new("/work/other")
        );
        assert_eq!(resolve("../../x", ws).path, Path::new("../../x"));
    }

    #[test]
    fn the_watchdog_is_found_however_it_is_written() {
        assert!(opens_watchdog("/dev/watchdog"));
        assert!(opens_watchdog("/dev/watchdog0"));
        assert!(opens_watchdog("/dev//./watchdog"));
        assert!(opens_watchdog("--file=/dev/watchdog1"));
        assert!(!opens_watchdog("/dev/watchdogs"));
        assert!(!opens_watchdog("watchdog"));
    }

    fn glob(p: &str, name: &str) -> bool {
        glob_matches(
            &p.chars().collect::<Vec<_>>(),
            &name.chars().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn glob_matching_follows_pathname_expansion() {
        assert!(glob("/dev/wat*", "/dev/watchdog"));
        assert!(glob("/dev/*", "/dev/sda"));
        assert!(!glob("/dev/*", "/dev/input/event0"), "* does not cross /");
        assert!(glob("/d?v/s[c-e]a", "/dev/sda"));
        assert!(!glob("/d?v/s[a-c]a", "/dev/sda"));
        assert!(glob("/dev/[!x]t0", "/dev/st0"));
        assert!(!glob("/dev/[!s]t0", "/dev/st0"));
        assert!(glob("/dev/[]s]t0", "/dev/st0"));
        assert!(
            !glob("/dev/wat\\*", "/dev/watchdog"),
            "an escaped * is literal"
        );
        assert!(glob("/dev/[[:alpha:]]r0", "/dev/sr0"));
    }

    #[test]
    fn devices_that_act_when_opened_are_found_in_words_and_patterns() {
        let word = |raw: &str| {
            crate::harness::shell::parse(&format!("cat {raw}")).commands[0].args[0].clone()
        };
        for (raw, want) in [
            ("/dev/watchdog", Some(DeviceOpen::Watchdog)),
            ("/dev/wat*", Some(DeviceOpen::Watchdog)),
            ("/dev/*", Some(DeviceOpen::Watchdog)),
            ("/dev/st0", Some(DeviceOpen::Acting)),
            ("/dev/./sr0", Some(DeviceOpen::Acting)),
            ("//dev//sr0", Some(DeviceOpen::Acting)),
            ("--file=/dev/st0", Some(DeviceOpen::Acting)),
            ("/dev/s?0", Some(DeviceOpen::Acting)),
            ("/dev/null", None),
            ("/dev/fd/3", None),
            ("/dev/shm/x", None),
            ("/dev/", None),
            ("'/dev/wat*'", Some(DeviceOpen::Acting)),
            ("src/*.rs", None),
        ] {
            assert_eq!(opens_device(&word(raw)), want, "{raw}");
        }
    }
}
