//! The tree walk: visits every node of a tree-sitter-bash tree and records facts. Every named
//! node kind of the grammar is either handled by name in `dispatch` or listed in
//! [`WALKED_THROUGH`] as a construct whose meaning lies wholly in its children. A kind in
//! neither (one a grammar upgrade adds) is recorded in `unmodelled`, which keeps the command
//! from being read-only, and is still walked through, so a command inside it is found.
//! Recursion is bounded by `MAX_TREE_DEPTH`; beyond it the walk stops and says so.

use tree_sitter::{Node, Tree};

use super::budget::{Budget, Resource};
use super::words::{Word, decode_ansi_c};
use super::{
    Assignment, Declaration, FunctionDef, HereDoc, MAX_TREE_DEPTH, Redirect, RedirectKind, Scope,
    ShellFacts, SimpleCommand,
};

pub(super) fn walk(src: &str, tree: &Tree, depth: usize, budget: &Budget) -> ShellFacts {
    let mut w = Walker {
        src,
        facts: ShellFacts::default(),
        depth,
        budget,
        scope: Scope::default(),
    };
    let root = tree.root_node();
    w.node(root);
    w.jobs_and_loops(root);
    w.facts.alone = !root.has_error()
        && root.kind() == "program"
        && root.child_count() == 1
        && root.child(0).is_some_and(|c| c.kind() == "command");
    w.facts
}

/// Named node kinds `dispatch` does not name because they add nothing beyond their children:
/// lists and compound statements whose commands are found below them, and the pieces of words
/// and tests, which the word and command readers decode from their parents. Every entry was
/// checked against tree-sitter-bash's `node-types.json`; `grammar_kinds_are_all_modelled`
/// fails when the grammar has a named kind this file does not know.
pub(super) const WALKED_THROUGH: &[&str] = &[
    "program",
    "list",
    "subshell",
    // `{ …; }` (the `((…))` form is dispatched as arithmetic).
    "compound_statement",
    "elif_clause",
    "else_clause",
    "while_statement",
    "for_statement",
    "do_group",
    "case_statement",
    "case_item",
    "negated_command",
    // `$(…)` (backticks are dispatched and read by bash's rules).
    "command_substitution",
    "process_substitution",
    "string",
    "string_content",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "concatenation",
    "simple_expansion",
    "special_variable_name",
    "variable_name",
    "word",
    "number",
    "brace_expression",
    "array",
    "binary_expression",
    "unary_expression",
    "postfix_expression",
    "ternary_expression",
    "parenthesized_expression",
    "test_operator",
    "regex",
    "extglob_pattern",
    "file_descriptor",
    "heredoc_body",
    "heredoc_content",
    "heredoc_start",
    "heredoc_end",
    // The grammar's error node; `node` has already recorded it as a parse error.
    "ERROR",
];

/// Named kinds `dispatch` handles by name.
#[cfg(test)]
pub(super) const DISPATCHED: &[&str] = &[
    "command",
    "variable_assignment",
    "variable_assignments",
    "declaration_command",
    "unset_command",
    "function_definition",
    "redirected_statement",
    "file_redirect",
    "heredoc_redirect",
    "herestring_redirect",
    "pipeline",
    "if_statement",
    "command_name",
    "arithmetic_expansion",
    "subscript",
    "compound_statement",
    "c_style_for_statement",
    "test_command",
    "expansion",
    "comment",
];

/// Constructs whose commands may not run, or run in a shell of their own: each is a region of
/// [`Scope`]. (`if` branches are opened by `if_statement`.)
fn opens_region(n: Node) -> bool {
    let kind_opens = matches!(
        n.kind(),
        "subshell"
            | "command_substitution"
            | "process_substitution"
            | "function_definition"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_item"
            | "elif_clause"
            | "else_clause"
    );
    let token = |s: Option<Node>, kinds: &[&str]| {
        s.is_some_and(|s| !s.is_named() && kinds.contains(&s.kind()))
    };
    let parent = n.parent().map(|p| p.kind());
    kind_opens
        // A background job (`a & b`): the `&` token follows the statement.
        || token(n.next_sibling(), &["&"])
        // Every stage of a pipeline runs in a subshell of its own.
        || (n.is_named() && parent == Some("pipeline"))
        // The right side of `&&` or `||` may not run.
        || (parent == Some("list") && token(n.prev_sibling(), &["&&", "||"]))
}

/// `NAME` of a word bash reads as an assignment in command position (`NAME=…`, `NAME+=…`);
/// none for anything else (a subscript `a[…]=` is left to be read as a command name).
fn assignment_name(word: &str) -> Option<&str> {
    let (left, _) = word.split_once('=')?;
    let name = left.strip_suffix('+').unwrap_or(left);
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

struct Walker<'a> {
    src: &'a str,
    facts: ShellFacts,
    depth: usize,
    /// Every node walked is charged here; past it, nothing more is walked.
    budget: &'a Budget,
    /// The regions the node being walked lies in (see [`Scope`]).
    scope: Scope,
}

impl<'a> Walker<'a> {
    fn text(&self, n: Node) -> &'a str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    fn node(&mut self, n: Node) {
        // The caller reports a spent budget; what lies past it is not walked.
        if !self.budget.charge(Resource::Nodes, 1) {
            return;
        }
        if n.is_error() {
            let snippet: String = self.text(n).chars().take(40).collect();
            self.facts
                .parse_errors
                .push(format!("unexpected `{snippet}` at byte {}", n.start_byte()));
        } else if n.is_missing() {
            self.facts.parse_errors.push(format!(
                "missing `{}` at byte {}",
                n.kind(),
                n.start_byte()
            ));
        }
        self.depth += 1;
        if self.depth > MAX_TREE_DEPTH {
            self.facts.too_deep = true;
        } else if opens_region(n) {
            let outer = self.open_region();
            self.dispatch(n);
            self.scope = outer;
        } else {
            self.dispatch(n);
        }
        self.depth -= 1;
    }

    /// Enter a new region (see [`Scope`]); the caller restores the scope it returns. (No
    /// closure: the walk's recursion pays for every frame between two `node`s.)
    #[inline(never)]
    fn open_region(&mut self) -> Scope {
        let region = self.facts.regions;
        self.facts.regions += 1;
        let inner = self.scope.within(region);
        std::mem::replace(&mut self.scope, inner)
    }

    /// Walk `nodes` in a region of their own.
    fn in_region(&mut self, nodes: Vec<Node>) {
        let outer = self.open_region();
        for n in nodes {
            self.node(n);
        }
        self.scope = outer;
    }

    /// Merge another reading of part of the source (a backtick body, a second reading of an
    /// arithmetic expansion): it runs in a shell of its own, a region below this one.
    fn merge_reading(&mut self, inner: ShellFacts) {
        let here = self.scope.clone();
        self.facts.merge(inner, &here);
    }

    fn dispatch(&mut self, n: Node) {
        match n.kind() {
            "command" => self.command(n),
            "variable_assignment" => {
                let a = self.assignment(n);
                self.facts.assignments.push(a);
            }
            "variable_assignments" => self.children(n),
            "declaration_command" | "unset_command" => self.declaration(n),
            "function_definition" => self.function(n),
            "redirected_statement" => self.redirected(n),
            "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                if let Some(r) = self.redirect(n, None) {
                    self.facts.statement_redirects.push(r);
                }
            }
            "pipeline" => self.pipeline(n),
            "if_statement" => self.if_statement(n),
            "command_substitution" if self.text(n).starts_with('`') => self.backticks(n),
            "command_name" => self.orphan_command_name(n),
            "arithmetic_expansion" | "subscript" => {
                self.arithmetic(n);
                self.arithmetic_fallback(n);
                self.children(n);
            }
            "compound_statement" if self.text(n).starts_with("((") => {
                self.arithmetic(n);
                self.arithmetic_fallback(n);
                self.children(n);
            }
            "c_style_for_statement" => {
                let mut cursor = n.walk();
                let header: Vec<Node> = n
                    .children(&mut cursor)
                    .filter(|c| c.kind() != "do_group" && c.kind() != "compound_statement")
                    .collect();
                for h in header {
                    self.arithmetic(h);
                }
                self.children(n);
            }
            // `for NAME in …` and `select NAME in …` assign NAME on every turn, like `NAME=…`
            // (`for OPTIND in 'a[$(cmd)]'` evaluates, `for histchars in @` arms history).
            "test_command" => self.test_command(n),
            "expansion" => {
                self.expansion(n);
                self.children(n);
            }
            "comment" | "word" | "regex" | "raw_string" => self.leaf_like(n),
            _ => {
                self.note_unmodelled(n);
                self.children(n);
            }
        }
    }

    /// Comments and the grammar's whole words, which may hide what bash reads (`comment`,
    /// `leaf`); anything else of these kinds is walked as usual. One arm in `dispatch`, whose
    /// frame is paid at every level of the recursion.
    #[inline(never)]
    fn leaf_like(&mut self, n: Node) {
        match n.kind() {
            "comment" => self.comment(n),
            "word" | "regex" if n.named_child_count() == 0 => self.leaf(n),
            // `"${x:-'…'}"`: inside double quotes the single quotes are literal characters.
            "raw_string" if n.parent().is_some_and(|p| p.kind() == "expansion") => self.leaf(n),
            _ => {
                self.note_unmodelled(n);
                self.children(n);
            }
        }
    }

    /// bash starts a comment only where a word starts. tree-sitter-bash also takes a `#` glued
    /// to what came before for one (`x=(a)#;touch m`: bash assigns `(a)#` and runs touch), so
    /// such a "comment" is a parse error and the rest of its line is read as bash reads it:
    /// the `#` continues a word, and what follows is commands. Kept out of `dispatch`'s frame.
    #[inline(never)]
    fn comment(&mut self, n: Node) {
        let start = n.start_byte();
        let glued = start > 0
            && self.src.as_bytes().get(start - 1).is_some_and(|b| {
                !matches!(b, b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b'`')
            });
        if !glued {
            return;
        }
        self.facts.parse_errors.push(format!(
            "the grammar took a `#` glued to a word at byte {start} for a comment; bash does not"
        ));
        let rest = self.text(n).strip_prefix('#').unwrap_or("");
        let reading = super::parse_at_depth(&format!("_{rest}"), self.depth + 1, self.budget);
        self.merge_reading(reading);
    }

    /// A word the grammar left whole (an expansion's operand, a `=~` regex) may still hold
    /// substitutions bash expands (see `leaf`): each body is read as commands in a reading of
    /// its own, arithmetic and nested expansions are judged as anywhere else, and the grammar's
    /// lapse is a parse error. Kept out of `dispatch`'s frame.
    #[inline(never)]
    fn leaf(&mut self, n: Node) {
        let found = super::leaf::pieces(self.text(n));
        if found.is_empty() {
            return;
        }
        self.facts.parse_errors.push(format!(
            "the grammar read `{}` at byte {} as a plain word; bash expands what is in it",
            self.text(n).chars().take(40).collect::<String>(),
            n.start_byte()
        ));
        for piece in found {
            match piece {
                super::leaf::Piece::Commands(body) => {
                    let inner = super::parse_at_depth(&body, self.depth + 1, self.budget);
                    self.merge_reading(inner);
                }
                super::leaf::Piece::Arithmetic => self.facts.arithmetic_on_variables = true,
                super::leaf::Piece::Expansion(whole) => self.expansion_text(&whole),
            }
        }
    }

    /// Kept out of `dispatch`, whose frame is paid at every level of the recursion.
    #[inline(never)]
    fn note_unmodelled(&mut self, n: Node) {
        let kind = n.kind();
        if !n.is_named() || WALKED_THROUGH.contains(&kind) {
            return;
        }
        if !self.facts.unmodelled.iter().any(|k| k == kind) {
            self.facts.unmodelled.push(kind.to_string());
        }
    }

    /// Backtick substitutions, read by bash's rules rather than the grammar's: tree-sitter-bash
    /// lexes "` `" between two adjacent substitutions as one token and hides the second
    /// command inside the first. Each body is unescaped (`\\``, `\\\\`, `\\$`) and parsed alone.
    ///
    /// The token it glues can hold more than blanks: in "echo `a` ⏎ `b`" the newline ends the
    /// first command and the output of `b` is the *name* of a second one, which no reading of
    /// the bodies shows. Anything but blanks between two bodies means the grammar lost the
    /// statement structure, and that is recorded as a parse error, so the class cannot be
    /// lower than SHELL_COMPLEX.
    fn backticks(&mut self, n: Node) {
        let text = self.text(n);
        let mut bodies = Vec::new();
        let mut current: Option<String> = None;
        let mut between = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if current.is_none() && c != '`' {
                between.push(c);
            }
            match (c, current.as_mut()) {
                ('\\', Some(body)) => match chars.next() {
                    Some(e @ ('`' | '\\' | '$')) => body.push(e),
                    Some(e) => {
                        body.push('\\');
                        body.push(e);
                    }
                    None => body.push('\\'),
                },
                ('`', Some(_)) => bodies.extend(current.take()),
                ('`', None) => current = Some(String::new()),
                (c, Some(body)) => body.push(c),
                (_, None) => {}
            }
        }
        if between.chars().any(|c| c != ' ' && c != '\t') {
            self.facts.parse_errors.push(format!(
                "backtick substitutions at byte {} are joined across {:?}, which the parser \
                 cannot read",
                n.start_byte(),
                between.trim_matches([' ', '\t'])
            ));
        }
        if let Some(unterminated) = current {
            self.facts.parse_errors.push(format!(
                "an unterminated backtick substitution at byte {}",
                n.start_byte()
            ));
            bodies.push(unterminated);
        }
        for body in bodies {
            let inner = super::parse_at_depth(&body, self.depth + 1, self.budget);
            self.merge_reading(inner);
        }
    }

    fn children(&mut self, n: Node) {
        let mut cursor = n.walk();
        let kids: Vec<Node> = n.children(&mut cursor).collect();
        for c in kids {
            self.node(c);
        }
    }

    /// An arithmetic context naming anything but numbers can evaluate a variable's value as an
    /// expression, and `a[$(cmd)]` inside that value runs a command.
    fn arithmetic(&mut self, n: Node) {
        let text = self.text(n);
        // A parameter (`$1`, `$@`, `${1:-0}`, `$-`) is substituted first and its value then
        // evaluated as an expression: `set -- 'a[$(cmd)]'; echo $(($1))` runs cmd. (The `$`
        // of the expansion's own `$((` or `$[` is no parameter.)
        let inner = text
            .strip_prefix("$((")
            .or_else(|| text.strip_prefix("$["))
            .unwrap_or(text);
        if text.chars().any(|c| c.is_ascii_alphabetic() || c == '_') || inner.contains('$') {
            self.facts.arithmetic_on_variables = true;
        }
    }

    /// bash reads `$(( … ))` as arithmetic only when that parses; a `case` inside (whose
    /// patterns end in `)`) makes bash 5.2 take it as `$( ( … ) )` and run the words as
    /// commands. Read it that way too, so the commands bash would run are seen.
    fn arithmetic_fallback(&mut self, n: Node) {
        let text = self.text(n);
        if !text.contains("case") {
            return;
        }
        let inner = text
            .trim_start_matches('$')
            .trim_start_matches("((")
            .trim_end_matches("))");
        let reading = super::parse_at_depth(&format!("( {inner} )"), self.depth + 1, self.budget);
        self.merge_reading(reading);
        self.facts.arithmetic_on_variables = true;
    }

    /// `[[ a -eq b ]]` evaluates both operands arithmetically.
    fn test_arithmetic(&mut self, n: Node) {
        const ARITH: [&str; 6] = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            if x.kind() == "binary_expression" {
                let mut cursor = x.walk();
                let kids: Vec<Node> = x.children(&mut cursor).collect();
                if kids.iter().any(|k| ARITH.contains(&self.text(*k))) {
                    let operands_numeric = kids
                        .iter()
                        .filter(|k| !ARITH.contains(&self.text(**k)))
                        .all(|k| self.text(*k).trim().parse::<i64>().is_ok());
                    if !operands_numeric {
                        self.facts.arithmetic_on_variables = true;
                    }
                }
            }
            let mut cursor = x.walk();
            stack.extend(x.children(&mut cursor));
        }
    }

    /// Kept out of `dispatch`, whose frame every level of nesting pays for.
    #[inline(never)]
    fn test_command(&mut self, n: Node) {
        if self.text(n).starts_with("[[") {
            self.test_arithmetic(n);
            self.test_variables(n);
            self.children(n);
        } else {
            self.bracket_test(n);
        }
    }

    /// `[ … ]` is the `test` builtin: its words undergo splitting and globbing like any command's,
    /// so it is recorded as the command `[` with its words, in source order.
    fn bracket_test(&mut self, n: Node) {
        let mut leaves = Vec::new();
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            // This walk reads the words itself, so it reports what `node` would: an unclosed
            // `[ -f a > out` is a test_command whose `]` the grammar invented, its `>` read as
            // a comparison instead of the redirection bash makes of it (found by the
            // write-attempt oracle, issue 19).
            if x.is_missing() || x.is_error() {
                let snippet: String = self.text(x).chars().take(40).collect();
                self.facts.parse_errors.push(match x.is_missing() {
                    true => format!("missing `{}` at byte {}", x.kind(), x.start_byte()),
                    false => format!("unexpected `{snippet}` at byte {}", x.start_byte()),
                });
            }
            let compound = matches!(
                x.kind(),
                "test_command"
                    | "binary_expression"
                    | "unary_expression"
                    | "parenthesized_expression"
                    | "negation_expression"
                    | "postfix_expression"
            ) || (x.kind() == "ERROR" && x.child_count() > 0);
            if compound {
                let mut cursor = x.walk();
                let kids: Vec<Node> = x.children(&mut cursor).collect();
                stack.extend(kids.into_iter().rev());
            } else {
                leaves.push(x);
            }
        }
        let start = n.start_byte();
        let end = n.end_byte();
        leaves.retain(|x| !(x.start_byte() == start && self.text(*x) == "["));
        // Inside `[ … ]` bash reads an unquoted `<` or `>` as a redirection (`[ a > b ]` creates
        // `b`); the grammar reads a comparison. The reading is not bash's: not read cleanly.
        for x in &leaves {
            let t = self.text(*x);
            if !x.is_named() && (t.starts_with('<') || t.starts_with('>')) {
                self.facts.parse_errors.push(format!(
                    "`{t}` inside `[ … ]` at byte {} is a redirection to bash, a comparison to \
                     the grammar",
                    x.start_byte()
                ));
            }
        }
        // Operators and brackets are tokens, not words: literal.
        let args: Vec<Word> = leaves
            .into_iter()
            .map(|x| {
                if x.is_named() {
                    self.word(x)
                } else {
                    Word::literal(self.text(x))
                }
            })
            .collect();
        self.facts.commands.push(SimpleCommand {
            assignments: Vec::new(),
            name: Word::literal("["),
            args,
            redirects: Vec::new(),
            span: start..end,
            scope: self.scope.clone(),
        });
    }

    /// `[[ -v NAME ]]` and `[[ -R NAME ]]` evaluate a subscript in NAME (`a[$(cmd)]` runs cmd);
    /// only a plain name with a number for subscript is nothing but a lookup.
    fn test_variables(&mut self, n: Node) {
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            let mut cursor = x.walk();
            let kids: Vec<Node> = x.children(&mut cursor).collect();
            if x.kind() == "unary_expression"
                && let [op, operand, ..] = kids.as_slice()
                && ["-v", "-R"].contains(&self.text(*op))
            {
                let text = self.text(*operand);
                let name = text
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .unwrap_or(text);
                if !super::plain_variable_name(name) {
                    self.facts.evaluations.push(format!(
                        "`[[ {} {text} ]]` evaluates the array subscript in `{text}`",
                        self.text(*op)
                    ));
                }
            }
            stack.extend(kids);
        }
    }

    /// `${!x}` expands the variable whose name `x` holds, evaluating any subscript in it, and
    /// `${x@P}` expands `x` as a prompt, running the substitutions in it. `${X:=v}` assigns.
    #[inline(never)]
    fn expansion(&mut self, n: Node) {
        let text = self.text(n);
        self.expansion_text(text);
    }

    /// `expansion` on the text of one `${…}`.
    fn expansion_text(&mut self, text: &str) {
        let Some(inner) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) else {
            return;
        };
        if let Some(name) = inner.strip_prefix('!') {
            let listing = name.ends_with('*')
                || name.ends_with('@')
                || name.ends_with("[@]")
                || name.ends_with("[*]");
            if !listing && !name.is_empty() {
                self.facts.evaluations.push(format!(
                    "`{text}` expands the variable a value names, evaluating any subscript in it"
                ));
            }
        }
        if inner.ends_with("@P") {
            self.facts.evaluations.push(format!(
                "`{text}` expands a value as a prompt, which runs the command substitutions in it"
            ));
        }
        let name_len = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inner.len());
        let (name, rest) = inner.split_at(name_len);
        // `${@:x}`, `${*:x:y}`: the special parameters take offsets too.
        let rest = match (name.is_empty(), rest.strip_prefix(['@', '*'])) {
            (true, Some(after)) => after,
            _ => rest,
        };
        if substring_offsets_evaluate(rest) {
            self.facts.arithmetic_on_variables = true;
        }
        if !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && (rest.starts_with(":=") || rest.starts_with('='))
        {
            self.facts.assignments.push(Assignment {
                name: name.to_string(),
                value: None,
                raw: text.to_string(),
                after_commands: self.facts.commands.len(),
                scope: self.scope.clone(),
            });
        }
    }

    fn command(&mut self, n: Node) {
        let mut assignments = Vec::new();
        let mut name: Option<Word> = None;
        let mut args = Vec::new();
        let mut redirects = Vec::new();
        let mut cursor = n.walk();
        let kids: Vec<Node> = n.children(&mut cursor).collect();
        let mut start = n.start_byte();
        let mut previous_end = n.start_byte();
        let mut split = false;
        for c in kids {
            if !c.is_named() {
                continue;
            }
            // An unquoted newline always ends a simple command. tree-sitter-bash sometimes runs
            // on across one (`a | b | c⏎rm -rf ~ < f` reads `rm` as an argument of `c`): the
            // words after it are a command of their own.
            let gap = self.src.get(previous_end..c.start_byte()).unwrap_or("");
            if name.is_some() && has_unescaped_newline(gap) {
                self.facts.parse_errors.push(format!(
                    "the grammar ran one command across a line break at byte {previous_end}"
                ));
                if let Some(done) = name.take() {
                    self.push_command(
                        std::mem::take(&mut assignments),
                        done,
                        std::mem::take(&mut args),
                        std::mem::take(&mut redirects),
                        start..previous_end,
                    );
                }
                start = c.start_byte();
                split = true;
            }
            // After such a break bash reads leading `NAME=value` words as assignments, then
            // a command name; the grammar gave them all as arguments.
            if split
                && name.is_none()
                && !c.kind().ends_with("_redirect")
                && c.kind() != "variable_assignment"
            {
                previous_end = c.end_byte();
                name = self.word_after_break(c, &mut assignments);
                continue;
            }
            previous_end = c.end_byte();
            match c.kind() {
                "variable_assignment" => assignments.push(self.assignment(c)),
                "command_name" => name = Some(self.command_name(c)),
                k if k.ends_with("_redirect") => {
                    if let Some(r) = self.redirect(c, Some(n.start_byte())) {
                        redirects.push(r);
                    }
                }
                "comment" => {}
                "ERROR" => self.node(c),
                _ => args.push(self.word(c)),
            }
        }
        self.finish_command(n, assignments, name, args, redirects, start);
    }

    /// Record the simple command `n` ends (a parse error when it has no name), then give it the
    /// words its redirections were read with (`words_after_redirect`). Kept out of `command`'s
    /// frame, which every level of nesting pays for.
    #[inline(never)]
    fn finish_command(
        &mut self,
        n: Node,
        assignments: Vec<Assignment>,
        name: Option<Word>,
        args: Vec<Word>,
        redirects: Vec<Redirect>,
        start: usize,
    ) {
        match name {
            Some(name) => {
                self.push_command(assignments, name, args, redirects, start..n.end_byte());
            }
            None => self.facts.parse_errors.push(format!(
                "a command without a name at byte {}",
                n.start_byte()
            )),
        }
        self.command_redirect_words(n);
        self.split_words(n);
    }

    /// Two arguments with nothing between them are one word to bash: the grammar split it
    /// (`{BASH_CMDS[\ls]}>f` became `{BASH_CMDS[` and `\ls]}`, and the `{NAME[…]}` that
    /// evaluates a subscript and rebinds `ls` went unseen). A parse error.
    fn split_words(&mut self, n: Node) {
        let mut cursor = n.walk();
        let args: Vec<Node> = n.children_by_field_name("argument", &mut cursor).collect();
        if let Some(pair) = args
            .windows(2)
            .find(|p| p[0].end_byte() == p[1].start_byte())
        {
            self.facts.parse_errors.push(format!(
                "the grammar split one word in two at byte {}",
                pair[1].start_byte()
            ));
        }
    }

    /// `words_after_redirect` for the redirections inside the simple command `n`, each given
    /// to the command recorded around it. Kept out of `command`'s frame, which every level of
    /// nesting pays for.
    #[inline(never)]
    fn command_redirect_words(&mut self, n: Node) {
        let mut cursor = n.walk();
        let with_extras: Vec<Node> = n
            .children(&mut cursor)
            .filter(|c| !extra_destinations(*c).is_empty())
            .collect();
        for r in with_extras {
            let owner = self
                .facts
                .commands
                .iter()
                .rposition(|c| c.span.contains(&r.start_byte()));
            self.words_after_redirect(r, owner);
        }
    }

    /// Record a simple command where the walk stands. Kept out of `command`'s frame, which
    /// every level of nesting pays for.
    #[inline(never)]
    fn push_command(
        &mut self,
        assignments: Vec<Assignment>,
        name: Word,
        args: Vec<Word>,
        redirects: Vec<Redirect>,
        span: std::ops::Range<usize>,
    ) {
        self.facts.commands.push(SimpleCommand {
            assignments,
            name,
            args,
            redirects,
            span,
            scope: self.scope.clone(),
        });
    }

    /// A word starting a command after a line break the grammar ran across: an assignment
    /// (added to `assignments`) or the command's name. Kept out of `command`'s frame, which
    /// every level of nesting pays for.
    #[inline(never)]
    fn word_after_break(&mut self, c: Node, assignments: &mut Vec<Assignment>) -> Option<Word> {
        let Some(var) = assignment_name(self.text(c)) else {
            return Some(self.word(c));
        };
        let value = self.word(c);
        assignments.push(Assignment {
            name: var.to_string(),
            raw: value.raw.clone(),
            value: Some(value),
            after_commands: self.facts.commands.len(),
            scope: self.scope.clone(),
        });
        None
    }

    /// The name word of a command. tree-sitter-bash reads a leading `{a,b}` brace list as a
    /// group opener in an ERROR node, so a name right after an unmatched `{` gets it back.
    fn command_name(&mut self, c: Node) -> Word {
        let inner = c.named_child(0).unwrap_or(c);
        let start = c.start_byte();
        let glued_brace = start > 0
            && self.src.as_bytes().get(start - 1) == Some(&b'{')
            && c.parent()
                .and_then(|p| {
                    if p.kind() == "command" {
                        p.parent()
                    } else {
                        Some(p)
                    }
                })
                .is_some_and(|p| p.is_error());
        if !glued_brace {
            return self.word(inner);
        }
        let mut w = Word::new(self.src.get(start - 1..c.end_byte()).unwrap_or(""));
        w.push_unquoted_char('{', false);
        self.word_part(inner, &mut w);
        w.finish(self.budget);
        w
    }

    /// A command name the grammar left without its command (inside an ERROR node).
    fn orphan_command_name(&mut self, n: Node) {
        let name = self.command_name(n);
        self.facts.commands.push(SimpleCommand {
            assignments: Vec::new(),
            name,
            args: Vec::new(),
            redirects: Vec::new(),
            span: n.byte_range(),
            scope: self.scope.clone(),
        });
    }

    #[inline(never)]
    fn assignment(&mut self, n: Node) -> Assignment {
        let name_node = n.child_by_field_name("name");
        let name = name_node
            .map(|x| self.text(x).to_string())
            .unwrap_or_default();
        if let Some(x) = name_node {
            // `a[$(cmd)]=1`: the subscript is walked for substitutions and arithmetic.
            if x.kind() != "variable_name" {
                self.node(x);
            }
        }
        // The grammar accepts names bash does not (`1a=2`, `a-b=1`); bash runs such a word as a
        // command, which no reading here names.
        let base = name.split('[').next().unwrap_or_default();
        let valid = base.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            self.facts.parse_errors.push(format!(
                "`{}` is not a valid assignment, so bash runs it as a command",
                self.text(n)
            ));
        }
        let value_node = n.child_by_field_name("value");
        if let Some(v) = value_node.filter(|v| v.kind() == "array") {
            self.array_keys(v);
        }
        let value = value_node.map(|v| self.word(v));
        Assignment {
            name,
            value,
            raw: self.text(n).to_string(),
            after_commands: self.facts.commands.len(),
            scope: self.scope.clone(),
        }
    }

    /// Background jobs and loop variables, found in one pass over the whole tree with a cursor
    /// (no recursion: `dispatch`'s frame, which every level of nesting pays for, stays as it
    /// is). A job is the `&` list terminator, an anonymous token: `&&`, `&>`, `>&` and `|&`
    /// are tokens of their own, and a quoted `&` is string content. `for NAME in …` and
    /// `select NAME in …` assign NAME on every turn, like `NAME=…` (`for OPTIND in
    /// 'a[$(cmd)]'` evaluates, `for histchars in @` arms history expansion).
    fn jobs_and_loops(&mut self, root: Node) {
        let mut cursor = root.walk();
        loop {
            let n = cursor.node();
            match n.kind() {
                "&" if !n.is_named() => self.facts.background = true,
                "for_statement" | "select_statement" => {
                    if let Some(v) = n.child_by_field_name("variable") {
                        let name = self.text(v).to_string();
                        self.facts.assignments.push(Assignment {
                            raw: name.clone(),
                            name,
                            value: None,
                            after_commands: self.facts.commands.len(),
                            scope: self.scope.clone(),
                        });
                    }
                }
                _ => {}
            }
            if cursor.goto_first_child() || cursor.goto_next_sibling() {
                continue;
            }
            loop {
                if !cursor.goto_parent() {
                    return;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
            }
        }
    }

    /// `a=([KEY]=v)`: an indexed array's KEY is arithmetic, so `[x]=1` evaluates the value of
    /// `x` (and a subscript in it runs a command). Only a number is nothing but a number; the
    /// reading does not know whether `a` is associative, so any other key counts.
    #[inline(never)]
    fn array_keys(&mut self, array: Node) {
        let mut cursor = array.walk();
        let kids: Vec<Node> = array.children(&mut cursor).collect();
        for k in kids {
            let Some(key) = self.text(k).strip_prefix('[') else {
                continue;
            };
            let key = key.split(']').next().unwrap_or(key);
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_digit()) {
                self.facts.arithmetic_on_variables = true;
            }
        }
    }

    fn declaration(&mut self, n: Node) {
        let mut keyword = String::new();
        let mut args = Vec::new();
        let mut assignments = Vec::new();
        let mut cursor = n.walk();
        let kids: Vec<Node> = n.children(&mut cursor).collect();
        for c in kids {
            if !c.is_named() {
                if keyword.is_empty() {
                    keyword = self.text(c).to_string();
                }
                continue;
            }
            match c.kind() {
                "variable_assignment" => assignments.push(self.assignment(c)),
                "comment" => {}
                _ => args.push(self.word(c)),
            }
        }
        self.facts.declarations.push(Declaration {
            keyword,
            args,
            assignments,
        });
    }

    fn function(&mut self, n: Node) {
        let name = n
            .child_by_field_name("name")
            .map(|x| self.text(x).to_string())
            .unwrap_or_default();
        let start = self.facts.commands.len();
        if let Some(body) = n.child_by_field_name("body") {
            self.node(body);
        }
        let mut cursor = n.walk();
        let rest: Vec<Node> = n
            .children(&mut cursor)
            .filter(|c| c.is_named() && Some(*c) != n.child_by_field_name("body"))
            .filter(|c| c.kind() != "word")
            .collect();
        for c in rest {
            self.node(c);
        }
        let body_source = n
            .child_by_field_name("body")
            .map(|b| self.text(b).to_string())
            .unwrap_or_default();
        self.facts.functions.push(FunctionDef {
            name,
            body: start..self.facts.commands.len(),
            body_source,
        });
    }

    fn redirected(&mut self, n: Node) {
        let body = n.child_by_field_name("body");
        let mut cursor = n.walk();
        let kids: Vec<Node> = n.children(&mut cursor).collect();
        if let Some(b) = body {
            self.node(b);
        }
        // `! cmd <<E`: the here-document still feeds `cmd`; the `!` only inverts its status.
        let body_command = body.map(|mut b| {
            while b.kind() == "negated_command"
                && let Some(inner) = b.named_child(b.named_child_count().saturating_sub(1) as u32)
            {
                b = inner;
            }
            b
        });
        let attach_to_command = body_command
            .filter(|b| b.kind() == "command")
            .and_then(|b| {
                let last = self.facts.commands.len().checked_sub(1)?;
                (self.facts.commands[last].span == b.byte_range()).then_some(last)
            });
        let command_start = body_command.map(|b| b.start_byte());
        // The simple command a pipeline body ends with: bash gives it the words after the
        // redirection (`ls | sort >/dev/null -o out` is `sort -o out`).
        let last_stage = body_command.and_then(|b| {
            let last = self.facts.commands.len().checked_sub(1)?;
            let c = &self.facts.commands[last];
            (matches!(b.kind(), "command" | "pipeline") && c.span.end == b.end_byte())
                .then_some(last)
        });
        for c in kids {
            if Some(c) == body {
                continue;
            }
            if c.kind().ends_with("_redirect") {
                if let Some(r) = self.redirect(c, command_start) {
                    match attach_to_command {
                        Some(i) => self.facts.commands[i].redirects.push(r),
                        None => self.facts.statement_redirects.push(r),
                    }
                }
                self.words_after_redirect(c, last_stage);
            } else {
                self.node(c);
            }
        }
    }

    fn redirect(&mut self, n: Node, command_start: Option<usize>) -> Option<Redirect> {
        let mut cursor = n.walk();
        let kids: Vec<Node> = n.children(&mut cursor).collect();
        match n.kind() {
            "heredoc_redirect" => {
                let delimiter = kids
                    .iter()
                    .find(|k| k.kind() == "heredoc_start")
                    .map(|k| self.text(*k))
                    .unwrap_or("");
                let quoted = delimiter.contains(['\'', '"', '\\']);
                let body = kids
                    .iter()
                    .find(|k| k.kind() == "heredoc_body")
                    .map(|k| self.text(*k).to_string())
                    .unwrap_or_default();
                self.facts.heredocs.push(HereDoc {
                    body,
                    quoted,
                    command_start,
                    operator_at: n.start_byte(),
                });
                for k in kids
                    .iter()
                    .filter(|k| k.is_named() && k.kind() != "heredoc_start")
                {
                    self.node(*k);
                }
                Some(Redirect {
                    kind: RedirectKind::HereDoc,
                    fd: None,
                    target: None,
                })
            }
            "herestring_redirect" => {
                let mut target = None;
                for k in kids.iter().filter(|k| k.is_named()) {
                    if target.is_none() && k.kind() != "file_descriptor" {
                        target = Some(self.word(*k));
                    } else {
                        self.node(*k);
                    }
                }
                Some(Redirect {
                    kind: RedirectKind::HereString,
                    fd: n
                        .child_by_field_name("descriptor")
                        .map(|d| self.text(d).to_string()),
                    target,
                })
            }
            _ => {
                let fd = n
                    .child_by_field_name("descriptor")
                    .map(|d| self.text(d).to_string());
                // tree-sitter-bash has no `<>`: it reads it as `<` and `>` with one of them in
                // an ERROR node. Those two halves are one operator, not a parse error.
                let src = self.src;
                let halves =
                    |k: &Node| k.is_error() && matches!(src.get(k.byte_range()), Some("<" | ">"));
                let mut op = kids
                    .iter()
                    .filter(|k| !k.is_named() || halves(k))
                    .map(|k| self.text(*k))
                    .collect::<Vec<_>>()
                    .concat();
                let read_write = op == "<>" && kids.iter().any(halves);
                if !read_write {
                    op = kids
                        .iter()
                        .filter(|k| !k.is_named())
                        .map(|k| self.text(*k))
                        .collect::<Vec<_>>()
                        .concat();
                }
                let dest = n.child_by_field_name("destination");
                let target = dest.map(|d| self.word(d));
                let extras = extra_destinations(n);
                for k in kids.iter().filter(|k| k.is_named()) {
                    if Some(*k) != dest
                        && k.kind() != "file_descriptor"
                        && !(read_write && halves(k))
                        && !extras.contains(k)
                    {
                        self.node(*k);
                    }
                }
                let kind = redirect_kind(&op, target.as_ref());
                Some(Redirect { kind, fd, target })
            }
        }
    }

    /// The words tree-sitter-bash gave the redirection `r` as further destinations
    /// (`cmd >/dev/null -o out`): bash gives them to the command the redirection belongs to
    /// (`owner`, when it is a simple command; after a group or loop they are a syntax error),
    /// and a word after a line break the grammar ran across starts a command of its own.
    #[inline(never)]
    fn words_after_redirect(&mut self, r: Node, owner: Option<usize>) {
        let extras = extra_destinations(r);
        let Some(first) = r.child_by_field_name("destination") else {
            return;
        };
        let mut previous_end = first.end_byte();
        // A command begun after a line break: its assignments, name, arguments and start.
        let mut after_break: Option<(Vec<Assignment>, Option<Word>, Vec<Word>, usize)> = None;
        for w in extras {
            let gap = self.src.get(previous_end..w.start_byte()).unwrap_or("");
            if has_unescaped_newline(gap) {
                self.facts.parse_errors.push(format!(
                    "the grammar ran a redirection across a line break at byte {previous_end}"
                ));
                self.finish_after_break(after_break.take(), previous_end);
                after_break = Some((Vec::new(), None, Vec::new(), w.start_byte()));
            }
            previous_end = w.end_byte();
            match (&mut after_break, owner) {
                (Some((assignments, name @ None, _, _)), _) => {
                    *name = self.word_after_break(w, assignments);
                }
                (Some((_, Some(_), args, _)), _) => args.push(self.word(w)),
                (None, Some(i)) => {
                    let word = self.word(w);
                    self.facts.commands[i].args.push(word);
                }
                (None, None) => {
                    self.facts.parse_errors.push(format!(
                        "a word after the redirection of a compound command at byte {}",
                        w.start_byte()
                    ));
                    self.node(w);
                }
            }
        }
        self.finish_after_break(after_break, previous_end);
    }

    fn finish_after_break(
        &mut self,
        command: Option<(Vec<Assignment>, Option<Word>, Vec<Word>, usize)>,
        end: usize,
    ) {
        match command {
            Some((assignments, Some(name), args, start)) => {
                self.push_command(assignments, name, args, Vec::new(), start..end);
            }
            Some((assignments, None, _, _)) => self.facts.assignments.extend(assignments),
            None => {}
        }
    }

    /// `if`: the first condition surely runs, in this shell; the branch after `then` may not,
    /// so it is a region, and each `elif` and `else` is one too (`opens_region`).
    fn if_statement(&mut self, n: Node) {
        let mut cursor = n.walk();
        let kids: Vec<Node> = n.children(&mut cursor).collect();
        let mut branch: Option<Vec<Node>> = None;
        for c in kids {
            let ends_branch = matches!(c.kind(), "elif_clause" | "else_clause" | "fi");
            if ends_branch && let Some(body) = branch.take() {
                self.in_region(body);
            }
            match branch.as_mut() {
                Some(body) => body.push(c),
                None => {
                    self.node(c);
                    if !c.is_named() && c.kind() == "then" {
                        branch = Some(Vec::new());
                    }
                }
            }
        }
        if let Some(body) = branch {
            self.in_region(body);
        }
    }

    fn pipeline(&mut self, n: Node) {
        let mut cursor = n.walk();
        let kids: Vec<Node> = n.children(&mut cursor).collect();
        let mut stages = Vec::new();
        for c in kids {
            if !c.is_named() || c.kind() == "comment" {
                continue;
            }
            let start = self.facts.commands.len();
            self.node(c);
            stages.push(start..self.facts.commands.len());
        }
        self.facts.pipelines.push(stages);
    }

    /// A word in argument position: quote removal, escapes, substitutions walked.
    fn word(&mut self, n: Node) -> Word {
        let mut w = Word::new(self.text(n));
        self.word_part(n, &mut w);
        w.finish(self.budget);
        w
    }

    fn word_part(&mut self, n: Node, w: &mut Word) {
        match n.kind() {
            "word" | "number" | "brace_expression" | "extglob_pattern" | "regex"
            | "test_operator" => {
                self.unquoted(self.text(n), w);
                // A word node normally has no children; any it has (substitutions) are walked.
                if n.named_child_count() > 0 {
                    w.dynamic = true;
                    w.expands = true;
                    self.substitutions_in(n, w);
                }
            }
            "raw_string" => {
                let t = self.text(n);
                w.push_quoted(
                    t.strip_prefix('\'')
                        .and_then(|s| s.strip_suffix('\''))
                        .unwrap_or(t),
                );
            }
            "ansi_c_string" => {
                let t = self.text(n);
                let body = t
                    .strip_prefix("$'")
                    .and_then(|s| s.strip_suffix('\''))
                    .unwrap_or(t);
                w.push_quoted(&decode_ansi_c(body));
            }
            "string" | "translated_string" => self.double_quoted(n, w),
            "concatenation" => {
                let mut cursor = n.walk();
                let kids: Vec<Node> = n.children(&mut cursor).collect();
                for c in kids {
                    self.word_part(c, w);
                }
            }
            "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion" => self.dynamic_part(n, w),
            _ => {
                // Anything else (an ERROR inside a word, a node kind this walk does not name) is
                // taken as written and treated as unknown at run time.
                self.dynamic_part(n, w);
            }
        }
    }

    fn unquoted(&self, raw: &str, w: &mut Word) {
        let mut chars = raw.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('\n') | None => {}
                    Some(e) => w.push_unquoted_char(e, true),
                }
            } else {
                w.push_unquoted_char(c, false);
            }
        }
    }

    fn double_quoted(&mut self, n: Node, w: &mut Word) {
        let (start, end) = (n.start_byte(), n.end_byte());
        let text = self.text(n);
        let open = if text.starts_with("$\"") { 2 } else { 1 };
        let close = usize::from(text.len() > open && text.ends_with('"'));
        let mut pos = start + open;
        let mut cursor = n.walk();
        let kids: Vec<Node> = n.named_children(&mut cursor).collect();
        for c in kids {
            if c.kind() == "string_content" {
                continue;
            }
            if c.start_byte() > pos {
                self.dq_literal(pos, c.start_byte(), w);
            }
            self.dynamic_part(c, w);
            pos = c.end_byte().max(pos);
        }
        if end - close > pos {
            self.dq_literal(pos, end - close, w);
        }
    }

    fn dq_literal(&self, from: usize, to: usize, w: &mut Word) {
        let raw = self.src.get(from..to).unwrap_or("");
        let mut out = String::with_capacity(raw.len());
        let mut chars = raw.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.peek() {
                    Some('$' | '`' | '"' | '\\') => {
                        if let Some(e) = chars.next() {
                            out.push(e);
                        }
                    }
                    Some('\n') => {
                        chars.next();
                    }
                    _ => out.push('\\'),
                }
            } else {
                out.push(c);
            }
        }
        w.push_quoted(&out);
    }

    fn dynamic_part(&mut self, n: Node, w: &mut Word) {
        w.push_dynamic(self.text(n));
        let before = self.facts.commands.len();
        self.node(n);
        w.substitutions.extend(before..self.facts.commands.len());
    }

    fn substitutions_in(&mut self, n: Node, w: &mut Word) {
        let before = self.facts.commands.len();
        self.children(n);
        w.substitutions.extend(before..self.facts.commands.len());
    }
}

fn redirect_kind(op: &str, target: Option<&Word>) -> RedirectKind {
    let fd_target = target.is_some_and(|t| {
        let v = t.value.as_str();
        v == "-" || (!v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
    });
    match op {
        ">" => RedirectKind::Output,
        ">>" => RedirectKind::Append,
        ">|" => RedirectKind::Clobber,
        "&>" => RedirectKind::OutputAndError,
        "&>>" => RedirectKind::AppendOutputAndError,
        "<>" => RedirectKind::ReadWrite,
        "<" => RedirectKind::Input,
        ">&" | ">&-" if fd_target || op == ">&-" => RedirectKind::DuplicateOutput,
        // `>& file` sends both streams to a file.
        ">&" => RedirectKind::OutputAndError,
        "<&" | "<&-" => RedirectKind::DuplicateInput,
        // An operator this walk does not know: assume it writes (fail closed).
        _ => RedirectKind::Output,
    }
}

/// A file redirection's destinations after the first: tree-sitter-bash reads the words that
/// follow `cmd >file` as further destinations of the redirection.
fn extra_destinations(r: Node) -> Vec<Node> {
    if r.kind() != "file_redirect" {
        return Vec::new();
    }
    let mut cursor = r.walk();
    r.children_by_field_name("destination", &mut cursor)
        .skip(1)
        .collect()
}

/// Whether `gap` (text between two words) holds a newline that is not a line continuation: one
/// not right after an odd run of backslashes. `\\ ⏎` escapes the blank, not the newline.
fn has_unescaped_newline(gap: &str) -> bool {
    let bytes = gap.as_bytes();
    bytes.iter().enumerate().any(|(i, b)| {
        *b == b'\n' && bytes[..i].iter().rev().take_while(|c| **c == b'\\').count() % 2 == 0
    })
}

/// `${x:OFFSET}` and `${x:OFFSET:LENGTH}` (after the name or `name[…]`, in `rest`) evaluate
/// OFFSET and LENGTH as arithmetic: `${PATH:x}` evaluates the value of `x`, and a subscript in
/// that value runs a command. Only numbers are nothing but numbers. `${x:-v}`, `${x:=v}`,
/// `${x:?v}` and `${x:+v}` are defaults, not offsets.
fn substring_offsets_evaluate(rest: &str) -> bool {
    let rest = match rest.strip_prefix('[') {
        // The subscript is walked as arithmetic on its own; what follows it is judged here.
        Some(r) => match r.find(']') {
            Some(end) => &r[end + 1..],
            None => return false,
        },
        None => rest,
    };
    let Some(offsets) = rest.strip_prefix(':') else {
        return false;
    };
    if offsets.starts_with(['-', '=', '?', '+']) {
        return false;
    }
    !offsets
        .chars()
        .all(|c| c.is_ascii_digit() || c == ':' || c == ' ' || c == '-' || c == '+')
}
