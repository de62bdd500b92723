//! Bounded text helpers shared by the tools: reading numbered line windows from a stream without
//! ever holding more than the window (a single 500 MB line is skipped, not loaded), and cutting a
//! text to a character budget keeping its head and tail.

use std::io::{self, BufRead};

/// Longest line shown whole; longer lines are cut with a marker.
pub const MAX_LINE_CHARS: usize = 2_000;

/// Skip `n` lines. Returns how many were skipped (fewer at end of input).
pub fn skip_lines(r: &mut impl BufRead, n: u64) -> io::Result<u64> {
    let mut skipped = 0;
    while skipped < n {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let mut used = buf.len();
        for pos in memchr::memchr_iter(b'\n', buf) {
            skipped += 1;
            if skipped == n {
                used = pos + 1;
                break;
            }
        }
        r.consume(used);
    }
    Ok(skipped)
}

/// One line read with a cap: the first `cap` bytes, the full length, and whether it ended with a
/// newline (the last line of a file may not).
pub struct CappedLine {
    pub bytes: Vec<u8>,
    pub len: u64,
    pub newline: bool,
}

/// Read the next line, keeping at most `cap` bytes of it. `None` at end of input.
pub fn read_line_capped(r: &mut impl BufRead, cap: usize) -> io::Result<Option<CappedLine>> {
    let mut line = CappedLine {
        bytes: Vec::new(),
        len: 0,
        newline: false,
    };
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok((line.len > 0).then_some(line));
        }
        let (part, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        let room = cap.saturating_sub(line.bytes.len());
        line.bytes.extend_from_slice(&part[..part.len().min(room)]);
        line.len += part.len() as u64;
        let used = part.len() + usize::from(done);
        r.consume(used);
        if done {
            line.newline = true;
            return Ok(Some(line));
        }
    }
}

/// Count the newlines left in a stream (the lines after them).
pub fn count_lines(r: &mut impl BufRead) -> io::Result<(u64, bool)> {
    let mut count = 0u64;
    let mut last = b'\n';
    let mut any = false;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        any = true;
        count += memchr::memchr_iter(b'\n', buf).count() as u64;
        last = buf[buf.len() - 1];
        let n = buf.len();
        r.consume(n);
    }
    // A last line without a newline is still a line.
    Ok((count + u64::from(any && last != b'\n'), any))
}

/// Text of a line for display: lossy UTF-8, a trailing `\r` dropped, cut at `MAX_LINE_CHARS`.
pub fn display_line(line: &CappedLine) -> String {
    let kept_all = line.len == line.bytes.len() as u64;
    let mut bytes: &[u8] = &line.bytes;
    if kept_all && let Some(stripped) = bytes.strip_suffix(b"\r") {
        bytes = stripped;
    }
    let text = String::from_utf8_lossy(bytes);
    let mut shown: String = text.chars().take(MAX_LINE_CHARS).collect();
    if !kept_all || shown.len() < text.len() {
        shown.push_str(&format!(" [… line cut: {} bytes in all]", line.len));
    }
    shown
}

/// The longest prefix of `bytes` that does not end inside a UTF-8 sequence.
pub fn utf8_prefix(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes,
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        Err(_) => bytes,
    }
}

/// `bytes` without the continuation bytes of a sequence that started before it.
pub fn utf8_suffix(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    &bytes[skip..]
}

/// Cut `text` to at most `max` characters, keeping the head and the tail around a marker that
/// says how much was cut and, if given, where the whole text is.
pub fn cut_middle(text: &str, max: usize, whole_at: Option<&str>) -> (String, bool) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_string(), false);
    }
    let half = max / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(total - half).collect();
    let cut = total - 2 * half;
    let where_ = whole_at
        .map(|uri| format!("; the whole text is {uri}"))
        .unwrap_or_default();
    (
        format!("{head}\n[… {cut} characters cut{where_} …]\n{tail}"),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn capped_lines_skip_and_count() {
        let data = b"one\r\ntwo\nthree-long-line\nlast";
        let mut r = Cursor::new(&data[..]);
        assert_eq!(skip_lines(&mut r, 1).unwrap(), 1);
        let l = read_line_capped(&mut r, 100).unwrap().unwrap();
        assert_eq!((l.bytes.as_slice(), l.newline), (&b"two"[..], true));
        let l = read_line_capped(&mut r, 5).unwrap().unwrap();
        assert_eq!((l.bytes.as_slice(), l.len), (&b"three"[..], 15));
        assert!(display_line(&l).contains("line cut: 15 bytes"));
        let l = read_line_capped(&mut r, 100).unwrap().unwrap();
        assert!(!l.newline && l.bytes == b"last");
        assert!(read_line_capped(&mut r, 100).unwrap().is_none());
        assert_eq!(count_lines(&mut Cursor::new(&data[..])).unwrap(), (4, true));
        let crlf = CappedLine {
            bytes: b"a\r".to_vec(),
            len: 2,
            newline: true,
        };
        assert_eq!(display_line(&crlf), "a");
    }

    #[test]
    fn cutting_keeps_head_and_tail_and_utf8_edges() {
        let (s, cut) = cut_middle(&"é".repeat(100), 10, Some("result://x"));
        assert!(cut && s.starts_with("ééééé\n[… 90 characters cut; the whole text is result://x"));
        assert!(s.ends_with("\nééééé"));
        assert_eq!(utf8_prefix("aé".as_bytes()[..2].as_ref()), b"a");
        assert_eq!(utf8_suffix(&"éa".as_bytes()[1..]), b"a");
    }
}
