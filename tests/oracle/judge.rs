//! The verdict on one traced READ_ONLY command: every system call that writes, deletes,
//! renames, changes a mode, owner, time or xattr, links, binds a socket on a path outside the
//! sandbox's private tmpfs mounts, connects to an internet address or to a socket path outside
//! them, signals a process the command did not start, or executes a program the classification
//! did not name is a violation, unless an exception (data, `tests/data/oracle_exceptions.txt`)
//! matches it. A call the judge cannot place (a relative path under an unknown directory) counts
//! as outside: the doubt goes against the command.

use std::collections::{HashMap, HashSet};

use crate::trace::{Call, Trace, decoration, string};

/// Where the oracle keeps the scratch copies inside the sandbox: in its private `/tmp`
/// (a tmpfs, where a fresh copy costs a fifth of one on the workspace's disk), but not private
/// to the judge, so a write there is a write to the command's workspace.
pub const SCRATCH_ROOT: &str = "/tmp/spear-oracle";

/// Where the sandbox's private tmpfs mounts are.
#[derive(Debug, Clone)]
pub struct Mounts {
    home: String,
}

fn under(path: &str, dir: &str) -> bool {
    path == dir || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

impl Mounts {
    pub fn new(home: String) -> Mounts {
        Mounts { home }
    }

    /// Whether `path` (absolute, folded) lies in a private tmpfs mount; anything else
    /// (including the scratch copies under `SCRATCH_ROOT`, where the command runs) is a place a
    /// READ_ONLY command must not write.
    pub fn private(&self, path: &str) -> bool {
        !under(path, SCRATCH_ROOT)
            && ["/tmp", "/run", "/dev/shm", self.home.as_str()]
                .iter()
                .filter(|m| m.len() > 1)
                .any(|m| under(path, m))
    }
}

/// One forbidden attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The program that made the call (the last it executed; `bash` before any).
    pub program: String,
    pub call: String,
    /// The path, address (`inet:…`, `unix:…`) or process (`pid:N`) the call aimed at.
    pub target: String,
    /// What kind of attempt it was, in words.
    pub what: &'static str,
    pub text: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} by {} ({}) on {}: {}",
            self.what, self.program, self.call, self.target, self.text
        )
    }
}

/// One exception: a program, a call and a target pattern, with the reason it is harmless.
#[derive(Debug, Clone)]
pub struct Exception {
    pub line: usize,
    pub program: String,
    pub call: String,
    pub target: String,
    pub reason: String,
}

impl Exception {
    pub fn matches(&self, v: &Violation) -> bool {
        glob(&self.program, &v.program)
            && glob(&self.call, &v.call)
            && glob(&self.target, &v.target)
    }
}

/// The exceptions file: `program<TAB>call<TAB>target glob<TAB>reason`, `#` comments.
pub fn parse_exceptions(text: &str) -> Result<Vec<Exception>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = raw.split('\t').collect();
        if f.len() != 4 || f.iter().any(|x| x.trim().is_empty()) {
            return Err(format!(
                "line {}: want program<TAB>call<TAB>target<TAB>reason, got {raw:?}",
                i + 1
            ));
        }
        out.push(Exception {
            line: i + 1,
            program: f[0].into(),
            call: f[1].into(),
            target: f[2].into(),
            reason: f[3].into(),
        });
    }
    Ok(out)
}

/// `*` (any run, `/` included), `?` (one character) and `{a,b}` (either); everything else
/// literal.
pub fn glob(pattern: &str, text: &str) -> bool {
    if let Some(open) = pattern.find('{')
        && let Some(len) = pattern[open..].find('}')
    {
        let (head, body, tail) = (
            &pattern[..open],
            &pattern[open + 1..open + len],
            &pattern[open + len + 1..],
        );
        return body
            .split(',')
            .any(|alt| glob(&format!("{head}{alt}{tail}"), text));
    }
    plain_glob(pattern, text)
}

fn plain_glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// `dir` joined with `rel`, with `.` and `..` folded lexically (judging, not opening).
fn join(dir: &str, rel: &str) -> String {
    let whole = if rel.starts_with('/') {
        rel.to_string()
    } else {
        format!("{dir}/{rel}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for p in whole.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Per-process facts the judge follows through the trace.
struct Process {
    program: String,
    cwd: Option<String>,
}

/// Judges one command's trace. `named` holds the programs the classification named; `root` is
/// the pid strace started, whose first two executions (the wrapper that closes strace's
/// descriptor, then `bash -c COMMAND`) are the oracle's own. Returns the violations no
/// exception covers, and counts each exception that matched in `hits`.
pub struct Judge<'a> {
    pub mounts: &'a Mounts,
    pub exceptions: &'a [Exception],
    pub hits: &'a mut [usize],
}

const OPEN_WRITE_FLAGS: &[&str] = &["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_TMPFILE"];

impl Judge<'_> {
    pub fn judge(&mut self, trace: &Trace, named: &[String], scratch: &str) -> Vec<Violation> {
        let mut found = Vec::new();
        for line in &trace.unread {
            found.push(Violation {
                program: "?".into(),
                call: "?".into(),
                target: "?".into(),
                what: "a trace line the oracle cannot read",
                text: line.clone(),
            });
        }
        let named: HashSet<&str> = named.iter().map(|n| base(n)).collect();
        let Some(root) = trace.calls.first().map(|c| c.pid) else {
            return found;
        };
        // Every pid the command started (or is): signals to others reach outside it.
        let mut started: HashSet<u32> = trace.calls.iter().map(|c| c.pid).collect();
        // A child's first calls can come before its parent's clone returns in the trace: who
        // its parent is comes from the whole trace.
        let mut parent: HashMap<u32, u32> = HashMap::new();
        for c in &trace.calls {
            if matches!(c.name.as_str(), "clone" | "clone3" | "fork" | "vfork")
                && let Some(v) = c.ret_value().filter(|v| *v > 0)
            {
                started.insert(v as u32);
                parent.insert(v as u32, c.pid);
            }
        }
        let mut procs: HashMap<u32, Process> = HashMap::new();
        procs.insert(
            root,
            Process {
                program: "bash".into(),
                cwd: Some(scratch.to_string()),
            },
        );
        let mut preamble_execs = 0;
        for c in &trace.calls {
            if !procs.contains_key(&c.pid) {
                // Born of its parent: the same program and directory until it changes them.
                let inherited = parent
                    .get(&c.pid)
                    .and_then(|p| procs.get(p))
                    .map(|p| (p.program.clone(), p.cwd.clone()))
                    .unwrap_or_else(|| ("bash".into(), None));
                procs.insert(
                    c.pid,
                    Process {
                        program: inherited.0,
                        cwd: inherited.1,
                    },
                );
            }
            let Some(proc) = procs.get_mut(&c.pid) else {
                continue;
            };
            // `AT_FDCWD</dir>` says where the process is, whatever came before.
            if let Some(cwd) = c
                .args
                .iter()
                .find(|a| a.starts_with("AT_FDCWD<"))
                .and_then(|a| decoration(a))
            {
                proc.cwd = Some(cwd);
            }
            if c.pid == root && preamble_execs < 2 {
                if c.name == "execve" && !c.failed() {
                    preamble_execs += 1;
                }
                continue;
            }
            let program = proc.program.clone();
            let cwd = proc.cwd.clone();
            let mut report = |what: &'static str, target: String| {
                found.push(Violation {
                    program: program.clone(),
                    call: c.name.clone(),
                    target,
                    what,
                    text: c.text.clone(),
                });
            };
            for (what, target) in self.attempts(c, cwd.as_deref(), &named, &started) {
                report(what, target);
            }
            // Follow the process's program, directory and children.
            let proc = procs
                .get_mut(&c.pid)
                .map(|p| (p.program.clone(), p.cwd.clone()));
            match c.name.as_str() {
                "execve" | "execveat" if !c.failed() => {
                    let at = usize::from(c.name == "execveat");
                    if let (Some(path), Some(p)) =
                        (c.arg(at).and_then(string), procs.get_mut(&c.pid))
                    {
                        p.program = base(&path).to_string();
                    }
                }
                "chdir" | "fchdir" if !c.failed() => {
                    let to = match c.name.as_str() {
                        "chdir" => c
                            .arg(0)
                            .and_then(string)
                            .and_then(|p| cwd.as_deref().map(|d| join(d, &p))),
                        _ => c.arg(0).and_then(decoration),
                    };
                    if let Some(p) = procs.get_mut(&c.pid) {
                        p.cwd = to;
                    }
                }
                "clone" | "clone3" | "fork" | "vfork" => {
                    if let (Some(v), Some((program, cwd))) =
                        (c.ret_value().filter(|v| *v > 0), proc)
                    {
                        procs.entry(v as u32).or_insert(Process { program, cwd });
                    }
                }
                _ => {}
            }
        }
        let mut left = Vec::new();
        for v in found {
            match self.exceptions.iter().position(|e| e.matches(&v)) {
                Some(i) => self.hits[i] += 1,
                None => left.push(v),
            }
        }
        left
    }

    /// The forbidden attempts one call makes (most make none).
    fn attempts(
        &self,
        c: &Call,
        cwd: Option<&str>,
        named: &HashSet<&str>,
        started: &HashSet<u32>,
    ) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        // A path argument: a string at `i`, against the directory descriptor at `dir` (or the
        // working directory). An unknown place is judged outside.
        let path_at = |dir: Option<usize>, i: usize| -> String {
            let Some(p) = c.arg(i).and_then(string) else {
                return c.arg(i).unwrap_or("?").to_string();
            };
            if p.starts_with('/') {
                return join("/", &p);
            }
            let base = match dir {
                Some(d) => c.arg(d).and_then(decoration),
                None => cwd.map(str::to_string),
            };
            match base.filter(|b| b.starts_with('/')) {
                Some(b) => join(&b, &p),
                None => format!("(unknown directory)/{p}"),
            }
        };
        let fd_at = |i: usize| -> String {
            c.arg(i)
                .and_then(decoration)
                .unwrap_or_else(|| c.arg(i).unwrap_or("?").to_string())
        };
        let mut path = |what: &'static str, target: String| {
            // Pipes, sockets and anonymous inodes (`pipe:[7]`) are not places.
            if target.starts_with('/') && !self.mounts.private(&target)
                || target.starts_with("(unknown")
            {
                out.push((what, target));
            }
        };
        let name = c.name.as_str();
        match name {
            "open" | "openat" | "creat" => {
                let (dir, p, flags) = match name {
                    "openat" => (Some(0), 1, c.arg(2)),
                    "open" => (None, 0, c.arg(1)),
                    _ => (None, 0, Some("O_WRONLY|O_CREAT|O_TRUNC")),
                };
                let writes = flags
                    .is_some_and(|f| f.split('|').any(|x| OPEN_WRITE_FLAGS.contains(&x.trim())));
                if writes {
                    // Where it landed, when it opened; where it aimed, when it did not.
                    let target = c
                        .ret_path()
                        .filter(|_| !c.failed())
                        .unwrap_or_else(|| path_at(dir, p));
                    path("an open for writing", target);
                }
            }
            "openat2" => path("an open for writing (openat2)", path_at(Some(0), 1)),
            "truncate" => path("a truncate", path_at(None, 0)),
            "ftruncate" => path("a truncate", fd_at(0)),
            "unlink" | "rmdir" => path("a delete", path_at(None, 0)),
            "unlinkat" => path("a delete", path_at(Some(0), 1)),
            "rename" => {
                path("a rename", path_at(None, 0));
                path("a rename", path_at(None, 1));
            }
            "renameat" | "renameat2" => {
                path("a rename", path_at(Some(0), 1));
                path("a rename", path_at(Some(2), 3));
            }
            "mkdir" | "mknod" => path("a create", path_at(None, 0)),
            "mkdirat" | "mknodat" => path("a create", path_at(Some(0), 1)),
            "chmod" => path("a mode change", path_at(None, 0)),
            "fchmod" => path("a mode change", fd_at(0)),
            "fchmodat" | "fchmodat2" => path("a mode change", path_at(Some(0), 1)),
            "chown" | "lchown" => path("an owner change", path_at(None, 0)),
            "fchown" => path("an owner change", fd_at(0)),
            "fchownat" => path("an owner change", path_at(Some(0), 1)),
            "link" | "symlink" => path("a link", path_at(None, 1)),
            "linkat" => path("a link", path_at(Some(2), 3)),
            "symlinkat" => path("a link", path_at(Some(1), 2)),
            "utime" | "utimes" => path("a time change", path_at(None, 0)),
            "futimesat" | "utimensat" => {
                // utimensat(fd, NULL, …) changes the descriptor's own file.
                let target = match c.arg(1) {
                    Some("NULL") => fd_at(0),
                    _ => path_at(Some(0), 1),
                };
                path("a time change", target);
            }
            "setxattr" | "lsetxattr" | "removexattr" | "lremovexattr" => {
                path("an xattr change", path_at(None, 0))
            }
            "fsetxattr" | "fremovexattr" => path("an xattr change", fd_at(0)),
            "bind" | "connect" => {
                let addr = c.arg(1).unwrap_or("");
                let verb = if name == "bind" {
                    "a socket bind"
                } else {
                    "a connect"
                };
                if addr.contains("sa_family=AF_INET") {
                    out.push((verb, format!("inet:{addr}")));
                } else if addr.contains("sa_family=AF_UNIX") {
                    // An abstract name (`@"…"`) lives in the sandbox's own network namespace.
                    if let Some(p) = addr.split("sun_path=").nth(1).and_then(string) {
                        let p = join(cwd.unwrap_or("/"), &p);
                        if !self.mounts.private(&p) {
                            out.push((verb, format!("unix:{p}")));
                        }
                    }
                }
            }
            // A datagram addressed on its own (no connect first) to an internet address.
            "sendto" | "sendmsg" | "sendmmsg" => {
                let addr = match name {
                    "sendto" => c.arg(4).unwrap_or(""),
                    _ => c.arg(1).unwrap_or(""),
                };
                if addr.contains("sa_family=AF_INET") {
                    out.push(("a send to an internet address", format!("inet:{addr}")));
                }
            }
            "kill" | "tkill" | "tgkill" | "rt_sigqueueinfo" | "rt_tgsigqueueinfo" => {
                let sig = match name {
                    "tgkill" | "rt_tgsigqueueinfo" => c.arg(2),
                    _ => c.arg(1),
                };
                let pid: Option<i64> = c.arg(0).and_then(|p| p.parse().ok());
                let probe = sig == Some("0");
                let foreign = match pid {
                    Some(p) if p > 0 => !started.contains(&(p as u32)),
                    _ => true,
                };
                if foreign && !probe {
                    out.push((
                        "a signal to a process it did not start",
                        format!("pid:{}", c.arg(0).unwrap_or("?")),
                    ));
                }
            }
            "pidfd_send_signal" => {
                let target = fd_at(0);
                let pid = target
                    .strip_prefix("pid:")
                    .or_else(|| target.strip_prefix("anon_inode:[pidfd]"))
                    .and_then(|p| p.trim().parse::<u32>().ok());
                if c.arg(1) != Some("0") && !pid.is_some_and(|p| started.contains(&p)) {
                    out.push(("a signal to a process it did not start", target));
                }
            }
            "execve" | "execveat" => {
                let at = usize::from(name == "execveat");
                let prog = c.arg(at).and_then(string).unwrap_or_default();
                if !named.contains(base(&prog)) {
                    out.push((
                        "an execve of a program the classification did not name",
                        prog,
                    ));
                }
            }
            _ => {}
        }
        out
    }
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse;

    fn judge(text: &str, named: &[&str]) -> Vec<Violation> {
        let mounts = Mounts::new("/root".into());
        let mut hits = [];
        let mut j = Judge {
            mounts: &mounts,
            exceptions: &[],
            hits: &mut hits,
        };
        let named: Vec<String> = named.iter().map(|s| s.to_string()).collect();
        j.judge(&parse(text), &named, "/w/s")
    }

    const PREAMBLE: &str = "1 execve(\"/bin/bash\", [\"bash\"], 0x1 /* 1 vars */) = 0\n\
        1 openat(AT_FDCWD</w/s>, \"/dev/null\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 2</dev/null>\n\
        1 execve(\"/bin/bash\", [\"bash\"], 0x1 /* 1 vars */) = 0\n";

    #[test]
    fn each_family_is_caught_and_the_preamble_is_not() {
        let cases = [
            "openat(AT_FDCWD</w/s>, \"x\", O_WRONLY|O_CREAT, 0666) = -1 EROFS (x)",
            "unlinkat(AT_FDCWD</w/s>, \"x\", 0) = 0",
            "renameat2(AT_FDCWD</w/s>, \"a\", AT_FDCWD</w/s>, \"b\", 0) = 0",
            "fchmodat(AT_FDCWD</w/s>, \"a\", 0777) = 0",
            "fchown(3</w/s/a>, 0, 0) = 0",
            "symlinkat(\"a\", AT_FDCWD</w/s>, \"b\") = 0",
            "utimensat(3</w/s/a>, NULL, NULL, 0) = 0",
            "setxattr(\"/w/s/a\", \"user.x\", \"1\", 1, 0) = 0",
            "connect(3<socket:[9]>, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr(\"1.1.1.1\")}, 16) = 0",
            "bind(3<socket:[9]>, {sa_family=AF_UNIX, sun_path=\"/w/s/sock\"}, 110) = 0",
            "kill(77, SIGTERM) = 0",
            "execve(\"/usr/bin/rm\", [\"rm\"], 0x1 /* 1 vars */) = 0",
            "mkdir(\"d\", 0777) = 0",
            "sendto(3<socket:[9]>, \"x\", 1, MSG_NOSIGNAL, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr(\"1.1.1.1\")}, 16) = 1",
        ];
        for c in cases {
            let v = judge(&format!("{PREAMBLE}1 {c}\n"), &["ls"]);
            // A rename names both of its paths.
            let want = if c.starts_with("rename") { 2 } else { 1 };
            assert_eq!(v.len(), want, "{c}: {v:?}");
        }
    }

    #[test]
    fn the_scratch_root_in_tmp_is_not_private() {
        let m = Mounts::new("/root".into());
        for p in [
            "/tmp/x",
            "/tmp/spear-oracle-x",
            "/root/.cache/x",
            "/run/x",
            "/dev/shm/x",
        ] {
            assert!(m.private(p), "{p}");
        }
        for p in [
            "/tmp/spear-oracle",
            "/tmp/spear-oracle/scratch/a.txt",
            "/w/s/a",
            "/etc/x",
        ] {
            assert!(!m.private(p), "{p}");
        }
        let c = "openat(AT_FDCWD</tmp/spear-oracle/scratch>, \"a\", O_WRONLY|O_TRUNC) = 3</tmp/spear-oracle/scratch/a>";
        assert_eq!(
            judge(&format!("{PREAMBLE}1 {c}\n"), &["ls"]).len(),
            1,
            "{c}"
        );
    }

    #[test]
    fn private_mounts_pipes_probes_and_named_programs_pass() {
        let calls = [
            "openat(AT_FDCWD</w/s>, \"/tmp/x\", O_WRONLY|O_CREAT, 0666) = 3</tmp/x>",
            "openat(AT_FDCWD</w/s>, \"/dev/stdout\", O_WRONLY) = 3<pipe:[5]>",
            "openat(AT_FDCWD</w/s>, \"a\", O_RDONLY) = 3</w/s/a>",
            "unlinkat(AT_FDCWD</root>, \".cache/x\", 0) = 0",
            "connect(3<socket:[9]>, {sa_family=AF_UNIX, sun_path=\"/run/x\"}, 110) = 0",
            "kill(1, 0) = 0",
            "sendto(3<socket:[9]>, \"x\", 1, 0, NULL, 0) = 1",
            "sendmsg(3<socket:[9]>, {msg_name={sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, msg_namelen=12}, 0) = 20",
            "execve(\"/usr/bin/ls\", [\"ls\"], 0x1 /* 1 vars */) = 0",
        ];
        for c in calls {
            let v = judge(&format!("{PREAMBLE}1 {c}\n"), &["ls"]);
            assert!(v.is_empty(), "{c}: {v:?}");
        }
    }

    #[test]
    fn globs_and_exceptions() {
        assert!(glob("*/.git/index.lock", "/w/s/.git/index.lock"));
        assert!(!glob("*/.git/index.lock", "/w/s/.git/index"));
        assert!(glob("bash", "bash") && glob("*", ""));
        assert!(glob("*/{gzip,xz}", "/usr/bin/xz") && !glob("*/{gzip,xz}", "/usr/bin/sh"));
        let e = parse_exceptions("# c\ngit\topenat\t*/index.lock\twhy\n").unwrap();
        assert_eq!(e.len(), 1);
        assert!(parse_exceptions("git\topenat\t*\n").is_err());
    }
}
