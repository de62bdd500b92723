//! Output capture without unbounded buffering: every chunk goes to a caller-supplied sink, and
//! only a bounded head and tail are kept for the `ToolResult`. Invariant: memory held per stream
//! never exceeds `head + tail` bytes, however much the command writes.

use std::collections::VecDeque;

/// Which pipe a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// Where the full output goes while it is produced (the ResultStore will be one). A sink that
/// wants bounds must keep them itself; the harness hands over every byte once.
pub trait OutputSink: Send {
    fn write(&mut self, stream: OutputStream, bytes: &[u8]);
}

/// A sink that keeps nothing.
pub struct NullSink;

impl OutputSink for NullSink {
    fn write(&mut self, _stream: OutputStream, _bytes: &[u8]) {}
}

/// The first `head_limit` and the last `tail_limit` bytes of a stream, and how many were seen.
#[derive(Debug, Clone)]
pub struct BoundedCapture {
    head_limit: usize,
    tail_limit: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl BoundedCapture {
    pub fn new(head_limit: usize, tail_limit: usize) -> Self {
        BoundedCapture {
            head_limit,
            tail_limit,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_limit {
            let take = (self.head_limit - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if self.tail_limit == 0 || bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.tail_limit {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_limit..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_limit);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// Every byte seen, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn omitted(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// Head, a marker saying how much was left out (when anything was), and tail, as text.
    ///
    /// Head and tail are decoded together when nothing lies between them: decoded apart, a
    /// character split across the two became two U+FFFD.
    pub fn render(&self) -> String {
        let (a, b) = self.tail.as_slices();
        let omitted = self.omitted();
        if omitted == 0 {
            let mut all = Vec::with_capacity(self.head.len() + a.len() + b.len());
            all.extend_from_slice(&self.head);
            all.extend_from_slice(a);
            all.extend_from_slice(b);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        out.push_str(&format!("\n[… {omitted} bytes omitted …]\n"));
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 10, item 7: a character split between head and tail is one character.
    #[test]
    fn a_character_across_head_and_tail_is_decoded_whole() {
        let mut c = BoundedCapture::new(4, 8);
        c.push("abc語x".as_bytes());
        assert_eq!(c.render(), "abc語x");
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = BoundedCapture::new(8, 8);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.render(), "hello world");
        assert_eq!(c.total(), 11);
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_counts_the_rest() {
        let mut c = BoundedCapture::new(4, 4);
        for _ in 0..1000 {
            c.push(b"0123456789");
        }
        c.push(b"END!");
        assert_eq!(c.render(), "0123\n[… 9996 bytes omitted …]\nEND!");
        assert!(c.head.capacity() <= 64 && c.tail.len() == 4);
    }

    #[test]
    fn a_chunk_larger_than_the_tail_keeps_its_end() {
        let mut c = BoundedCapture::new(2, 3);
        c.push(b"abcdefgh");
        assert_eq!(c.render(), "ab\n[… 3 bytes omitted …]\nfgh");
    }
}
