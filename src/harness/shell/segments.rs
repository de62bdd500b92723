//! A command line as the segments permission rules match one by one: simple commands of
//! literal words joined by `;`, `&&`, `||`, `|`, `|&` or line breaks, each with its own
//! redirections. Invariant: a source is split only when it is nothing else. Any construct a
//! rule cannot speak for (a subshell, group, loop, branch, function, `!`, `&`, an assignment,
//! a here-document, an expansion, a glob, a substitution anywhere, a parse the facts' walk had
//! to repair) makes the whole source unsplittable, and the caller then asks; it never drops a
//! part it did not understand.

use tree_sitter::Node;

use super::{Budget, parse_tree, parse_within};

/// One simple command of a flat list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The segment as written, its redirections included.
    pub text: String,
    /// Its words after quote removal, the program first.
    pub words: Vec<String>,
    /// The words as written (a bare `*` is the rule grammar's "further arguments").
    pub raw: Vec<String>,
    pub redirects: Vec<SegmentRedirect>,
    /// It reads the output of the command before it in a pipeline.
    pub piped_in: bool,
}

/// A redirection of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRedirect {
    /// The descriptor written before the operator, if any (`2` in `2>`).
    pub fd: Option<String>,
    /// The operator as written (`>`, `>>`, `<`, `&>`, `>&` …).
    pub operator: String,
    /// The target after quote removal.
    pub target: String,
}

impl SegmentRedirect {
    /// A duplication or a close (`2>&1`, `>&-`): no file is opened.
    pub fn duplicates(&self) -> bool {
        matches!(self.operator.as_str(), ">&" | "<&")
            && (self.target == "-" || self.target.chars().all(|c| c.is_ascii_digit()))
    }
}

/// The segments of `source`, or why it has none (the construct a rule cannot speak for).
pub fn segments(source: &str) -> Result<Vec<Segment>, String> {
    segments_of(source, false)
}

/// As [`segments`], with a bare `*` allowed as the last word of a segment (a rule's pattern).
pub fn pattern_segments(source: &str) -> Result<Vec<Segment>, String> {
    segments_of(source, true)
}

fn segments_of(source: &str, star: bool) -> Result<Vec<Segment>, String> {
    let budget = Budget::default();
    let tree = parse_tree(source, &budget).ok_or("the line could not be parsed")?;
    let root = tree.root_node();
    if root.has_error() {
        return Err("the line does not parse cleanly".into());
    }
    let mut walk = Flat {
        src: source,
        star,
        out: Vec::new(),
    };
    walk.statements(root)?;
    if walk.out.is_empty() {
        return Err("the line holds no command".into());
    }
    // The facts' walk repairs what the grammar misreads (a line glued to the one before, a
    // comment that was code, keywords): the split stands only where it saw exactly these
    // commands and nothing else.
    if !star {
        let facts = parse_within(source, &budget);
        let plain = facts.only_commands()
            && facts.commands.len() == walk.out.len()
            && facts
                .commands
                .iter()
                .zip(&walk.out)
                .all(|(c, s)| c.assignments.is_empty() && c.name.value == s.words[0]);
        if !plain {
            return Err("the line holds more than a list of plain commands".into());
        }
    }
    Ok(walk.out)
}

struct Flat<'a> {
    src: &'a str,
    star: bool,
    out: Vec<Segment>,
}

impl Flat<'_> {
    fn text(&self, n: Node) -> &str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    /// The children of a program or a list: statements and their separators.
    fn statements(&mut self, n: Node) -> Result<(), String> {
        let mut cursor = n.walk();
        for c in n.children(&mut cursor) {
            if !c.is_named() {
                match c.kind() {
                    ";" | "&&" | "||" | "\n" => continue,
                    "&" => return Err("it starts a background job".into()),
                    k => return Err(format!("it uses `{k}`")),
                }
            }
            match c.kind() {
                "comment" => {}
                "list" => self.statements(c)?,
                "pipeline" => self.pipeline(c)?,
                "command" => self.command(c, None)?,
                "redirected_statement" => self.redirected(c)?,
                k => return Err(describe(k)),
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, n: Node) -> Result<(), String> {
        let mut cursor = n.walk();
        let first = self.out.len();
        for c in n.children(&mut cursor) {
            match c.kind() {
                "|" | "|&" => {}
                "command" => self.command(c, None)?,
                "redirected_statement" => self.redirected(c)?,
                k => return Err(describe(k)),
            }
        }
        for s in self.out.iter_mut().skip(first + 1) {
            s.piped_in = true;
        }
        Ok(())
    }

    /// `cmd > file`: the grammar wraps a command with trailing redirections.
    fn redirected(&mut self, n: Node) -> Result<(), String> {
        let body = n
            .child_by_field_name("body")
            .filter(|b| b.kind() == "command")
            .ok_or("a redirection applies to more than one command")?;
        self.command(body, Some(n))
    }

    fn command(&mut self, n: Node, outer: Option<Node>) -> Result<(), String> {
        let mut words = Vec::new();
        let mut raw = Vec::new();
        let mut redirects = Vec::new();
        let mut cursor = n.walk();
        for c in n.children(&mut cursor) {
            if !c.is_named() {
                return Err(format!("it uses `{}`", c.kind()));
            }
            match c.kind() {
                "command_name" => {
                    let w = c.named_child(0).ok_or("a command without a name")?;
                    raw.push(self.text(w).to_string());
                    words.push(self.word(w, false)?);
                }
                "variable_assignment" => {
                    return Err("it sets a variable for a command".into());
                }
                k if k.ends_with("_redirect") => redirects.push(self.redirect(c)?),
                _ => {
                    raw.push(self.text(c).to_string());
                    words.push(self.word(c, self.star)?);
                }
            }
        }
        if let Some(outer) = outer {
            let mut cursor = outer.walk();
            for c in outer.children_by_field_name("redirect", &mut cursor) {
                redirects.push(self.redirect(c)?);
            }
        }
        if words.is_empty() {
            return Err("a command without a name".into());
        }
        // Only the last word may be the pattern's star.
        if let Some(i) = raw.iter().position(|w| w == "*")
            && i + 1 != raw.len()
        {
            return Err("`*` stands for further arguments, so it must be the last word".into());
        }
        self.out.push(Segment {
            text: self.text(outer.unwrap_or(n)).to_string(),
            words,
            raw,
            redirects,
            piped_in: false,
        });
        Ok(())
    }

    fn redirect(&self, n: Node) -> Result<SegmentRedirect, String> {
        if n.kind() != "file_redirect" {
            return Err(describe(n.kind()));
        }
        let mut fd = None;
        let mut operator = None;
        let mut target = None;
        let mut cursor = n.walk();
        for c in n.children(&mut cursor) {
            match c.kind() {
                "file_descriptor" => fd = Some(self.text(c).to_string()),
                _ if !c.is_named() => operator = Some(self.text(c).to_string()),
                _ => {
                    if target.is_some() {
                        return Err("a redirection with more than one target".into());
                    }
                    target = Some(self.word(c, false)?);
                }
            }
        }
        Ok(SegmentRedirect {
            fd,
            operator: operator.ok_or("a redirection without an operator")?,
            target: target.ok_or("a redirection without a target")?,
        })
    }

    /// A word's value when bash reads it literally: nothing expands, globs or splits.
    fn word(&self, n: Node, star: bool) -> Result<String, String> {
        let text = self.text(n);
        if star && text == "*" {
            return Ok("*".into());
        }
        match n.kind() {
            "word" | "raw_string" | "string" | "concatenation" | "number" => {}
            k => return Err(format!("a word bash expands ({})", describe_word(k))),
        }
        literal_text(text).ok_or_else(|| format!("`{text}` is not a literal word"))
    }
}

/// The value of a word bash takes literally: plain characters, single-quoted text, and
/// double-quoted text in which nothing is special (the same reading as the classifier's
/// literal argv).
pub fn literal_text(raw: &str) -> Option<String> {
    let quoted_plain = |c: char| c == '\t' || (' '..='~').contains(&c);
    let unquoted_plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c);
    let mut value = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next()? {
                    '\'' => break,
                    q if quoted_plain(q) => value.push(q),
                    _ => return None,
                }
            },
            '"' => loop {
                match chars.next()? {
                    '"' => break,
                    '$' | '`' | '\\' | '!' => return None,
                    q if quoted_plain(q) => value.push(q),
                    _ => return None,
                }
            },
            c if unquoted_plain(c) => value.push(c),
            _ => return None,
        }
    }
    (!value.is_empty() || raw.starts_with(['\'', '"'])).then_some(value)
}

fn describe(kind: &str) -> String {
    match kind {
        "subshell" => "it runs a subshell".into(),
        "compound_statement" => "it groups commands in `{ }`".into(),
        "if_statement" | "case_statement" => "it branches".into(),
        "for_statement" | "c_style_for_statement" | "while_statement" => "it loops".into(),
        "function_definition" => "it defines a function".into(),
        "negated_command" => "it negates a command with `!`".into(),
        "variable_assignment" | "variable_assignments" => "it assigns a variable".into(),
        "declaration_command" | "unset_command" => "it declares or unsets variables".into(),
        "heredoc_redirect" | "herestring_redirect" => "it feeds a command a here-document".into(),
        "test_command" => "it runs a `[[ ]]` test".into(),
        k => format!("it holds a `{k}`, which rules do not speak for"),
    }
}

fn describe_word(kind: &str) -> &'static str {
    match kind {
        "simple_expansion" | "expansion" => "a variable",
        "command_substitution" => "a command substitution",
        "process_substitution" => "a process substitution",
        "arithmetic_expansion" => "arithmetic",
        "brace_expression" => "braces",
        "ansi_c_string" | "translated_string" => "a `$'…'` string",
        _ => "an expansion",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Vec<String>> {
        segments(s).unwrap().into_iter().map(|s| s.words).collect()
    }

    #[test]
    fn a_flat_list_splits_into_its_commands() {
        assert_eq!(
            words("cargo test -p spear && cargo clippy; git diff | tail -n 5"),
            vec![
                vec!["cargo", "test", "-p", "spear"],
                vec!["cargo", "clippy"],
                vec!["git", "diff"],
                vec!["tail", "-n", "5"],
            ]
        );
        assert_eq!(words("'cargo' \"test\""), vec![vec!["cargo", "test"]]);
        let s = segments("cargo test > out.txt 2>&1").unwrap();
        assert_eq!(s[0].words, vec!["cargo", "test"]);
        assert_eq!(s[0].redirects.len(), 2);
        assert_eq!(s[0].redirects[0].target, "out.txt");
        assert!(s[0].redirects[1].duplicates());
        assert_eq!(s[0].text, "cargo test > out.txt 2>&1");
    }

    #[test]
    fn anything_but_a_flat_list_of_literal_commands_is_refused() {
        for src in [
            "cargo test $(curl x)",
            "cargo test `id`",
            "FOO=1 cargo test",
            "cargo test &",
            "sleep 1 & cargo test",
            "(cargo test)",
            "{ cargo test; }",
            "! cargo test",
            "if true; then cargo test; fi",
            "for i in 1; do cargo test; done",
            "cargo() { rm -rf x; }; cargo test",
            "cargo test $HOME",
            "cargo test *.rs",
            "cargo test ~",
            "cargo test {a,b}",
            "cargo test <<EOF\nx\nEOF",
            "cargo test <<< x",
            "cargo test > $OUT",
            "cargo test > >(tee x)",
            "x=1",
            "export A=1; cargo test",
            "cargo test; ",
            "cargo $'test'",
            "cargo test \"$x\"",
            "",
            "# only a comment",
        ] {
            if src == "cargo test; " {
                assert!(segments(src).is_ok());
                continue;
            }
            assert!(segments(src).is_err(), "{src:?} was split");
        }
    }

    #[test]
    fn a_star_is_a_pattern_word_only_last_and_only_in_patterns() {
        assert!(segments("cargo test *").is_err());
        let p = pattern_segments("cargo test *").unwrap();
        assert_eq!(p[0].raw, vec!["cargo", "test", "*"]);
        assert!(pattern_segments("cargo * test").is_err());
        assert_eq!(pattern_segments("cargo test '*'").unwrap()[0].raw[2], "'*'");
    }
}
