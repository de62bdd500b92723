//! The awk lexer: program text to tokens, reading `/` as a regular expression exactly where an
//! operand is expected (after an operator, a keyword, `(`, `,`, a newline …) and as division
//! after an operand. Where the dialects split (mawk reads `length /x/` and `a++ /x/` as a
//! regular expression, gawk and busybox as a division), the lexer refuses rather than pick one.

/// One token. Names carry whether a `(` follows with no blank between, which is how awk tells a
/// call of a user function from a variable concatenated with a parenthesised expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Newline,
    Name {
        text: String,
        call: bool,
    },
    Number,
    Str(Lit),
    Regex,
    /// gawk's typed regular expression constant `@/re/`.
    TypedRegex,
    /// `@name`: a directive (`@load`, `@include`, `@namespace`) or an indirect call.
    At(String),
    Punct(&'static str),
}

/// A string constant: its value with escapes processed, and whether every escape in it means
/// the same in all dialects (`\"`, `\\`, `\/`, `\n`, `\t`). A name spelled with other escapes
/// (`\x2e`, octal) is not taken as a known path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lit {
    pub value: String,
    pub plain: bool,
}

/// Operators, longest first so that `**=` is not read as `**` and `=`.
const PUNCT: &[&str] = &[
    "**=", "**", "^=", "+=", "-=", "*=", "%=", "==", "<=", ">=", "!=", "!~", "++", "--", "&&",
    "||", "|&", ">>", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "%", "^", "!", ">",
    "<", "|", "?", ":", "~", "$", "=",
];

/// Words that are never variables.
pub(crate) const KEYWORDS: &[&str] = &[
    "BEGIN",
    "END",
    "BEGINFILE",
    "ENDFILE",
    "function",
    "func",
    "if",
    "else",
    "while",
    "for",
    "do",
    "break",
    "continue",
    "next",
    "nextfile",
    "exit",
    "return",
    "delete",
    "getline",
    "print",
    "printf",
    "in",
    "switch",
    "case",
    "default",
];

/// Built-in functions of gawk, mawk and busybox awk together. Each only computes, except
/// `system` (runs a command); `close` and `fflush` act on streams the program opened itself.
pub(crate) const BUILTINS: &[&str] = &[
    "length",
    "substr",
    "index",
    "split",
    "sub",
    "gsub",
    "match",
    "sprintf",
    "sin",
    "cos",
    "atan2",
    "exp",
    "log",
    "sqrt",
    "int",
    "rand",
    "srand",
    "tolower",
    "toupper",
    "system",
    "close",
    "fflush",
    "gensub",
    "strftime",
    "systime",
    "mktime",
    "and",
    "or",
    "xor",
    "lshift",
    "rshift",
    "compl",
    "asort",
    "asorti",
    "patsplit",
    "isarray",
    "typeof",
    "bindtextdomain",
    "dcgettext",
    "dcngettext",
    "strtonum",
    "mkbool",
];

/// What a `/` after this token means in every dialect: `Some(true)` a regular expression,
/// `Some(false)` a division, `None` where the dialects disagree.
fn slash_starts_regex(prev: Option<&Tok>) -> Option<bool> {
    match prev {
        None | Some(Tok::Newline | Tok::At(_)) => Some(true),
        Some(Tok::Number | Tok::Str(_) | Tok::Regex | Tok::TypedRegex) => Some(false),
        Some(Tok::Name { text, .. }) => {
            if text == "getline" || BUILTINS.contains(&text.as_str()) {
                None
            } else if KEYWORDS.contains(&text.as_str()) {
                Some(true)
            } else {
                Some(false)
            }
        }
        Some(Tok::Punct(p)) => match *p {
            ")" | "]" => Some(false),
            "++" | "--" => None,
            _ => Some(true),
        },
    }
}

/// Split `src` into tokens, or say what could not be read.
pub(crate) fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let s: Vec<char> = src.chars().collect();
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match c {
            ' ' | '\t' | '\r' | '\x0c' | '\x0b' => i += 1,
            '\n' => {
                out.push(Tok::Newline);
                i += 1;
            }
            '\\' => {
                // Backslash-newline joins lines; a backslash anywhere else is not awk.
                match (s.get(i + 1), s.get(i + 2)) {
                    (Some('\n'), _) => i += 2,
                    (Some('\r'), Some('\n')) => i += 3,
                    _ => return Err("a backslash outside a string or regular expression".into()),
                }
            }
            '#' => {
                let mut j = i;
                while j < s.len() && s[j] != '\n' {
                    j += 1;
                }
                // Whether a comment's final backslash joins the next line differs between
                // awks; the next line would be code in one and comment in another.
                if s[i..j].iter().rev().find(|c| **c != '\r') == Some(&'\\') {
                    return Err("a comment ending in a backslash".into());
                }
                i = j;
            }
            '"' => {
                let (lit, next) = string(&s, i + 1)?;
                out.push(Tok::Str(lit));
                i = next;
            }
            '@' => {
                if s.get(i + 1) == Some(&'/') {
                    i = regex(&s, i + 2)?;
                    out.push(Tok::TypedRegex);
                } else {
                    let (name, next) = name(&s, i + 1);
                    if name.is_empty() {
                        return Err("`@` without a name".into());
                    }
                    out.push(Tok::At(name));
                    i = next;
                }
            }
            '/' => match slash_starts_regex(out.last()) {
                Some(true) => {
                    i = regex(&s, i + 1)?;
                    out.push(Tok::Regex);
                }
                Some(false) => {
                    if s.get(i + 1) == Some(&'=') {
                        out.push(Tok::Punct("/="));
                        i += 2;
                    } else {
                        out.push(Tok::Punct("/"));
                        i += 1;
                    }
                }
                None => {
                    return Err(
                        "a `/` that mawk reads as a regular expression and gawk as a division"
                            .into(),
                    );
                }
            },
            c if c.is_ascii_digit()
                || (c == '.' && s.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                i = number(&s, i);
                out.push(Tok::Number);
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let (text, next) = name(&s, i);
                i = next;
                let call = s.get(i) == Some(&'(');
                out.push(Tok::Name { text, call });
            }
            _ => {
                let rest: String = s[i..s.len().min(i + 3)].iter().collect();
                match PUNCT.iter().find(|p| rest.starts_with(**p)) {
                    Some(p) => {
                        out.push(Tok::Punct(*p));
                        i += p.chars().count();
                    }
                    None => return Err(format!("the character `{}`", c.escape_default())),
                }
            }
        }
    }
    Ok(out)
}

/// A name, with gawk's namespace qualifier (`ns::name`) kept as part of it.
fn name(s: &[char], mut i: usize) -> (String, usize) {
    let start = i;
    let word = |i: &mut usize| {
        while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == '_') {
            *i += 1;
        }
    };
    word(&mut i);
    if i > start
        && s.get(i) == Some(&':')
        && s.get(i + 1) == Some(&':')
        && s.get(i + 2)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_')
    {
        i += 2;
        word(&mut i);
    }
    (s[start..i].iter().collect(), i)
}

/// A number: decimal with fraction and exponent, or gawk's `0x…` (mawk reads `0` and the name
/// `x…`, which only computes too).
fn number(s: &[char], mut i: usize) -> usize {
    if s[i] == '0' && matches!(s.get(i + 1), Some('x' | 'X')) {
        i += 2;
        while i < s.len() && s[i].is_ascii_hexdigit() {
            i += 1;
        }
        return i;
    }
    while i < s.len() && (s[i].is_ascii_digit() || s[i] == '.') {
        i += 1;
    }
    if i < s.len() && (s[i] == 'e' || s[i] == 'E') {
        let mut j = i + 1;
        if j < s.len() && (s[j] == '+' || s[j] == '-') {
            j += 1;
        }
        if j < s.len() && s[j].is_ascii_digit() {
            i = j;
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    i
}

/// A string constant from just after its opening quote: the constant and the index after the
/// closing quote.
fn string(s: &[char], mut i: usize) -> Result<(Lit, usize), String> {
    let mut value = String::new();
    let mut plain = true;
    while i < s.len() {
        match s[i] {
            '"' => return Ok((Lit { value, plain }, i + 1)),
            '\n' => return Err("a newline inside a string".into()),
            '\\' => {
                let Some(&e) = s.get(i + 1) else { break };
                i += 2;
                match e {
                    '\n' => {}
                    '"' | '\\' | '/' => value.push(e),
                    'n' => value.push('\n'),
                    't' => value.push('\t'),
                    '0'..='7' => {
                        // gawk and mawk read up to three octal digits.
                        plain = false;
                        let mut n = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match s.get(i).and_then(|c| c.to_digit(8)) {
                                Some(d) => {
                                    n = n * 8 + d;
                                    i += 1;
                                }
                                None => break,
                            }
                        }
                        value.push(char::from_u32(n).unwrap_or('?'));
                    }
                    other => {
                        plain = false;
                        value.push('\\');
                        value.push(other);
                    }
                }
            }
            c => {
                value.push(c);
                i += 1;
            }
        }
    }
    Err("a string without its closing quote".into())
}

/// A regular expression from just after its opening `/`: the index after the closing `/`. A
/// `/` inside a bracket expression (`/[/]/`) does not end it, as gawk and mawk read it; busybox
/// ends it there, which leaves it the expression `[`, which it refuses to compile, so it runs
/// nothing. Bracket contents the awks read differently are refused.
fn regex(s: &[char], mut i: usize) -> Result<usize, String> {
    let unterminated = || "a regular expression without its closing `/`".to_string();
    while i < s.len() {
        match s[i] {
            '\n' => return Err(unterminated()),
            '\\' => {
                if s.get(i + 1) == Some(&'\n') {
                    return Err("a backslash-newline inside a regular expression".into());
                }
                i += 2;
            }
            '/' => return Ok(i + 1),
            '[' => i = super::super::brackets::bracket(s, i + 1)?,
            _ => i += 1,
        }
    }
    Err(unterminated())
}
