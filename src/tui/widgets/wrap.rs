//! Hard wrapping of styled lines to a width, by display columns. Layout heights come from here,
//! so the conversation can cache them per width. Invariant: no character is dropped: the wrapped
//! lines hold exactly the input's text, in order, each at most `width` columns wide.

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// `line` split into lines of at most `width` columns (at least one line, even when empty).
pub fn wrap_line(line: Line<'_>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut used = 0usize;
    for span in line.spans {
        let style = span.style;
        let mut piece = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width && used > 0 {
                if !piece.is_empty() {
                    cur.push(Span::styled(std::mem::take(&mut piece), style));
                }
                out.push(Line::from(std::mem::take(&mut cur)).style(line.style));
                used = 0;
            }
            piece.push(c);
            used += w;
        }
        if !piece.is_empty() {
            cur.push(Span::styled(piece, style));
        }
    }
    out.push(Line::from(cur).style(line.style));
    out
}

/// Every line wrapped.
pub fn wrap_all(lines: Vec<Line<'_>>, width: u16) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .flat_map(|l| wrap_line(l, width))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_split_without_losing_a_character() {
        let text = "x".repeat(25);
        let lines = wrap_line(Line::from(text.clone()), 10);
        assert_eq!(lines.len(), 3);
        let joined: String = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(joined, text);
        assert_eq!(wrap_line(Line::from(""), 10).len(), 1);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let lines = wrap_line(Line::from("日本語です"), 4);
        assert_eq!(lines.len(), 3);
    }
}
