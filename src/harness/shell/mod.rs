//! Bash source to facts, on tree-sitter-bash. Every simple command wherever it appears, every
//! redirection, here-document, function definition and assignment is reported; what cannot be
//! analysed (parse errors, nesting too deep to walk) is reported as such, never silently dropped.
//!
//! tree-sitter-bash misparses the rest of a line after a here-document operator (upstream issue
//! 346). So a source holding here-documents is parsed twice: as written, and with every
//! here-document operator and body blanked out, and the facts of both parses are merged.
//!
//! Every parse, re-reading and walk is charged to one `Budget` (budget.rs); once it is spent the
//! rest is not read, and that is reported as a parse error, never taken as absent.

pub(crate) mod budget;
mod heredocs;
mod keywords;
mod leaf;
pub mod segments;
mod walk;
mod words;

use std::ops::Range;

use serde::Serialize;

pub use budget::{Budget, BudgetLimits, Resource};
pub use segments::literal_text;
pub use words::Word;

/// How deep the syntax tree may nest before the walk stops and reports it. Each level costs the
/// walk a few stack frames (about 5 KB in a debug build); 300 levels (some 75 nested
/// substitutions, far past any real command) keep a 2 MiB thread stack clear with a margin, where
/// 400 had left none (`deep_nesting_is_never_less_than_complex` overflowed after small changes).
pub const MAX_TREE_DEPTH: usize = 300;

/// A `NAME=value` assignment (leading a command, standing alone, or in a declaration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assignment {
    pub name: String,
    pub value: Option<Word>,
    /// The assignment as written.
    pub raw: String,
    /// How many simple commands the walk had met before this assignment took effect (those
    /// in its own value included): a command at a lower index ran before it, in text order.
    pub after_commands: usize,
    /// Where it stands: it has surely run in the shell of every command its scope encloses
    /// and which comes after it in text order, and in no other.
    #[serde(skip)]
    pub scope: Scope,
}

/// Where a command or an assignment stands in the shell's run: the regions it lies in,
/// outermost first. A region is any place that may not run, or runs in a shell of its own:
/// a subshell, a pipeline stage, a background job, a command or process substitution, a
/// function body, a loop, a branch of `if` or `case`, the right side of `&&` or `||`, a
/// second reading of the source. An assignment's value is seen by a later command only when
/// the command lies in every region the assignment does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope(Vec<u32>);

impl Scope {
    /// Whatever stands in `self` has run, in the same shell, before anything in `inner` that
    /// comes after it in text order.
    pub fn encloses(&self, inner: &Scope) -> bool {
        inner.0.starts_with(&self.0)
    }

    /// This scope with `region` opened inside it.
    pub(crate) fn within(&self, region: u32) -> Scope {
        let mut regions = self.0.clone();
        regions.push(region);
        Scope(regions)
    }

    /// `inner` (a scope of another reading, whose region numbers start at `shift`) placed
    /// below `self`.
    fn nest(&self, inner: &Scope, shift: u32) -> Scope {
        let mut regions = self.0.clone();
        regions.extend(inner.0.iter().map(|r| r + shift));
        Scope(regions)
    }
}

/// The redirection operators bash knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedirectKind {
    /// `<`
    Input,
    /// `>`
    Output,
    /// `>>`
    Append,
    /// `>|`
    Clobber,
    /// `&>` (and `>&` with a file name)
    OutputAndError,
    /// `&>>`
    AppendOutputAndError,
    /// `<>`
    ReadWrite,
    /// `>&N`, `>&-`
    DuplicateOutput,
    /// `<&N`, `<&-`
    DuplicateInput,
    /// `<<`, `<<-`
    HereDoc,
    /// `<<<`
    HereString,
}

impl RedirectKind {
    /// The operator as bash spells it.
    pub fn operator(self) -> &'static str {
        match self {
            RedirectKind::Input => "<",
            RedirectKind::Output => ">",
            RedirectKind::Append => ">>",
            RedirectKind::Clobber => ">|",
            RedirectKind::OutputAndError => "&>",
            RedirectKind::AppendOutputAndError => "&>>",
            RedirectKind::ReadWrite => "<>",
            RedirectKind::DuplicateOutput => ">&",
            RedirectKind::DuplicateInput => "<&",
            RedirectKind::HereDoc => "<<",
            RedirectKind::HereString => "<<<",
        }
    }

    /// The redirection opens its target for writing (it may create or truncate it).
    pub fn writes(self) -> bool {
        matches!(
            self,
            RedirectKind::Output
                | RedirectKind::Append
                | RedirectKind::Clobber
                | RedirectKind::OutputAndError
                | RedirectKind::AppendOutputAndError
                | RedirectKind::ReadWrite
        )
    }
}

/// One redirection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redirect {
    pub kind: RedirectKind,
    /// The file descriptor number written before the operator (`2>`), if any.
    pub fd: Option<String>,
    /// The file name, fd number or here-string word. None for here-documents.
    pub target: Option<Word>,
}

/// A simple command: assignments, a name, arguments and its own redirections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimpleCommand {
    pub assignments: Vec<Assignment>,
    pub name: Word,
    pub args: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// Byte range in the parsed source.
    #[serde(skip)]
    pub span: Range<usize>,
    /// Where it stands (see [`Scope`]).
    #[serde(skip)]
    pub scope: Scope,
}

/// A declaration builtin (`export`, `declare`, `local`, `readonly`, `typeset`, `unset`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Declaration {
    pub keyword: String,
    pub args: Vec<Word>,
    pub assignments: Vec<Assignment>,
}

/// A function definition and the commands of its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionDef {
    pub name: String,
    #[serde(skip)]
    pub body: Range<usize>,
    pub body_source: String,
}

/// A here-document and the command it feeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HereDoc {
    pub body: String,
    /// The delimiter was quoted, so the body is literal (no expansions run).
    pub quoted: bool,
    /// The start byte of the command it is attached to.
    #[serde(skip)]
    pub command_start: Option<usize>,
    /// Where its `<<` operator starts.
    #[serde(skip)]
    pub operator_at: usize,
}

/// Everything the parse says about a source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ShellFacts {
    /// Every simple command, nested ones included (substitution commands come before the
    /// command whose word holds them).
    pub commands: Vec<SimpleCommand>,
    /// Redirections that belong to a compound statement or list rather than one command.
    pub statement_redirects: Vec<Redirect>,
    /// Each pipeline as its stages; each stage as the range of command indices it holds.
    #[serde(skip)]
    pub pipelines: Vec<Vec<Range<usize>>>,
    /// Assignments standing alone (`x=1`).
    pub assignments: Vec<Assignment>,
    pub declarations: Vec<Declaration>,
    pub functions: Vec<FunctionDef>,
    pub heredocs: Vec<HereDoc>,
    /// Human descriptions of what did not parse.
    pub parse_errors: Vec<String>,
    /// An arithmetic context refers to a variable: bash evaluates the variable's value as an
    /// expression, and array subscripts in it can run commands.
    pub arithmetic_on_variables: bool,
    /// The tree nests deeper than [`MAX_TREE_DEPTH`]; what lies below was not walked.
    pub too_deep: bool,
    /// Named node kinds the walk met and does not model (a grammar upgrade's new construct).
    /// Their children were still walked, but what the construct itself does is unknown.
    pub unmodelled: Vec<String>,
    /// Places where bash evaluates a value as code, described: indirection (`${!x}`), prompt
    /// expansion (`${x@P}`), a subscript `[[ -v … ]]` evaluates.
    pub evaluations: Vec<String>,
    /// A `&` operator starts a background job somewhere (`sleep 1 &`, `a & b`): the job
    /// outlives what a reading of its command says, and the sandbox kills it at the end.
    pub background: bool,
    /// The source is one simple command and nothing else: the tree's root holds exactly one
    /// node, a `command`, with no error anywhere, and there was one reading only. No list
    /// operator, pipeline, `&`, `!`, comment or compound statement can stand beside it.
    pub alone: bool,
    /// How many region numbers the scopes above use.
    #[serde(skip)]
    pub(crate) regions: u32,
}

impl ShellFacts {
    /// The one simple command the source is, when it is nothing else: read once, no error,
    /// no list, pipeline, redirection, assignment, declaration, function, here-document,
    /// evaluation or arithmetic anywhere, and none of its own assignments or redirections.
    /// Its words may still expand; that is for the caller to judge.
    pub fn sole_command(&self) -> Option<&SimpleCommand> {
        let nothing_beside = self.alone && self.only_commands();
        match self.commands.as_slice() {
            [only]
                if nothing_beside && only.assignments.is_empty() && only.redirects.is_empty() =>
            {
                Some(only)
            }
            _ => None,
        }
    }

    /// The source holds simple commands and nothing else the walk found: no error, statement
    /// redirection, assignment, declaration, function, here-document, evaluation, arithmetic on
    /// a variable, background job, unwalked depth or unmodelled construct.
    pub fn only_commands(&self) -> bool {
        self.statement_redirects.is_empty()
            && self.assignments.is_empty()
            && self.declarations.is_empty()
            && self.functions.is_empty()
            && self.heredocs.is_empty()
            && self.parse_errors.is_empty()
            && self.evaluations.is_empty()
            && !self.arithmetic_on_variables
            && !self.background
            && !self.too_deep
            && self.unmodelled.is_empty()
    }

    /// All redirections: those of commands and those of statements.
    pub fn all_redirects(&self) -> impl Iterator<Item = &Redirect> {
        self.commands
            .iter()
            .flat_map(|c| c.redirects.iter())
            .chain(self.statement_redirects.iter())
    }

    /// Add another reading's facts. They stand in a region of their own inside `within`: a
    /// second reading's assignments then fix no variable outside it, and a substitution's
    /// none in the shell that ran it.
    pub(crate) fn merge(&mut self, other: ShellFacts, within: &Scope) {
        let offset = self.commands.len();
        let shift = |r: Range<usize>| r.start + offset..r.end + offset;
        let region = self.regions;
        self.regions += 1 + other.regions;
        let base = within.within(region);
        let place = |a: &mut Assignment| {
            a.after_commands += offset;
            a.scope = base.nest(&a.scope, region + 1);
        };
        for mut c in other.commands {
            for w in c.args.iter_mut().chain(std::iter::once(&mut c.name)) {
                w.substitutions.iter_mut().for_each(|i| *i += offset);
            }
            c.assignments.iter_mut().for_each(place);
            c.scope = base.nest(&c.scope, region + 1);
            self.commands.push(c);
        }
        self.statement_redirects.extend(other.statement_redirects);
        self.pipelines.extend(
            other
                .pipelines
                .into_iter()
                .map(|p| p.into_iter().map(shift).collect()),
        );
        self.assignments
            .extend(other.assignments.into_iter().map(|mut a| {
                place(&mut a);
                a
            }));
        self.declarations
            .extend(other.declarations.into_iter().map(|mut d| {
                d.assignments.iter_mut().for_each(place);
                d
            }));
        self.functions
            .extend(other.functions.into_iter().map(|mut f| {
                f.body = shift(f.body);
                f
            }));
        self.parse_errors.extend(other.parse_errors);
        self.heredocs.extend(other.heredocs);
        self.arithmetic_on_variables |= other.arithmetic_on_variables;
        self.too_deep |= other.too_deep;
        self.unmodelled.extend(other.unmodelled);
        self.background |= other.background;
        self.evaluations.extend(other.evaluations);
        // A second reading means the first one was not the whole story.
        self.alone = false;
    }
}

/// A variable name with at most a number for subscript (`x`, `a[3]`): looking it up evaluates
/// nothing.
pub fn plain_variable_name(s: &str) -> bool {
    let (name, subscript) = match s.split_once('[') {
        Some((n, rest)) => (n, Some(rest)),
        None => (s, None),
    };
    let name_ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    name_ok
        && subscript.is_none_or(|r| {
            r.strip_suffix(']')
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
        })
}

/// More `<<` than this in one source and it is not read at all (see `read`).
const MAX_HEREDOC_OPERATORS: usize = 256;

/// Parse bash source into facts. Never fails: a parser that cannot start is itself a fact.
pub fn parse(source: &str) -> ShellFacts {
    parse_within(source, &Budget::default())
}

/// Parse bash source into facts, every cost charged to `budget`. A spent budget is reported as a
/// parse error (what was not read is never taken as absent) and by `budget.spent()`.
pub fn parse_within(source: &str, budget: &Budget) -> ShellFacts {
    let mut facts = parse_at_depth(source, 0, budget);
    if let Some(reason) = budget.reason() {
        facts.parse_errors.push(reason);
    }
    facts
}

/// Parse a source nested `depth` tree levels deep (backtick bodies are parsed on their own).
pub(crate) fn parse_at_depth(source: &str, depth: usize, budget: &Budget) -> ShellFacts {
    read(source, depth, true, budget)
}

/// One reading of `source`. `reread` allows the second readings that repair the grammar's
/// misparses (comments in a broken parse, keywords before compound commands); they are made
/// once, never inside each other, so that `time time … while` or `x# x# …` costs two parses and
/// not one per keyword (3,000 `time`s took 23 s and 1.8 GB when they nested).
fn read(source: &str, depth: usize, reread: bool, budget: &Budget) -> ShellFacts {
    // tree-sitter-bash's here-document scanning is quadratic in the operators on a line: 8,000
    // of them took 3.6 s. No real command has this many; it is refused a reading, not read.
    if source.matches("<<").count() > MAX_HEREDOC_OPERATORS {
        return ShellFacts {
            parse_errors: vec![format!(
                "more than {MAX_HEREDOC_OPERATORS} here-document operators, too many to check"
            )],
            ..ShellFacts::default()
        };
    }
    let as_written = source;
    // tree-sitter-bash glues a line that starts with a backslash to the line before it
    // (`ls\n\\rm -rf /` reads as `ls` with arguments). A blank after the newline changes
    // nothing bash does and gives the grammar its line back.
    let prepared;
    let source = if source.contains("\n\\") {
        prepared = source.replace("\n\\", "\n \\");
        prepared.as_str()
    } else {
        source
    };
    let Some(tree) = parse_tree(source, budget) else {
        // A parse the budget cancelled is reported by the budget (see `parse_within`).
        let why = match budget.spent() {
            Some(_) => "the parse was stopped by the classification budget",
            None => "the bash parser could not be started",
        };
        return ShellFacts {
            parse_errors: vec![why.into()],
            ..ShellFacts::default()
        };
    };
    let mut facts = walk::walk(source, &tree, depth, budget);
    reread_heredocs(source, &tree, depth, &mut facts, budget);
    if !reread {
        return facts;
    }
    if !facts.parse_errors.is_empty() {
        // A grammar that erred may have taken live code for a comment; read it as code too.
        // (Only ever stricter: on a source that parses, comments stay comments.)
        for text in keywords::comment_texts(source, &tree) {
            let inner = read(text, depth + 1, false, budget);
            facts.merge(inner, &Scope::default());
        }
    }
    if keywords::misread(&facts)
        && let Some(blanked) = keywords::blank_pipeline_keywords(source, &tree)
    {
        // Its here-documents are kept too: only this reading may link one to the shell that
        // reads it (`time while …; do bash <<E …`).
        facts.merge(read(&blanked, depth, false, budget), &Scope::default());
    }
    if let Some(joined) = join_continuations(as_written) {
        // bash removes a backslash-newline before it splits words (`set\⏎sid` is `setsid`,
        // `find . -\⏎delete` deletes); the grammar reads it as a blank. The joined text is
        // read too, and both readings count. (Not instead: inside single quotes or a quoted
        // here-document the pair stays, and there the first reading is bash's.)
        facts.merge(read(&joined, depth, true, budget), &Scope::default());
    }
    facts
}

/// `source` with every line continuation (a backslash that is not itself escaped, then a
/// newline) removed, or `None` when it has none.
fn join_continuations(source: &str) -> Option<String> {
    if !source.contains("\\\n") {
        return None;
    }
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    let mut joined = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('\n') => {
                chars.next();
                joined = true;
            }
            // An escaped backslash: both stay, and the next character is read afresh.
            Some('\\') => {
                out.push('\\');
                out.push('\\');
                chars.next();
            }
            _ => out.push('\\'),
        }
    }
    joined.then_some(out)
}

/// A second parse with here-documents blanked, to see commands tree-sitter hid after them, and
/// the bodies bash would read (by its line rules), not tree-sitter's guess.
fn reread_heredocs(
    source: &str,
    tree: &tree_sitter::Tree,
    depth: usize,
    facts: &mut ShellFacts,
    budget: &Budget,
) {
    let heredoc_misparse = source.contains("<<") && !facts.parse_errors.is_empty();
    if facts.heredocs.is_empty() && !heredoc_misparse {
        return;
    }
    let (blanked, bodies) = heredocs::blank_heredocs(source, tree);
    for doc in facts.heredocs.iter_mut() {
        if let Some((_, body, quoted)) = bodies.iter().find(|(op, _, _)| *op == doc.operator_at) {
            doc.body = body.clone();
            doc.quoted = *quoted;
        }
    }
    if blanked != source
        && let Some(tree2) = parse_tree(&blanked, budget)
    {
        let mut second = walk::walk(&blanked, &tree2, depth, budget);
        second.heredocs.clear();
        facts.merge(second, &Scope::default());
    }
}

/// Parse `source` into a tree whose byte offsets match `source`; the walker reads every text from
/// `source` itself, never from the copy the grammar was given. The bytes and the grammar's steps
/// are charged to `budget`, and the parse is cancelled (None) when it runs out.
fn parse_tree(source: &str, budget: &Budget) -> Option<tree_sitter::Tree> {
    #[cfg(test)]
    tests::PARSES.with(|n| n.set(n.get() + 1));
    let pipes = memchr::memchr_iter(b'|', source.as_bytes()).count() as u64;
    if !budget.charge(Resource::ParsedBytes, source.len() as u64)
        || !budget.admit(Resource::PipeOperators, pipes)
    {
        return None;
    }
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    let text = grammar_copy(source);
    let bytes: &[u8] = &text;
    let mut progress = |_: &tree_sitter::ParseState| {
        if budget.charge(Resource::ParserSteps, 1) {
            std::ops::ControlFlow::Continue(())
        } else {
            std::ops::ControlFlow::Break(())
        }
    };
    let options = tree_sitter::ParseOptions::new().progress_callback(&mut progress);
    let mut input = |i: usize, _| bytes.get(i..).unwrap_or_default();
    // The decoder is a call per character; plain ASCII without the characters it maps needs none.
    if bytes
        .iter()
        .all(|b| b.is_ascii() && !matches!(b, 0x00 | 0x0b | 0x0c | 0x0d))
    {
        return parser.parse_with_options(&mut input, None, Some(options));
    }
    parser.parse_custom_encoding::<AsciiLookahead, _, _>(&mut input, None, Some(options))
}

/// UTF-8 decoding that shows the grammar every non-ASCII character as `x`, consuming all of its
/// bytes. tree-sitter-bash 0.25's external scanner calls `isdigit()` on the code point after a
/// `{`; above 255 that reads outside the C library's table, and `echo {` followed by U+10FFFF
/// killed the process with SIGSEGV. Bash never reads a non-ASCII character as an operator or a
/// quote, so only word text is affected, and the walker reads word text from the original.
/// (At worst `$é` now looks like an expansion, which only makes a command less trusted.)
/// Node boundaries stay on character boundaries, since each character is consumed whole.
struct AsciiLookahead;

impl tree_sitter::Decode for AsciiLookahead {
    fn decode(bytes: &[u8]) -> (i32, u32) {
        let Some(&first) = bytes.first() else {
            return (-1, 0);
        };
        // Bash's blanks are space and tab only; the grammar also skips vertical tab, form feed
        // and carriage return, so `ls⟨CR⟩# ; rm -rf ~` read as `ls` and a comment. They are
        // word characters to bash, and `x` to the grammar. NUL would end the grammar's input.
        if matches!(first, 0x00 | 0x0b | 0x0c | 0x0d) {
            return (i32::from(b'x'), 1);
        }
        if first.is_ascii() {
            return (i32::from(first), 1);
        }
        let len: usize = match first {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        // `source` is a `&str`, so a character is never cut short; the bound is only a guard.
        (i32::from(b'x'), len.min(bytes.len()) as u32)
    }
}

/// The text the grammar is given in place of `source`: the same bytes, but for one operator.
/// tree-sitter-bash has no `<>`: it reads `cat <> f` as `<` and `>` with an ERROR node between
/// them, and in a longer pipeline that error swallowed the pipe structure (`curl … | sh | cat <>
/// f` lost its `curl | sh`). The grammar is given the same-length clobber operator `>|` instead,
/// which it parses wherever `<>` may stand; the walker reads the operator back as `<>` from the
/// original. An escaped `\<` and the tail of `<<` are left alone, since neither starts a `<>`;
/// inside quotes or a here-document body the swap changes no structure.
///
/// An escaped blank (`\\ `, `\\⟨TAB⟩`) is part of a word to bash, but the grammar can take it for
/// a word break: `echo \\ # ; rm -rf ~` read as `echo` and a comment, where bash runs `rm`.
/// The grammar is given `\\x` instead, still an escaped character inside the word. Only a
/// backslash that is not itself escaped (an odd run) escapes the blank.
fn grammar_copy(source: &str) -> std::borrow::Cow<'_, [u8]> {
    let bytes = source.as_bytes();
    if !source.contains("<>") && !source.contains("\\ ") && !source.contains("\\\t") {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = bytes.to_vec();
    let mut backslashes = 0usize;
    for i in 0..bytes.len() {
        let escaped = backslashes % 2 == 1;
        match bytes[i] {
            b' ' | b'\t' if escaped => out[i] = b'x',
            b'<' if !escaped
                && bytes.get(i + 1) == Some(&b'>')
                && !(i > 0 && bytes[i - 1] == b'<') =>
            {
                out[i] = b'>';
                out[i + 1] = b'|';
            }
            _ => {}
        }
        backslashes = if bytes[i] == b'\\' {
            backslashes + 1
        } else {
            0
        };
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests;
