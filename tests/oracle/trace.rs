//! Reads the output of `strace -f -y -qq` into whole system calls: one `Call` per call, an
//! `<unfinished ...>` line joined with its `<... resumed>` line, each argument kept as strace
//! printed it, and the `-y` decorations (`3</path>`, `AT_FDCWD</dir>`) decoded on demand. A line
//! it cannot read is kept as such, never dropped: the judge fails on it.

use std::collections::HashMap;

/// One system call as strace printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub pid: u32,
    pub name: String,
    /// The arguments, split at top-level commas, each as printed.
    pub args: Vec<String>,
    /// What follows `= `: `0`, `-1 ENOENT (No such file or directory)`, `3</etc/passwd>`, `?`.
    pub ret: String,
    /// The whole call on one line (for reports).
    pub text: String,
}

/// What a trace holds.
#[derive(Debug, Default)]
pub struct Trace {
    pub calls: Vec<Call>,
    /// Lines that are neither a call nor a known notice (`strace: ...` errors among them).
    pub unread: Vec<String>,
}

impl Call {
    /// The numeric return value, when there is one.
    pub fn ret_value(&self) -> Option<i64> {
        let end = self
            .ret
            .find(|c: char| !(c == '-' || c.is_ascii_alphanumeric()))
            .unwrap_or(self.ret.len());
        let n = &self.ret[..end];
        match n.strip_prefix("0x") {
            Some(hex) => i64::from_str_radix(hex, 16).ok(),
            None => n.parse().ok(),
        }
    }

    pub fn failed(&self) -> bool {
        self.ret_value().is_some_and(|v| v < 0)
    }

    /// The path `-y` printed after the return value (`= 3</a/b>`).
    pub fn ret_path(&self) -> Option<String> {
        decoration(&self.ret)
    }

    pub fn arg(&self, i: usize) -> Option<&str> {
        self.args.get(i).map(String::as_str)
    }
}

/// The path in a `-y` decoration: `3</a/b>` or `AT_FDCWD</a>` gives `/a/b` or `/a`;
/// `3<pipe:[7]>` gives `pipe:[7]`.
pub fn decoration(text: &str) -> Option<String> {
    let start = text.find('<')?;
    let body = &text[start + 1..];
    let end = body.rfind('>')?;
    Some(unescape(&body[..end]))
}

/// A quoted C string argument (`"a\nb"`), unescaped; `None` for anything else (a NULL, an
/// address, a string strace did not print).
pub fn string(arg: &str) -> Option<String> {
    let inner = arg.strip_prefix('"')?;
    let mut end = None;
    let mut escaped = false;
    for (i, c) in inner.char_indices() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => {
                end = Some(i);
                break;
            }
            _ => {}
        }
    }
    Some(unescape(&inner[..end?]))
}

/// strace's C escapes (`\n`, `\"`, `\x41`, `\101`) decoded; bytes that are not UTF-8 become
/// U+FFFD (a path is compared, never used).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let hex: String = s[i..].chars().take(2).collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(v) if hex.len() == 2 => {
                        out.push(v);
                        i += 2;
                    }
                    _ => out.push(b'x'),
                }
            }
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 0;
                while n < 2 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Splits `name(args) = ret` into its parts; `None` when the line is not a whole call.
fn split_call(body: &str) -> Option<(String, Vec<String>, String)> {
    let open = body.find('(')?;
    let name = &body[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let rest = &body[open + 1..];
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    let mut in_deco = false;
    let mut prev = '\0';
    let mut close = None;
    for (i, c) in rest.char_indices() {
        if in_str {
            cur.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            prev = c;
            continue;
        }
        if in_deco {
            // A `-y` decoration: strace escapes `<` and `>` inside it, so the first `>` ends it.
            cur.push(c);
            if c == '>' {
                in_deco = false;
            }
            prev = c;
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                cur.push(c);
            }
            '<' if prev.is_ascii_digit() || prev == 'D' => {
                in_deco = true;
                cur.push(c);
            }
            '(' | '[' | '{' => {
                depth += 1;
                cur.push(c);
            }
            ')' if depth == 0 => {
                close = Some(i);
                break;
            }
            ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' if depth == 0 => {
                args.push(cur.trim().to_string());
                cur.clear();
            }
            _ => cur.push(c),
        }
        prev = c;
    }
    let close = close?;
    if !cur.trim().is_empty() {
        args.push(cur.trim().to_string());
    }
    let tail = rest[close + 1..].trim_start();
    let ret = tail.strip_prefix('=')?.trim().to_string();
    Some((name.to_string(), args, ret))
}

/// Reads strace's lines (`-f`, so each starts with a pid).
pub fn parse(text: &str) -> Trace {
    let mut trace = Trace::default();
    let mut pending: HashMap<u32, String> = HashMap::new();
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let Some((pid, body)) = line
            .split_once(char::is_whitespace)
            .and_then(|(p, b)| Some((p.parse::<u32>().ok()?, b.trim_start())))
        else {
            trace.unread.push(line.to_string());
            continue;
        };
        // Notices strace prints with -qq left on: signals (`--- SIG... ---`), exits by signal.
        if body.starts_with("---") || body.starts_with("+++") {
            continue;
        }
        // A thread strace stopped at a call's entry but could not read the call of, because
        // the process was already being torn down (another thread's exit_group; seen with
        // `java --version`), and then detached from: the call never ran. With --seccomp-bpf
        // only the traced calls stop, so nothing else can hide here; a named call cut off by
        // the detach (`unlink("x" <detached ...>`) is still judged on its arguments below.
        if body == "???( <detached ...>" {
            continue;
        }
        let whole = if let Some(start) = body.strip_suffix("<unfinished ...>") {
            pending.insert(pid, start.trim_end().to_string());
            continue;
        } else if let Some(resumed) = body.strip_prefix("<... ") {
            let Some((_, rest)) = resumed.split_once(" resumed>") else {
                trace.unread.push(line.to_string());
                continue;
            };
            match pending.remove(&pid) {
                Some(start) => {
                    // strace ends the first half at an argument boundary (after a comma and a
                    // space, or right after the opening parenthesis).
                    let sep = if start.ends_with('(') || start.ends_with(',') {
                        ""
                    } else {
                        ", "
                    };
                    let rest = rest.trim_start();
                    let sep = if rest.starts_with(')') || rest.starts_with(',') {
                        ""
                    } else {
                        sep
                    };
                    format!("{start}{sep}{rest}")
                }
                None => {
                    trace.unread.push(line.to_string());
                    continue;
                }
            }
        } else {
            body.to_string()
        };
        // A call the process never returned from (execve replaced it, or it was killed).
        let whole = match whole
            .strip_suffix(" <unfinished ...>)")
            .or_else(|| whole.strip_suffix(" <detached ...>"))
        {
            Some(w) => format!("{w}) = ?"),
            None => whole,
        };
        match split_call(&whole) {
            Some((name, args, ret)) => trace.calls.push(Call {
                pid,
                name,
                args,
                ret,
                text: whole,
            }),
            None => trace.unread.push(line.to_string()),
        }
    }
    for (pid, start) in pending {
        // Cut off by the end of the trace (a timeout killed strace): judged on its arguments.
        if let Some((name, args, _)) = split_call(&format!("{start}) = ?")) {
            trace.calls.push(Call {
                pid,
                name,
                args,
                ret: "?".into(),
                text: start,
            });
        }
    }
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unnamed_call_cut_off_by_the_detach_is_skipped_and_a_named_one_is_judged() {
        let t = parse(concat!(
            "7001  ???( <detached ...>\n",
            "7002  unlinkat(AT_FDCWD</w>, \"x\", 0 <detached ...>\n",
        ));
        assert!(t.unread.is_empty(), "{:?}", t.unread);
        assert_eq!(t.calls.len(), 1, "{:?}", t.calls);
        assert_eq!(t.calls[0].name, "unlinkat");
    }

    #[test]
    fn reads_calls_with_decorations_and_joins_resumed_lines() {
        let t = parse(concat!(
            "5983  openat(AT_FDCWD</tmp/s t>, \"a, b\\\"c\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</tmp/s t/a, b\"c>\n",
            "5984  execve(\"/usr/bin/ls\", [\"ls\"], 0x56 /* 35 vars */ <unfinished ...>\n",
            "5985  openat(AT_FDCWD</x>, \"f(1)\", O_RDONLY) = -1 ENOENT (No such file or directory)\n",
            "5984  <... execve resumed>)             = 0\n",
            "5976  kill(5976, SIGTERM)                     = 0\n",
            "5976  +++ exited with 0 +++\n",
            "strace: ptrace(PTRACE_TRACEME, ...): Operation not permitted\n",
        ));
        assert_eq!(t.unread.len(), 1, "{:?}", t.unread);
        assert_eq!(t.calls.len(), 4);
        let open = &t.calls[0];
        assert_eq!(open.name, "openat");
        assert_eq!(open.args.len(), 4);
        assert_eq!(decoration(&open.args[0]).as_deref(), Some("/tmp/s t"));
        assert_eq!(string(&open.args[1]).as_deref(), Some("a, b\"c"));
        assert_eq!(open.ret_path().as_deref(), Some("/tmp/s t/a, b\"c"));
        assert_eq!(open.ret_value(), Some(3));
        let exec = t.calls.iter().find(|c| c.name == "execve").unwrap();
        assert_eq!(exec.pid, 5984);
        assert_eq!(string(&exec.args[0]).as_deref(), Some("/usr/bin/ls"));
        assert_eq!(exec.ret, "0");
        assert!(t.calls.iter().any(|c| c.failed() && c.name == "openat"));
    }
}
