//! What `env`'s arguments say: the directory it runs in, the variables it sets, and where the
//! command it runs starts. One reading, for the wrapper rule and the cross-command rules alike.

use crate::harness::shell::Word;

/// What `env` goes on to run.
pub(crate) enum EnvRun<'a> {
    /// The command starting at this index.
    Command(usize),
    /// `-S STRING`: a command line split from one string (its text, when known).
    SplitString(Option<String>),
    /// A word known only at run time, so what follows cannot be read.
    Dynamic(&'a Word),
    /// Nothing: `env` prints the environment.
    Nothing,
    /// An option env does not have, or an ambiguous abbreviation: what follows cannot be read.
    Unreadable(String),
}

/// GNU env's long options without a value (`--block-signal` and its kin take one only after `=`).
const LONG_FLAGS: &[&str] = &[
    "ignore-environment",
    "null",
    "debug",
    "list-signal-handling",
    "block-signal",
    "default-signal",
    "ignore-signal",
    "help",
    "version",
];
/// GNU env's long options that take a value.
const LONG_VALUES: &[&str] = &["unset", "chdir", "split-string"];

pub(crate) struct EnvArgs<'a> {
    /// `-C DIR`, `--chdir=DIR`: where the command runs.
    pub chdir: Option<Word>,
    /// The names of `NAME=value` words.
    pub assignments: Vec<&'a str>,
    pub run: EnvRun<'a>,
}

impl<'a> EnvArgs<'a> {
    /// Read `env`'s arguments as its getopt does: short options may share a word (`-iC /`), and
    /// `-C`, `-u` and `-S` take the rest of the word or the next one.
    pub fn parse(args: &'a [Word]) -> Self {
        let mut out = EnvArgs {
            chdir: None,
            assignments: Vec::new(),
            run: EnvRun::Nothing,
        };
        let value_word = |i: usize, text: &str| {
            let mut w = args[i].clone();
            w.value = text.to_string();
            w
        };
        let mut i = 0;
        while let Some(word) = args.get(i) {
            let v = word.value.as_str();
            if word.dynamic {
                out.run = EnvRun::Dynamic(word);
                return out;
            }
            if let Some(long) = v.strip_prefix("--") {
                let (given, attached) = match long.split_once('=') {
                    Some((n, a)) => (n, Some(a)),
                    None => (long, None),
                };
                // getopt_long takes any unique abbreviation: `--s` is `--split-string`.
                let known = LONG_FLAGS.iter().chain(LONG_VALUES);
                let name = match known.clone().find(|n| **n == given) {
                    Some(n) => *n,
                    None => {
                        let mut matches = known.filter(|n| n.starts_with(given));
                        match (matches.next(), matches.next()) {
                            (Some(n), None) => *n,
                            _ => {
                                out.run = EnvRun::Unreadable(v.to_string());
                                return out;
                            }
                        }
                    }
                };
                let takes_value = LONG_VALUES.contains(&name);
                let value = match attached {
                    Some(a) => Some(value_word(i, a)),
                    None if takes_value => args.get(i + 1).cloned(),
                    None => None,
                };
                i += if takes_value && attached.is_none() {
                    2
                } else {
                    1
                };
                match name {
                    "chdir" => out.chdir = value,
                    "split-string" => {
                        out.run = EnvRun::SplitString(value.map(|w| w.value));
                        return out;
                    }
                    _ => {}
                }
                continue;
            }
            if v == "-" {
                // A lone `-` is `-i`.
                i += 1;
                continue;
            }
            if let Some(flags) = v.strip_prefix('-').filter(|f| !f.is_empty()) {
                let value_at = flags.find(['C', 'u', 'S']);
                let switches = &flags[..value_at.unwrap_or(flags.len())];
                if let Some(bad) = switches.chars().find(|c| !"i0v".contains(*c)) {
                    out.run = EnvRun::Unreadable(format!("-{bad}"));
                    return out;
                }
                match value_at {
                    Some(pos) => {
                        let attached = &flags[pos + 1..];
                        let value = if attached.is_empty() {
                            args.get(i + 1).cloned()
                        } else {
                            Some(value_word(i, attached))
                        };
                        i += if attached.is_empty() { 2 } else { 1 };
                        match flags.as_bytes()[pos] {
                            b'C' => out.chdir = value,
                            b'S' => {
                                out.run = EnvRun::SplitString(value.map(|w| w.value));
                                return out;
                            }
                            _ => {}
                        }
                    }
                    None => i += 1,
                }
                continue;
            }
            if let Some((name, _)) = v.split_once('=') {
                out.assignments.push(name);
                i += 1;
                continue;
            }
            out.run = EnvRun::Command(i);
            return out;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<Word> {
        v.iter().map(|s| Word::literal(s)).collect()
    }

    #[test]
    fn reads_env_as_getopt_does() {
        let a = words(&["-iC", "/", "A=1", "-u", "B", "rm", "-rf", "x"]);
        let e = EnvArgs::parse(&a);
        assert_eq!(e.chdir.map(|w| w.value).as_deref(), Some("/"));
        assert_eq!(e.assignments, ["A"]);
        assert!(matches!(e.run, EnvRun::Command(5)));

        let a = words(&["--chdir=/etc", "--unset=X", "ls"]);
        let e = EnvArgs::parse(&a);
        assert_eq!(e.chdir.map(|w| w.value).as_deref(), Some("/etc"));
        assert!(matches!(e.run, EnvRun::Command(2)));

        let a = words(&["-C/tmp", "ls"]);
        assert_eq!(
            EnvArgs::parse(&a).chdir.map(|w| w.value).as_deref(),
            Some("/tmp")
        );

        let a = words(&["-vS", "rm -rf x"]);
        assert!(matches!(
            EnvArgs::parse(&a).run,
            EnvRun::SplitString(Some(ref s)) if s == "rm -rf x"
        ));
        let a = words(&["--split-string", "ls"]);
        assert!(matches!(
            EnvArgs::parse(&a).run,
            EnvRun::SplitString(Some(_))
        ));
        assert!(matches!(
            EnvArgs::parse(&words(&["-i"])).run,
            EnvRun::Nothing
        ));
        // Abbreviations, as getopt_long takes them; unknown or ambiguous ones are unreadable.
        let a = words(&["--s=rm -rf x"]);
        assert!(matches!(
            EnvArgs::parse(&a).run,
            EnvRun::SplitString(Some(_))
        ));
        let a = words(&["--ch", "/", "ls"]);
        let e = EnvArgs::parse(&a);
        assert_eq!(e.chdir.map(|w| w.value).as_deref(), Some("/"));
        assert!(matches!(e.run, EnvRun::Command(2)));
        assert!(matches!(
            EnvArgs::parse(&words(&["--d", "ls"])).run,
            EnvRun::Unreadable(_)
        ));
        assert!(matches!(
            EnvArgs::parse(&words(&["-x", "ls"])).run,
            EnvRun::Unreadable(_)
        ));
        assert!(matches!(
            EnvArgs::parse(&words(&["-", "ls"])).run,
            EnvRun::Command(1)
        ));
    }
}
