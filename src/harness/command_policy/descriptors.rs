//! What file a descriptor of the command line holds, for a write to `/dev/fd/N`, `/dev/stdout`
//! or `/proc/self/fd/N`: on Linux opening such a path reopens the file behind descriptor N, so
//! `cat f 3<notes.txt >/dev/fd/3` truncates `notes.txt`. The answer is taken from every
//! redirection anywhere in the line (any command, group, loop, function or `exec`), in any
//! order: an over-approximation, never a guess that a descriptor is a harmless stream.

use super::paths::{self, Scope};
use crate::harness::shell::{Redirect, RedirectKind, Word};

/// How many `N>&M` hops are followed before the answer is unknown.
const MAX_HOPS: usize = 8;

/// What descriptor `fd` may hold when a command of the line opens `/dev/fd/fd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Behind {
    /// Only the sandbox's own standard output or error (or a discard device): writing there
    /// writes no file.
    Stream,
    /// These files, named by the line's redirections (each is a write when reopened).
    Files(Vec<Word>),
    /// Something the words do not tell: standard input, an inherited or computed descriptor,
    /// a here-document, a path known only at run time.
    Unknown,
}

/// What `fd` holds, judged over `redirects` (all of the line's). `nested` says the line is a
/// script another command runs (`bash -c`), whose standard streams its caller may have rebound.
pub(crate) fn behind(fd: u32, redirects: &[&Redirect], nested: bool) -> Behind {
    let mut walk = Walk {
        redirects,
        nested,
        path: Vec::new(),
        files: Vec::new(),
    };
    if walk.descriptor(fd) {
        if walk.files.is_empty() {
            Behind::Stream
        } else {
            Behind::Files(walk.files)
        }
    } else {
        Behind::Unknown
    }
}

/// Whether descriptor `fd`, at the moment the redirection at `at` of one command's own list
/// `list` is applied, can only be the sandbox's standard output or error, a discard device, or
/// closed. Redirections apply left to right, so one later in the list has bound nothing yet
/// (`ls >/dev/fd/3 3>&1` opens whatever fd 3 was before): what is not bound earlier in the same
/// list is the descriptor the command inherited, a stream only for 1 and 2 of a line no caller
/// rebound. `behind` answers for the whole line; a reopening is harmless only when both agree.
pub(crate) fn stream_when_applied(fd: u32, list: &[Redirect], at: usize, nested: bool) -> bool {
    let (mut fd, mut at) = (fd, at.min(list.len()));
    loop {
        let earlier = list[..at]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, r)| match bound(r) {
                Some(fds) => fds.contains(&fd),
                // `{var}>f` binds a descriptor bash picks (10 or more).
                None => fd >= 10,
            });
        let Some((j, r)) = earlier else {
            return matches!(fd, 1 | 2) && !nested;
        };
        if bound(r).is_none() {
            return false;
        }
        match binding(r) {
            Binding::Closed | Binding::Harmless => return true,
            Binding::Copy(m) => (fd, at) = (m, j),
            Binding::File | Binding::Unknown => return false,
        }
    }
}

/// Whether any of `redirects` but `this` may bind `fd` (a `{var}>` binding may, for 10 or
/// more).
pub(crate) fn rebound_elsewhere(fd: u32, redirects: &[&Redirect], this: &Redirect) -> bool {
    let others = redirects.iter().filter(|r| !std::ptr::eq(**r, this));
    others.into_iter().any(|r| match bound(r) {
        Some(fds) => fds.contains(&fd),
        None => fd >= 10,
    })
}

/// What one redirection puts on the descriptor it binds.
enum Binding {
    /// `N>&-`: closed, so opening `/dev/fd/N` fails.
    Closed,
    /// A discard device.
    Harmless,
    /// A copy of descriptor M (`N>&M`, `>/dev/fd/M`).
    Copy(u32),
    /// A file the words name (`>&file` is `&>file`).
    File,
    /// Something the words do not tell: a here-document, an expansion, a network device.
    Unknown,
}

fn binding(r: &Redirect) -> Binding {
    let Some(target) = &r.target else {
        return Binding::Unknown;
    };
    match r.kind {
        RedirectKind::HereDoc | RedirectKind::HereString => Binding::Unknown,
        RedirectKind::DuplicateOutput | RedirectKind::DuplicateInput => {
            let v = target.value.trim_end_matches('-');
            match (target.dynamic, v.is_empty(), v.parse::<u32>()) {
                (true, _, _) => Binding::Unknown,
                (false, true, _) => Binding::Closed,
                (false, false, Ok(m)) => Binding::Copy(m),
                (false, false, Err(_)) => Binding::File,
            }
        }
        _ => match paths::scope(target, None) {
            Scope::Harmless => Binding::Harmless,
            Scope::Descriptor(m) => Binding::Copy(m),
            Scope::NetworkDevice | Scope::Unknown => Binding::Unknown,
            _ => Binding::File,
        },
    }
}

/// The descriptors a redirection binds; None when they are not a number (`{var}>f`).
fn bound(r: &Redirect) -> Option<Vec<u32>> {
    match &r.fd {
        Some(n) => n.parse().ok().map(|n| vec![n]),
        None => Some(match r.kind {
            RedirectKind::OutputAndError | RedirectKind::AppendOutputAndError => vec![1, 2],
            RedirectKind::Input
            | RedirectKind::ReadWrite
            | RedirectKind::DuplicateInput
            | RedirectKind::HereDoc
            | RedirectKind::HereString => vec![0],
            _ => vec![1],
        }),
    }
}

/// The search for what one descriptor holds, through the copies between descriptors.
struct Walk<'r> {
    redirects: &'r [&'r Redirect],
    nested: bool,
    /// The descriptors being resolved: a copy back to one of them (`>/dev/stdout` on fd 1,
    /// `>/dev/stderr 2>&1`) adds nothing the other bindings do not, and is no rebinding.
    path: Vec<u32>,
    /// The files found so far.
    files: Vec<Word>,
}

impl Walk<'_> {
    /// Collect the files `fd` may hold; false when something unknown is behind it.
    fn descriptor(&mut self, fd: u32) -> bool {
        if self.path.len() > MAX_HOPS {
            return false;
        }
        self.path.push(fd);
        let known = self.bindings(fd);
        self.path.pop();
        known
    }

    /// `descriptor`'s body, with `fd` on the path.
    fn bindings(&mut self, fd: u32) -> bool {
        let redirects = self.redirects;
        let mut rebound = false;
        for r in redirects {
            // A descriptor named by a variable is one bash picks (10 or more); any could be it.
            let Some(fds) = bound(r) else {
                if fd >= 10 {
                    return false;
                }
                continue;
            };
            if !fds.contains(&fd) {
                continue;
            }
            match binding(r) {
                Binding::Closed | Binding::Harmless => rebound = true,
                Binding::Copy(m) if self.path.contains(&m) => {}
                Binding::Copy(m) => {
                    if !self.descriptor(m) {
                        return false;
                    }
                    rebound = true;
                }
                Binding::File => {
                    if let Some(target) = &r.target {
                        self.files.push(target.clone());
                    }
                    rebound = true;
                }
                Binding::Unknown => return false,
            }
        }
        // Not rebound here: the sandbox's standard output and error are its own pipes, unless a
        // caller of this script rebound them; any other descriptor is not one the line opened.
        rebound || (matches!(fd, 1 | 2) && !self.nested)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::shell;

    /// The answer with each file reduced to its value, so a test reads as the command does.
    fn behind_in(source: &str, fd: u32) -> Result<Vec<String>, Behind> {
        let facts = shell::parse(source);
        let redirects: Vec<&Redirect> = facts.all_redirects().collect();
        match behind(fd, &redirects, false) {
            Behind::Files(f) => Ok(f.into_iter().map(|w| w.value).collect()),
            other => Err(other),
        }
    }

    fn files(names: &[&str]) -> Result<Vec<String>, Behind> {
        Ok(names.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn standard_streams_not_rebound_are_streams() {
        assert_eq!(behind_in("ls >/dev/stdout", 1), Err(Behind::Stream));
        assert_eq!(
            behind_in("ls 2>/dev/null >/dev/stderr", 2),
            Err(Behind::Stream)
        );
        assert_eq!(behind_in("ls >/dev/stderr 2>&1", 2), Err(Behind::Stream));
        assert_eq!(
            behind_in("ls 1>&2 2>&1 >/dev/stdout", 1),
            Err(Behind::Stream)
        );
        assert_eq!(behind_in("ls >/dev/stdout", 0), Err(Behind::Unknown));
        assert_eq!(behind_in("ls >/dev/fd/3", 3), Err(Behind::Unknown));
    }

    #[test]
    fn a_descriptor_opened_on_a_file_is_that_file() {
        assert_eq!(
            behind_in("cat f 3<notes.txt >/dev/fd/3", 3),
            files(&["notes.txt"])
        );
        assert_eq!(
            behind_in("echo x 1<notes.txt >/dev/stdout", 1),
            files(&["notes.txt"])
        );
        assert_eq!(
            behind_in("exec 1<notes.txt; echo x >/dev/stdout", 1),
            files(&["notes.txt"])
        );
        assert_eq!(
            behind_in("echo x 3<notes.txt 2>&3 >/dev/stderr", 2),
            files(&["notes.txt"])
        );
    }

    /// `stream_when_applied` for the last redirection of the line's first command.
    fn stream_at_last(source: &str, fd: u32) -> bool {
        let facts = shell::parse(source);
        let list = &facts.commands[0].redirects;
        stream_when_applied(fd, list, list.len() - 1, false)
    }

    #[test]
    fn redirections_apply_left_to_right() {
        // Issue 19 item 2 (the write-attempt oracle): `3>&1` after `>/dev/fd/3` binds nothing
        // yet when fd 3 is reopened.
        let facts = shell::parse("ls >/dev/fd/3 3>&1");
        assert!(!stream_when_applied(
            3,
            &facts.commands[0].redirects,
            0,
            false
        ));
        assert!(stream_at_last("ls 3>&1 >/dev/fd/3", 3));
        assert!(stream_at_last("ls 3>/dev/null >/dev/fd/3", 3));
        assert!(!stream_at_last("ls 3>&4 4>&1 >/dev/fd/3", 3));
        assert!(stream_at_last("ls 4>&1 3>&4 >/dev/fd/3", 3));
        assert!(stream_at_last("ls >/dev/stdout", 1));
        assert!(!stream_at_last("ls 1<notes.txt >/dev/stdout", 1));
        assert!(!stream_at_last("ls {v}>&1 >/dev/fd/10", 10));
    }

    #[test]
    fn what_the_words_do_not_tell_is_unknown() {
        assert_eq!(
            behind_in("cat <<<x 3<&0 >/dev/fd/3", 3),
            Err(Behind::Unknown)
        );
        assert_eq!(
            behind_in("cat {v}<notes >/dev/fd/10", 10),
            Err(Behind::Unknown)
        );
        assert_eq!(behind_in("cat 3<&$n >/dev/fd/3", 3), Err(Behind::Unknown));
        let facts = shell::parse("ls >/dev/stdout");
        let redirects: Vec<&Redirect> = facts.all_redirects().collect();
        assert_eq!(behind(1, &redirects, true), Behind::Unknown);
    }
}
