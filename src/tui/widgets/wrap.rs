//! Wrapping of styled lines to a width, by display columns: at the last blank that fits, or
//! inside a word that is wider than the line. Layout heights come from here, so the
//! conversation can cache them per width. Invariant: no character is dropped: the wrapped lines
//! hold exactly the input's text, in order, each at most `width` columns wide.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// `line` split into lines of at most `width` columns (at least one line, even when empty).
pub fn wrap_line(line: Line<'_>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let mut out: Vec<Line<'static>> = Vec::new();
    // The current line's characters with their styles and widths, and where it may break: just
    // after its last blank.
    let mut cur: Vec<(char, Style, usize)> = Vec::new();
    let mut used = 0usize;
    let mut last_break: Option<usize> = None;
    for span in &line.spans {
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width && used > 0 {
                let at = match last_break {
                    Some(b) if b < cur.len() => b,
                    _ => cur.len(),
                };
                let rest = cur.split_off(at);
                out.push(styled(&cur, line.style));
                cur = rest;
                used = cur.iter().map(|(_, _, w)| w).sum();
                last_break = None;
            }
            cur.push((c, span.style, w));
            used += w;
            if c.is_whitespace() {
                last_break = Some(cur.len());
            }
        }
    }
    out.push(styled(&cur, line.style));
    out
}

/// Characters back into spans, one per run of the same style.
fn styled(chars: &[(char, Style, usize)], line_style: Style) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style: Option<Style> = None;
    for (c, s, _) in chars {
        if style.is_some_and(|st| st != *s) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(*s);
        text.push(*c);
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, style.unwrap_or_default()));
    }
    Line::from(spans).style(line_style)
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
    fn lines_break_at_the_last_blank_that_fits_and_keep_every_character() {
        let text = "set SPEAR_BASE_URL to a server such as Ollama, llama.cpp or LM Studio";
        let lines = wrap_line(Line::from(text), 20);
        let joined: String = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(joined, text);
        for l in &lines {
            assert!(l.width() <= 20, "{l:?}");
        }
        // No word is cut when it fits on a line of its own.
        for word in text.split(' ') {
            assert!(
                lines.iter().any(|l| l.to_string().contains(word)),
                "{word} was cut"
            );
        }
    }

    #[test]
    fn styles_survive_a_break_inside_a_span() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let line = Line::from(vec![
            Span::raw("plain "),
            Span::styled("bold words here", bold),
        ]);
        let lines = wrap_line(line, 11);
        assert_eq!(lines.len(), 2);
        let spans: Vec<(String, Style)> = lines
            .iter()
            .flat_map(|l| l.spans.iter().map(|s| (s.content.to_string(), s.style)))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("plain ".to_string(), Style::default()),
                ("bold ".to_string(), bold),
                ("words here".to_string(), bold),
            ]
        );
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let lines = wrap_line(Line::from("日本語です"), 4);
        assert_eq!(lines.len(), 3);
    }
}
