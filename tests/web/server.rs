//! The loopback web server these tests fetch from: fixed pages by path on an address of the
//! caller's choosing in 127.0.0.0/8, with endless and slow bodies, redirects (to itself, to
//! another loopback address, to the metadata address, in a loop) and a 404. Every request is
//! counted by path, so a test can prove a refused hop was never asked for.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Response, Uri};
use http_body::Frame;
use tokio::sync::mpsc;

/// What one path answers.
#[derive(Clone)]
pub enum Route {
    /// Status, content type, body.
    Fixed(u16, &'static str, Vec<u8>),
    /// A redirect to the URL.
    Redirect(u16, String),
    /// 64 KiB chunks forever.
    Endless,
    /// One byte every `Duration`, forever.
    Slow(Duration),
}

pub struct WebServer {
    pub origin: String,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    headers: Arc<Mutex<HashMap<String, HeaderMap>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for WebServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

impl WebServer {
    /// Serve on `ip` (a port of the system's choice).
    pub fn start(ip: &str) -> WebServer {
        let listener = std::net::TcpListener::bind((ip, 0)).expect("bind the test web server");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let headers: Arc<Mutex<HashMap<String, HeaderMap>>> = Arc::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (r, h, hd) = (routes.clone(), hits.clone(), headers.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(move |uri: Uri, mut head: HeaderMap| {
                    // The query rides along with the headers, for tests that check it.
                    if let Some(q) = uri.query().and_then(|q| q.parse().ok()) {
                        head.insert("x-test-query", q);
                    }
                    hd.lock().unwrap().insert(uri.path().to_string(), head);
                    answer(r.clone(), h.clone(), uri)
                });
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
        });
        WebServer {
            origin: format!("http://{addr}"),
            routes,
            hits,
            headers,
            stop: Some(stop),
        }
    }

    pub fn route(&self, path: &str, route: Route) -> &Self {
        self.routes.lock().unwrap().insert(path.to_string(), route);
        self
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// The headers of the last request for `path`.
    pub fn headers(&self, path: &str) -> Option<HeaderMap> {
        self.headers.lock().unwrap().get(path).cloned()
    }

    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

async fn answer(
    routes: Arc<Mutex<HashMap<String, Route>>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    uri: Uri,
) -> Response<Body> {
    let path = uri.path().to_string();
    *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    let route = routes.lock().unwrap().get(&path).cloned();
    let builder = Response::builder();
    match route {
        None => builder
            .status(404)
            .header("content-type", "text/plain")
            .body(Body::from("not found"))
            .unwrap(),
        Some(Route::Fixed(status, ctype, body)) => builder
            .status(status)
            .header("content-type", ctype)
            .body(Body::from(body))
            .unwrap(),
        Some(Route::Redirect(status, to)) => builder
            .status(status)
            .header("location", to)
            .body(Body::empty())
            .unwrap(),
        Some(Route::Endless) => builder
            .header("content-type", "text/plain")
            .body(fed(Duration::ZERO, vec![b'x'; 64 << 10]))
            .unwrap(),
        Some(Route::Slow(every)) => builder
            .header("content-type", "text/plain")
            .body(fed(every, b"y".to_vec()))
            .unwrap(),
    }
}

/// A body that sends `chunk` every `every`, until the client goes away.
fn fed(every: Duration, chunk: Vec<u8>) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(1);
    tokio::spawn(async move {
        let chunk = Bytes::from(chunk);
        loop {
            if !every.is_zero() {
                tokio::time::sleep(every).await;
            }
            if tx.send(chunk.clone()).await.is_err() {
                return;
            }
        }
    });
    Body::new(ChannelBody(rx))
}

struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b))))
    }
}
