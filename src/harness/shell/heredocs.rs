//! The here-document pre-lexer: each here-document's body read as bash reads it (the
//! delimiter unquoted, `<<-` stripping tabs, several on one line taking consecutive bodies),
//! and the source with every operator, delimiter and body blanked (newlines and offsets kept),
//! so a second parse sees the commands that share a line with a here-document operator.

use tree_sitter::Tree;

/// The source with every here-document operator, delimiter and body blanked (newlines kept),
/// so a second parse sees the commands that share a line with a here-document operator.
pub(super) fn blank_heredocs(src: &str, tree: &Tree) -> (String, Vec<(usize, String, bool)>) {
    let mut ops = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        // A node the parser invented while recovering from an error (`is_missing`) has the kind
        // but not the text; only a real `<<` in the source starts a here-document.
        let real_operator = src
            .get(n.start_byte()..)
            .is_some_and(|rest| rest.starts_with("<<"));
        if (n.kind() == "<<" || n.kind() == "<<-") && !n.is_missing() && real_operator {
            ops.push(n.start_byte());
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    ops.sort_unstable();
    ops.dedup();
    let bytes = src.as_bytes();
    let mut blank = vec![false; bytes.len()];
    // Bodies start on the line after the operator; several here-documents on one line take
    // consecutive bodies.
    let mut next_body_start: Option<(usize, usize)> = None; // (line end, body start)
    let mut bodies = Vec::new();
    for op in ops {
        let (delim, quoted_end, strip_tabs) = lex_delimiter(src, op);
        let quoted = src
            .get(op..quoted_end)
            .is_some_and(|t| t.contains(['\'', '"', '\\']));
        if let Some(range) = blank.get_mut(op..quoted_end) {
            range.fill(true);
        }
        let line_end = src[op..].find('\n').map(|i| op + i);
        let Some(line_end) = line_end else { continue };
        let body_start = match next_body_start {
            Some((le, bs)) if le == line_end => bs,
            _ => line_end + 1,
        };
        let mut pos = body_start;
        let mut end = src.len();
        let mut body_end = src.len();
        while pos < src.len() {
            let eol = src[pos..].find('\n').map(|i| pos + i).unwrap_or(src.len());
            let line = &src[pos..eol];
            let line = if strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line
            };
            if line == delim {
                body_end = pos;
                end = (eol + 1).min(src.len());
                break;
            }
            pos = eol + 1;
        }
        if let Some(range) = blank.get_mut(body_start.min(end)..end) {
            range.fill(true);
        }
        next_body_start = Some((line_end, end));
        let body = src
            .get(body_start.min(body_end)..body_end)
            .unwrap_or("")
            .to_string();
        bodies.push((op, body, quoted));
    }
    let out: Vec<u8> = bytes
        .iter()
        .zip(blank)
        .map(|(&c, b)| if b && c != b'\n' { b' ' } else { c })
        .collect();
    (String::from_utf8_lossy(&out).into_owned(), bodies)
}

/// Lex the here-document delimiter after the operator at `op`: its unquoted value, where its
/// source text ends, and whether the operator is `<<-`.
fn lex_delimiter(src: &str, op: usize) -> (String, usize, bool) {
    let rest = src.get(op..).unwrap_or_default();
    let strip_tabs = rest.starts_with("<<-");
    let mut i = op + if strip_tabs { 3 } else { 2 };
    let bytes = src.as_bytes();
    while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
        i += 1;
    }
    let mut value = String::new();
    let mut chars = src.get(i..).unwrap_or_default().char_indices().peekable();
    let mut end = i;
    let mut quote: Option<char> = None;
    while let Some((off, c)) = chars.next() {
        end = i + off + c.len_utf8();
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => value.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => {
                if let Some((o2, e)) = chars.next() {
                    end = i + o2 + e.len_utf8();
                    value.push(e);
                }
            }
            (None, c) if c.is_whitespace() || ";|&<>()".contains(c) => {
                end = i + off;
                break;
            }
            (None, c) => value.push(c),
        }
    }
    (value, end, strip_tabs)
}
