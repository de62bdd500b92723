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

/// Whether a line is a table row (`| a | b |`).
pub fn table_row(line: &str) -> bool {
    line.trim_start().starts_with('|')
}

/// Render `src` to lines (not yet wrapped).
pub fn render(src: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut fence: Option<(String, String)> = None; // (language, code so far)
    let mut table: Vec<&str> = Vec::new();
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
        if table_row(raw) {
            table.push(raw);
            continue;
        }
        if !table.is_empty() {
            out.extend(table_lines(&std::mem::take(&mut table), theme));
        }
        if let Some(lang) = trimmed.strip_prefix("```") {
            fence = Some((lang.trim().to_string(), String::new()));
            continue;
        }
        out.push(block_line(raw, theme));
    }
    if !table.is_empty() {
        out.extend(table_lines(&table, theme));
    }
    if let Some((lang, code)) = fence {
        out.extend(code_block(&code, &lang, theme));
    }
    out
}

/// A code block: its language as a label, then the code highlighted and indented (no gutter
/// character, so a selection of the code is the code).
fn code_block(code: &str, lang: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if !lang.is_empty() {
        out.push(Line::styled(
            format!("  {lang}"),
            theme.hint().add_modifier(Modifier::ITALIC),
        ));
    }
    out.extend(highlight(code, lang, theme).into_iter().map(|l| {
        let mut spans = vec![Span::raw("  ")];
        spans.extend(l.spans);
        Line::from(spans)
    }));
    out
}

/// The cells of a table row: `| a | b |` is `a`, `b`.
fn cells(row: &str) -> Vec<&str> {
    let t = row.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(str::trim).collect()
}

/// A delimiter row (`|---|:---:|`).
fn delimiter(row: &str) -> bool {
    let c = cells(row);
    !c.is_empty()
        && c.iter().all(|x| {
            !x.is_empty() && x.chars().all(|ch| matches!(ch, '-' | ':')) && x.contains('-')
        })
}

/// Consecutive `|` rows: a table when the second is a delimiter row (columns aligned, the
/// header bold, the delimiter a rule); otherwise the rows as they are.
fn table_lines(rows: &[&str], theme: &Theme) -> Vec<Line<'static>> {
    if rows.len() < 2 || !delimiter(rows[1]) {
        return rows.iter().map(|r| block_line(r, theme)).collect();
    }
    let body: Vec<Vec<&str>> = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, r)| cells(r))
        .collect();
    let columns = body.iter().map(Vec::len).max().unwrap_or(0);
    let width = |s: &str| unicode_width::UnicodeWidthStr::width(s);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            body.iter()
                .map(|r| r.get(c).map_or(0, |x| width(x)))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = Vec::new();
    for (i, row) in body.iter().enumerate() {
        let style = if i == 0 {
            theme.text().add_modifier(Modifier::BOLD)
        } else {
            theme.text()
        };
        let mut spans = Vec::new();
        for (c, w) in widths.iter().enumerate() {
            if c > 0 {
                spans.push(Span::styled(" │ ", theme.secondary()));
            }
            let cell = row.get(c).copied().unwrap_or("");
            let pad = " ".repeat(w.saturating_sub(width(cell)));
            spans.extend(inline(cell, style, theme));
            spans.push(Span::raw(pad));
        }
        out.push(Line::from(spans));
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(Line::styled(rule.join("─┼─"), theme.secondary()));
        }
    }
    out
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
                "  rust",
                "  fn a() {}"
            ]
        );
        let strong = out[1].spans.iter().find(|s| s.content == "two").unwrap();
        assert!(strong.style.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn tables_are_aligned_and_pipes_without_a_delimiter_are_kept() {
        let t = Theme::named("dark").unwrap();
        let out = render(
            "| name | size |\n|---|--:|\n| a.rs | 10 |\n| lib.rs | 2 |\nafter",
            &t,
        );
        assert_eq!(
            text(&out),
            vec![
                "name   │ size",
                "───────┼─────",
                "a.rs   │ 10  ",
                "lib.rs │ 2   ",
                "after"
            ]
        );
        assert_eq!(
            text(&render("| not a table |", &t)),
            vec!["| not a table |"]
        );
    }

    #[test]
    fn an_unclosed_fence_still_shows_its_code() {
        let t = Theme::named("dark").unwrap();
        assert_eq!(text(&render("```\nabc", &t)), vec!["  abc"]);
        assert_eq!(text(&render("a * b * c", &t)), vec!["a * b * c"]);
    }
}
