//! The pipeline keywords `!` and `time`, which tree-sitter-bash only half knows.
//!
//! Before a compound command the grammar reads them wrongly: `time while c; do rm x; done` comes
//! out as the commands `time while c`, `do rm x` and `done`, and `! while …` the same way, so
//! `rm` is seen only as an argument of a command named `do`. Neither keyword changes which
//! commands bash runs, so a second reading of the source with them blanked is as true as the
//! first, and it gives the grammar back the compound command.

use tree_sitter::{Node, Tree};

use super::ShellFacts;

/// Words bash reads as syntax at the start of a command. A command the grammar named with one
/// of them is a sign it lost the structure. (`time` is not here: the grammar names a command
/// `time` in every reading, right or wrong.)
const RESERVED: &[&str] = &[
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "until", "while",
];

/// Whether the grammar's reading shows the keyword misparse: a parse error, or a command named
/// by a reserved word (`do`, `done`, `}` …). Only then is the second reading worth its cost.
pub(super) fn misread(facts: &ShellFacts) -> bool {
    !facts.parse_errors.is_empty()
        || facts.commands.iter().any(|c| {
            // Quoted (`"do"`), the word is an ordinary command name.
            !c.name.dynamic
                && c.name.raw == c.name.value
                && RESERVED.contains(&c.name.value.as_str())
        })
}

/// The source with every `!` of a negated pipeline and every `time` keyword (with its `-p`)
/// replaced by blanks, or `None` when there is none. Byte offsets are kept.
pub(super) fn blank_pipeline_keywords(src: &str, tree: &Tree) -> Option<String> {
    let mut spans = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "negated_command" => {
                if let Some(bang) = n.child(0).filter(|c| c.kind() == "!") {
                    spans.push(bang.byte_range());
                }
            }
            "command" => spans.extend(time_keyword(src, n)),
            _ => {}
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    if spans.is_empty() {
        return None;
    }
    let mut bytes = src.as_bytes().to_vec();
    for span in spans {
        for b in bytes.get_mut(span)? {
            *b = b' ';
        }
    }
    // Only ASCII keywords were blanked, so the result is UTF-8 wherever `src` is.
    String::from_utf8(bytes).ok()
}

/// The bytes of a keyword the grammar took for a command name (`!`, `time`, `coproc`), with the
/// keywords that follow it (`! ! …`, `time time …`, `time -p -- …`) and the NAME `coproc` takes
/// before a compound command. Blanking a word too many only adds a reading; the first stays.
fn time_keyword(src: &str, command: Node) -> Option<std::ops::Range<usize>> {
    let name = command.child_by_field_name("name")?;
    let keyword = src.get(name.byte_range())?;
    if !["!", "time", "coproc"].contains(&keyword) {
        return None;
    }
    let mut cursor = command.walk();
    let args: Vec<Node> = command
        .children_by_field_name("argument", &mut cursor)
        .collect();
    let text = |i: usize| args.get(i).and_then(|a| src.get(a.byte_range()));
    let run = (0..args.len())
        .find(|i| !matches!(text(*i), Some("!" | "time" | "-p" | "--" | "coproc")))
        .unwrap_or(args.len());
    let mut end = match run {
        0 => name.end_byte(),
        n => args[n - 1].end_byte(),
    };
    let last = if run == 0 {
        Some(keyword)
    } else {
        text(run - 1)
    };
    let compound_next = text(run + 1).is_some_and(|t| {
        t.starts_with(['{', '(']) || ["while", "until", "if", "for", "case", "select"].contains(&t)
    });
    if last == Some("coproc") && compound_next {
        end = args[run].end_byte();
    }
    Some(name.start_byte()..end)
}

/// The text after `#` of every comment node. When the grammar errs it can take live code for a
/// comment (`x# ; rm -rf ~`: bash runs `x#`, then `rm`; the grammar saw a comment from `#`).
pub(super) fn comment_texts<'s>(src: &'s str, tree: &Tree) -> Vec<&'s str> {
    let mut out = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        if n.kind() == "comment" {
            if let Some(text) = src.get(n.byte_range()).and_then(|t| t.strip_prefix('#')) {
                out.push(text);
            }
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    out
}
