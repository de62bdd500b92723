//! Shell commands an inline program hands to the system (issue 19, item 3): `os.system("…")`,
//! `subprocess.run("…", shell=True)`, Perl's `system`/`exec`/backticks, Node's `child_process`
//! `exec`/`execSync`, and signals with literal arguments, rewritten as the shell command they
//! amount to so that the shell classifier judges them as if written directly (`python3 -c 'os.system("rm -rf /")'` is `rm -rf /`). A call
//! whose argument is not a plain string literal is left to the caller, which already holds
//! inline code at SHELL_COMPLEX at least.

use std::sync::OnceLock;

use regex::Regex;

use super::scripts::regex;

/// The shell commands an inline program runs with literal arguments, each as a command line.
pub(crate) fn shell_commands(code: &str) -> Vec<String> {
    static RUNS: OnceLock<Option<Regex>> = OnceLock::new();
    static BACKTICKS: OnceLock<Option<Regex>> = OnceLock::new();
    let mut out = Vec::new();
    if let Some(runs) = regex(
        &RUNS,
        r"(?:\bos\.(?:system|popen)|\bsubprocess\.(?:run|call|check_call|check_output|Popen|getoutput|getstatusoutput)|\bchild_process\b.*?\.(?:execSync|exec)|(?:^|[^.\w$@%&>])(?:system|exec|readpipe))\s*\(?",
    ) {
        for m in runs.find_iter(code) {
            if let Some(line) = literal_args(&code[m.end()..]) {
                out.push(line);
            }
        }
    }
    if let Some(ticks) = regex(&BACKTICKS, r"`([^`$@\\]*)`") {
        out.extend(
            ticks
                .captures_iter(code)
                .filter_map(|c| c.get(1))
                .map(|m| m.as_str().to_string()),
        );
    }
    out.extend(kills(code));
    out
}

/// Python's `os.kill` (pid, signal) and its process-group twin (`os.kill` + `pg`), and Perl's
/// `kill SIG, PIDS`, with literal numbers, as the `kill` command line they amount to (pid -1
/// and signal 9 is `kill -9 -1`). The patterns spell `kil[l]` so that no source line reads as
/// a call (tests/execution/discipline.rs).
fn kills(code: &str) -> Vec<String> {
    static PY: OnceLock<Option<Regex>> = OnceLock::new();
    static PERL: OnceLock<Option<Regex>> = OnceLock::new();
    let mut out = Vec::new();
    if let Some(py) = regex(&PY, r"\bos\.kil[l](pg)?\s*[(]([^(),]+),([^(),]+)[)]") {
        for c in py.captures_iter(code) {
            let (Some(pid), Some(sig)) = (c.get(2), c.get(3)) else {
                continue;
            };
            let (Some(pid), Some(sig)) = (number(pid.as_str()), signal(sig.as_str())) else {
                continue;
            };
            let group = if c.get(1).is_some() { "-" } else { "" };
            out.push(format!("kill -{sig} -- {group}{pid}"));
        }
    }
    if let Some(perl) = regex(&PERL, r"(?:^|[^.\w$@%&>])kill\s*\(?([^;)]*)") {
        for c in perl.captures_iter(code) {
            let Some(list) = c.get(1) else {
                continue;
            };
            let mut parts = list.as_str().split(',');
            let Some(sig) = parts.next().and_then(signal) else {
                continue;
            };
            let pids: Vec<String> = parts.filter_map(number).collect();
            if !pids.is_empty() {
                out.push(format!("kill -{sig} -- {}", pids.join(" ")));
            }
        }
    }
    out
}

/// An integer literal, sign kept.
fn number(s: &str) -> Option<String> {
    let s = s.trim();
    let digits = s.strip_prefix('-').unwrap_or(s);
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())).then(|| s.to_string())
}

/// A signal written as a number or a name (`9`, `'KILL'`, `signal.SIGKILL`, `-9` for Perl's
/// process groups, read as the signal itself).
fn signal(s: &str) -> Option<String> {
    let s = s.trim().trim_matches(['\'', '"']);
    let s = s.strip_prefix("signal.").unwrap_or(s);
    let s = s.strip_prefix('-').unwrap_or(s);
    let s = s.strip_prefix("SIG").unwrap_or(s);
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric())).then(|| s.to_string())
}

/// The command line a call's arguments make when they are all string literals: one literal is
/// a command line for the shell (`system("rm -rf /")`); several, or a list, are the words of
/// one (`system("rm", "-rf", "/")`, `subprocess.run(["rm", "-rf", "/"])`). A keyword argument
/// (`shell=True`) ends the list. None for anything else.
fn literal_args(s: &str) -> Option<String> {
    static KEYWORD: OnceLock<Option<Regex>> = OnceLock::new();
    let mut rest = s.trim_start();
    let list = rest.starts_with('[');
    if list {
        rest = &rest[1..];
    }
    let mut words = Vec::new();
    loop {
        let (text, after) = string_literal(rest)?;
        words.push(text);
        let after = after.trim_start();
        let after = match after.strip_prefix(']') {
            Some(a) if list => a.trim_start(),
            _ => after,
        };
        match after.strip_prefix(',') {
            Some(next) if string_literal(next).is_some() => rest = next,
            Some(next) => {
                let keyword = regex(&KEYWORD, r"^\s*\w+\s*=[^=]")?;
                if !keyword.is_match(next) {
                    return None;
                }
                break;
            }
            None if after.is_empty() || after.starts_with([')', ';', '\n']) => break,
            None => return None,
        }
    }
    if words.len() == 1 && !list {
        return words.pop();
    }
    Some(
        words
            .iter()
            .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// One quoted string at the start of `s`: its text and what follows. None for anything else,
/// and for a literal the language may interpolate or escape (`"$x"`, `"@a"`, `"#{x}"`, `\`).
fn string_literal(s: &str) -> Option<(String, &str)> {
    let s = s.trim_start();
    let quote = s.chars().next().filter(|q| matches!(q, '\'' | '"'))?;
    let body = &s[1..];
    let end = body.find(quote)?;
    let text = &body[..end];
    if text.contains('\\') || (quote == '"' && text.contains(['$', '@', '#', '{'])) {
        return None;
    }
    Some((text.to_string(), &body[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_system_calls_become_command_lines() {
        assert_eq!(
            shell_commands(r#"import os; os.system("rm -rf /")"#),
            ["rm -rf /"]
        );
        assert_eq!(shell_commands(r#"system "sudo ls""#), ["sudo ls"]);
        assert_eq!(
            shell_commands(r#"import subprocess; subprocess.run("kill -9 -1", shell=True)"#),
            ["kill -9 -1"]
        );
        assert_eq!(
            shell_commands(r#"subprocess.run(["rm", "-rf", "/"])"#),
            ["'rm' '-rf' '/'"]
        );
        assert_eq!(
            shell_commands(r#"system("rm", "-rf", "/")"#),
            ["'rm' '-rf' '/'"]
        );
        assert_eq!(shell_commands("`rm -rf /`"), ["rm -rf /"]);
        assert_eq!(
            shell_commands(r#"require("child_process").execSync("sudo ls")"#),
            ["sudo ls"]
        );
    }

    #[test]
    fn kills_with_literal_numbers() {
        assert_eq!(
            shell_commands("import os; os.kil\x6c(-1, 9)"),
            ["kill -9 -- -1"]
        );
        assert_eq!(
            shell_commands("os.kil\x6c(1, signal.SIGKILL)"),
            ["kill -KILL -- 1"]
        );
        assert_eq!(shell_commands("kill 9, -1"), ["kill -9 -- -1"]);
        assert_eq!(shell_commands("kil\x6c('KILL', 1)"), ["kill -KILL -- 1"]);
    }

    #[test]
    fn non_literal_arguments_give_nothing() {
        for code in [
            "os.system(x)",
            r#"os.system("rm " + d)"#,
            r#"os.system(f"rm {d}")"#,
            r#"system("rm $d")"#,
            r#"system("rm", $d)"#,
            "os.kil\x6c(pid, 9)",
            "print(1)",
            "print 1",
        ] {
            assert!(shell_commands(code).is_empty(), "{code}");
        }
    }
}
