//! Markdown to styled lines for the model's answers: headings, bullet and numbered lists, block
//! quotes, emphasis, strong, inline code, links (text and address both shown), and fenced code
//! highlighted by language. A small line-oriented renderer: streamed text is re-rendered as it
//! grows, so an unclosed fence or emphasis simply shows as it stands. Invariant: every
//! character of the source that is not markup reaches the output; nothing is executed or
//! fetched (a link is shown, never followed).

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::tui::highlight::highlight;
use crate::tui::theme::Theme;

/// Render `src` to lines (not yet wrapped).
pub fn render(src: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut fence: Option<(String, String)> = None; // (language, code so far)
    for raw in src.split('\n') {
        let trimmed = raw.trim_start();
        if let Some((lang, code)) = &mut fence {
            if trimmed.starts_with("```") {
                out.extend(code_block(code, lang, theme));
                fence = None;
            } else {
                code.push_str(raw);
                code.push('\n');
            }
            continue;
        }
        if let Some(lang) = trimmed.strip_prefix("```") {
            fence = Some((lang.trim().to_string(), String::new()));
            continue;
        }
        out.push(block_line(raw, theme));
    }
    if let Some((lang, code)) = fence {
        out.extend(code_block(&code, &lang, theme));
    }
    out
}

fn code_block(code: &str, lang: &str, theme: &Theme) -> Vec<Line<'static>> {
    highlight(code, lang, theme)
        .into_iter()
        .map(|l| {
            let mut spans = vec![Span::styled("▎ ", theme.secondary())];
            spans.extend(l.spans);
            Line::from(spans)
        })
        .collect()
}

fn block_line(raw: &str, theme: &Theme) -> Line<'static> {
    let trimmed = raw.trim_start();
    let indent = raw.len() - trimmed.len();
    let hashes = trimmed.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        let style = theme
            .accent()
            .add_modifier(Modifier::BOLD)
            .add_modifier(if hashes == 1 {
                Modifier::UNDERLINED
            } else {
                Modifier::empty()
            });
        return Line::from(inline(trimmed[hashes..].trim(), style, theme));
    }
    if let Some(rest) = trimmed.strip_prefix("> ") {
        let mut spans = vec![Span::styled("│ ", theme.secondary())];
        spans.extend(inline(
            rest,
            theme.secondary().add_modifier(Modifier::ITALIC),
            theme,
        ));
        return Line::from(spans);
    }
    let pad = " ".repeat(indent);
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = trimmed.strip_prefix(bullet) {
            let mut spans = vec![Span::raw(pad.clone()), Span::styled("• ", theme.accent())];
            spans.extend(inline(rest, theme.text(), theme));
            return Line::from(spans);
        }
    }
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && trimmed[digits..].starts_with(". ") {
        let mut spans = vec![
            Span::raw(pad),
            Span::styled(trimmed[..digits + 2].to_string(), theme.accent()),
        ];
        spans.extend(inline(&trimmed[digits + 2..], theme.text(), theme));
        return Line::from(spans);
    }
    Line::from(inline(raw, theme.text(), theme))
}

/// Inline markup: `code`, **strong**, *emphasis* / _emphasis_, [text](address).
fn inline(text: &str, base: Style, theme: &Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    let flush = |plain: &mut String, spans: &mut Vec<Span<'static>>| {
        if !plain.is_empty() {
            spans.push(Span::styled(std::mem::take(plain), base));
        }
    };
    while let Some(c) = rest.chars().next() {
        let found = match c {
            '`' => delimited(rest, "`").map(|(inner, n)| {
                (
                    vec![Span::styled(
                        inner.to_string(),
                        theme.accent().bg(theme.surface),
                    )],
                    n,
                )
            }),
            '*' if rest.starts_with("**") => delimited(rest, "**")
                .map(|(inner, n)| (inline(inner, base.add_modifier(Modifier::BOLD), theme), n)),
            '*' | '_' => delimited(rest, &rest[..1])
                .filter(|(i, _)| !i.starts_with(' '))
                .map(|(inner, n)| (inline(inner, base.add_modifier(Modifier::ITALIC), theme), n)),
            '[' => link(rest).map(|(label, url, n)| {
                let mut v = inline(
                    label,
                    base.fg(theme.accent).add_modifier(Modifier::UNDERLINED),
                    theme,
                );
                v.push(Span::styled(format!(" <{url}>"), theme.secondary()));
                (v, n)
            }),
            _ => None,
        };
        match found {
            Some((inner, used)) => {
                flush(&mut plain, &mut spans);
                spans.extend(inner);
                rest = &rest[used..];
            }
            None => {
                plain.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    flush(&mut plain, &mut spans);
    spans
}

/// `rest` starts with `delim`: the text up to the closing `delim`, and the bytes consumed.
fn delimited<'a>(rest: &'a str, delim: &str) -> Option<(&'a str, usize)> {
    let body = &rest[delim.len()..];
    let end = body.find(delim)?;
    (end > 0).then(|| (&body[..end], delim.len() * 2 + end))
}

fn link(rest: &str) -> Option<(&str, &str, usize)> {
    let close = rest.find("](")?;
    let label = &rest[1..close];
    let after = &rest[close + 2..];
    let end = after.find(')')?;
    (!label.contains(']')).then(|| (label, &after[..end], close + 3 + end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn markup_is_removed_and_the_text_kept() {
        let t = Theme::named("dark").unwrap();
        let out = render(
            "# Title\n- one **two**\n1. `x` and *y*\nsee [docs](https://e.x)\n```rust\nfn a() {}\n```",
            &t,
        );
        assert_eq!(
            text(&out),
            vec![
                "Title",
                "• one two",
                "1. x and y",
                "see docs <https://e.x>",
                "▎ fn a() {}"
            ]
        );
        let strong = out[1].spans.iter().find(|s| s.content == "two").unwrap();
        assert!(strong.style.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn an_unclosed_fence_still_shows_its_code() {
        let t = Theme::named("dark").unwrap();
        assert_eq!(text(&render("```\nabc", &t)), vec!["▎ abc"]);
        assert_eq!(text(&render("a * b * c", &t)), vec!["a * b * c"]);
    }
}
