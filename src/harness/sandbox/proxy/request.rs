//! A proxy request as a sandboxed client sends it: `CONNECT host:port` (a tunnel, for TLS) or a
//! plain-HTTP request in absolute form (`GET http://host/path`), read with a bound and parsed
//! strictly. A plain request is rewritten for the origin: origin-form target, `Host` set to
//! the authority it named, hop-by-hop and proxy headers dropped, `Connection: close` (one
//! request per connection, so every request the proxy forwards is one it read).

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::harness::egress::Host;

/// A request head larger than this is refused.
pub const MAX_HEAD: usize = 32 * 1024;
/// How long a client may take to send its request head.
pub const HEAD_LIMIT: Duration = Duration::from_secs(10);
const MAX_HEADERS: usize = 100;

/// Which way a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Connect,
    Http,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Connect => "CONNECT",
            Kind::Http => "HTTP",
        }
    }
}

/// A parsed request.
#[derive(Debug)]
pub struct Request {
    pub kind: Kind,
    pub host: Host,
    pub port: u16,
    /// For `Http`: the head to send the origin. Empty for `Connect`.
    pub upstream_head: Vec<u8>,
    /// For `Http`: the body's length (`Content-Length`, else none). Exactly this much more is
    /// forwarded: a request pipelined behind it is never sent unread.
    pub body_len: u64,
}

/// Why a request was not taken, as the client is answered.
#[derive(Debug, PartialEq, Eq)]
pub struct BadRequest(pub String);

/// Read a request head (through the blank line) from `stream`: the head, and any bytes read
/// past it. `Ok(None)` when the client closed before sending anything.
pub async fn read_head<R: AsyncRead + Unpin>(
    stream: &mut R,
) -> Result<Option<(Vec<u8>, Vec<u8>)>, BadRequest> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| BadRequest(format!("the request could not be read: {e}")))?;
        if n == 0 {
            return match buf.is_empty() {
                true => Ok(None),
                false => Err(BadRequest("the client closed mid-request".into())),
            };
        }
        // Search from just before the new bytes: the terminator may straddle two reads.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = find(&buf[from..], b"\r\n\r\n") {
            let end = from + i + 4;
            let rest = buf.split_off(end);
            return Ok(Some((buf, rest)));
        }
        if buf.len() > MAX_HEAD {
            return Err(BadRequest("the request head is larger than 32 KiB".into()));
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Parse a request head read by [`read_head`].
pub fn parse(head: &[u8]) -> Result<Request, BadRequest> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(BadRequest("an incomplete request".into())),
        Err(e) => return Err(BadRequest(format!("a malformed request ({e})"))),
    }
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Err(BadRequest("a malformed request line".into()));
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(target)?;
        return Ok(Request {
            kind: Kind::Connect,
            host,
            port,
            upstream_head: Vec::new(),
            body_len: 0,
        });
    }
    let url = url::Url::parse(target)
        .ok()
        .filter(|u| u.scheme() == "http" && u.has_host())
        .ok_or_else(|| {
            BadRequest(format!(
                "`{}` is not an absolute http:// URL: a client must send plain HTTP to the proxy \
                 as `GET http://host/path`, and TLS through CONNECT",
                cut(target)
            ))
        })?;
    let host_text = url.host_str().unwrap_or_default();
    let host = Host::parse(host_text)
        .ok_or_else(|| BadRequest(format!("`{}` is not a host name", cut(host_text))))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let authority_text = match url.port() {
        Some(p) => format!("{host_text}:{p}"),
        None => host_text.to_string(),
    };
    let mut out = Vec::with_capacity(head.len());
    let origin_form = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    out.extend_from_slice(
        format!("{method} {origin_form} HTTP/1.{}\r\n", version.min(1)).as_bytes(),
    );
    out.extend_from_slice(format!("Host: {authority_text}\r\n").as_bytes());
    let mut body_len: Option<u64> = None;
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "transfer-encoding" {
            return Err(BadRequest(
                "a request body of unknown length (Transfer-Encoding) is not forwarded over \
                 plain HTTP: send it with a Content-Length, or over https"
                    .into(),
            ));
        }
        if name == "content-length" {
            let n = std::str::from_utf8(h.value)
                .ok()
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| BadRequest("a Content-Length that is not a number".into()))?;
            if body_len.is_some_and(|b| b != n) {
                return Err(BadRequest("two different Content-Length headers".into()));
            }
            body_len = Some(n);
            // Sent once, as the number read (below).
            continue;
        }
        if name == "host" {
            let said = String::from_utf8_lossy(h.value).trim().to_ascii_lowercase();
            if !same_authority(&said, host_text, port) {
                return Err(BadRequest(format!(
                    "the Host header `{}` is not the host the request names (`{authority_text}`)",
                    cut(&said)
                )));
            }
            continue;
        }
        if matches!(
            name.as_str(),
            "connection"
                | "proxy-connection"
                | "proxy-authorization"
                | "keep-alive"
                | "te"
                | "trailer"
                | "upgrade"
        ) {
            continue;
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(n) = body_len {
        out.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request {
        kind: Kind::Http,
        host,
        port,
        upstream_head: out,
        body_len: body_len.unwrap_or(0),
    })
}

/// `host:port` of a CONNECT request (the port is required).
fn authority(target: &str) -> Result<(Host, u16), BadRequest> {
    let bad = || {
        BadRequest(format!(
            "`{}` is not `host:port`: CONNECT names the host and the port",
            cut(target)
        ))
    };
    let (host, port) = target.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().ok().filter(|p| *p > 0).ok_or_else(bad)?;
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(bad());
    }
    let host = Host::parse(host).ok_or_else(bad)?;
    Ok((host, port))
}

/// Whether a Host header names the same host and port as the request line.
fn same_authority(header: &str, host: &str, port: u16) -> bool {
    let host = host.to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    let header = header.trim_end_matches('.');
    if header == host {
        return true;
    }
    match header.rsplit_once(':') {
        Some((h, p)) => h.trim_end_matches('.') == host && p.parse::<u16>() == Ok(port),
        None => false,
    }
}

/// At most 200 characters of what a client sent, for a message (control characters dropped).
pub fn cut(s: &str) -> String {
    s.chars().take(200).filter(|c| !c.is_control()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(head: &str) -> Result<Request, BadRequest> {
        parse(head.as_bytes())
    }

    #[test]
    fn connect_names_host_and_port() {
        let r =
            p("CONNECT Index.Crates.IO:443 HTTP/1.1\r\nHost: index.crates.io:443\r\n\r\n").unwrap();
        assert_eq!(r.kind, Kind::Connect);
        assert_eq!(r.host, Host::Name("index.crates.io".into()));
        assert_eq!(r.port, 443);
        let v6 = p("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(v6.host, Host::Address("2001:db8::1".parse().unwrap()));
        for bad in [
            "CONNECT crates.io HTTP/1.1\r\n\r\n",
            "CONNECT crates.io:0 HTTP/1.1\r\n\r\n",
            "CONNECT crates.io:99999 HTTP/1.1\r\n\r\n",
            "CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n",
            "CONNECT evil/../x:443 HTTP/1.1\r\n\r\n",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plain_http_is_rewritten_for_the_origin() {
        let r = p(
            "GET http://Example.com:8080/a/b?q=1 HTTP/1.1\r\nHost: example.com:8080\r\n\
                   Proxy-Authorization: x\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.kind, Kind::Http);
        assert_eq!(r.host, Host::Name("example.com".into()));
        assert_eq!(r.port, 8080);
        let head = String::from_utf8(r.upstream_head).unwrap();
        assert!(
            head.starts_with("GET /a/b?q=1 HTTP/1.1\r\nHost: example.com:8080\r\n"),
            "{head}"
        );
        assert!(head.contains("Accept: */*\r\n"), "{head}");
        assert!(!head.to_ascii_lowercase().contains("proxy-"), "{head}");
        assert!(head.ends_with("Connection: close\r\n\r\n"), "{head}");
    }

    #[test]
    fn the_body_is_measured_and_an_unmeasured_one_refused() {
        let r = p("POST http://a.example/ HTTP/1.1\r\nContent-Length: 12\r\n\r\n").unwrap();
        assert_eq!(r.body_len, 12);
        assert_eq!(
            p("GET http://a.example/ HTTP/1.1\r\n\r\n")
                .unwrap()
                .body_len,
            0
        );
        for bad in [
            "POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "POST http://a.example/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "POST http://a.example/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_host_header_naming_another_host_is_refused() {
        let e =
            p("GET http://allowed.example/ HTTP/1.1\r\nHost: other.example\r\n\r\n").unwrap_err();
        assert!(e.0.contains("other.example"), "{e:?}");
        assert!(
            p("GET http://allowed.example/ HTTP/1.1\r\nHost: allowed.example:80\r\n\r\n").is_ok()
        );
    }

    #[test]
    fn what_is_not_a_proxy_request_is_refused() {
        for bad in [
            "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET https://example.com/ HTTP/1.1\r\n\r\n",
            "GET ftp://example.com/ HTTP/1.1\r\n\r\n",
            "NOT A REQUEST\r\n\r\n",
            "\u{0}\u{1}\r\n\r\n",
        ] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn the_head_is_read_to_its_blank_line_and_the_rest_kept() {
        let mut src: &[u8] = b"CONNECT a.example:443 HTTP/1.1\r\n\r\n\x16\x03\x01";
        let (head, rest) = read_head(&mut src).await.unwrap().unwrap();
        assert!(head.ends_with(b"\r\n\r\n"));
        assert_eq!(rest, b"\x16\x03\x01");
        let mut empty: &[u8] = b"";
        assert!(read_head(&mut empty).await.unwrap().is_none());
        let big = vec![b'a'; MAX_HEAD + 10];
        let mut src: &[u8] = &big;
        assert!(read_head(&mut src).await.is_err());
    }
}
