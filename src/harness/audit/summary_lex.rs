//! A bash lexer just good enough for the audit summary: words (quotes, escapes, `$(…)`, `${…}`,
//! backticks and process substitutions kept inside their word), control operators, redirections,
//! here-document operators and bodies (by bash's line rules), here-strings and comments, each
//! with its byte span. It never fails: unterminated quotes or bodies run to the end of the text.
//!
//! Invariant: every byte of a here-document body lies inside a `HereDocBody` token, so the
//! summary can leave the whole body out.

use std::ops::Range;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Word,
    /// `|`, `||`, `&&`, `;`, `;;`, `&`, `(`, `)`, `|&`, …: a new simple command follows.
    Control,
    Newline,
    /// `<`, `>`, `>>`, `2>&`, `&>`, …: the next word is a target.
    Redirect,
    /// `<<` or `<<-`: the next word is the delimiter.
    HereDoc,
    /// `<<<`: the next word is content.
    HereString,
    /// The lines of a here-document, its delimiter line included.
    HereDocBody,
    Comment,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Kind,
    pub span: Range<usize>,
}

/// The tokens of `src`, in order.
pub(crate) fn lex(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    // Here-documents whose bodies start after the next newline: (delimiter, strip tabs).
    let mut pending: Vec<(String, bool)> = Vec::new();
    let mut delimiter_next: Option<bool> = None;
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let (kind, end) = match b[i] {
            b' ' | b'\t' => {
                i += 1;
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => {
                i += 2;
                continue;
            }
            b'\n' => {
                out.push(Token {
                    kind: Kind::Newline,
                    span: i..i + 1,
                });
                i += 1;
                for (n, (delimiter, strip_tabs)) in pending.drain(..).enumerate() {
                    // The next body starts on the line after the previous one's delimiter.
                    if n > 0 && b.get(i) == Some(&b'\n') {
                        i += 1;
                    }
                    let end = body_end(b, i, &delimiter, strip_tabs);
                    if end > i {
                        out.push(Token {
                            kind: Kind::HereDocBody,
                            span: i..end,
                        });
                    }
                    i = end;
                }
                continue;
            }
            b'#' => (Kind::Comment, line_end(b, i)),
            b'<' | b'>' if b.get(i + 1) == Some(&b'(') => (Kind::Word, word_end(b, i)),
            c if c.is_ascii_digit() && redirect_after_digits(b, i).is_some() => {
                redirect_after_digits(b, i).unwrap_or((Kind::Redirect, i + 1))
            }
            b'<' | b'>' | b'&' | b'|' | b';' | b'(' | b')' => operator(b, i),
            _ => (Kind::Word, word_end(b, i)),
        };
        let end = end.max(start + 1).min(b.len());
        if kind == Kind::Word
            && let Some(strip_tabs) = delimiter_next.take()
        {
            pending.push((delimiter_text(&src[start..end]), strip_tabs));
        }
        if kind == Kind::HereDoc {
            delimiter_next = Some(src[start..end].ends_with('-'));
        }
        out.push(Token {
            kind,
            span: start..end,
        });
        i = end;
    }
    out
}

/// `2>`, `10>>`, `0<<`: digits that are a redirection's file descriptor.
fn redirect_after_digits(b: &[u8], i: usize) -> Option<(Kind, usize)> {
    let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let at = i + digits;
    matches!(b.get(at), Some(b'<' | b'>'))
        .then(|| operator(b, at))
        .filter(|(kind, _)| matches!(kind, Kind::Redirect | Kind::HereDoc | Kind::HereString))
}

/// The operator starting at `i` and where it ends.
fn operator(b: &[u8], i: usize) -> (Kind, usize) {
    let rest = &b[i..];
    let starts = |p: &[u8]| rest.starts_with(p);
    if starts(b"<<<") {
        return (Kind::HereString, i + 3);
    }
    if starts(b"<<-") {
        return (Kind::HereDoc, i + 3);
    }
    if starts(b"<<") {
        return (Kind::HereDoc, i + 2);
    }
    for op in [
        &b"&>>"[..],
        b"&>",
        b">>",
        b">|",
        b"<>",
        b">&",
        b"<&",
        b">",
        b"<",
    ] {
        if starts(op) {
            let mut end = i + op.len();
            // `>&2`, `<&-`: the descriptor belongs to the operator.
            if op.ends_with(b"&") {
                end += b[end..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit() || **c == b'-')
                    .count();
            }
            return (Kind::Redirect, end);
        }
    }
    for op in [
        &b"&&"[..],
        b"||",
        b";;&",
        b";;",
        b";&",
        b"|&",
        b"|",
        b";",
        b"&",
        b"(",
        b")",
    ] {
        if starts(op) {
            return (Kind::Control, i + op.len());
        }
    }
    (Kind::Word, i + 1)
}

fn line_end(b: &[u8], i: usize) -> usize {
    memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n)
}

/// Where the word starting at `i` ends: at an unquoted blank, newline or operator character.
fn word_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b')' => return i,
            b'(' => i = balanced(b, i + 1, b'(', b')'),
            b'<' | b'>' if b.get(i + 1) == Some(&b'(') => i = balanced(b, i + 2, b'(', b')'),
            b'<' | b'>' => return i,
            b'\\' => i += 2,
            b'\'' => i = quote_end(b, i + 1, b'\''),
            b'"' => i = quote_end(b, i + 1, b'"'),
            b'`' => i = quote_end(b, i + 1, b'`'),
            b'$' if matches!(b.get(i + 1), Some(b'(')) => i = balanced(b, i + 2, b'(', b')'),
            b'$' if matches!(b.get(i + 1), Some(b'{')) => i = balanced(b, i + 2, b'{', b'}'),
            _ => i += 1,
        }
    }
    b.len()
}

/// Just past the closing `q` (a backslash escapes inside `"` and backticks, not inside `'`).
fn quote_end(b: &[u8], mut i: usize, q: u8) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' if q != b'\'' => i += 2,
            c if c == q => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Just past the `close` that balances an already opened `open`, quotes respected.
fn balanced(b: &[u8], mut i: usize, open: u8, close: u8) -> usize {
    let mut depth = 1usize;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\'' => i = quote_end(b, i + 1, b'\''),
            b'"' => i = quote_end(b, i + 1, b'"'),
            c if c == open => {
                depth += 1;
                i += 1;
            }
            c if c == close => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    b.len()
}

/// The delimiter bash compares lines with: the word with its quotes and backslashes removed.
fn delimiter_text(word: &str) -> String {
    word.chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect()
}

/// The end of a body starting at `i`: just past its delimiter line (without that line's
/// newline), or the end of the text when the delimiter never comes.
fn body_end(b: &[u8], mut i: usize, delimiter: &str, strip_tabs: bool) -> usize {
    while i < b.len() {
        let end = line_end(b, i);
        let mut line = &b[i..end];
        if strip_tabs {
            while let [b'\t', rest @ ..] = line {
                line = rest;
            }
        }
        if line == delimiter.as_bytes() {
            return end;
        }
        i = end + 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Kind, &str)> {
        lex(src)
            .into_iter()
            .map(|t| (t.kind, &src[t.span]))
            .collect()
    }

    #[test]
    fn words_keep_their_quotes_and_substitutions() {
        use Kind::*;
        assert_eq!(
            kinds("echo 'a b' \"c;d\" $(e | f) x>y 2>&1 <(g)"),
            [
                (Word, "echo"),
                (Word, "'a b'"),
                (Word, "\"c;d\""),
                (Word, "$(e | f)"),
                (Word, "x"),
                (Redirect, ">"),
                (Word, "y"),
                (Redirect, "2>&1"),
                (Word, "<(g)"),
            ]
        );
    }

    #[test]
    fn here_document_bodies_follow_bash_line_rules() {
        use Kind::*;
        assert_eq!(
            kinds("cat <<A <<-'B'; ls\na\nA\n\tb\n\tB\nrm"),
            [
                (Word, "cat"),
                (HereDoc, "<<"),
                (Word, "A"),
                (HereDoc, "<<-"),
                (Word, "'B'"),
                (Control, ";"),
                (Word, "ls"),
                (Newline, "\n"),
                (HereDocBody, "a\nA"),
                (HereDocBody, "\tb\n\tB"),
                (Newline, "\n"),
                (Word, "rm"),
            ]
        );
        assert_eq!(kinds("cat <<E\nnever ends")[4], (HereDocBody, "never ends"));
    }
}
