//! An awk command line read as gawk, mawk and busybox together would read it: every program
//! any of them runs (each `-e`/`--source`, and the first operand when it stands before them),
//! every option that loads code or writes a file, and every option none of them is known to
//! take only for reading.

use super::effects::network_name;
use crate::harness::shell::Word;

/// Options whose value only shapes the reading (`-F:`, `-v n=1`).
const DATA_VALUES: &[&str] = &["-F", "--field-separator", "-v", "--assign"];
/// Options whose value is program text.
const PROGRAM_VALUES: &[&str] = &["-e", "--source"];
/// Options whose value names code to run or load.
const CODE_VALUES: &[&str] = &[
    "-f",
    "--file",
    "-E",
    "--exec",
    "-i",
    "--include",
    "-l",
    "--load",
];
/// Options without a value that only change how the program reads or prints.
const FLAGS: &[&str] = &[
    "-b",
    "--characters-as-bytes",
    "-c",
    "--traditional",
    "--compat",
    "--copyright",
    "-C",
    "-g",
    "--gen-pot",
    "-h",
    "--help",
    "--usage",
    "-n",
    "--non-decimal-data",
    "-N",
    "--use-lc-numeric",
    "-O",
    "--optimize",
    "-P",
    "--posix",
    "-r",
    "--re-interval",
    "-s",
    "--no-optimize",
    "-S",
    "--sandbox",
    "-t",
    "--lint-old",
    "-V",
    "--version",
    "-M",
    "--bignum",
    "-k",
    "--csv",
];
/// gawk's options whose optional attached value names a file it writes, with the default.
const WRITING: &[(&str, &str, &str)] = &[
    ("-d", "--dump-variables", "awkvars.out"),
    ("-o", "--pretty-print", "awkprof.out"),
    ("-p", "--profile", "awkprof.out"),
];

/// What the command line does besides running its programs on its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgFinding {
    /// `-f prog`, `-E`, `-i`, `-l`, `-W exec`: code from a file.
    CodeFile(String),
    /// `-d`, `-o`, `-p`: gawk writes this file (the option, the file).
    Writes(String, String),
    /// An option Spear does not know to be harmless in every dialect.
    Unknown(String),
    /// An input file gawk opens as a network connection.
    Network(String),
    /// A word known only at run time.
    Dynamic(String),
    /// `-D`: gawk's debugger, which takes commands.
    Debugger,
}

#[derive(Debug, Default)]
pub(crate) struct Invocation {
    /// Every program text some dialect runs.
    pub programs: Vec<String>,
    pub findings: Vec<ArgFinding>,
}

/// The option a long option as written (`--so` for `--source`) names: itself, or the one
/// option it abbreviates; `None` when unknown or ambiguous.
fn long_option(given: &str) -> Option<&'static str> {
    let all: Vec<&'static str> = DATA_VALUES
        .iter()
        .chain(PROGRAM_VALUES)
        .chain(CODE_VALUES)
        .chain(FLAGS)
        .chain(WRITING.iter().map(|(_, long, _)| long))
        .chain(&["--debug", "--lint", "--trace"])
        .copied()
        .filter(|o| o.starts_with("--"))
        .collect();
    if let Some(exact) = all.iter().copied().find(|o| *o == given) {
        return Some(exact);
    }
    let matching: Vec<&'static str> = all.into_iter().filter(|o| o.starts_with(given)).collect();
    match matching[..] {
        [one] => Some(one),
        _ => None,
    }
}

impl Invocation {
    pub fn read(args: &[Word]) -> Self {
        let mut inv = Invocation::default();
        let mut operands: Vec<(usize, &Word)> = Vec::new();
        // Where the first option that supplies the program stood.
        let mut first_program_option: Option<usize> = None;
        // A long option stood before the first operand (see below).
        let mut long_option_seen = false;
        let mut i = 0;
        let mut options_done = false;
        while i < args.len() {
            let at = i;
            let w = &args[i];
            i += 1;
            if w.dynamic {
                inv.findings.push(ArgFinding::Dynamic(w.raw.clone()));
            }
            let v = w.value.as_str();
            if options_done || !v.starts_with('-') || v == "-" {
                operands.push((at, w));
                continue;
            }
            if v == "--" {
                options_done = true;
                continue;
            }
            if v.starts_with("--") && operands.is_empty() {
                long_option_seen = true;
            }
            // The option's full name and its attached value.
            let (name, attached): (String, Option<String>) =
                if let Some(long) = v.strip_prefix("--") {
                    let (n, val) = match long.split_once('=') {
                        Some((n, val)) => (format!("--{n}"), Some(val.to_string())),
                        None => (v.to_string(), None),
                    };
                    match long_option(&n) {
                        Some(full) => (full.to_string(), val),
                        None => {
                            inv.findings.push(ArgFinding::Unknown(n));
                            continue;
                        }
                    }
                } else {
                    // A cluster: flags, then at most one option that takes the rest as its value.
                    let chars: Vec<char> = v[1..].chars().collect();
                    let mut k = 0;
                    let mut last = None;
                    while k < chars.len() {
                        let name = format!("-{}", chars[k]);
                        k += 1;
                        if FLAGS.contains(&name.as_str()) {
                            continue;
                        }
                        let rest: String = chars[k..].iter().collect();
                        last = Some((name, (!rest.is_empty()).then_some(rest)));
                        break;
                    }
                    match last {
                        Some(l) => l,
                        None => continue,
                    }
                };
            let name = name.as_str();
            let takes_value = DATA_VALUES.contains(&name)
                || PROGRAM_VALUES.contains(&name)
                || CODE_VALUES.contains(&name)
                || name == "-W";
            let value = match attached {
                Some(v) => Some(v),
                None if takes_value => {
                    let next = args.get(i);
                    i += usize::from(next.is_some());
                    if let Some(n) = next
                        && n.dynamic
                    {
                        inv.findings.push(ArgFinding::Dynamic(n.raw.clone()));
                    }
                    next.map(|n| n.value.clone())
                }
                None => None,
            };
            if DATA_VALUES.contains(&name) || FLAGS.contains(&name) {
                continue;
            }
            if PROGRAM_VALUES.contains(&name) {
                first_program_option.get_or_insert(at);
                inv.programs.push(value.unwrap_or_default());
            } else if CODE_VALUES.contains(&name) {
                if matches!(name, "-f" | "--file" | "-E" | "--exec") {
                    first_program_option.get_or_insert(at);
                }
                inv.findings.push(ArgFinding::CodeFile(name.to_string()));
            } else if let Some((short, long, default)) =
                WRITING.iter().find(|(s, l, _)| *s == name || *l == name)
            {
                let file = value.unwrap_or_else(|| default.to_string());
                let shown = if name.starts_with("--") { long } else { short };
                inv.findings
                    .push(ArgFinding::Writes(shown.to_string(), file));
            } else if name == "-D" || name == "--debug" {
                inv.findings.push(ArgFinding::Debugger);
            } else if name == "-L" || name == "--lint" || name == "--trace" {
                // Warnings about the program, to standard error.
            } else if name == "-W" {
                // mawk's `-W exec file` and gawk's `-W long-option`: not read here.
                inv.findings.push(ArgFinding::Unknown(format!(
                    "-W {}",
                    value.unwrap_or_default()
                )));
            } else {
                inv.findings.push(ArgFinding::Unknown(name.to_string()));
            }
        }
        // Without a program option, the first operand is the program. With one, it still is
        // for gawk and mawk when it stands before that option: they stop reading options at
        // the first operand, so the later `-e` is a file name to them, and a program to an awk
        // that reads options everywhere. Both are judged. mawk knows no long option: after
        // some (`--posix --source=P prog`) it warns, goes on, and runs the first operand as
        // its program, which gawk reads as a file; so after any long option the first operand
        // is judged as a program too (and still as a file name).
        let mut data = operands.iter();
        if let Some((at, w)) = operands.first() {
            let before_program_option = first_program_option.is_none_or(|p| *at < p);
            if before_program_option || long_option_seen {
                inv.programs.insert(0, w.value.clone());
            }
            if before_program_option {
                data.next();
            }
        }
        for (_, w) in data {
            if network_name(&w.value) {
                inv.findings.push(ArgFinding::Network(w.value.clone()));
            }
        }
        inv
    }
}
