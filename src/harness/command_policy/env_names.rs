//! Which variable names a command may set without changing what a program runs or writes: an
//! allow-list with a reason per entry for the environment (leading `NAME=v cmd`, `env NAME=v`,
//! `export`), and the narrower question of plain shell variables. A name not on a list is not
//! harmless.

/// Environment names a command may hand to the programs it runs, each with why that cannot make
/// a read-only program write, delete or run something. `POSIXLY_CORRECT` is absent on purpose:
/// it stops GNU option reordering, so `uniq f -c` writes a file named `-c`. `OPTIND` is absent
/// too: bash evaluates its value arithmetically, and a subscript there runs a command.
pub(crate) const HARMLESS_ENV: &[(&str, &str)] = &[
    (
        "LANG",
        "locale: language and character set of messages and text",
    ),
    ("LANGUAGE", "the order of message catalogues to look in"),
    (
        "TZ",
        "the time zone dates are shown in (a zone file is only read)",
    ),
    ("TERM", "the terminal type, looked up read-only in terminfo"),
    ("COLUMNS", "the screen width output is laid out for"),
    ("LINES", "the screen height output is laid out for"),
    ("NO_COLOR", "turns colour off"),
    ("CLICOLOR", "turns colour on or off"),
    ("CLICOLOR_FORCE", "forces colour on"),
    ("FORCE_COLOR", "forces colour on"),
    ("COLORTERM", "says the terminal has true colour"),
    (
        "RUST_BACKTRACE",
        "how much of a Rust panic's stack is printed",
    ),
    ("RUST_LOG", "how much a Rust program logs to stderr"),
    ("CARGO_TERM_COLOR", "cargo's colour choice"),
    ("PYTHONUNBUFFERED", "Python writes stdout without buffering"),
    (
        "PYTHONDONTWRITEBYTECODE",
        "Python writes fewer files (no .pyc)",
    ),
    ("CI", "tools print for a log instead of a terminal"),
    (
        "DEBIAN_FRONTEND",
        "how Debian tools ask questions, not what they do",
    ),
    ("GREP_COLOR", "grep's match colour"),
    ("GREP_COLORS", "grep's colours"),
    ("LS_COLORS", "ls's colours"),
    ("TIME_STYLE", "how ls and du print times"),
    (
        "OPTARG",
        "set by getopts for the script; no program reads it",
    ),
    (
        "REPLY",
        "set by read and select for the script; no program reads it",
    ),
];

/// Name prefixes harmless in the environment, with their reasons.
const HARMLESS_ENV_PREFIXES: &[(&str, &str)] = &[(
    "LC_",
    "locale categories: collation, number and date formats, character classes",
)];

/// Lower-case shell variables that bash itself reads as settings, not data.
const SHELL_SETTINGS: &[&str] = &[
    // The history characters: `histchars=@` makes `@@` re-run an earlier line.
    "histchars",
];

/// Lower-case names that programs read from the environment.
const PROXY_ENV: &[&str] = &[
    "http_proxy",
    "https_proxy",
    "ftp_proxy",
    "all_proxy",
    "no_proxy",
];

/// Why `name` may be handed to a program in its environment; `None` when it may not.
pub(crate) fn harmless_env_reason(name: &str) -> Option<&'static str> {
    let base = name.split('[').next().unwrap_or(name);
    HARMLESS_ENV
        .iter()
        .find(|(n, _)| *n == base)
        .or_else(|| {
            HARMLESS_ENV_PREFIXES
                .iter()
                .find(|(p, _)| base.len() > p.len() && base.starts_with(p))
        })
        .map(|(_, why)| *why)
}

/// May a command hand the variable `name` to the programs it runs (`NAME=v cmd`, `env`,
/// `export`)?
pub(crate) fn harmless_env(name: &str) -> bool {
    harmless_env_reason(name).is_some()
}

/// Names whose value is bash's own locale: set in the shell (not only for one program), they
/// change how bash reads the lines after them.
const SHELL_LOCALE: &[&str] = &["LANG", "LC_ALL", "LC_CTYPE"];

/// May the shell itself take `value` as its locale for `name`? Any name but the three that set
/// bash's character set may. For those, only a character set in which bash splits words as it
/// does in UTF-8: C, POSIX, or UTF-8 itself. In BIG5, GBK or Shift JIS the second byte of a
/// character can be a backslash or a quote, and bash, rereading the next line in that locale,
/// ends a string where a UTF-8 reader does not (`LC_ALL=zh_TW.BIG5⏎echo "両\" ; touch m # "`).
pub(crate) fn harmless_shell_locale(name: &str, value: Option<&str>) -> bool {
    if !SHELL_LOCALE.contains(&name) {
        return true;
    }
    let Some(v) = value else { return false };
    let lower = v.to_ascii_lowercase();
    matches!(lower.as_str(), "" | "c" | "posix")
        || lower.ends_with(".utf-8")
        || lower.ends_with(".utf8")
}

/// May a command set the shell variable `name` without exporting it (`x=1`, `local x`,
/// `getopts a x`)? A harmless environment name, or a lower-case name bash gives no meaning to
/// (a program never sees it unless it is exported, which is judged by [`harmless_env`]).
pub(crate) fn harmless_shell_variable(name: &str) -> bool {
    let base = name.split('[').next().unwrap_or(name);
    if harmless_env(base) {
        return true;
    }
    let lower = base
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    lower && !base.is_empty() && !PROXY_ENV.contains(&base) && !SHELL_SETTINGS.contains(&base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_utf8_or_c_locale_may_be_bashs_own() {
        for (name, value, ok) in [
            ("LC_ALL", Some("C"), true),
            ("LANG", Some("en_US.UTF-8"), true),
            ("LC_CTYPE", Some("de_DE.utf8"), true),
            ("LC_ALL", Some(""), true),
            ("LC_ALL", Some("zh_TW.BIG5"), false),
            ("LANG", Some("zh_TW"), false),
            ("LANG", Some("ja_JP.SJIS"), false),
            ("LC_CTYPE", None, false),
            ("LC_COLLATE", Some("zh_TW.BIG5"), true),
            ("x", None, true),
        ] {
            assert_eq!(harmless_shell_locale(name, value), ok, "{name}={value:?}");
        }
    }

    #[test]
    fn every_entry_has_a_reason_and_appears_once() {
        for (i, (name, why)) in HARMLESS_ENV.iter().enumerate() {
            assert!(!why.trim().is_empty(), "{name} has no reason");
            assert!(
                !HARMLESS_ENV[i + 1..].iter().any(|(n, _)| n == name),
                "{name} is listed twice"
            );
        }
    }

    #[test]
    fn only_listed_names_are_harmless_in_the_environment() {
        for name in ["LANG", "LC_ALL", "LC_COLLATE", "TZ", "NO_COLOR"] {
            assert!(harmless_env(name), "{name}");
        }
        for name in [
            "POSIXLY_CORRECT",
            "OPTIND",
            "PATH",
            "LD_PRELOAD",
            "BASH_ENV",
            "LC_",
            "foo",
            "http_proxy",
            "histchars",
        ] {
            assert!(!harmless_env(name), "{name}");
        }
    }

    #[test]
    fn plain_shell_variables_are_lower_case_names_bash_does_not_read() {
        for name in ["x", "files", "i", "LC_ALL", "REPLY"] {
            assert!(harmless_shell_variable(name), "{name}");
        }
        for name in [
            "histchars",
            "OPTIND",
            "POSIXLY_CORRECT",
            "IFS",
            "PS4",
            "https_proxy",
            "",
        ] {
            assert!(!harmless_shell_variable(name), "{name}");
        }
    }
}
