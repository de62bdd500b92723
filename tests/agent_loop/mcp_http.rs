//! Issue 24, a remote MCP server over streamable HTTP (`[mcp.servers.NAME] url = ...`),
//! reached by Spear itself: only with the session's network; its address checked as
//! `fetch_url` checks one, so a loopback server needs its own `allow_addresses`; its headers
//! filled from Spear's environment (`headers_env`) and redacted everywhere Spear keeps text; a
//! redirect to another origin refused, and nothing sent there. The servers are the test's own,
//! on 127.0.0.1: a minimal streamable HTTP MCP server answering JSON.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::mcp_client::{Env, all_bytes_under, status, text};

/// One request as the test server saw it: method, path, headers (names lower-cased).
type Request = (String, String, Vec<(String, String)>);

/// What the test server saw.
#[derive(Default)]
struct Seen {
    requests: Vec<Request>,
}

/// A streamable HTTP MCP server on 127.0.0.1 with one tool, `hello`; or, with `redirect_to`,
/// one that answers every request with a redirect there.
struct HttpMcp {
    port: u16,
    seen: Arc<Mutex<Seen>>,
}

impl HttpMcp {
    fn start(redirect_to: Option<String>) -> HttpMcp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let s = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = s.clone();
                let redirect = redirect_to.clone();
                std::thread::spawn(move || serve(conn, &s, redirect.as_deref()));
            }
        });
        HttpMcp { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap().requests.clone()
    }
}

fn serve(conn: TcpStream, seen: &Mutex<Seen>, redirect: Option<&str>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or_default().to_string(),
            parts.next().unwrap_or_default().to_string(),
        );
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let length = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        seen.lock()
            .unwrap()
            .requests
            .push((method.clone(), path, headers));
        let reply = match (redirect, method.as_str()) {
            (Some(to), _) => format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n"
            ),
            (None, "POST") => answer(&body),
            (None, _) => "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n".into(),
        };
        if conn.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// The answer to one JSON-RPC message: a JSON body for a request, 202 for a notification.
fn answer(body: &[u8]) -> String {
    let msg: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let Some(id) = msg.get("id").cloned() else {
        return "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".into();
    };
    let result = match msg["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "http-test", "version": "1"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "hello",
            "description": "Say hello over HTTP",
            "inputSchema": {"type": "object", "properties": {}},
        }]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "hello over http"}]}),
        _ => json!({}),
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

const AUTH_VAR: &str = "SPEAR_TEST_MCP_AUTH";
const AUTH_VALUE: &str = "Bearer remote-secret-7d3e9b41";

fn remote(url: &str, extra: &str) -> Env {
    Env::with_config(&format!(
        "[mcp.servers.web]\nurl = {url:?}\nread_only_tools = [\"hello\"]\n\
         headers_env = {{ Authorization = {AUTH_VAR:?} }}\n{extra}\n"
    ))
}

fn hello(e: &Env, flags: &[&str]) -> Value {
    e.terminal_with(
        "auto",
        "spear-capability call web.hello '{}'",
        flags,
        &[(AUTH_VAR, AUTH_VALUE)],
    )
}

#[test]
fn a_remote_server_is_reached_only_as_granted_and_its_header_is_kept_secret() {
    let server = HttpMcp::start(None);
    // Loopback is refused unless this server names it.
    let e = Env::with_config(&format!(
        "[mcp.servers.web]\nurl = {:?}\nread_only_tools = [\"hello\"]\n",
        server.url()
    ));
    let refused = hello(&e, &["--network"]);
    assert_eq!(status(&refused), "failed", "{refused}");
    assert!(
        text(&refused).contains("127.0.0.1 is refused")
            && text(&refused).contains("allow_addresses"),
        "{refused}"
    );
    assert!(server.requests().is_empty(), "nothing reached the server");

    let e = remote(&server.url(), "allow_addresses = [\"127.0.0.1\"]");
    // The session's network off: not started, nothing sent.
    let off = hello(&e, &[]);
    assert_eq!(status(&off), "denied", "{off}");
    assert!(server.requests().is_empty(), "nothing reached the server");
    // With it: the tool answers, and the server got its header.
    let ok = hello(&e, &["--network"]);
    assert_eq!(status(&ok), "ok", "{ok}");
    assert!(text(&ok).contains("hello over http"), "{ok}");
    let requests = server.requests();
    assert!(
        requests.iter().any(|(m, _, h)| m == "POST"
            && h.iter()
                .any(|(k, v)| k == "authorization" && v == AUTH_VALUE)),
        "{requests:?}"
    );
    // Listed as remote; the value is nowhere in Spear's state.
    let list = e.terminal_with(
        "auto",
        "spear-capability list",
        &["--network"],
        &[(AUTH_VAR, AUTH_VALUE)],
    );
    assert!(
        text(&list).contains("remote at http://127.0.0.1:"),
        "{list}"
    );
    assert!(!all_bytes_under(&e.state).contains(AUTH_VALUE));
    assert!(
        e.audit()
            .iter()
            .any(|r| r.mcp_tool.as_ref().is_some_and(|m| m.server == "web"))
    );
}

#[test]
fn a_redirect_to_another_origin_is_refused_and_nothing_is_sent_there() {
    let elsewhere = HttpMcp::start(None);
    let server = HttpMcp::start(Some(elsewhere.url()));
    let e = remote(&server.url(), "allow_addresses = [\"127.0.0.1\"]");
    let r = hello(&e, &["--network"]);
    assert_eq!(status(&r), "failed", "{r}");
    assert!(text(&r).contains("another origin"), "{r}");
    assert!(!server.requests().is_empty(), "the first server was asked");
    assert!(
        elsewhere.requests().is_empty(),
        "the other origin got {:?}",
        elsewhere.requests()
    );
}

#[test]
fn a_remote_server_config_is_checked() {
    for (table, needle) in [
        ("url = \"ftp://127.0.0.1/mcp\"", "is not http(s)"),
        (
            "url = \"https://user:pw@mcp.example/mcp\"",
            "carries credentials",
        ),
        (
            "url = \"https://mcp.example/mcp\"\ncommand = \"/bin/true\"",
            "does not apply",
        ),
        (
            "url = \"https://mcp.example/mcp\"\nallow_addresses = [\"localhost\"]",
            "not an IP address",
        ),
        (
            "url = \"https://mcp.example/mcp\"\nheaders_env = { Authorization = \"1BAD\" }",
            "is not a header",
        ),
        (
            "url = \"http://mcp.example/mcp\"\nheaders_env = { Authorization = \"TOKEN\" }",
            "over plain http://",
        ),
    ] {
        let e = Env::with_config(&format!("[mcp.servers.web]\n{table}\n"));
        let out = e.spear(&["tool", "terminal", "{\"command\":\"true\"}"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{table}: {err}");
        assert!(err.contains(needle), "{table}: {err}");
    }
}
