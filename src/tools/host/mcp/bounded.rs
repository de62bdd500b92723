//! A server's stdout with a bound on one message: a line (one JSON-RPC message) longer than
//! `MESSAGE_LIMIT` ends the stream with an error, so the call waiting for it fails at once and
//! the server is restarted, rather than the message being dropped and the call left to its
//! timeout. Spear holds at most the bound of it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest message a server may send.
pub const MESSAGE_LIMIT: usize = 64 << 20;

pub struct LineBound<R> {
    inner: R,
    limit: usize,
    /// Bytes since the last newline.
    current: usize,
    /// Set once a message went over the bound.
    over: Arc<AtomicBool>,
}

impl<R> LineBound<R> {
    /// `inner` bounded at `limit` bytes a line; `over` is set when a line passes it.
    pub fn new(inner: R, limit: usize, over: Arc<AtomicBool>) -> Self {
        LineBound {
            inner,
            limit,
            current: 0,
            over,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineBound<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.over.load(Ordering::SeqCst) {
            return Poll::Ready(Err(oversized(self.limit)));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let new = &buf.filled()[before..];
                // Every line that ends here is within the bound when the longest does; only
                // the bytes after the last newline carry over.
                let mut longest = this.current;
                let mut start = 0;
                for end in memchr::memchr_iter(b'\n', new) {
                    longest = longest.max(if start == 0 {
                        this.current + end
                    } else {
                        end - start
                    });
                    start = end + 1;
                }
                let tail = new.len() - start;
                this.current = if start == 0 {
                    this.current + tail
                } else {
                    tail
                };
                if longest.max(this.current) > this.limit {
                    this.over.store(true, Ordering::SeqCst);
                    // Nothing of a read that fails is handed on.
                    buf.set_filled(before);
                    return Poll::Ready(Err(oversized(this.limit)));
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

fn oversized(limit: usize) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("the server sent a message over {} MiB", limit >> 20),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_within_the_bound_pass_and_one_over_it_ends_the_stream() {
        let over = Arc::new(AtomicBool::new(false));
        let data = b"12345\n1234\n".to_vec();
        let mut ok = LineBound::new(&data[..], 5, over.clone());
        let mut out = Vec::new();
        ok.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, data);
        assert!(!over.load(Ordering::SeqCst));

        let long = b"12\n123456\n".to_vec();
        let mut bad = LineBound::new(&long[..], 5, over.clone());
        let e = bad.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(over.load(Ordering::SeqCst));
        // It stays ended.
        let mut again = [0u8; 4];
        assert!(bad.read(&mut again).await.is_err());
    }

    /// Read in chunks of every size, the bound is the same as a line-by-line count.
    #[tokio::test]
    async fn the_bound_holds_across_any_chunking() {
        struct Chunks(Vec<u8>, usize);
        impl AsyncRead for Chunks {
            fn poll_read(
                mut self: Pin<&mut Self>,
                _: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<std::io::Result<()>> {
                let n = self.1.min(self.0.len()).min(buf.remaining());
                let head: Vec<u8> = self.0.drain(..n).collect();
                buf.put_slice(&head);
                Poll::Ready(Ok(()))
            }
        }
        let cases: [(&[u8], bool); 6] = [
            (b"abcde\nabcde\n", true),
            (b"abcdef\n", false),
            (b"ab\nabcde", true),
            (b"ab\nabcdef", false),
            (b"\n\n\nabcde\nab\nabcdef\n", false),
            (b"abcde\n\nabcde", true),
        ];
        for (data, fits) in cases {
            for chunk in 1..=data.len() {
                let over = Arc::new(AtomicBool::new(false));
                let mut r = LineBound::new(Chunks(data.to_vec(), chunk), 5, over);
                let got = r.read_to_end(&mut Vec::new()).await;
                assert_eq!(
                    got.is_ok(),
                    fits,
                    "{:?} in chunks of {chunk}",
                    String::from_utf8_lossy(data)
                );
            }
        }
    }
}
