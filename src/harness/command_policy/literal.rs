//! `LiteralArgv`: the decision layer's fact that a command line is exactly one program run with
//! literal words, so the execution layer may start that argv without a shell. The fact says
//! what runs, never why it was allowed. Invariant: it is made only here, from the classifier's
//! own parse, and only when every word's value is the same whether bash or this file reads it;
//! anything bash would expand, glob, redirect, assign or run itself (a builtin or keyword)
//! keeps bash, as does every source the parse read more than once.

use super::profile::LiteralArgv;
use crate::harness::shell::{ShellFacts, Word, literal_text};

/// Bash's builtins and reserved words (`compgen -b -k`, bash 5.2). Bash runs these itself,
/// often differently from a program of the same name (`echo -e`, `pwd -L`, `true --help`), so a
/// command named by one keeps bash. The differential test checks this list against real bash.
#[rustfmt::skip]
pub(crate) const BASH_OWN: &[&str] = &[
    ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen",
    "complete", "compopt", "continue", "declare", "dirs", "disown", "echo", "enable", "eval",
    "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs",
    "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read",
    "readarray", "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test",
    "times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait",
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

/// The argv `source` runs, when its parse (`facts`) shows exactly one simple command of
/// literal words naming a program; `None` keeps bash.
pub(crate) fn literal_argv(source: &str, facts: &ShellFacts) -> Option<LiteralArgv> {
    let cmd = facts.sole_command()?;
    let words: Vec<&Word> = std::iter::once(&cmd.name).chain(&cmd.args).collect();
    if !spelled_by(source, &words) {
        return None;
    }
    let argv = words
        .into_iter()
        .map(literal_value)
        .collect::<Option<Vec<String>>>()?;
    let name = argv.first()?;
    // A name starting `%` is a job to bash (`%1` runs `fg %1`), one starting `-` an option to
    // whatever reads the argv: only names that start as a program's can. A name with a `/` is
    // a file of the workspace more often than not, and one without `#!` is read by bash as a
    // bash script but by the C library's execvp as a /bin/sh one: it keeps bash. Names are
    // looked up on the sandbox's PATH, whose system directories hold programs and scripts that
    // start with `#!`.
    let starts_as_program = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    if !starts_as_program || name.contains('/') || BASH_OWN.contains(&name.as_str()) {
        return None;
    }
    Some(LiteralArgv {
        source: source.to_string(),
        argv,
    })
}

/// Whether `source` is exactly `words`, as written, separated by blanks: no byte of it is
/// something the parse did not make a word of (`$"a"` reads as the word `"a"` and a `$` the
/// command node does not name).
fn spelled_by(source: &str, words: &[&Word]) -> bool {
    let blank = |c: char| c == ' ' || c == '\t';
    let mut rest = source.trim_start_matches(blank);
    for w in words {
        let Some(after) = rest.strip_prefix(w.raw.as_str()) else {
            return false;
        };
        if !(after.is_empty() || after.starts_with(blank)) {
            return false;
        }
        rest = after.trim_start_matches(blank);
    }
    rest.is_empty()
}

/// The value of a word that means the same to bash and to the parse: plain characters,
/// single-quoted text, and double-quoted text in which nothing is special, in any
/// concatenation. The value read here must also be the parse's own, so a word the two read
/// differently keeps bash.
fn literal_value(word: &Word) -> Option<String> {
    if !word.is_static() || word.expands || !word.substitutions.is_empty() {
        return None;
    }
    let value = literal_text(&word.raw)?;
    (value == word.value).then_some(value)
}

#[cfg(test)]
#[path = "literal_tests.rs"]
mod tests;
