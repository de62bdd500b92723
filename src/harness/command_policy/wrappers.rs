//! Where the command a wrapper runs begins (`nice -n 5 curl x`: at `curl`), and the chain of
//! commands a wrapper line is once looked through. Pure functions of the words, shared by the
//! rules for wrappers, the stdin-program check and the cross-command rules, so none of those
//! imports another to find them.

use super::env_args::{EnvArgs, EnvRun};
use super::options::{self, OptionSyntax};
use super::tables;
use crate::harness::shell::Word;

/// `time` options that take a value (the `-o` file is a write).
pub(super) const TIME_VALUES: &[&str] = &["-f", "--format", "-o", "--output"];
/// `strace` options that take a value.
pub(super) const STRACE_VALUES: &[&str] = &[
    "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X", "-U",
];
/// `ltrace` options that take a value.
pub(super) const LTRACE_VALUES: &[&str] = &[
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
pub(super) const SCRIPT_VALUES: &[&str] = &[
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
pub(super) const WATCH_VALUES: &[&str] = &["-n", "--interval", "-d", "-q", "--equexit"];

/// Where the command a wrapper runs starts in its arguments: `nice -n 5 curl x` gives the index
/// of `curl`. `None` when the wrapper names no command it runs as it stands (`command -v x`,
/// `env -S '…'`, an `env` word known only at run time, `xargs` or `watch` building one).
pub(super) fn wrapped_index(key: &str, args: &[Word]) -> Option<usize> {
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

/// Where the command starts for a wrapper that adds nothing to what it runs but a time limit
/// or a priority (`timeout 10 grep x`, `nice -n 5 ls`), read as its getopt reads it and only
/// when every option it is given is one it has: then the line does what its command does.
/// `None` for any other wrapper, an option it does not have, or no command.
pub(super) fn transparent_index(key: &str, args: &[Word]) -> Option<usize> {
    let inner = match key {
        // GNU timeout: getopt_long "+k:s:v"; then the duration.
        "timeout" => getopt_operands(
            args,
            "v",
            "ks",
            &[
                "foreground",
                "preserve-status",
                "verbose",
                "help",
                "version",
            ],
            &["kill-after", "signal"],
        )
        .map(|i| i + 1),
        // GNU nice: "+n:" (the old `nice -5` form is not read).
        "nice" => getopt_operands(args, "", "n", &["help", "version"], &["adjustment"]),
        _ => None,
    };
    inner.filter(|i| *i < args.len() && !args[..*i].iter().any(|a| a.dynamic))
}

/// Where the command starts for an `xargs` that only appends what it reads to its command's
/// arguments, as GNU xargs's getopt reads it. Only options that change how many arguments go to
/// each run, where they come from or how they are split are read; with `-I`/`-i` (the input
/// put anywhere, also inside a word), `-p`/`-o` (a terminal), `--process-slot-var` (a variable
/// it sets) or any option this list lacks, `None`. A long option may be abbreviated, as getopt
/// allows: these names are xargs's own, so an abbreviation unique here is xargs's option too,
/// or one xargs itself refuses as ambiguous.
pub(super) fn xargs_appending_index(args: &[Word]) -> Option<usize> {
    getopt_operands(
        args,
        "0rtx",
        "adELnPs",
        &["null", "no-run-if-empty", "verbose", "exit", "show-limits"],
        &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-procs",
            "max-chars",
        ],
    )
    .filter(|i| *i < args.len() && !args[..*i].iter().any(|a| a.dynamic))
}

/// The command that finally runs once wrappers are looked through: `time nice curl x` is
/// `curl x`.
pub(super) fn innermost<'a>(name: &'a Word, args: &'a [Word]) -> (&'a Word, &'a [Word]) {
    let layers = layers(name, args);
    layers.last().copied().unwrap_or((name, args))
}

/// Each command of a wrapper chain, outermost first: `nice env -C d rm x` gives `nice …`,
/// `env …` and `rm x`. Bounded, like the classifier's own unwrapping.
pub(super) fn layers<'a>(name: &'a Word, args: &'a [Word]) -> Vec<(&'a Word, &'a [Word])> {
    let mut out = vec![(name, args)];
    let (mut name, mut args) = (name, args);
    for _ in 0..32 {
        let key = tables::base_name(&name.value);
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
pub(super) fn skip_options(args: &[Word], with_value: &[&str]) -> Option<usize> {
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
