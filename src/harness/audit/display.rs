//! Text a command chose, made safe to show a person: every character that a terminal acts on
//! or that changes how a line reads is replaced by a visible escape, so a command cannot clear
//! the screen, ring the bell, move the cursor, start a fake audit line, or reverse the order of
//! what is read. Every human view (`spear audit`, `exec`, `tool`, `classify`, the confirmation
//! prompt, the TUI's audit pane) shows command text and reasons through `escape_controls`;
//! machine output (`--json`) stays exact, JSON's own escaping already covers it.
//!
//! Escaped: C0 (U+0000 to U+001F, `\n`, `\r` and `\t` by those names, the rest as `\x1b`),
//! DEL, C1 (U+0080 to U+009F), and the invisible format characters: bidirectional embeddings,
//! overrides, isolates and marks (U+202A to U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C),
//! zero-width and joiner-free spaces, line and paragraph separators, the BOM, interlinear
//! annotations and tag characters, shown as `\u{202e}`. Kept: all other text, including the
//! zero-width joiner and non-joiner that emoji and several scripts need. A backslash is kept as
//! it is, so ordinary shell text stays readable; an escape is therefore told apart from the same
//! characters typed literally only in the exact `--json` form.
//!
//! A leaf: it imports nothing from the crate, so any view may use it.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as it is.
pub fn is_unsafe_char(c: char) -> bool {
    let u = u32::from(c);
    u < 0x20
        || (0x7F..=0x9F).contains(&u)
        || matches!(
            u,
            0x00AD
                | 0x061C
                | 0x180E
                | 0x200B
                | 0x200E
                | 0x200F
                | 0x2028..=0x202E
                | 0x2060..=0x2064
                | 0x2066..=0x206F
                | 0xFEFF
                | 0xFFF9..=0xFFFB
                | 0x0600..=0x0605
                | 0x06DD
                | 0x070F
                | 0x0890..=0x0891
                | 0x08E2
                | 0x110BD
                | 0x110CD
                | 0x13430..=0x1343F
                | 0x1BCA0..=0x1BCA3
                | 0x1D173..=0x1D17A
                | 0xE0001
                | 0xE0020..=0xE007F
        )
}

/// `text` with every unsafe character replaced by a visible escape; borrowed when there is
/// nothing to replace.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !is_unsafe_char(c) {
            out.push(c);
            continue;
        }
        // Writing to a String cannot fail.
        let _ = match c {
            '\n' => write!(out, "\\n"),
            '\r' => write!(out, "\\r"),
            '\t' => write!(out, "\\t"),
            c if u32::from(c) < 0x80 => write!(out, "\\x{:02x}", u32::from(c)),
            c => write!(out, "\\u{{{:x}}}", u32::from(c)),
        };
    }
    Cow::Owned(out)
}

/// `text` escaped as [`escape_controls`] does, but with its line breaks and tabs kept: for
/// prose that is shown as lines (a model's answer, a command's output), where the terminal's
/// own line handling is wanted and every other control or format character is not.
pub fn escape_controls_keeping_lines(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|c| is_unsafe_char(c) && c != '\n' && c != '\t')
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (j, piece) in line.split('\t').enumerate() {
            if j > 0 {
                out.push('\t');
            }
            out.push_str(&escape_controls(piece));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_keeps_its_lines_and_tabs_and_loses_the_rest() {
        assert_eq!(
            escape_controls_keeping_lines("a\tb\nc\u{202e}d\x1b[2J\r\n"),
            "a\tb\nc\\u{202e}d\\x1b[2J\\r\n"
        );
        assert!(matches!(
            escape_controls_keeping_lines("plain\n\ttext"),
            Cow::Borrowed(_)
        ));
        let all: String = (0u32..0x11_0000).filter_map(char::from_u32).collect();
        let shown = escape_controls_keeping_lines(&all);
        assert!(
            !shown
                .chars()
                .any(|c| is_unsafe_char(c) && c != '\n' && c != '\t')
        );
    }

    #[test]
    fn terminal_controls_become_visible_escapes() {
        assert_eq!(
            escape_controls("a\x1b[2J\x07b\rc\nd\te\0\x7f"),
            "a\\x1b[2J\\x07b\\rc\\nd\\te\\x00\\x7f"
        );
        assert_eq!(escape_controls("\u{9b}31m\u{85}"), "\\u{9b}31m\\u{85}");
    }

    #[test]
    fn reordering_and_invisible_format_characters_are_escaped() {
        assert_eq!(
            escape_controls("ls \u{202e}txt.exe\u{202c} \u{2066}x\u{2069}\u{200f}"),
            "ls \\u{202e}txt.exe\\u{202c} \\u{2066}x\\u{2069}\\u{200f}"
        );
        for c in [
            '\u{200b}',
            '\u{2028}',
            '\u{2029}',
            '\u{feff}',
            '\u{e0041}',
            '\u{61c}',
            '\u{ad}',
        ] {
            assert!(is_unsafe_char(c), "{:x}", u32::from(c));
        }
    }

    #[test]
    fn ordinary_text_is_kept_as_it_is() {
        for text in [
            "cargo test -p spear -- --nocapture",
            "printf '%s\\n' \"ça va\" | grep -E 'x{2}'",
            "echo 日本語 العربية עברית Ελληνικά",
            "echo 👩\u{200d}💻 \u{200c}",
        ] {
            assert!(
                matches!(escape_controls(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
    }

    #[test]
    fn the_output_never_holds_an_unsafe_character() {
        let all: String = (0u32..0x11_0000).filter_map(char::from_u32).collect();
        let shown = escape_controls(&all);
        assert!(!shown.chars().any(is_unsafe_char));
        assert!(!shown.contains('\n') && !shown.contains('\x1b'));
    }
}
