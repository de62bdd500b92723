//! The TLS ClientHello a tunnelled connection opens with: read whole (it may span records) and
//! its server name (SNI) taken out, without decrypting anything. Pure but for the read.
//! Invariant: bytes are forwarded exactly as read; a connection that does not open with a
//! ClientHello is never forwarded.

use tokio::io::{AsyncRead, AsyncReadExt};

/// A ClientHello larger than this is refused (real ones are a few kilobytes, post-quantum key
/// shares included).
const MAX_HELLO: usize = 64 * 1024;
const RECORD_HEADER: usize = 5;
const CONTENT_HANDSHAKE: u8 = 0x16;
const HANDSHAKE_CLIENT_HELLO: u8 = 0x01;
const EXTENSION_SERVER_NAME: u16 = 0x0000;
/// Encrypted ClientHello (RFC 9849) and its draft code point: the name that matters is inside,
/// where the proxy cannot compare it.
const EXTENSION_ECH: [u16; 2] = [0xfe0d, 0xffce];
const NAME_TYPE_HOST: u8 = 0x00;

/// What was read: every byte (to forward as is) and the server name, when one was sent.
#[derive(Debug)]
pub struct ClientHello {
    pub raw: Vec<u8>,
    pub server_name: Option<String>,
}

/// Read the ClientHello from `stream`, `first` being bytes already read past the request.
pub async fn read_client_hello<R: AsyncRead + Unpin>(
    stream: &mut R,
    first: Vec<u8>,
) -> Result<ClientHello, &'static str> {
    let mut raw = first;
    let mut handshake = Vec::new();
    let mut at = 0;
    loop {
        fill(stream, &mut raw, at + RECORD_HEADER).await?;
        let header = &raw[at..at + RECORD_HEADER];
        if header[0] != CONTENT_HANDSHAKE || header[1] != 0x03 {
            return Err("the connection did not open with a TLS handshake");
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if len == 0 {
            return Err("an empty TLS record");
        }
        fill(stream, &mut raw, at + RECORD_HEADER + len).await?;
        handshake.extend_from_slice(&raw[at + RECORD_HEADER..at + RECORD_HEADER + len]);
        at += RECORD_HEADER + len;
        if handshake.len() >= 4 {
            if handshake[0] != HANDSHAKE_CLIENT_HELLO {
                return Err("the TLS handshake did not start with a ClientHello");
            }
            let want =
                4 + u32::from_be_bytes([0, handshake[1], handshake[2], handshake[3]]) as usize;
            if want > MAX_HELLO {
                return Err("the ClientHello is larger than 64 KiB");
            }
            if handshake.len() >= want {
                let server_name = server_name(&handshake[4..want])?;
                return Ok(ClientHello { raw, server_name });
            }
        }
    }
}

/// Read until `buf` holds `want` bytes.
async fn fill<R: AsyncRead + Unpin>(
    stream: &mut R,
    buf: &mut Vec<u8>,
    want: usize,
) -> Result<(), &'static str> {
    if want > MAX_HELLO + 4 * RECORD_HEADER {
        return Err("the ClientHello is larger than 64 KiB");
    }
    let mut chunk = [0u8; 4096];
    while buf.len() < want {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|_| "the connection failed before its ClientHello")?;
        if n == 0 {
            return Err("the connection closed before its ClientHello");
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(())
}

/// A cursor over a ClientHello body that fails instead of reading past its end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.0.len() < n {
            return Err("a malformed ClientHello");
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, &'static str> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, &'static str> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn vec8(&mut self) -> Result<&'a [u8], &'static str> {
        let n = usize::from(self.u8()?);
        self.take(n)
    }
    fn vec16(&mut self) -> Result<&'a [u8], &'static str> {
        let n = usize::from(self.u16()?);
        self.take(n)
    }
}

/// The host name of the `server_name` extension of a ClientHello body (after its 4-byte
/// header); `None` when it has none. Two host names, or one that is not text, are refused.
pub fn server_name(body: &[u8]) -> Result<Option<String>, &'static str> {
    let mut r = Reader(body);
    r.take(2 + 32)?; // legacy_version, random
    r.vec8()?; // legacy_session_id
    r.vec16()?; // cipher_suites
    r.vec8()?; // legacy_compression_methods
    if r.0.is_empty() {
        return Ok(None);
    }
    let mut exts = Reader(r.vec16()?);
    let mut found = None;
    while !exts.0.is_empty() {
        let kind = exts.u16()?;
        let data = exts.vec16()?;
        if EXTENSION_ECH.contains(&kind) {
            return Err("an Encrypted ClientHello, whose real server name cannot be checked");
        }
        if kind != EXTENSION_SERVER_NAME {
            continue;
        }
        if found.is_some() {
            return Err("a ClientHello with two server_name extensions");
        }
        let mut list = Reader(data);
        let mut names = Reader(list.vec16()?);
        while !names.0.is_empty() {
            let name_type = names.u8()?;
            let name = names.vec16()?;
            if name_type != NAME_TYPE_HOST {
                continue;
            }
            if found.is_some() {
                return Err("a ClientHello naming two servers");
            }
            let text = std::str::from_utf8(name).map_err(|_| "a server name that is not text")?;
            found = Some(text.trim_end_matches('.').to_ascii_lowercase());
        }
    }
    Ok(found)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal ClientHello record naming `sni` (none when `None`), split into records of at
    /// most `record` bytes of handshake each.
    pub(crate) fn hello(sni: Option<&str>, record: usize) -> Vec<u8> {
        let mut body = vec![0x03, 0x03];
        body.extend([7u8; 32]);
        body.push(0); // session id
        body.extend([0, 2, 0x13, 0x01]); // one suite
        body.extend([1, 0]); // null compression
        let mut exts = Vec::new();
        if let Some(name) = sni {
            let mut entry = vec![NAME_TYPE_HOST];
            entry.extend((name.len() as u16).to_be_bytes());
            entry.extend(name.as_bytes());
            let mut list = (entry.len() as u16).to_be_bytes().to_vec();
            list.extend(entry);
            exts.extend(EXTENSION_SERVER_NAME.to_be_bytes());
            exts.extend((list.len() as u16).to_be_bytes());
            exts.extend(list);
        }
        exts.extend([0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04]); // supported_versions
        body.extend((exts.len() as u16).to_be_bytes());
        body.extend(exts);
        let mut hs = vec![HANDSHAKE_CLIENT_HELLO];
        hs.extend(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend(body);
        let mut out = Vec::new();
        for chunk in hs.chunks(record) {
            out.extend([CONTENT_HANDSHAKE, 0x03, 0x01]);
            out.extend((chunk.len() as u16).to_be_bytes());
            out.extend(chunk);
        }
        out
    }

    async fn read(bytes: Vec<u8>) -> Result<ClientHello, &'static str> {
        let mut src: &[u8] = &bytes;
        read_client_hello(&mut src, Vec::new()).await
    }

    #[tokio::test]
    async fn the_server_name_is_read_whole_and_the_bytes_kept() {
        let bytes = hello(Some("Crates.IO."), 16_384);
        let h = read(bytes.clone()).await.unwrap();
        assert_eq!(h.server_name.as_deref(), Some("crates.io"));
        assert_eq!(h.raw, bytes);
    }

    #[tokio::test]
    async fn a_hello_split_over_records_is_read_whole() {
        let bytes = hello(Some("index.crates.io"), 7);
        let h = read(bytes.clone()).await.unwrap();
        assert_eq!(h.server_name.as_deref(), Some("index.crates.io"));
        assert_eq!(h.raw, bytes);
    }

    #[tokio::test]
    async fn a_hello_without_a_name_has_none() {
        let h = read(hello(None, 16_384)).await.unwrap();
        assert_eq!(h.server_name, None);
    }

    #[tokio::test]
    async fn what_is_not_a_client_hello_is_refused() {
        assert!(read(b"GET / HTTP/1.1\r\n\r\n".to_vec()).await.is_err());
        assert!(read(b"SSH-2.0-OpenSSH_9.6\r\n".to_vec()).await.is_err());
        assert!(read(Vec::new()).await.is_err());
        let mut cut = hello(Some("crates.io"), 16_384);
        cut.truncate(cut.len() - 3);
        assert!(read(cut).await.is_err());
        // A record header claiming more than the hello holds, then the end.
        assert!(
            read(vec![0x16, 0x03, 0x01, 0xff, 0xff, 1, 2])
                .await
                .is_err()
        );
    }

    #[test]
    fn an_encrypted_client_hello_is_refused() {
        let mut bytes = hello(Some("allowed.example"), 16_384);
        // Append an ECH extension to the extension list and fix the three lengths.
        let ech = [0xfe, 0x0d, 0x00, 0x01, 0x00];
        bytes.extend_from_slice(&ech);
        let grow = |b: &mut Vec<u8>, at: usize, width: usize| {
            let mut v = 0usize;
            for i in 0..width {
                v = v << 8 | usize::from(b[at + i]);
            }
            v += ech.len();
            for i in 0..width {
                b[at + i] = (v >> (8 * (width - 1 - i))) as u8;
            }
        };
        grow(&mut bytes, 3, 2); // record length
        grow(&mut bytes, 6, 3); // handshake length
        // The extensions' length sits after version, random, session id, suites, compression.
        let exts_at = 9 + 2 + 32 + 1 + 4 + 2;
        grow(&mut bytes, exts_at, 2);
        let body = &bytes[9..];
        assert!(server_name(body).unwrap_err().contains("Encrypted"));
    }

    #[test]
    fn malformed_bodies_fail_and_never_panic() {
        let full = hello(Some("example.com"), 16_384);
        let body = &full[9..];
        for cut in 0..body.len() {
            let _ = server_name(&body[..cut]);
        }
        for i in 0..body.len() {
            let mut b = body.to_vec();
            b[i] ^= 0xff;
            let _ = server_name(&b);
        }
    }
}
