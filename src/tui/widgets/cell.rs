//! One conversation cell as lines at a width: messages (Markdown), reasoning, notices, and tool
//! cells (terminal with live ANSI output, write_file/patch with their diff, read_file excerpts,
//! search hits, refusals in the danger colour). Folded cells are one summary line. Pure: the
//! same cell, width, theme and time give the same lines.

use std::time::{Duration, Instant};

use ansi_to_tui::IntoText;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use crate::harness::primitives::ToolStatus;
use crate::tui::cells::{Cell, CellKind, NoticeKind, ToolCell};
use crate::tui::highlight::highlight;
use crate::tui::markdown;
use crate::tui::theme::Theme;
use crate::tui::widgets::{diff_lines, wrap};

/// Output lines a terminal cell shows (the last ones).
pub const SHOWN_OUTPUT: usize = 12;
/// Lines of an excerpt or hit list shown.
pub const SHOWN_EXCERPT: usize = 16;

/// The cell's lines at `width`, wrapped; `focused` marks it with a gutter.
pub fn lines(cell: &Cell, width: u16, theme: &Theme, now: Instant) -> Vec<Line<'static>> {
    let inner = width.saturating_sub(2).max(1);
    let body: Vec<Line<'static>> = match &cell.kind {
        CellKind::User(text) => {
            let mut v = vec![Line::styled(
                "you",
                theme.accent().add_modifier(Modifier::BOLD),
            )];
            v.extend(
                text.lines()
                    .map(|l| Line::styled(l.to_string(), theme.text())),
            );
            v
        }
        CellKind::Assistant { text, streaming } => {
            let mut v = vec![assistant_header(text, *streaming, cell.folded, theme)];
            if !cell.folded {
                v.extend(markdown::render(text, theme));
            }
            v
        }
        CellKind::Reasoning(text) => {
            let mut v = vec![Line::styled(
                format!(
                    "thinking ({} chars){}",
                    text.chars().count(),
                    if cell.folded { "  ▸ Enter" } else { "" }
                ),
                theme.secondary().add_modifier(Modifier::ITALIC),
            )];
            if !cell.folded {
                v.extend(
                    text.lines()
                        .map(|l| Line::styled(l.to_string(), theme.secondary())),
                );
            }
            v
        }
        CellKind::Notice { kind, text } => {
            let style = match kind {
                NoticeKind::Info => theme.secondary(),
                NoticeKind::Warning => theme.fg(theme.warning),
                NoticeKind::Error => theme.danger(),
            };
            text.lines()
                .map(|l| Line::styled(l.to_string(), style))
                .collect()
        }
        CellKind::Tool(t) => tool_lines(t, cell.folded, inner, theme, now),
    };
    let mut out = wrap::wrap_all(body, inner);
    out.push(Line::default());
    out
}

/// The first line of an answer's cell: who speaks, whether it is still streaming, and the
/// answer's first line when folded.
pub fn assistant_header(text: &str, streaming: bool, folded: bool, theme: &Theme) -> Line<'static> {
    let mut head = vec![Span::styled(
        "spear",
        theme.fg(theme.added).add_modifier(Modifier::BOLD),
    )];
    if streaming {
        head.push(Span::styled(" …", theme.secondary()));
    }
    if folded {
        head.push(Span::styled(
            format!("  {}", first_line(text)),
            theme.secondary(),
        ));
    }
    Line::from(head)
}

fn first_line(text: &str) -> String {
    let l = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    l.chars().take(80).collect()
}

fn fmt_duration(d: Duration) -> String {
    if d.as_secs() >= 60 {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// A refusal: a gate or a policy said no before the action ran.
fn refused(t: &ToolCell) -> bool {
    t.envelope.as_ref().is_some_and(|e| {
        e.gate.is_some()
            || e.refusal_rule.is_some()
            || matches!(e.status, ToolStatus::Denied | ToolStatus::InvalidPath)
    })
}

/// The running call's spinner frame, by how long it has run (the screen redraws while busy).
fn spinner(running: Duration) -> &'static str {
    const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
    FRAMES[(running.as_millis() / 250) as usize % FRAMES.len()]
}

fn header(t: &ToolCell, theme: &Theme, now: Instant) -> Line<'static> {
    let (glyph, gstyle) = match &t.envelope {
        None if t.awaiting => ("?", theme.fg(theme.warning).add_modifier(Modifier::BOLD)),
        None => (
            spinner(now.saturating_duration_since(t.started)),
            theme.accent(),
        ),
        Some(_) if refused(t) => ("⊘", theme.danger()),
        Some(e) if e.succeeded() => ("✓", theme.fg(theme.added)),
        Some(_) => ("✗", theme.danger()),
    };
    let mut spans = vec![
        Span::styled(format!("{glyph} "), gstyle),
        Span::styled(t.name.clone(), theme.accent().add_modifier(Modifier::BOLD)),
    ];
    if t.by_person {
        spans.push(Span::styled(" (you)", theme.secondary()));
    }
    if let Some(class) = t.envelope.as_ref().and_then(|e| e.class) {
        let style = if class.as_str() == "DANGEROUS" {
            theme.danger()
        } else {
            theme.fg(theme.warning)
        };
        spans.push(Span::styled(
            format!(" [{}]", class.as_str()),
            style.add_modifier(Modifier::REVERSED),
        ));
    }
    spans.push(Span::styled(format!(" {}", t.target()), theme.text()));
    if t.envelope.is_none() && t.awaiting {
        spans.push(Span::styled(
            "  waiting for your answer",
            theme.fg(theme.warning).add_modifier(Modifier::BOLD),
        ));
        return Line::from(spans);
    }
    let took = t
        .duration
        .unwrap_or_else(|| now.saturating_duration_since(t.started));
    let mut facts = vec![if t.resumed {
        "from the transcript".to_string()
    } else {
        fmt_duration(took)
    }];
    if let Some(e) = &t.envelope {
        if e.status != ToolStatus::Ok {
            facts.push(e.status.to_string());
        }
        if let Some(code) = e.exit_code {
            facts.push(format!("exit {code}"));
        }
        if let Some(id) = &e.result_id {
            facts.push(id.clone());
        }
    } else {
        facts.push("running".into());
    }
    spans.push(Span::styled(
        format!("  {}", facts.join(" · ")),
        theme.secondary(),
    ));
    Line::from(spans)
}

fn ansi_lines<'a>(lines: impl Iterator<Item = &'a str>, theme: &Theme) -> Vec<Line<'static>> {
    lines
        .map(|l| match l.into_text() {
            Ok(text) if !theme.monochrome => text.lines.into_iter().next().unwrap_or_default(),
            _ => Line::styled(strip_escapes(l), theme.text()),
        })
        .collect()
}

/// Text without escape sequences (for monochrome and for output ansi-to-tui cannot parse).
fn strip_escapes(s: &str) -> String {
    match s.into_text() {
        Ok(t) => t
            .lines
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        Err(_) => crate::harness::audit::display::escape_controls(s).into_owned(),
    }
}

/// `… N earlier lines · Enter (or Ctrl+O): whole output`.
fn more(n: u64, what: &str, theme: &Theme) -> Line<'static> {
    Line::styled(
        format!("… {n} {what} · Enter/Ctrl+O: whole output"),
        theme.hint(),
    )
}

fn tool_lines(
    t: &ToolCell,
    folded: bool,
    width: u16,
    theme: &Theme,
    now: Instant,
) -> Vec<Line<'static>> {
    let mut v = vec![header(t, theme, now)];
    if folded {
        v[0].spans.push(Span::styled("  ▸", theme.hint()));
        return v;
    }
    let gutter = |l: Line<'static>| {
        let mut spans = vec![Span::styled("│ ", theme.secondary())];
        spans.extend(l.spans);
        Line::from(spans)
    };
    if refused(t)
        && let Some(e) = &t.envelope
    {
        let rule = e
            .refusal_rule
            .clone()
            .or_else(|| e.gate.map(|g| format!("{g:?}")))
            .unwrap_or_default();
        v.push(Line::styled(format!("refused [{rule}]"), theme.danger()));
        if let Some(r) = &e.reason {
            v.extend(
                r.lines()
                    .map(|l| Line::styled(l.to_string(), theme.fg(theme.danger))),
            );
        }
        return v;
    }
    if let Some(d) = &t.diff {
        v.extend(diff_lines(d, width, theme));
    }
    match (t.name.as_str(), &t.envelope) {
        ("terminal", None) => {
            let n = t.live.len();
            let earlier = t.lines_seen.saturating_sub(n.min(SHOWN_OUTPUT) as u64);
            if earlier > 0 {
                v.push(more(earlier, "earlier lines", theme));
            }
            let tail = t
                .live
                .iter()
                .skip(n.saturating_sub(SHOWN_OUTPUT))
                .map(String::as_str);
            v.extend(ansi_lines(tail, theme).into_iter().map(gutter));
            if !t.partial.is_empty() {
                v.extend(
                    ansi_lines(std::iter::once(t.partial.as_str()), theme)
                        .into_iter()
                        .map(gutter),
                );
            }
        }
        ("terminal", Some(e)) => {
            let all: Vec<&str> = e.stdout.lines().chain(e.stderr.lines()).collect();
            // Counted on the whole output (the envelope's text may be cut in its middle).
            let shown = all.len().min(SHOWN_OUTPUT) as u64;
            let total = e.total_lines.max(all.len() as u64);
            if total > shown {
                v.push(more(total - shown, "earlier lines", theme));
            }
            v.extend(
                ansi_lines(
                    all[all.len().saturating_sub(SHOWN_OUTPUT)..]
                        .iter()
                        .copied(),
                    theme,
                )
                .into_iter()
                .map(gutter),
            );
        }
        ("read_file", Some(e)) => {
            // `read_file` numbers its lines `NUMBER<TAB>TEXT`: the number goes in a gutter of
            // its own, the text is highlighted as the file's language.
            let (numbers, code): (Vec<&str>, Vec<&str>) = e
                .stdout
                .lines()
                .take(SHOWN_EXCERPT)
                .map(|l| l.split_once('\t').unwrap_or(("", l)))
                .unzip();
            let lit = highlight(&code.join("\n"), &t.target(), theme);
            for (n, l) in numbers.iter().zip(lit) {
                let mut spans = Vec::new();
                if !n.is_empty() {
                    spans.push(Span::styled(format!("{} ", n.trim_start()), theme.hint()));
                }
                spans.extend(l.spans);
                v.push(gutter(Line::from(spans)));
            }
            let total = e.total_lines.max(e.stdout.lines().count() as u64);
            if total > SHOWN_EXCERPT as u64 {
                v.push(more(total - SHOWN_EXCERPT as u64, "more lines", theme));
            }
        }
        (_, Some(e)) if t.diff.is_none() => {
            let text = if e.stdout.is_empty() {
                &e.preview
            } else {
                &e.stdout
            };
            for l in text.lines().take(SHOWN_EXCERPT) {
                v.push(gutter(Line::styled(l.to_string(), theme.text())));
            }
            let total = e.total_lines.max(text.lines().count() as u64);
            if total > SHOWN_EXCERPT as u64 {
                v.push(more(total - SHOWN_EXCERPT as u64, "more lines", theme));
            }
        }
        _ => {}
    }
    if let Some(e) = &t.envelope {
        if let Some(r) = &e.reason {
            let style = if e.status == ToolStatus::Ok {
                theme.secondary()
            } else {
                theme.fg(theme.warning)
            };
            // A reason can span lines (a patch's mismatch shows the file's lines and the
            // expected ones): each is its own line.
            v.extend(r.lines().map(|l| Line::styled(l.to_string(), style)));
        }
        if let Some(note) = &e.store_note {
            v.push(Line::styled(note.clone(), theme.hint()));
        }
        if let Some(c) = &e.checkpoint {
            v.push(checkpoint_line(c, theme));
        }
    }
    v
}

/// When the call was checkpointed, and what it cannot take back.
fn checkpoint_line(c: &crate::harness::audit::CheckpointRef, theme: &Theme) -> Line<'static> {
    match &c.failed {
        Some(why) if c.before.is_empty() => Line::styled(
            format!("no checkpoint before this call, it cannot be taken back: {why}"),
            theme.fg(theme.warning),
        ),
        _ if !c.uncovered.is_empty() => Line::styled(
            format!(
                "checkpoint (turn {t}) · /undo {t} takes it back, except: {}",
                c.uncovered.join(", "),
                t = c.turn
            ),
            theme.fg(theme.warning),
        ),
        _ => Line::styled(
            format!(
                "checkpoint (turn {t}) · /undo {t} takes it back",
                t = c.turn
            ),
            theme.hint(),
        ),
    }
}
