//! Reading the log without parsing all of it: the last N lines (optionally only those matching a
//! filter) are found by reading backwards from the end in blocks, so `--tail 50` costs the same
//! on a log of a million records as on one of a hundred. An incomplete last line is reported
//! apart, never mixed with the records.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Block size for reading backwards.
const BLOCK: u64 = 64 * 1024;

/// The end of a log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tail {
    /// Complete lines without their newline, oldest first.
    pub lines: Vec<Vec<u8>>,
    /// Bytes after the last newline (left by a writer killed mid-write), and where they start.
    pub torn: Option<(u64, Vec<u8>)>,
    /// Offset just past the last complete line: where following starts.
    pub end: u64,
}

/// The last `n` complete lines for which `keep` says yes.
pub fn tail(file: &File, n: usize, keep: &dyn Fn(&[u8]) -> bool) -> std::io::Result<Tail> {
    let len = file.metadata()?.len();
    let mut pos = len;
    // Bytes [pos, pos + acc.len()) not yet split into lines.
    let mut acc: Vec<u8> = Vec::new();
    let mut out = Tail {
        end: len,
        ..Tail::default()
    };
    let mut torn_checked = false;
    loop {
        if !torn_checked {
            if let Some(nl) = acc.iter().rposition(|&b| b == b'\n') {
                if nl + 1 < acc.len() {
                    out.torn = Some((pos + nl as u64 + 1, acc.split_off(nl + 1)));
                }
                torn_checked = true;
            } else if pos == 0 {
                if !acc.is_empty() {
                    out.torn = Some((0, std::mem::take(&mut acc)));
                }
                torn_checked = true;
            }
            if torn_checked {
                out.end = pos + acc.len() as u64;
            }
        }
        if torn_checked {
            // `acc` ends with a newline (or is empty): peel complete lines off its end.
            while let Some((&b'\n', body)) = acc.split_last() {
                let start = match body.iter().rposition(|&b| b == b'\n') {
                    Some(k) => k + 1,
                    None if pos == 0 => 0,
                    None => break,
                };
                if keep(&body[start..]) {
                    out.lines.push(body[start..].to_vec());
                    if out.lines.len() >= n {
                        out.lines.reverse();
                        return Ok(out);
                    }
                }
                acc.truncate(start);
            }
        }
        if pos == 0 {
            break;
        }
        let size = BLOCK.min(pos);
        pos -= size;
        let mut block = vec![0u8; size as usize];
        file.read_exact_at(&mut block, pos)?;
        block.extend_from_slice(&acc);
        acc = block;
    }
    out.lines.reverse();
    Ok(out)
}

/// Complete lines in `[from, len)` and the offset after the last of them (for `--follow`).
pub fn lines_from(file: &File, from: u64) -> std::io::Result<(Vec<Vec<u8>>, u64)> {
    let len = file.metadata()?.len();
    if len <= from {
        return Ok((Vec::new(), from));
    }
    let mut buf = vec![0u8; (len - from) as usize];
    file.read_exact_at(&mut buf, from)?;
    let Some(last_nl) = buf.iter().rposition(|&b| b == b'\n') else {
        return Ok((Vec::new(), from));
    };
    let lines = buf[..last_nl]
        .split(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    Ok((lines, from + last_nl as u64 + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(content: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(content).unwrap();
        f
    }

    #[test]
    fn tail_splits_lines_and_sets_the_torn_end_apart() {
        let all = |_: &[u8]| true;
        let f = file_with(b"a\nbb\nccc\ndd");
        let t = tail(&f, 2, &all).unwrap();
        assert_eq!(t.lines, vec![b"bb".to_vec(), b"ccc".to_vec()]);
        assert_eq!(t.torn, Some((9, b"dd".to_vec())));
        assert_eq!(t.end, 9);
        let t = tail(&f, 10, &all).unwrap();
        assert_eq!(t.lines.len(), 3);
        let only = tail(&file_with(b"torn"), 5, &all).unwrap();
        assert_eq!(
            (only.lines.len(), only.torn, only.end),
            (0, Some((0, b"torn".to_vec())), 0)
        );
        assert_eq!(tail(&file_with(b""), 5, &all).unwrap(), Tail::default());
    }

    #[test]
    fn tail_across_blocks_with_a_filter() {
        let mut content = Vec::new();
        for i in 0..50_000 {
            content.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        let f = file_with(&content);
        let t = tail(&f, 3, &|l: &[u8]| l.ends_with(b"7")).unwrap();
        assert_eq!(
            t.lines,
            vec![
                b"line 49977".to_vec(),
                b"line 49987".to_vec(),
                b"line 49997".to_vec()
            ]
        );
        let (lines, end) = lines_from(&f, content.len() as u64 - 22).unwrap();
        assert_eq!(end, content.len() as u64);
        assert_eq!(lines.last().unwrap(), b"line 49999");
    }
}
