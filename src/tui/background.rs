//! The terminal's background colour, as its answer to an OSC 11 query reads, and whether it is
//! light: the screen picks the light or dark theme by it when the person chose none. Pure: the
//! query itself is `terminal::query_background`.

/// The colour in an OSC 11 answer (`ESC ] 11 ; rgb:RRRR/GGGG/BBBB` ended by BEL or ST; each
/// part 1 to 4 hex digits), as 0.0-1.0 parts.
pub fn parse_osc11(bytes: &[u8]) -> Option<(f64, f64, f64)> {
    let text = String::from_utf8_lossy(bytes);
    let at = text.find("\x1b]11;")?;
    let rest = &text[at + 5..];
    let end = rest.find(['\x07', '\x1b']).unwrap_or(rest.len());
    let spec = rest[..end].strip_prefix("rgb:")?;
    let mut parts = spec.split('/').map(|p| {
        let p = p.trim();
        if p.is_empty() || p.len() > 4 {
            return None;
        }
        let v = u32::from_str_radix(p, 16).ok()?;
        Some(f64::from(v) / f64::from((1u32 << (4 * p.len() as u32)) - 1))
    });
    let (r, g, b) = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some((r, g, b))
}

/// Relative luminance (WCAG) of an sRGB colour.
pub fn luminance((r, g, b): (f64, f64, f64)) -> f64 {
    let lin = |c: f64| {
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
}

/// Whether text in a dark colour reads better on it than text in a light one: its luminance
/// is above the point where black and white contrast with it equally.
pub fn is_light(rgb: (f64, f64, f64)) -> bool {
    luminance(rgb) > 0.179
}

/// The DA1 answer (`ESC [ ? … c`) every terminal sends: the end of the wait for OSC 11's.
pub fn has_da1(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.match_indices("\x1b[?").any(|(i, _)| {
        text[i + 3..]
            .chars()
            .find(|c| !(c.is_ascii_digit() || *c == ';'))
            == Some('c')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_in_each_form_are_read() {
        let white = parse_osc11(b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[?62;22c").unwrap();
        assert!(is_light(white));
        let black = parse_osc11(b"\x1b]11;rgb:0000/0000/0000\x07").unwrap();
        assert!(!is_light(black));
        // Two digits a part (xterm -report-colors), and a Solarized light background.
        let sol = parse_osc11(b"\x1b]11;rgb:fd/f6/e3\x07").unwrap();
        assert!(is_light(sol));
        let dark = parse_osc11(b"\x1b]11;rgb:1e1e/1e1e/2e2e\x1b\\").unwrap();
        assert!(!is_light(dark));
        for bad in [
            &b"\x1b[?62;22c"[..],
            b"\x1b]11;rgb:ffff/ffff\x07",
            b"\x1b]11;rgb:fffff/0/0\x07",
            b"\x1b]11;#ffffff\x07",
            b"\x1b]11;rgb:zz/00/00\x07",
        ] {
            assert_eq!(parse_osc11(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_da1_answer_ends_the_wait() {
        assert!(has_da1(b"\x1b]11;rgb:0/0/0\x07\x1b[?62;22c"));
        assert!(has_da1(b"\x1b[?1;2c"));
        assert!(!has_da1(b"\x1b]11;rgb:0/0/0\x07\x1b[?62;22"));
        assert!(!has_da1(b"x"));
    }
}
