//! A small Rust lexer for the layers check: identifiers, `::`, string literals (kept, for
//! `#[path = "…"]`) and single punctuation, each with its line. Comments, char literals,
//! lifetimes and numbers are dropped, so a path inside a comment or a string is never taken for
//! an import.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    Ident(String),
    /// `::`
    Path,
    Str(String),
    Punct(char),
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

/// The tokens of `src`, or what could not be read (an unterminated comment or string) and where.
pub fn lex(src: &str) -> Result<Vec<Token>, String> {
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut out) = (0usize, 1usize, Vec::new());
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let start = line;
            let mut depth = 0usize;
            loop {
                if i >= c.len() {
                    return Err(format!("line {start}: block comment never closed"));
                }
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if let Some((hashes, skip)) = raw_string_start(&c, i) {
            let start = line;
            i += skip;
            let body = i;
            loop {
                if i >= c.len() {
                    return Err(format!("line {start}: raw string never closed"));
                }
                if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    break;
                }
                line += usize::from(c[i] == '\n');
                i += 1;
            }
            out.push(Token {
                tok: Tok::Str(c[body..i].iter().collect()),
                line: start,
            });
            i += 1 + hashes;
        } else if ch == '"' || (matches!(ch, 'b' | 'c') && at(i + 1) == '"') {
            let start = line;
            i += if ch == '"' { 1 } else { 2 };
            let body = i;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                line += usize::from(at(i) == '\n');
                i += 1;
            }
            if i >= c.len() {
                return Err(format!("line {start}: string never closed"));
            }
            out.push(Token {
                tok: Tok::Str(c[body..i].iter().collect()),
                line: start,
            });
            i += 1;
        } else if ch == '\'' || (ch == 'b' && at(i + 1) == '\'') {
            i += usize::from(ch == 'b');
            // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a, 'static).
            if at(i + 1) == '\\' {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && is_ident(c[i]) {
                    i += 1;
                }
            }
        } else if is_ident_start(ch) {
            // A raw identifier (`r#type`) is the identifier itself.
            if ch == 'r' && at(i + 1) == '#' && is_ident_start(at(i + 2)) {
                i += 2;
            }
            let s = i;
            while i < c.len() && is_ident(c[i]) {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(c[s..i].iter().collect()),
                line,
            });
        } else if ch.is_ascii_digit() {
            while i < c.len() && (is_ident(c[i]) || c[i] == '.' && at(i + 1).is_ascii_digit()) {
                i += 1;
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Token {
                tok: Tok::Path,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(ch),
                line,
            });
            i += 1;
        }
    }
    Ok(out)
}

/// At `r"`, `r#"`, `br"`, `br##"`, …: the number of `#` and how many chars open the literal.
fn raw_string_start(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if c.get(j) == Some(&'b') || c.get(j) == Some(&'c') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = c[j..].iter().take_while(|&&x| x == '#').count();
    (c.get(j + hashes) == Some(&'"')).then_some((hashes, j + hashes + 1 - i))
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(src: &str) -> Vec<String> {
        lex(src)
            .unwrap()
            .into_iter()
            .filter_map(|t| match t.tok {
                Tok::Ident(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_strings_and_lifetimes_hide_nothing_and_show_nothing() {
        let src = "a // crate::x\n/* crate::y /* nested */ */ b \"crate::z\" r#\"crate::w\"# \
                   'c' '\\n' fn f<'a>(x: &'a str) {}";
        assert_eq!(idents(src), ["a", "b", "fn", "f", "x", "str"]);
    }

    #[test]
    fn lines_count_across_multiline_tokens() {
        let toks = lex("/* one\ntwo */\n\"three\nfour\"\nfive").unwrap();
        let five = toks.iter().find(|t| t.tok == Tok::Ident("five".into()));
        assert_eq!(five.map(|t| t.line), Some(5));
    }

    #[test]
    fn an_unterminated_comment_is_an_error_not_silence() {
        assert!(lex("a /* b").is_err());
        assert!(lex("\"open").is_err());
    }
}
