//! How shells and interpreters take their program: inline (`-c`, `-e`), from a script file, or
//! from standard input. The cross-command rules (downloads piped or saved and then run, here-
//! documents fed to a shell) and the per-command rules both read invocations through here.

use super::tables::{self, base_name};
use super::wrappers;
use crate::harness::shell::Word;

/// What a command reads from standard input when it reads a program there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Program {
    Shell,
    Code,
}

/// Does this command read a program from standard input (`sh`, `bash -s`, `python -`, `perl`)?
pub(crate) fn stdin_program(name: &Word, args: &[Word]) -> Option<Program> {
    if name.dynamic {
        return None;
    }
    let key = base_name(&name.value);
    // `bash /dev/stdin`, `. /dev/stdin`: a script file that is the standard input.
    let is_stdin =
        |w: &Word| ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"].contains(&w.value.as_str());
    if tables::SHELLS.contains(&key) {
        let shell = ShellArgs::parse(args);
        let script_is_stdin = shell.script.is_none_or(is_stdin);
        return (shell.command.is_none() && (script_is_stdin || shell.stdin))
            .then_some(Program::Shell);
    }
    if key == "source" || key == "." {
        return args.first().filter(|w| is_stdin(w)).map(|_| Program::Shell);
    }
    if key == "sudo" || key == "doas" || key == "xargs" {
        // `curl … | sudo bash`, `… | xargs sh`: look through the runner.
        let inner = args.iter().position(|a| !a.value.starts_with('-'))?;
        return stdin_program(&args[inner], &args[inner + 1..]);
    }
    if tables::WRAPPERS.contains(&key) {
        // `… | nice sh`, `… | timeout 60 bash`, `… | env X=1 python3`.
        let inner = wrappers::wrapped_index(key, args)?;
        return stdin_program(&args[inner], &args[inner + 1..]);
    }
    if let Some(flags) = tables::interpreter(key) {
        let code = Interp::parse(key, flags, args);
        let from_stdin = (code.inline.is_empty()
            && code.module.is_none()
            && code.operands.first().is_none_or(|o| o.value == "-"))
            || super::scripts::runs_stdin(&code.inline.join("\n"));
        return from_stdin.then_some(Program::Code);
    }
    None
}

/// How a shell was invoked.
pub(crate) struct ShellArgs<'a> {
    /// `-c STRING`
    pub command: Option<&'a Word>,
    /// A script file operand.
    pub script: Option<&'a Word>,
    /// `-s`: read commands from standard input.
    pub stdin: bool,
}

impl<'a> ShellArgs<'a> {
    pub fn parse(args: &'a [Word]) -> Self {
        let mut out = ShellArgs {
            command: None,
            script: None,
            stdin: false,
        };
        let mut c_flag = false;
        let mut i = 0;
        while i < args.len() {
            let v = args[i].value.as_str();
            i += 1;
            if v == "--" || v == "-" {
                if v == "-" {
                    out.stdin = true;
                }
                break;
            }
            if ["-o", "+o", "-O", "+O", "--rcfile", "--init-file"].contains(&v) {
                i += 1;
                continue;
            }
            if v.starts_with("--") {
                continue;
            }
            if (v.starts_with('-') || v.starts_with('+')) && v.len() > 1 {
                c_flag |= v[1..].contains('c');
                out.stdin |= v[1..].contains('s');
                continue;
            }
            i -= 1;
            break;
        }
        let rest = args.get(i);
        if c_flag {
            out.command = rest;
        } else if !out.stdin {
            out.script = rest;
        }
        out
    }
}

/// How an interpreter was invoked: inline code, a module, operands.
pub(crate) struct Interp<'a> {
    pub inline: Vec<String>,
    pub module: Option<String>,
    pub operands: Vec<&'a Word>,
    pub in_place: bool,
    pub dynamic_code: bool,
}

impl<'a> Interp<'a> {
    pub fn parse(key: &str, flags: &[&str], args: &'a [Word]) -> Self {
        let mut out = Interp {
            inline: Vec::new(),
            module: None,
            operands: Vec::new(),
            in_place: false,
            dynamic_code: false,
        };
        let single_letters: Vec<char> = flags
            .iter()
            .filter_map(|f| {
                f.strip_prefix('-')
                    .filter(|r| r.len() == 1)
                    .and_then(|r| r.chars().next())
            })
            .collect();
        let mut i = 0;
        let mut code_next = false;
        while i < args.len() {
            let a = &args[i];
            let v = a.value.as_str();
            i += 1;
            if code_next {
                out.dynamic_code |= a.dynamic;
                out.inline.push(v.to_string());
                code_next = false;
                continue;
            }
            if flags.contains(&v) {
                code_next = true;
                continue;
            }
            if let Some(f) = flags
                .iter()
                .find(|f| f.starts_with("--") && v.starts_with(&format!("{f}=")))
            {
                out.inline.push(v[f.len() + 1..].to_string());
                out.dynamic_code |= a.dynamic;
                continue;
            }
            if v == "-m" && tables::is_python(key) {
                out.module = args.get(i).map(|m| m.value.clone());
                break;
            }
            if v.starts_with('-') && !v.starts_with("--") && v.len() > 1 {
                let cluster = &v[1..];
                if key == "perl" && (cluster.starts_with(['M', 'm', 'I'])) {
                    // -Mmodule, -Idir: the rest of the word is a name, not flags.
                    if cluster.len() == 1 {
                        i += 1;
                    }
                    continue;
                }
                if key == "perl" && cluster.contains('i') {
                    out.in_place = true;
                }
                if let Some(pos) = cluster.find(|c| single_letters.contains(&c)) {
                    let rest = &cluster[pos + 1..];
                    if rest.is_empty() {
                        code_next = true;
                    } else {
                        out.inline.push(rest.to_string());
                        out.dynamic_code |= a.dynamic;
                    }
                }
                continue;
            }
            if v.starts_with("--") {
                continue;
            }
            if out.inline.is_empty() && key != "perl" && key != "ruby" {
                // First operand of most interpreters is the program; the rest are its arguments.
                out.operands.push(a);
                out.operands.extend(args[i..].iter());
                break;
            }
            out.operands.push(a);
        }
        out
    }
}
