//! A scripted OpenAI-compatible server on 127.0.0.1 (ephemeral port) with real HTTP/1.1 and
//! real chunked SSE, for the provider's and the agent's tests. Invariant: it listens on the
//! loopback address only, answers each request with the next reply of its script, records
//! every request, and runs on its own thread, so sync tests (`spear run` through assert_cmd)
//! and async tests use it alike.
//!
//! Only `POST /v1/chat/completions` is served; any other path gets a plain 404, as a real
//! server does for a base URL without its version path.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri};
use http_body::Frame;
use tokio::sync::{mpsc, watch};

/// What the server does after the last frame of a streamed reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// End the body properly (the terminating chunk).
    Finish,
    /// Abort the connection without ending the body: a stream broken mid-way.
    Abort,
    /// Keep the answer open, sending a `: keep-alive` comment at this interval until the
    /// client goes away (a slow server); the closure is counted, see [`MockServer::wait_closed`].
    Hang(Duration),
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body, sent as these frames (each one HTTP chunk).
    pub frames: Vec<Bytes>,
    pub end: StreamEnd,
    /// How long the body waits before its first frame (a model slow to answer).
    pub delay: Duration,
}

impl Reply {
    /// A `text/event-stream` body sent in one frame.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            frames: vec![Bytes::from(body.into())],
            end: StreamEnd::Finish,
            delay: Duration::ZERO,
        }
    }

    /// A JSON body with this status.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            frames: vec![Bytes::from(body.to_string())],
            end: StreamEnd::Finish,
            delay: Duration::ZERO,
        }
    }

    /// An OpenAI-style error body: `{"error": {"message": …}}`.
    pub fn error(status: u16, message: &str) -> Self {
        Self::json(
            status,
            &serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}}),
        )
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Re-cut the body into frames of these sizes, cycling through them (`&[1]`: one byte per
    /// HTTP chunk).
    pub fn split(mut self, sizes: &[usize]) -> Self {
        let body: Vec<u8> = self.frames.iter().flat_map(|f| f.iter().copied()).collect();
        let mut frames = Vec::new();
        let mut at = 0;
        for size in sizes.iter().copied().filter(|&s| s > 0).cycle() {
            if at >= body.len() {
                break;
            }
            let end = (at + size).min(body.len());
            frames.push(Bytes::copy_from_slice(&body[at..end]));
            at = end;
        }
        self.frames = frames;
        self
    }

    pub fn ending(mut self, end: StreamEnd) -> Self {
        self.end = end;
        self
    }

    /// Hold the body back this long before its first frame.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Null` when it was not JSON).
    pub body: serde_json::Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    /// How many streamed bodies the server has seen end, for any reason.
    closed: watch::Sender<usize>,
}

/// The running server; dropping it stops it.
pub struct MockServer {
    /// `http://127.0.0.1:PORT/v1`, the base URL to configure.
    pub base_url: String,
    /// `http://127.0.0.1:PORT`, without the version path.
    pub origin: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockServer {
    /// Start serving `script`, one reply per request, in order. Once the script is used up,
    /// every request gets a 500 saying so.
    pub fn start(script: impl IntoIterator<Item = Reply>) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let port = listener.local_addr().expect("local address").port();
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            closed: watch::channel(0).0,
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("mock server runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let app = axum::Router::new().fallback(move |method, uri, headers, body| {
                    answer(Arc::clone(&state), method, uri, headers, body)
                });
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
        });
        Self {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            origin: format!("http://127.0.0.1:{port}"),
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("requests").clone()
    }

    /// How many requests arrived.
    pub fn hits(&self) -> usize {
        self.shared.requests.lock().expect("requests").len()
    }

    /// Queue more replies.
    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().expect("script").push_back(reply);
    }

    /// Wait until `count` streamed bodies have ended (finished, aborted, or dropped because
    /// the client closed the connection). Fails the test after `limit`.
    pub async fn wait_closed(&self, count: usize, limit: Duration) {
        let mut closed = self.shared.closed.subscribe();
        let waited = tokio::time::timeout(limit, closed.wait_for(|n| *n >= count)).await;
        assert!(
            waited.is_ok(),
            "the mock server did not see {count} response(s) end within {limit:?}"
        );
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn answer(
    shared: Arc<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let path = uri.path().to_string();
    shared.requests.lock().expect("requests").push(Recorded {
        method: method.to_string(),
        path: path.clone(),
        headers: headers
            .iter()
            .map(|(n, v)| {
                (
                    n.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    });
    if method != Method::POST || path != "/v1/chat/completions" {
        return plain(404, "404 page not found");
    }
    let next = shared.script.lock().expect("script").pop_front();
    let Some(reply) = next else {
        return plain(500, "mock script exhausted");
    };
    let (tx, rx) = mpsc::channel(1);
    let body = Body::new(ScriptedBody {
        frames: rx,
        closed: shared.closed.clone(),
    });
    tokio::spawn(feed(reply.frames, reply.end, reply.delay, tx));
    let mut response = Response::builder()
        .status(StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    response.body(body).expect("scripted response")
}

fn plain(status: u16, text: &'static str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(Body::from(text))
        .expect("plain response")
}

type FrameResult = Result<Frame<Bytes>, std::io::Error>;

async fn feed(frames: Vec<Bytes>, end: StreamEnd, delay: Duration, tx: mpsc::Sender<FrameResult>) {
    tokio::time::sleep(delay).await;
    for frame in frames {
        if tx.send(Ok(Frame::data(frame))).await.is_err() {
            return;
        }
    }
    match end {
        StreamEnd::Finish => {}
        StreamEnd::Abort => {
            let _ = tx
                .send(Err(std::io::Error::other("scripted connection drop")))
                .await;
        }
        StreamEnd::Hang(every) => loop {
            tokio::time::sleep(every).await;
            if tx
                .send(Ok(Frame::data(Bytes::from_static(b": keep-alive\n\n"))))
                .await
                .is_err()
            {
                return;
            }
        },
    }
}

/// The response body: frames from the feeding task; counts itself closed when dropped, which
/// hyper does when the body ends or the connection goes away.
struct ScriptedBody {
    frames: mpsc::Receiver<FrameResult>,
    closed: watch::Sender<usize>,
}

impl http_body::Body for ScriptedBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.frames.poll_recv(cx)
    }
}

impl Drop for ScriptedBody {
    fn drop(&mut self) {
        self.closed.send_modify(|n| *n += 1);
    }
}
