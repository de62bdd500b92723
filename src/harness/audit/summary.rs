//! The executable summary of a command line, as the audit log records it: what runs, with which
//! options and targets, never the content a command carries. Here-document bodies, here-strings,
//! inline programs (`bash -c`, `python3 -c`, `perl -e`, `node -e`, awk and sed scripts, `eval`)
//! and comments are replaced by their size; assignments keep their names and lose their values
//! (leading ones are split off into the names list). The result is then redacted and bounded.
//!
//! Invariant: no byte of a here-document body, a here-string, an inline program, a comment or an
//! assignment value is copied into the summary. The scan is a lexer, not a parse (the classifier
//! does the real parse): where it misjudges a word, it misjudges it towards leaving it out.

use std::ops::Range;

use super::summary_lex::{Kind, Token, lex};
use crate::harness::command_policy::{SHELLS, interpreter};
use crate::harness::secrets::redact_text;

/// Longest command summary kept, in characters; a here-doc is not metadata.
pub const MAX_SUMMARY_CHARS: usize = 1000;

/// At most `MAX_SUMMARY_CHARS` characters, marked when cut.
fn bound(s: &str) -> String {
    match s.char_indices().nth(MAX_SUMMARY_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// What stands where an assignment's value was.
pub const OMITTED_VALUE: &str = "[value]";

/// A command as the audit log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSummary {
    /// The command with content left out, leading assignments removed, redacted, bounded.
    pub summary: String,
    /// The names of the variables the command assigns (leading `NAME=value`, `export NAME=…`,
    /// standalone assignments), never their values.
    pub env: Vec<String>,
}

/// Summarize `command` for the audit log.
pub fn summarize_command(command: &str) -> CommandSummary {
    let tokens = lex(command);
    let mut s = Summarizer {
        src: command,
        tokens: &tokens,
        replacements: Vec::new(),
        env: Vec::new(),
    };
    s.run();
    let mut text = String::with_capacity(command.len().min(4096));
    let mut at = 0;
    for (range, with) in &s.replacements {
        if range.start < at {
            continue;
        }
        text.push_str(&command[at..range.start]);
        text.push_str(with);
        at = range.end;
    }
    text.push_str(&command[at..]);
    CommandSummary {
        summary: bound(&redact_text(text.trim())),
        env: s.env,
    }
}

/// How a command takes its program, if it takes one as an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProgramStyle {
    /// Shells and interpreters: after one of these options (`bash -c P`, `perl -e P`, `node
    /// --eval=P`); a one-letter option may be combined with others (`-ec P`) or attached
    /// (`-cP`).
    Flag(&'static [&'static str]),
    /// awk and sed: the first operand, unless a script file is named (`-f`).
    FirstOperand,
    /// `eval`: every argument is code.
    AllArguments,
}

/// The command's way of taking an inline program: the classifier's own table of shells and
/// interpreters, plus awk, sed and `eval`.
fn program_style(base: &str) -> Option<ProgramStyle> {
    if SHELLS.contains(&base) {
        return Some(ProgramStyle::Flag(&["-c"]));
    }
    if let Some(flags) = interpreter(base) {
        return (!flags.is_empty()).then_some(ProgramStyle::Flag(flags));
    }
    match base {
        "awk" | "gawk" | "mawk" | "nawk" | "sed" | "gsed" => Some(ProgramStyle::FirstOperand),
        "eval" => Some(ProgramStyle::AllArguments),
        _ => None,
    }
}

/// Declaration builtins whose arguments are assignments.
const DECLARATIONS: &[&str] = &["export", "declare", "local", "readonly", "typeset"];

/// Interpreter options that take a separate value (`python3 -W ignore -c …`, `bash -o posix`).
const FLAG_VALUES: &[&str] = &["-W", "-X", "-o", "-O", "-I"];

/// awk/sed options that take a separate value (so the value is not the program).
const FIRST_OPERAND_VALUES: &[&str] = &["-F", "-v", "-l", "--field-separator", "--assign"];

/// What is known of the simple command being read.
#[derive(Debug, Clone, Copy, Default)]
struct CommandState {
    /// The command name has been seen (words before it are assignments).
    named: bool,
    /// It is a declaration builtin: its assignment arguments lose their values.
    declaration: bool,
    /// It takes an inline program, this way.
    style: Option<ProgramStyle>,
    /// The next word is the program (after `-c`, `-e`, …).
    program_next: bool,
    /// The program (or a script file standing for it) has been seen.
    program_seen: bool,
    /// awk/sed named a script file, so its first operand is a data file.
    script_file: bool,
    /// The next word is an option's value.
    skip_value: bool,
}

struct Summarizer<'a> {
    src: &'a str,
    tokens: &'a [Token],
    replacements: Vec<(Range<usize>, String)>,
    env: Vec<String>,
}

impl Summarizer<'_> {
    fn text(&self, t: &Token) -> &str {
        &self.src[t.span.clone()]
    }

    /// Remove a word and the blanks after it (the rest of the text is kept byte for byte).
    fn remove(&mut self, span: Range<usize>) {
        let rest = &self.src.as_bytes()[span.end..];
        let blanks = rest
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        self.replacements
            .push((span.start..span.end + blanks, String::new()));
    }

    fn omit(&mut self, span: Range<usize>, what: &str) {
        let bytes = span.len();
        self.replacements
            .push((span, format!("[{what}: {bytes} bytes]")));
    }

    fn run(&mut self) {
        let mut c = CommandState::default();
        let mut i = 0;
        while i < self.tokens.len() {
            let t = self.tokens[i].clone();
            i += 1;
            match t.kind {
                Kind::Control | Kind::Newline => c = CommandState::default(),
                Kind::Comment => self.replacements.push((t.span, String::new())),
                Kind::HereDocBody => self.omit(t.span, "here-document"),
                Kind::HereString => {
                    if let Some(next) = self.tokens.get(i).filter(|n| n.kind == Kind::Word) {
                        self.omit(next.span.clone(), "here-string");
                        i += 1;
                    }
                }
                // The word after a redirection or `<<` is its target or delimiter: metadata.
                Kind::Redirect | Kind::HereDoc => {
                    if self.tokens.get(i).is_some_and(|n| n.kind == Kind::Word) {
                        i += 1;
                    }
                }
                Kind::Word => {
                    let next_assigns = self
                        .tokens
                        .get(i)
                        .is_some_and(|n| assignment_name(self.text(n)).is_some());
                    self.word(&t, &mut c, next_assigns);
                }
            }
        }
        self.replacements.sort_by_key(|(r, _)| r.start);
    }

    fn word(&mut self, t: &Token, c: &mut CommandState, next_assigns: bool) {
        let word = self.text(t).to_string();
        if !c.named {
            if let Some(name) = assignment_name(&word) {
                // Leading assignments are environment: split off the summary, name kept.
                self.env.push(name.to_string());
                self.remove(t.span.clone());
                return;
            }
            c.named = true;
            let base = command_base(&word);
            if base == "env" && next_assigns {
                // `env A=1 cmd`: `env` and its assignments are environment too.
                c.named = false;
                self.remove(t.span.clone());
                return;
            }
            c.declaration = DECLARATIONS.contains(&base.as_str());
            c.style = program_style(&base);
            return;
        }
        if c.declaration {
            if let Some(name) = assignment_name(&word) {
                self.env.push(name.to_string());
                let eq = word[name.len()..].find('=').unwrap_or(0);
                let value = t.span.start + name.len() + eq + 1..t.span.end;
                self.replacements.push((value, OMITTED_VALUE.to_string()));
            }
            return;
        }
        let Some(style) = c.style.filter(|_| !c.program_seen) else {
            // A wrapper's or runner's command (`sudo -u x bash -c …`, `find -exec sh -c …`):
            // any later word naming an interpreter starts looking for its program.
            if let Some(style) = program_style(&command_base(&word)) {
                *c = CommandState {
                    named: true,
                    style: Some(style),
                    ..CommandState::default()
                };
            }
            return;
        };
        if c.program_next {
            c.program_next = false;
            c.program_seen = true;
            self.omit(t.span.clone(), "program");
            return;
        }
        match style {
            ProgramStyle::AllArguments => self.omit(t.span.clone(), "program"),
            ProgramStyle::Flag(_) if c.skip_value => c.skip_value = false,
            ProgramStyle::Flag(_) if FLAG_VALUES.contains(&word.as_str()) => c.skip_value = true,
            ProgramStyle::Flag(letters) => match self.program_option(t, &word, letters) {
                Some(Some(attached)) => {
                    c.program_seen = true;
                    self.omit(attached, "program");
                }
                Some(None) => c.program_next = true,
                // A script file: what follows are its arguments.
                None if !word.starts_with('-') => c.program_seen = true,
                None => {}
            },
            ProgramStyle::FirstOperand => {
                if c.skip_value {
                    c.skip_value = false;
                    return;
                }
                if word == "-f" || word.starts_with("--file") {
                    c.script_file = true;
                    c.skip_value = word == "-f" || word == "--file";
                    return;
                }
                match self.program_option(t, &word, &["-e", "--expression", "--source"]) {
                    Some(Some(attached)) => {
                        c.script_file = true;
                        self.omit(attached, "program");
                        return;
                    }
                    Some(None) => {
                        c.script_file = true;
                        c.program_next = true;
                        return;
                    }
                    None => {}
                }
                if FIRST_OPERAND_VALUES.contains(&word.as_str()) {
                    c.skip_value = true;
                    return;
                }
                if word.starts_with('-') {
                    return;
                }
                c.program_seen = true;
                if !c.script_file {
                    self.omit(t.span.clone(), "program");
                }
            }
        }
    }

    /// Is `word` an option introducing the program? `Some(None)`: the program is the next word;
    /// `Some(Some(span))`: it is attached (`-cPROGRAM`, `--eval=PROGRAM`).
    fn program_option(
        &self,
        t: &Token,
        word: &str,
        flags: &[&str],
    ) -> Option<Option<Range<usize>>> {
        if flags.contains(&word) {
            return Some(None);
        }
        if let Some(long) = flags
            .iter()
            .find(|f| f.len() > 2 && word.starts_with(&format!("{f}=")))
        {
            return Some(Some(t.span.start + long.len() + 1..t.span.end));
        }
        // One-letter options combine (`-ec`): the program follows the first letter that takes it.
        let letters: Vec<char> = flags
            .iter()
            .filter_map(|f| f.strip_prefix('-').filter(|l| l.len() == 1)?.chars().next())
            .collect();
        let combined = word.strip_prefix('-')?;
        if combined.starts_with('-') || combined.is_empty() {
            return None;
        }
        let at = combined.find(|c| letters.contains(&c))?;
        let after = 1 + at + 1;
        Some((after < word.len()).then(|| t.span.start + after..t.span.end))
    }
}

/// The variable name of a shell assignment word (`NAME=…`, `NAME+=…`, `NAME[i]=…`), if it is one.
pub(crate) fn assignment_name(word: &str) -> Option<&str> {
    let end = word.find(['=', '[', '+'])?;
    let name = &word[..end];
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    let rest = &word[end..];
    let assigns = rest.starts_with('=')
        || rest.starts_with("+=")
        || (rest.starts_with('[') && rest.contains("]="));
    (valid && assigns).then_some(name)
}

/// A command word without quotes, backslashes and directory (enough to recognise the command).
fn command_base(word: &str) -> String {
    let bare: String = word
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    bare.rsplit('/').next().unwrap_or(&bare).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(cmd: &str) -> String {
        summarize_command(cmd).summary
    }

    #[test]
    fn inline_programs_are_left_out() {
        assert_eq!(
            summary("python3 -c 'print(1)' x"),
            "python3 -c [program: 10 bytes] x"
        );
        assert_eq!(summary("bash -ec \"ls\""), "bash -ec [program: 4 bytes]");
        assert_eq!(summary("sh script.sh -c x"), "sh script.sh -c x");
        assert_eq!(
            summary("perl -ne 'print' f"),
            "perl -ne [program: 7 bytes] f"
        );
        assert_eq!(
            summary("awk -F: '{print $1}' /etc/passwd"),
            "awk -F: [program: 12 bytes] /etc/passwd"
        );
        assert_eq!(summary("awk -f prog.awk data"), "awk -f prog.awk data");
        assert_eq!(
            summary("sed -i -e 's/a/b/' f"),
            "sed -i -e [program: 8 bytes] f"
        );
        assert_eq!(summary("node --eval=1+1"), "node --eval=[program: 3 bytes]");
        assert_eq!(
            summary("sudo -u x timeout 5 bash -c 'id' | cat"),
            "sudo -u x timeout 5 bash -c [program: 4 bytes] | cat"
        );
        assert_eq!(
            summary("eval \"$x\" y"),
            "eval [program: 4 bytes] [program: 1 bytes]"
        );
    }

    #[test]
    fn here_documents_and_strings_are_left_out() {
        assert_eq!(
            summary("cat > f <<'EOF'\nbody\nEOF\nls"),
            "cat > f <<'EOF'\n[here-document: 8 bytes]\nls"
        );
        assert_eq!(
            summary("cat <<-E\n\tx\n\tE"),
            "cat <<-E\n[here-document: 5 bytes]"
        );
        assert_eq!(
            summary("cat <<< 'text' > f"),
            "cat <<< [here-string: 6 bytes] > f"
        );
        assert_eq!(summary("ls # note"), "ls");
    }

    #[test]
    fn assignments_keep_their_names_only() {
        let s = summarize_command("A=1 env B=2 make && export C=3 D+=4; E=5");
        assert_eq!(s.summary, "make && export C=[value] D+=[value];");
        assert_eq!(s.env, ["A", "B", "C", "D", "E"]);
        assert_eq!(summary("echo A=1"), "echo A=1");
        assert_eq!(summary("env -i ls"), "env -i ls");
    }
}
