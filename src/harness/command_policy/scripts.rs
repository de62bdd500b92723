//! Programs inside arguments: sed scripts and inline interpreter code (awk has `awk/`). Each check
//! answers what the program can do beyond printing (run commands, write files) and which paths
//! it names; anything it cannot read is reported as unknown, which is never print-only.

use std::sync::OnceLock;

use regex::Regex;

/// What a sed script does besides printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SedFacts {
    /// `e` command or `s///e`: runs shell commands.
    pub executes: bool,
    /// `w`/`W` commands and `s///w` targets.
    pub writes: Vec<String>,
    /// Something this reader does not understand.
    pub unknown: Option<String>,
}

impl SedFacts {
    pub fn print_only(&self) -> bool {
        !self.executes && self.writes.is_empty() && self.unknown.is_none()
    }
}

/// Read a sed script command by command (GNU syntax), twice: once with the delimiter ending a
/// regex even inside a bracket expression (GNU sed up to 4.8), once with a bracket expression
/// holding it (`s/.*[/]/CMD/e` runs CMD under GNU sed 4.9 and POSIX 2024). What either reading
/// finds counts, and a script only one of them can read is not understood.
pub(crate) fn sed_script(script: &str) -> SedFacts {
    let plain = sed_reading(script, false);
    let bracketed = sed_reading(script, true);
    let mut writes = plain.writes;
    for w in bracketed.writes {
        if !writes.contains(&w) {
            writes.push(w);
        }
    }
    SedFacts {
        executes: plain.executes || bracketed.executes,
        writes,
        unknown: plain.unknown.or(bracketed.unknown),
    }
}

/// One reading of a sed script; `brackets`: a bracket expression in a regex holds the
/// delimiter.
fn sed_reading(script: &str, brackets: bool) -> SedFacts {
    let mut facts = SedFacts::default();
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    let rest_of_line = |i: &mut usize| -> String {
        let start = *i;
        while *i < s.len() && s[*i] != '\n' {
            *i += 1;
        }
        s[start..*i].iter().collect::<String>().trim().to_string()
    };
    while i < s.len() {
        let c = s[i];
        if c.is_whitespace() || c == ';' {
            i += 1;
            continue;
        }
        // Addresses: numbers, $, /re/ or \cREc, first~step, +N, ~N, separated by one comma.
        let mut addresses = 0;
        loop {
            let before = i;
            if i < s.len() && s[i] == '$' {
                i += 1;
            } else if i < s.len() && (s[i].is_ascii_digit() || s[i] == '+' || s[i] == '~') {
                i += 1;
                while i < s.len() && (s[i].is_ascii_digit() || s[i] == '~') {
                    i += 1;
                }
            } else if i < s.len() && (s[i] == '/' || s[i] == '\\') {
                let delim = if s[i] == '\\' {
                    i += 1;
                    s.get(i).copied().unwrap_or('/')
                } else {
                    '/'
                };
                i += 1;
                match skip_delimited(&s, i, delim, brackets) {
                    Some(next) => i = next,
                    None => {
                        facts.unknown = Some("an unterminated address".into());
                        return facts;
                    }
                }
                while i < s.len() && (s[i] == 'I' || s[i] == 'M') {
                    i += 1;
                }
            }
            if i == before {
                break;
            }
            addresses += 1;
            while i < s.len() && s[i] == ' ' {
                i += 1;
            }
            if addresses < 2 && i < s.len() && s[i] == ',' {
                i += 1;
                continue;
            }
            break;
        }
        while i < s.len() && (s[i] == ' ' || s[i] == '!') {
            i += 1;
        }
        let Some(&cmd) = s.get(i) else { break };
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'p' | 'P' | 'n' | 'N' | 'd' | 'D' | 'h' | 'H' | 'g' | 'G' | 'x'
            | 'z' | 'F' => {}
            'q' | 'Q' | 'l' | 'L' => {
                while i < s.len() && (s[i].is_ascii_digit() || s[i] == ' ') {
                    i += 1;
                }
            }
            // A label (and `v`'s version) is read as GNU sed's `read_label` reads it: blanks
            // before it are skipped, and it ends at whitespace or `;`, so `:a w out` is the
            // label `a` and then a write, and `v 4.2 e id` runs `id`. Ending it at `}` too
            // reads no less than sed does: whatever follows is still read as commands.
            'b' | 't' | 'T' | ':' | 'v' => {
                while i < s.len() && (s[i] == ' ' || s[i] == '\t') {
                    i += 1;
                }
                while i < s.len() && !s[i].is_whitespace() && s[i] != ';' && s[i] != '}' {
                    i += 1;
                }
            }
            '#' | 'a' | 'i' | 'c' | 'r' | 'R' => {
                rest_of_line(&mut i);
            }
            'w' | 'W' => facts.writes.push(rest_of_line(&mut i)),
            'e' => facts.executes = true,
            's' | 'y' => {
                let Some(&delim) = s.get(i) else {
                    facts.unknown = Some(format!("`{cmd}` without its delimiter"));
                    return facts;
                };
                i += 1;
                // The first part of `s` is a regex; `y`'s parts and a replacement are not.
                for part in 0..2 {
                    let regex = cmd == 's' && part == 0;
                    match skip_delimited(&s, i, delim, brackets && regex) {
                        Some(next) => i = next,
                        None => {
                            facts.unknown = Some(format!("an unterminated `{cmd}` command"));
                            return facts;
                        }
                    }
                }
                if cmd == 's' {
                    while i < s.len() {
                        match s[i] {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                            'e' => {
                                facts.executes = true;
                                i += 1;
                            }
                            'w' => {
                                i += 1;
                                facts.writes.push(rest_of_line(&mut i));
                            }
                            _ => break,
                        }
                    }
                }
            }
            other => {
                facts.unknown = Some(format!("the sed command `{other}`"));
                return facts;
            }
        }
    }
    facts
}

/// Index after the closing `delim` starting the scan at `i`, honouring backslash escapes;
/// with `brackets`, a bracket expression (`[/]`, `[]/]`, `[^]/]`, `[[:alpha:]/]`) is skipped
/// whole, as POSIX reads a regex.
fn skip_delimited(s: &[char], mut i: usize, delim: char, brackets: bool) -> Option<usize> {
    while i < s.len() {
        if s[i] == '\\' {
            i += 2;
            continue;
        }
        if brackets && s[i] == '[' {
            i = super::brackets::bracket(s, i + 1).ok()?;
            continue;
        }
        if s[i] == delim {
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

pub(crate) fn regex(
    cell: &'static OnceLock<Option<Regex>>,
    pattern: &str,
) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// Paths an inline program mentions: quoted strings that look like file paths. Inline code can
/// write any of them, so the target policy gets to see each one.
pub(crate) fn mentioned_paths(program: &str) -> Vec<String> {
    static QUOTED: OnceLock<Option<Regex>> = OnceLock::new();
    static PATHLIKE: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(quoted) = regex(&QUOTED, r#"'([^'\n]+)'|"([^"\n]+)"|`([^`\n]+)`"#) else {
        return Vec::new();
    };
    let Some(pathlike) = regex(
        &PATHLIKE,
        r"^(?:[~./]|[\w.-]+/)[^\s]*$|^[\w.-]+\.[A-Za-z0-9]{1,8}$",
    ) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for cap in quoted.captures_iter(program) {
        let Some(m) = cap.get(1).or_else(|| cap.get(2)).or_else(|| cap.get(3)) else {
            continue;
        };
        let s = m.as_str();
        if s.len() > 4096
            || s.contains("://")
            || s.chars().any(char::is_whitespace)
            || s == "."
            || s == ".."
        {
            continue;
        }
        if pathlike.is_match(s) && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    }
    out
}

/// Does inline code call a deletion (`shutil.rmtree`, `os.remove`, `unlink`, `fs.rmSync`,
/// `FileUtils.rm_rf`, `rimraf`, `rm -rf` in a string)?
pub(crate) fn deletes(code: &str) -> bool {
    static DELETES: OnceLock<Option<Regex>> = OnceLock::new();
    regex(
        &DELETES,
        r"\b(rmtree|remove|removedirs|unlink|rmdir|rm_rf|rm_r|rm_f|rmSync|rimraf|shred|remove_dir_all|remove_file|delete_tree)\b|\brm\s+-[a-zA-Z]*[rRf]",
    )
    .is_none_or(|r| r.is_match(code))
}

/// Does inline code run what it reads from its standard input (`exec(sys.stdin.read())`,
/// `eval <STDIN>`, `eval(fs.readFileSync(0))`)? Then it is a program read from standard input.
pub(crate) fn runs_stdin(code: &str) -> bool {
    static EVAL: OnceLock<Option<Regex>> = OnceLock::new();
    static STDIN: OnceLock<Option<Regex>> = OnceLock::new();
    let eval = regex(
        &EVAL,
        r"\b(exec|eval|compile|execfile|Function|instance_eval)\b",
    );
    let stdin = regex(
        &STDIN,
        r"stdin|STDIN|<>|readFileSync\(\s*0|/dev/stdin|/dev/fd/0|\bARGF\b|\binput\(\)",
    );
    eval.is_none_or(|r| r.is_match(code)) && stdin.is_none_or(|r| r.is_match(code))
}

/// The bodies of `$(…)` and backtick substitutions in text that bash expands (an unquoted
/// here-document). Arithmetic `$((…))` is skipped; its own `$(…)` are found inside it.
pub(crate) fn substitutions_in_text(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '$' if chars.get(i + 1) == Some(&'(') && chars.get(i + 2) != Some(&'(') => {
                let start = i + 2;
                let mut depth = 1;
                let mut j = start;
                while j < chars.len() && depth > 0 {
                    match chars[j] {
                        '\\' => j += 1,
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    j += 1;
                }
                let end = if depth == 0 { j - 1 } else { chars.len() };
                out.push(chars[start..end.max(start)].iter().collect());
                i = j;
            }
            '`' => {
                let mut body = String::new();
                let mut j = i + 1;
                while j < chars.len() && chars[j] != '`' {
                    if chars[j] == '\\' && j + 1 < chars.len() && "`\\$".contains(chars[j + 1]) {
                        j += 1;
                    }
                    body.push(chars[j]);
                    j += 1;
                }
                out.push(body);
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bracket_expression_may_hold_the_delimiter() {
        // GNU sed 4.9 reads `[/]` whole; earlier ones end the regex at its `/`. Both count.
        assert!(sed_script("s/.*[/]/id/e").executes);
        assert_eq!(sed_script("s/a[]/]/b/w x").writes, ["x"]);
        assert!(!sed_script("s/[^]/]/b/w x").print_only());
        assert!(sed_script("/[0-9]/p").print_only());
        assert!(sed_script("s/[a-z]*//p").print_only());
        assert!(sed_script("/\\[INFO\\]/p").print_only());
    }

    #[test]
    fn sed_print_only_scripts() {
        for ok in [
            "p",
            "1,5p",
            "/foo/p",
            "$p",
            "10q",
            "/a/,/b/{p;}",
            "s/a/b/p",
            "1~2p",
            "=",
            "s|x|y|g",
            "y/ab/cd/",
        ] {
            assert!(sed_script(ok).print_only(), "{ok}");
        }
        assert!(sed_script("s/a/b/e").executes);
        assert!(sed_script("1e id").executes);
        assert_eq!(sed_script("w out.txt").writes, ["out.txt"]);
        assert_eq!(sed_script("s/a/b/w out").writes, ["out"]);
        assert!(sed_script("k").unknown.is_some());
        assert_eq!(sed_script("v;w out").writes, ["out"]);
        assert!(sed_script("v 4.2;e id").executes);
        assert!(sed_script("v;p").print_only());
        assert!(sed_script("s/a/b").unknown.is_some());
        // Labels and versions end at whitespace (issue 19): what follows is a command.
        assert_eq!(sed_script(":a w out").writes, ["out"]);
        assert_eq!(sed_script(":a\tw out").writes, ["out"]);
        assert_eq!(sed_script("b end w out").writes, ["out"]);
        assert_eq!(sed_script("/x/t  done W log").writes, ["log"]);
        assert!(sed_script("v 4.2 e touch x").executes);
        assert!(sed_script("v;e id").executes);
        assert!(sed_script("T x e").executes);
        assert!(sed_script(":a;N;$!ba;s/\\n/ /g;p").print_only());
        assert!(sed_script(":top\n/x/b top\np").print_only());
        assert!(sed_script("/a/{b skip};p;:skip").print_only());
    }

    #[test]
    fn substitutions_in_expanded_text() {
        assert_eq!(
            substitutions_in_text("a $(id) b `whoami` c \\$(no) $((1+2))"),
            ["id", "whoami"]
        );
        assert_eq!(substitutions_in_text("$(echo $(date))"), ["echo $(date)"]);
    }

    #[test]
    fn deleting_and_stdin_running_code() {
        assert!(deletes("import shutil; shutil.rmtree('/')"));
        assert!(deletes("require('fs').rmSync('x', {recursive: true})"));
        assert!(!deletes("print(open('a.txt').read())"));
        assert!(runs_stdin("import sys; exec(sys.stdin.read())"));
        assert!(runs_stdin("eval join '', <STDIN>"));
        assert!(!runs_stdin("import sys; print(sys.stdin.read())"));
        assert!(!runs_stdin("exec(open('x.py').read())"));
        assert!(!runs_stdin("import sys, json; print(json.load(sys.stdin))"));
    }

    #[test]
    fn inline_program_paths() {
        let p = mentioned_paths("open('generated/x.rs','w').write(\"hi there\"); open(\"a.txt\")");
        assert_eq!(p, ["generated/x.rs", "a.txt"]);
        assert!(mentioned_paths("print('hello world')").is_empty());
        assert!(mentioned_paths("get('https://x.y/z')").is_empty());
    }
}
