//! Commands that run other code: wrappers (`env`, `timeout`, `xargs`, …), shells, awk and
//! interpreters. Each is at least SHELL_COMPLEX, and what it runs is classified too, so the
//! class is the more severe of the two.

use super::assessment::CommandClass::{ReadOnly, ShellComplex, WorkspaceMutating};
use super::awk::{self, ArgFinding, Effect};
use super::classify::{Cx, WriteKind};
use super::env_args::{EnvArgs, EnvRun};
use super::inline_calls;
use super::invocations::{Interp, ShellArgs};
use super::options::{self, OptionSyntax};
use super::scripts;
use super::tables;
use super::wrappers::{
    self, LTRACE_VALUES, SCRIPT_VALUES, STRACE_VALUES, TIME_VALUES, WATCH_VALUES, skip_options,
    wrapped_index,
};
use crate::harness::shell::{Redirect, RedirectKind, Word};

/// GNU parallel options that take a value in the next word.
const PARALLEL_VALUES: &[&str] = &[
    "-j",
    "--jobs",
    "-P",
    "-S",
    "--sshlogin",
    "-N",
    "-n",
    "--max-args",
    "-d",
    "--delimiter",
    "-a",
    "--arg-file",
    "--joblog",
    "--results",
    "--tmpdir",
    "--timeout",
    "-I",
    "--colsep",
];

/// A word as one single-quoted shell word.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

/// The name a word assigns when bash reads it as an assignment before a command: `NAME=…` or
/// `NAME+=…` with the name written unquoted (`"X"=1` is a command name).
fn prefix_assignment(word: &Word) -> Option<&str> {
    let end = word.raw.find('=')?;
    let name = word.raw[..end]
        .strip_suffix('+')
        .unwrap_or(&word.raw[..end]);
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

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

    /// awk: every program any dialect would run is parsed (`awk/`), and each side effect it
    /// finds, and each option that loads code or writes a file, is judged on its own.
    pub(crate) fn awk(&mut self, key: &str, args: &[Word]) {
        let call = awk::Invocation::read(args);
        let mut code_files = false;
        let mut dynamic = false;
        for finding in &call.findings {
            match finding {
                ArgFinding::CodeFile(option) => {
                    code_files = true;
                    self.raise(
                        ShellComplex,
                        format!("`{key} {option}` runs or loads program code from a file"),
                    );
                }
                ArgFinding::Writes(option, file) => self.write_target(
                    &Word::literal(file),
                    &format!("`{key} {option}`"),
                    WriteKind::Plain,
                ),
                ArgFinding::Unknown(option) => self.raise(
                    ShellComplex,
                    format!(
                        "`{key}` is given `{option}`, which Spear does not know to be harmless in gawk, mawk and busybox awk"
                    ),
                ),
                ArgFinding::Network(name) => self.network_device(&Word::literal(name)),
                ArgFinding::Dynamic(_) => dynamic = true,
                ArgFinding::Debugger => self.raise(
                    ShellComplex,
                    format!("`{key} -D` runs gawk's debugger, which takes commands"),
                ),
            }
        }
        if dynamic {
            self.raise(
                ShellComplex,
                format!("`{key}` has arguments known only at run time"),
            );
        }
        if call.programs.is_empty() && !code_files {
            self.raise(ShellComplex, format!("`{key}` without a program"));
        }
        for program in &call.programs {
            let facts = awk::program(program);
            for effect in &facts.effects {
                self.awk_effect(key, effect);
            }
            if let Some(why) = &facts.not_understood {
                self.raise(
                    ShellComplex,
                    format!("Spear cannot read the `{key}` program completely: {why}"),
                );
            }
        }
    }

    fn awk_effect(&mut self, key: &str, effect: &Effect) {
        let who = format!("the `{key}` program");
        match effect {
            Effect::Runs {
                how,
                command: Some(command),
            } => {
                self.raise(ShellComplex, format!("{who} runs `{command}` ({how})"));
                // The command is judged as if written directly: `system("rm -rf /")`.
                self.nested_script(command);
            }
            Effect::Runs { how, command: None } => self.raise(
                ShellComplex,
                format!("{who} runs a command made at run time ({how})"),
            ),
            // awk opens `print > "f"` as the shell opens `> f`, and gawk and mawk write
            // `/dev/stderr` and `/dev/stdout` to their own descriptors: a redirection's rules.
            Effect::Writes(file) => {
                // The program opens the file itself, as a `>` of its own would.
                let r = Redirect {
                    kind: RedirectKind::Output,
                    fd: None,
                    target: Some(Word::literal(file)),
                };
                self.redirect_target(&r, &who, None)
            }
            Effect::WritesAtRunTime => self.raise(
                ShellComplex,
                format!("{who} writes to a file named at run time"),
            ),
            Effect::ReadsAtRunTime => self.raise(
                ShellComplex,
                format!(
                    "{who} reads a file named at run time (`getline <`), which gawk opens as a network connection when it is `/inet/…`"
                ),
            ),
            Effect::ChangesArgv => self.raise(
                ShellComplex,
                format!(
                    "{who} changes `ARGV`, so the files it reads are named at run time (gawk opens `/inet/…` as a network connection)"
                ),
            ),
            Effect::Loads(what) => self.raise(
                ShellComplex,
                format!("{who}'s `{what}` loads code Spear cannot read"),
            ),
            Effect::IndirectCall(name) => self.raise(
                ShellComplex,
                format!("{who} calls `@{name}(…)`, a function chosen at run time, which can be `system`"),
            ),
            Effect::Network { name, opened: true } => {
                self.network_device(&Word::literal(name));
            }
            Effect::Network {
                name,
                opened: false,
            } => {
                self.a.network = true;
                self.raise(
                    ShellComplex,
                    format!("{who} names `{name}`, a gawk network special file"),
                );
            }
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
        // A command the program hands to the system with literal arguments is judged as if
        // written directly (`os.system("rm -rf /")` is `rm -rf /`).
        for line in inline_calls::shell_commands(&code) {
            self.raise(
                ShellComplex,
                format!("the inline `{key}` program runs `{line}`"),
            );
            self.nested_script(&line);
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
            "parallel" => return self.parallel(args),
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
                    Some(i) => {
                        // After the keyword, `NAME=v` words are the pipeline's prefix
                        // assignments (`time X=/ rm -rf "$X"` is `X=/ rm -rf "$X"`): bash
                        // expands the words before it applies them, so they fix nothing, and
                        // the command is what follows them. (GNU `time` would try to run a
                        // program named `X=/`; judging the rest as the command is the stricter
                        // reading.)
                        let prefix = args[i..]
                            .iter()
                            .take_while(|a| prefix_assignment(a).is_some())
                            .count();
                        if prefix > 0 {
                            // Where `time` is not the keyword (after `|` or `|&`, `\time`), it
                            // is GNU time, which runs a program named `NAME=v` from PATH.
                            self.raise(
                                ShellComplex,
                                "`time NAME=value …` runs a program named `NAME=value` where \
                                 `time` is the program, not the keyword (after `|`, or `\\time`)",
                            );
                        }
                        for a in &args[i..i + prefix] {
                            if let Some(name) = prefix_assignment(a) {
                                self.env_assignment(name, "the command sets");
                            }
                        }
                        if i + prefix < args.len() {
                            self.wrapped(&args[i + prefix..]);
                        }
                    }
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
        let Some(i) = inner else {
            self.raise(ShellComplex, format!("`{key}` runs another command"));
            return;
        };
        let judged = self.apart(|cx| cx.wrapped(&args[i..]));
        let transparent = wrappers::transparent_index(key, args) == Some(i);
        if !(transparent && judged.class == ReadOnly) {
            self.raise(ShellComplex, format!("`{key}` runs another command"));
        }
        self.a.absorb(judged);
    }

    fn env(&mut self, args: &[Word]) {
        let parsed = EnvArgs::parse(args);
        for name in &parsed.assignments {
            self.env_assignment(name, "`env` sets");
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

    /// `xargs CMD ARGS` runs `CMD ARGS` with what it reads appended: read-only when `CMD ARGS`
    /// followed by any further arguments, options included, is (`xargs wc -l`, `xargs -0 grep
    /// -l x`), as `CMD ARGS "$x"` would be.
    fn xargs(&mut self, args: &[Word]) {
        const REASON: &str = "`xargs` runs a command with arguments read from its input";
        if let Some(i) = wrappers::xargs_appending_index(args) {
            let mut argv = args[i..].to_vec();
            argv.push(Word::filled_at_run_time("{what xargs reads}"));
            let judged = self.apart(|cx| cx.wrapped(&argv));
            if judged.class != ReadOnly {
                self.raise(ShellComplex, REASON);
            }
            self.a.absorb(judged);
            return;
        }
        self.raise(ShellComplex, REASON);
        if let Some(i) = wrapped_index("xargs", args) {
            self.wrapped(&args[i..]);
        }
    }

    /// GNU parallel runs its command template through a shell once per argument, with the
    /// argument quoted and appended, or put where `{}` stands: `parallel rm -rf ::: /` is
    /// `rm -rf /`. Each literal argument after `:::` is judged in its place; arguments read
    /// from files (`::::`) or input leave only the template to judge.
    fn parallel(&mut self, args: &[Word]) {
        self.raise(
            ShellComplex,
            "`parallel` runs a command through a shell for each of its arguments",
        );
        let split = args
            .iter()
            .position(|a| a.value.starts_with(":::"))
            .unwrap_or(args.len());
        let Some(start) = skip_options(&args[..split], PARALLEL_VALUES) else {
            self.raise(
                ShellComplex,
                "`parallel` without a command runs each argument as a command line",
            );
            for a in &args[split..] {
                if !a.value.starts_with(":::") {
                    self.nested_script(&a.value);
                }
            }
            return;
        };
        let template: Vec<&str> = args[start..split].iter().map(|w| w.raw.as_str()).collect();
        let template = template.join(" ");
        let literal = args[split..]
            .iter()
            .filter(|a| !a.value.starts_with(":::"))
            .all(|a| !a.dynamic);
        let from_files = args[split..].iter().any(|a| a.value.starts_with("::::"));
        if !literal || from_files || split == args.len() {
            self.raise(
                ShellComplex,
                "`parallel` takes arguments known only at run time",
            );
            self.nested_script(&template);
            return;
        }
        for a in args[split..].iter().filter(|a| !a.value.starts_with(":::")) {
            let quoted = shell_quote(&a.value);
            let line = if template.contains("{}") {
                template.replace("{}", &quoted)
            } else {
                format!("{template} {quoted}")
            };
            self.nested_script(&line);
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
