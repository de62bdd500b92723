//! Commands that run other code: wrappers (`env`, `timeout`, `xargs`, …), shells, awk and
//! interpreters. Each is at least SHELL_COMPLEX, and what it runs is classified too, so the
//! class is the more severe of the two.

use super::assessment::CommandClass::{ShellComplex, WorkspaceMutating};
use super::classify::{Cx, WriteKind};
use super::env_args::{EnvArgs, EnvRun};
use super::invocations::{Interp, ShellArgs};
use super::options::{self, OptionSyntax};
use super::scripts;
use super::tables;
use crate::harness::shell::Word;

/// awk options that take a value and only shape the reading.
const AWK_VALUES: &[&str] = &[
    "-F",
    "--field-separator",
    "-v",
    "--assign",
    "-e",
    "--source",
];
/// awk options that load program code from a file.
const AWK_CODE_FILES: &[&str] = &[
    "-f",
    "--file",
    "-i",
    "--include",
    "-l",
    "--load",
    "-E",
    "--exec",
];

impl Cx<'_> {
    pub(crate) fn shell(&mut self, key: &str, args: &[Word]) {
        let shell = ShellArgs::parse(args);
        if let Some(cmd) = shell.command {
            self.raise(ShellComplex, format!("`{key} -c` runs a nested shell"));
            if cmd.is_static() && key != "fish" && key != "csh" && key != "tcsh" {
                self.nested_script(&cmd.value.clone());
            } else {
                self.raise(
                    ShellComplex,
                    format!("`{key} -c` runs `{}`, a script Spear cannot read", cmd.raw),
                );
            }
        } else if let Some(script) = shell.script {
            self.raise(
                ShellComplex,
                format!("`{key}` runs the script `{}`", script.raw),
            );
        } else {
            self.raise(
                ShellComplex,
                format!("`{key}` runs commands from its standard input"),
            );
        }
    }

    pub(crate) fn awk(&mut self, key: &str, args: &[Word]) {
        let with_value: Vec<&str> = AWK_VALUES.iter().chain(AWK_CODE_FILES).copied().collect();
        let parsed = options::parse(args, OptionSyntax::gnu(&with_value));
        for bad in AWK_CODE_FILES {
            if parsed.has(bad) {
                self.raise(
                    ShellComplex,
                    format!("`{key} {bad}` runs or loads program code from a file"),
                );
                return;
            }
        }
        let program = parsed
            .value_of("-e")
            .or_else(|| parsed.value_of("--source"))
            .map(str::to_string)
            .or_else(|| parsed.operands.first().map(|w| w.value.clone()));
        let Some(program) = program else {
            self.raise(ShellComplex, format!("`{key}` without a program"));
            return;
        };
        let facts = scripts::awk_program(&program);
        if facts.executes {
            self.raise(ShellComplex, format!("the `{key}` program runs commands (`system`, pipes or `getline` from a command)"));
            for p in scripts::mentioned_paths(&program) {
                self.write_target(
                    &Word::literal(&p),
                    &format!("the `{key}` program"),
                    WriteKind::Mentioned,
                );
            }
        }
        for w in &facts.writes {
            self.write_target(
                &Word::literal(w),
                &format!("the `{key}` program"),
                WriteKind::Plain,
            );
        }
        if facts.dynamic_write {
            self.raise(
                ShellComplex,
                format!("the `{key}` program writes to a file named at run time"),
            );
        }
        if args.iter().any(|a| a.dynamic) {
            self.raise(
                ShellComplex,
                format!("`{key}` has arguments known only at run time"),
            );
        }
    }

    pub(crate) fn interpreter(&mut self, key: &str, args: &[Word]) {
        let flags = tables::interpreter(key).unwrap_or(&[]);
        let call = Interp::parse(key, flags, args);
        if let Some(module) = &call.module {
            let test_runners = [
                "pytest",
                "unittest",
                "doctest",
                "tox",
                "nox",
                "mypy",
                "black",
                "ruff",
                "pylint",
                "flake8",
                "coverage",
                "compileall",
                "pip",
                "venv",
                "build",
                "py_compile",
            ];
            if test_runners.contains(&module.as_str()) {
                self.raise(
                    WorkspaceMutating,
                    format!("`{key} -m {module}` runs the project's tools, which can change the workspace"),
                );
            } else {
                self.raise(
                    ShellComplex,
                    format!("`{key} -m {module}` runs the module `{module}`"),
                );
            }
            return;
        }
        if call.inline.is_empty() {
            match call.operands.first() {
                Some(script) if script.value != "-" => self.raise(
                    ShellComplex,
                    format!("`{key}` runs the program `{}`", script.raw),
                ),
                _ => self.raise(
                    ShellComplex,
                    format!("`{key}` runs a program from its standard input"),
                ),
            }
            return;
        }
        let code = call.inline.join("\n");
        let flag = flags.first().copied().unwrap_or("-e");
        self.raise(ShellComplex, format!("`{key} {flag}` runs inline code"));
        if call.dynamic_code {
            self.raise(
                ShellComplex,
                format!("the inline `{key}` code is known only at run time"),
            );
        }
        // A program that deletes (`shutil.rmtree`, `fs.rmSync`, `FileUtils.rm_rf`) acts
        // recursively on the paths it names, as `rm -r` would: `/` or `~` there is DANGEROUS.
        let kind = if scripts::deletes(&code) {
            WriteKind::Recursive
        } else {
            WriteKind::Mentioned
        };
        for p in scripts::mentioned_paths(&code) {
            self.write_target(
                &Word::literal(&p),
                &format!("the inline `{key}` program"),
                kind,
            );
        }
        if call.in_place {
            for f in &call.operands {
                self.write_target(f, &format!("`{key} -i`"), WriteKind::Plain);
            }
        }
    }

    pub(crate) fn wrapper(&mut self, key: &str, args: &[Word]) {
        match key {
            "env" => return self.env(args),
            "xargs" => return self.xargs(args),
            "flock" => return self.flock(args),
            "watch" => return self.watch(args),
            "time" => {
                let parsed = options::parse(args, OptionSyntax::gnu(TIME_VALUES));
                if let Some(out) = parsed
                    .value_of("-o")
                    .or_else(|| parsed.value_of("--output"))
                {
                    self.write_target(&Word::literal(out), "`time -o`", WriteKind::Plain);
                }
                // `time` is a shell keyword: it adds nothing of its own to the class. But options
                // it cannot read leave what it runs unknown.
                match wrapped_index(key, args) {
                    Some(i) => self.wrapped(&args[i..]),
                    None if !args.is_empty() => self.raise(
                        ShellComplex,
                        "`time` is given options that leave what it runs unknown",
                    ),
                    None => {}
                }
                return;
            }
            "script" => {
                // `script -qc 'cmd' log` runs `cmd` with a shell; without -c, an interactive one.
                self.raise(ShellComplex, "`script` runs a shell");
                let parsed = options::parse(args, OptionSyntax::gnu(SCRIPT_VALUES));
                if let Some(cmd) = parsed
                    .value_of("-c")
                    .or_else(|| parsed.value_of("--command"))
                {
                    self.nested_script(cmd);
                }
                return;
            }
            "strace" | "ltrace" => {
                let values = if key == "strace" {
                    STRACE_VALUES
                } else {
                    LTRACE_VALUES
                };
                let parsed = options::parse(args, OptionSyntax::gnu(values));
                if let Some(out) = parsed.value_of("-o") {
                    self.write_target(
                        &Word::literal(out),
                        &format!("`{key} -o`"),
                        WriteKind::Plain,
                    );
                }
            }
            _ => {}
        }
        if key == "command"
            && args
                .iter()
                .take_while(|a| a.value.starts_with('-'))
                .any(|a| a.value.contains(['v', 'V']))
        {
            // `command -v x` only looks a name up.
            return;
        }
        let inner = wrapped_index(key, args);
        if key == "exec" && args.is_empty() {
            // `exec 3>file`: only redirections, which are judged on their own.
            return;
        }
        self.raise(ShellComplex, format!("`{key}` runs another command"));
        if let Some(i) = inner {
            self.wrapped(&args[i..]);
        }
    }

    fn env(&mut self, args: &[Word]) {
        let parsed = EnvArgs::parse(args);
        for name in &parsed.assignments {
            self.assignment_name(name, "`env` sets");
        }
        match parsed.run {
            EnvRun::Dynamic(w) => self.raise(
                ShellComplex,
                format!("`env` takes `{}`, known only at run time", w.raw),
            ),
            EnvRun::SplitString(script) => {
                self.raise(ShellComplex, "`env -S` splits a string into a command line");
                if let Some(s) = script {
                    self.nested_script(&s);
                }
            }
            EnvRun::Command(i) => {
                self.raise(ShellComplex, "`env` runs another command");
                self.wrapped(&args[i..]);
            }
            EnvRun::Unreadable(option) => self.raise(
                ShellComplex,
                format!("`env` is given `{option}`, which leaves what it runs unknown"),
            ),
            EnvRun::Nothing => {}
        }
    }

    fn xargs(&mut self, args: &[Word]) {
        self.raise(
            ShellComplex,
            "`xargs` runs a command with arguments read from its input",
        );
        if let Some(i) = wrapped_index("xargs", args) {
            self.wrapped(&args[i..]);
        }
    }

    fn flock(&mut self, args: &[Word]) {
        self.raise(ShellComplex, "`flock` runs another command");
        let parsed = options::parse(
            args,
            OptionSyntax::gnu(&[
                "-w",
                "--wait",
                "--timeout",
                "-E",
                "--conflict-exit-code",
                "-c",
                "--command",
            ]),
        );
        if let Some(cmd) = parsed
            .value_of("-c")
            .or_else(|| parsed.value_of("--command"))
        {
            self.nested_script(cmd);
            return;
        }
        if let Some(i) = wrapped_index("flock", args) {
            self.wrapped(&args[i..]);
        }
    }

    fn watch(&mut self, args: &[Word]) {
        self.raise(ShellComplex, "`watch` runs a command repeatedly");
        let exec = args.iter().any(|a| a.value == "-x" || a.value == "--exec");
        let i = skip_options(args, WATCH_VALUES).unwrap_or(args.len());
        if exec {
            self.wrapped(&args[i..]);
        } else if args[i..].iter().all(Word::is_static) && i < args.len() {
            let script = args[i..]
                .iter()
                .map(|a| a.value.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            self.nested_script(&script);
        }
    }
}

/// `time` options that take a value (the `-o` file is a write).
const TIME_VALUES: &[&str] = &["-f", "--format", "-o", "--output"];
/// `strace` options that take a value.
const STRACE_VALUES: &[&str] = &[
    "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X", "-U",
];
/// `ltrace` options that take a value.
const LTRACE_VALUES: &[&str] = &[
    "-o", "-e", "-p", "-s", "-u", "-a", "-A", "-D", "-F", "-l", "-n", "-w", "-x",
];
/// `xargs` options that take a value.
const XARGS_VALUES: &[&str] = &[
    "-a",
    "--arg-file",
    "-d",
    "--delimiter",
    "-E",
    "-I",
    "-L",
    "-n",
    "--max-args",
    "-P",
    "--max-procs",
    "-s",
    "--max-chars",
    "--process-slot-var",
    "-e",
    "-i",
    "-l",
];
/// `script` options that take a value.
const SCRIPT_VALUES: &[&str] = &[
    "-c",
    "--command",
    "-E",
    "--echo",
    "-I",
    "--log-in",
    "-O",
    "--log-out",
    "-B",
    "--log-io",
    "-T",
    "--log-timing",
    "-m",
    "--logging-format",
    "-o",
    "--output-limit",
];
/// `flock` options that take a value.
const FLOCK_VALUES: &[&str] = &["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"];
/// `watch` options that take a value.
const WATCH_VALUES: &[&str] = &["-n", "--interval", "-d", "-q", "--equexit"];

/// Where the command a wrapper runs starts in its arguments: `nice -n 5 curl x` gives the index
/// of `curl`. `None` when the wrapper names no command it runs as it stands (`command -v x`,
/// `env -S '…'`, an `env` word known only at run time, `xargs` or `watch` building one).
pub(crate) fn wrapped_index(key: &str, args: &[Word]) -> Option<usize> {
    let inner = match key {
        "env" => match EnvArgs::parse(args).run {
            EnvRun::Command(i) => Some(i),
            _ => None,
        },
        "command" => {
            if args
                .iter()
                .take_while(|a| a.value.starts_with('-'))
                .any(|a| a.value.contains(['v', 'V']))
            {
                return None;
            }
            skip_options(args, &[])
        }
        // bash's exec: `-c`, `-l`, `-a NAME`, which may share a word (`-la NAME`, `-aNAME`).
        "exec" => getopt_operands(args, "cl", "a", &[], &[]),
        "timeout" => skip_options(args, &["-s", "--signal", "-k", "--kill-after"]).map(|i| i + 1),
        "nice" => skip_options(args, &["-n", "--adjustment"]),
        "stdbuf" => skip_options(args, &["-i", "-o", "-e", "--input", "--output", "--error"]),
        "ionice" => skip_options(
            args,
            &[
                "-c",
                "-n",
                "-p",
                "-P",
                "-u",
                "--class",
                "--classdata",
                "--pid",
            ],
        ),
        "chrt" => skip_options(
            args,
            &[
                "-T",
                "-P",
                "-D",
                "--sched-runtime",
                "--sched-period",
                "--sched-deadline",
            ],
        )
        .map(|i| i + 1),
        // Every taskset option is a flag; the mask or CPU list is the first operand.
        "taskset" => skip_options(args, &[]).map(|i| i + 1),
        // faketime [-m] [-f] [--exclude-monotonic] [--date-prog PROG] TIMESTAMP PROGRAM
        "faketime" => skip_options(args, &["--date-prog"]).map(|i| i + 1),
        "torsocks" => skip_options(args, &["-u", "-p", "-a", "-P"]),
        "proxychains" | "proxychains4" => skip_options(args, &["-f"]),
        "xargs" => skip_options(args, XARGS_VALUES),
        "flock" => {
            let parsed = options::parse(args, OptionSyntax::gnu(&["-c", "--command"]));
            if parsed.has("-c") || parsed.has("--command") {
                return None;
            }
            skip_options(args, FLOCK_VALUES).map(|i| i + 1)
        }
        "watch" => {
            let exec = args.iter().any(|a| a.value == "-x" || a.value == "--exec");
            skip_options(args, WATCH_VALUES).filter(|_| exec)
        }
        "script" => None,
        // `coproc NAME { … }` and other compound forms are read by the shell reader.
        "coproc" => {
            let compound = |w: &Word| {
                w.value.starts_with(['{', '('])
                    || ["while", "until", "if", "for", "case", "select"].contains(&w.value.as_str())
            };
            (!args.iter().take(2).any(compound)).then_some(0)
        }
        // GNU time (`\\time`, `/usr/bin/time`): getopt_long "+af:o:pqvV".
        "time" => getopt_operands(
            args,
            "apqvV",
            "fo",
            &[
                "append",
                "portability",
                "quiet",
                "verbose",
                "help",
                "version",
            ],
            &["format", "output"],
        ),
        "strace" => skip_options(args, STRACE_VALUES),
        "ltrace" => skip_options(args, LTRACE_VALUES),
        _ => skip_options(args, &[]),
    };
    inner.filter(|i| *i < args.len())
}

/// The command that finally runs once wrappers are looked through: `time nice curl x` is
/// `curl x`.
pub(crate) fn innermost<'a>(name: &'a Word, args: &'a [Word]) -> (&'a Word, &'a [Word]) {
    let layers = layers(name, args);
    layers.last().copied().unwrap_or((name, args))
}

/// Each command of a wrapper chain, outermost first: `nice env -C d rm x` gives `nice …`,
/// `env …` and `rm x`. Bounded, like the classifier's own unwrapping.
pub(crate) fn layers<'a>(name: &'a Word, args: &'a [Word]) -> Vec<(&'a Word, &'a [Word])> {
    let mut out = vec![(name, args)];
    let (mut name, mut args) = (name, args);
    for _ in 0..32 {
        let key = super::classify::base_name(&name.value);
        if name.dynamic || !tables::WRAPPERS.contains(&key) {
            break;
        }
        let Some(i) = wrapped_index(key, args) else {
            break;
        };
        (name, args) = (&args[i], &args[i + 1..]);
        out.push((name, args));
    }
    out
}

/// Where the operands start for a getopt_long command, read as getopt reads it: short options
/// cluster (`-qf FMT`), a value option takes the rest of its word or the next one, and a long
/// option may be any unique abbreviation (`--f` is `--format`). `None` when an option is not
/// one the command has or an abbreviation is ambiguous: then what the command runs cannot be
/// read.
fn getopt_operands(
    args: &[Word],
    short_flags: &str,
    short_values: &str,
    long_flags: &[&str],
    long_values: &[&str],
) -> Option<usize> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let v = word.value.as_str();
        if word.dynamic || v == "-" {
            // A run-time word is where the command starts as far as can be told; what it runs
            // is judged from there (an expansion in command position is never trusted).
            return Some(i);
        }
        if v == "--" {
            return Some(i + 1);
        }
        if let Some(long) = v.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, a)) => (n, Some(a)),
                None => (long, None),
            };
            let known = long_flags
                .iter()
                .map(|n| (*n, false))
                .chain(long_values.iter().map(|n| (*n, true)));
            let exact = known.clone().find(|(n, _)| *n == name);
            let mut prefixed = known.filter(|(n, _)| n.starts_with(name));
            let takes_value = match (exact, prefixed.next(), prefixed.next()) {
                (Some((_, t)), _, _) | (None, Some((_, t)), None) => t,
                _ => return None,
            };
            i += if takes_value && attached.is_none() {
                2
            } else {
                1
            };
            continue;
        }
        if let Some(cluster) = v.strip_prefix('-').filter(|c| !c.is_empty()) {
            let mut step = 1;
            for (k, c) in cluster.char_indices() {
                if short_values.contains(c) {
                    if k + c.len_utf8() == cluster.len() {
                        step = 2;
                    }
                    break;
                }
                if !short_flags.contains(c) {
                    return None;
                }
            }
            i += step;
            continue;
        }
        return Some(i);
    }
    None
}

/// Index of the first operand after options; options in `with_value` consume the next word.
fn skip_options(args: &[Word], with_value: &[&str]) -> Option<usize> {
    let mut i = 0;
    while i < args.len() {
        let v = args[i].value.as_str();
        if v == "--" {
            return Some(i + 1);
        }
        if !v.starts_with('-') || v == "-" {
            return Some(i);
        }
        // A number after `nice` like `-10` is an option here.
        i += if with_value.contains(&v) { 2 } else { 1 };
    }
    None
}
