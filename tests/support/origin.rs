//! A loopback HTTP origin for the egress tests: it serves files under a root (GET) or answers
//! `hello`, and keeps every byte each connection sent, so a test can prove what reached it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A loopback server: serves files under `root` (GET), answers every other request with
/// `hello`, and keeps every byte each connection sent.
pub struct Origin {
    pub at: SocketAddr,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Origin {
    pub fn start(root: Option<std::path::PathBuf>) -> Origin {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(c) = c else { continue };
                let kept = kept.clone();
                let root = root.clone();
                std::thread::spawn(move || serve(c, root.as_deref(), &kept));
            }
        });
        Origin { at, seen }
    }

    pub fn port(&self) -> u16 {
        self.at.port()
    }

    /// Everything every connection sent, so far.
    pub fn received(&self) -> Vec<Vec<u8>> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(mut c: TcpStream, root: Option<&Path>, kept: &Mutex<Vec<Vec<u8>>>) {
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    // One request per connection (the proxy sends `Connection: close`); a TLS hello is kept
    // as it came.
    loop {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
        if got.starts_with(&[0x16]) || got.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    kept.lock().unwrap().push(got.clone());
    if got.starts_with(&[0x16]) || got.is_empty() {
        return;
    }
    let text = String::from_utf8_lossy(&got);
    let path = text
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .split('?')
        .next()
        .unwrap_or("/")
        .to_string();
    let body = match root {
        Some(r) if !path.contains("..") => std::fs::read(r.join(path.trim_start_matches('/'))).ok(),
        _ => Some(b"hello".to_vec()),
    };
    let reply = match body {
        Some(b) => {
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                b.len()
            )
            .into_bytes();
            r.extend(b);
            r
        }
        None => {
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
        }
    };
    let _ = c.write_all(&reply);
}
