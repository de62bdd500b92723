//! Syntax highlighting for fenced code, file excerpts and diffs: syntect with bat's syntaxes and
//! themes (two-face), loaded once on first use. Invariant: highlighting never fails a render:
//! an unknown language or a highlighting error gives the plain text in the theme's text colour.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme as SynTheme};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use two_face::theme::EmbeddedThemeName;

use crate::tui::theme::Theme;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(two_face::syntax::extra_newlines)
}

fn themes() -> &'static two_face::theme::EmbeddedLazyThemeSet {
    static SET: OnceLock<two_face::theme::EmbeddedLazyThemeSet> = OnceLock::new();
    SET.get_or_init(two_face::theme::extra)
}

/// The syntect theme that goes with a Spear theme.
fn syntect_theme(theme: &Theme) -> &'static SynTheme {
    let name = match theme.name.as_str() {
        "light" => EmbeddedThemeName::OneHalfLight,
        "high-contrast" => EmbeddedThemeName::Ansi,
        _ => EmbeddedThemeName::Nord,
    };
    themes().get(name)
}

/// The syntax for a fence's language or a file's name.
fn syntax_for(hint: &str) -> Option<&'static SyntaxReference> {
    let set = syntaxes();
    let hint = hint.trim();
    if hint.is_empty() {
        return None;
    }
    let ext = hint.rsplit('.').next().unwrap_or(hint);
    set.find_syntax_by_token(hint)
        .or_else(|| set.find_syntax_by_extension(ext))
        .or_else(|| set.find_syntax_by_token(ext))
}

fn to_color(c: syntect::highlighting::Color) -> Color {
    // bat's ANSI themes put a palette index in `r` with alpha 0.
    if c.a == 0 {
        Color::Indexed(c.r)
    } else {
        Color::Rgb(c.r, c.g, c.b)
    }
}

/// `code` as lines, highlighted for `hint` (a fence language or a path).
pub fn highlight(code: &str, hint: &str, theme: &Theme) -> Vec<Line<'static>> {
    let plain = || {
        code.lines()
            .map(|l| Line::styled(l.to_string(), theme.text()))
            .collect()
    };
    if theme.monochrome {
        return plain();
    }
    let Some(syntax) = syntax_for(hint) else {
        return plain();
    };
    let mut h = HighlightLines::new(syntax, syntect_theme(theme));
    let mut out = Vec::new();
    for line in syntect::util::LinesWithEndings::from(code) {
        let Ok(ranges) = h.highlight_line(line, syntaxes()) else {
            return plain();
        };
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(style, text)| {
                let mut s = Style::default().fg(to_color(style.foreground));
                if style.font_style.contains(FontStyle::BOLD) {
                    s = s.add_modifier(Modifier::BOLD);
                }
                if style.font_style.contains(FontStyle::ITALIC) {
                    s = s.add_modifier(Modifier::ITALIC);
                }
                Span::styled(text.trim_end_matches(['\n', '\r']).to_string(), s)
            })
            .collect();
        out.push(Line::from(spans));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_are_coloured_and_unknown_ones_are_plain() {
        let t = Theme::named("dark").unwrap();
        let lines = highlight("fn main() {}\n", "rust", &t);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].spans.len() > 1,
            "rust should be split into styled tokens"
        );
        let plain = highlight("a b\n", "no-such-language", &t);
        assert_eq!(plain[0].spans.len(), 1);
        assert_eq!(plain[0].spans[0].content, "a b");
    }
}
