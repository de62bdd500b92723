//! Substitutions the grammar left inside a leaf. tree-sitter-bash reads the operand of
//! `${x:-…}`, `${x#…}`, `${x/…/…}`, `${x^…}` and the regex of `[[ a =~ … ]]` as one plain word,
//! with no node for a command, process or arithmetic substitution in it; bash still expands
//! them (`echo ${x:-`touch m`}` runs touch). This module finds them in the leaf's text by
//! bash's rules, so the walk can read each body as commands. Invariant: it over-reads rather
//! than misses: single quotes are not honoured (inside double quotes they are literal and the
//! substitution runs), an unterminated body is read to the end.

/// What a leaf's text holds that bash expands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// The commands of `$(…)`, `` `…` ``, `<(…)` or `>(…)`.
    Commands(String),
    /// `$((…))` or `$[…]`: arithmetic, which evaluates variables' values.
    Arithmetic,
    /// A nested `${…}`, whole (for the expansion checks), its own pieces listed after it.
    Expansion(String),
}

/// The end (exclusive) of the group opened just before `from`, whose closer is `close` and
/// opener `open`, counting nesting and skipping backslash escapes; the text's end when it is
/// not closed.
fn group_end(b: &[u8], from: usize, open: u8, close: u8) -> (usize, bool) {
    let mut depth = 1usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            c if c == open => depth += 1,
            c if c == close => {
                depth -= 1;
                if depth == 0 {
                    return (i, true);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (b.len(), false)
}

/// Every substitution in `text`, outermost first, nested `${…}` opened up.
pub(crate) fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    collect(text, &mut out, 0);
    out
}

fn collect(text: &str, out: &mut Vec<Piece>, depth: usize) {
    // A bound on nesting: past it everything left counts as commands to read.
    if depth > 32 {
        out.push(Piece::Commands(text.to_string()));
        return;
    }
    let b = text.as_bytes();
    let slice = |from: usize, to: usize| text.get(from..to).unwrap_or("").to_string();
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1).copied()) {
            (b'\\', _) => i += 2,
            (b'`', _) => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'`' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let body = slice(i + 1, j.min(b.len()))
                    .replace("\\`", "`")
                    .replace("\\$", "$")
                    .replace("\\\\", "\\");
                out.push(Piece::Commands(body));
                i = j + 1;
            }
            (b'$', Some(b'(')) if b.get(i + 2) == Some(&b'(') => {
                out.push(Piece::Arithmetic);
                let (end, _) = group_end(b, i + 2, b'(', b')');
                // What the arithmetic holds is read too: `$(( $(cmd) ))` runs cmd.
                collect(&slice(i + 3, end), out, depth + 1);
                i = end + 1;
            }
            (b'$' | b'<' | b'>', Some(b'(')) => {
                let (end, _) = group_end(b, i + 2, b'(', b')');
                out.push(Piece::Commands(slice(i + 2, end)));
                i = end + 1;
            }
            (b'$', Some(b'[')) => {
                out.push(Piece::Arithmetic);
                let (end, _) = group_end(b, i + 2, b'[', b']');
                collect(&slice(i + 2, end), out, depth + 1);
                i = end + 1;
            }
            (b'$', Some(b'{')) => {
                let (end, closed) = group_end(b, i + 2, b'{', b'}');
                let whole = if closed {
                    slice(i, end + 1)
                } else {
                    slice(i, end)
                };
                out.push(Piece::Expansion(whole));
                collect(&slice(i + 2, end), out, depth + 1);
                i = end + 1;
            }
            _ => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(text: &str) -> Vec<String> {
        pieces(text)
            .into_iter()
            .filter_map(|p| match p {
                Piece::Commands(c) => Some(c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_kind_of_substitution_in_a_leaf_is_found() {
        assert_eq!(commands("`touch m`"), ["touch m"]);
        assert_eq!(commands("$(touch m)"), ["touch m"]);
        assert_eq!(commands("<(touch m)"), ["touch m"]);
        assert_eq!(commands(">(touch m)"), ["touch m"]);
        assert_eq!(commands("(a|`touch m`)"), ["touch m"]);
        assert_eq!(
            commands("'`touch m`'"),
            ["touch m"],
            "single quotes over-read"
        );
        assert_eq!(commands("$(echo $(touch m))"), ["echo $(touch m)"]);
        assert_eq!(
            commands("a\\`b"),
            Vec::<String>::new(),
            "an escaped backtick"
        );
        assert_eq!(commands("`unterminated"), ["unterminated"]);
        assert!(pieces("$[y]").contains(&Piece::Arithmetic));
        assert!(pieces("$((x+1))").contains(&Piece::Arithmetic));
        assert_eq!(commands("$(( $(touch m) ))"), ["touch m"]);
        let nested = pieces("${!y}x${z:-`touch m`}");
        assert!(nested.contains(&Piece::Expansion("${!y}".into())));
        assert!(nested.contains(&Piece::Commands("touch m".into())));
        assert!(pieces("plain words and a $ sign").is_empty());
    }
}
