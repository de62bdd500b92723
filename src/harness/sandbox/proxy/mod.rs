//! The proxied network path: the sandbox keeps a network namespace with loopback alone; the
//! namespace helper opens a listening socket on 127.0.0.1:3128 inside it before the command
//! starts and hands it back, and Spear's egress proxy accepts on it from outside. No process of
//! Spear's runs in the sandbox, no socket is bound in, and the proxy listens on no host address.
//! Each connection is decided by name before any lookup (`deny` wins, then `allow`, else the
//! decider), its name resolved and every address checked against the refused ranges, then
//! pinned to a checked address; a tunnel's TLS ClientHello must name the host it asked for.
//! Invariants: nothing is sent to a host before its name and address passed; every request
//! the proxy read is in the outcome's connection list (refused ones with the reason); a client
//! that ignores the proxy variables reaches nothing, since the namespace has no other route.

mod hello;
mod ledger;
mod request;
pub mod resolve;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinSet;

use super::netns::IpPrefix;
use super::netns::refused::{self, HostAddress};
use super::{BubblewrapSandbox, LaunchLimits, SandboxError, SandboxOutcome, SandboxSpec};
use crate::harness::egress::{Egress, EgressAnswer, Host, NameVerdict};
use crate::harness::process::{NetnsPlan, OutputSink};
use crate::harness::secrets::KnownSecrets;
use ledger::{Ledger, Tally};
use request::{Kind, Request};
pub use resolve::{Resolve, SystemResolver};

/// Where the proxy listens inside the sandbox (its own loopback; the host's is never used).
pub const PROXY_ADDR: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 3128);
/// How long a lookup, a connect or a ClientHello may take.
const STEP_LIMIT: Duration = Duration::from_secs(10);
/// Connections served at once; the rest wait to be accepted.
const MAX_CONCURRENT: usize = 128;
/// The relay's buffer per direction.
const RELAY_BUFFER: usize = 64 * 1024;

/// The variables that point a client at the proxy, lowercase forms included; `NO_PROXY` is
/// empty so nothing bypasses it (a bypass would reach nothing anyway).
pub fn proxy_env() -> Vec<(String, String)> {
    let url = format!("http://{PROXY_ADDR}");
    let mut env = Vec::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        env.push((name.to_string(), url.clone()));
        env.push((name.to_ascii_lowercase(), url.clone()));
    }
    env.push(("NO_PROXY".into(), String::new()));
    env.push(("no_proxy".into(), String::new()));
    // Node's own fetch reads the variables only when told to (Node 24 and later).
    env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    env
}

/// What one run's proxy decides with.
pub struct ProxyContext {
    pub egress: Egress,
    /// The command line the connections belong to (for the decider's question).
    pub command: String,
    /// `[sandbox] network_allow`: prefixes reachable although refused by default.
    pub network_allow: Vec<IpPrefix>,
    /// Secret values no plain-HTTP request line or header may carry.
    pub secrets: KnownSecrets,
    pub resolver: Arc<dyn Resolve>,
    /// Tests only: exact addresses reachable although refused (a loopback test server).
    #[cfg(any(test, feature = "test-hooks"))]
    pub exempt: Vec<SocketAddr>,
}

/// Run `spec` on the proxied path: loopback only, the proxy's socket made inside, the proxy
/// serving until the command ends.
pub async fn run_with_proxy(
    sandbox: &BubblewrapSandbox,
    spec: SandboxSpec,
    limits: &LaunchLimits,
    sink: &mut dyn OutputSink,
    timeout: Duration,
    ctx: ProxyContext,
) -> Result<SandboxOutcome, SandboxError> {
    let (mut running, proxy) = start_with_proxy(sandbox, spec, limits, None, timeout, ctx).await?;
    running.release();
    let mut outcome = running.finish(sink, timeout).await;
    if let Some(p) = proxy {
        outcome.connections = p.stop().await;
    }
    Ok(outcome)
}

/// Launch `spec` on the proxied path, the command still held: the caller releases it and owns
/// the proxy, which serves until stopped or dropped. No proxy when bwrap ended before its
/// command (`finish` then reports what bwrap said).
pub(crate) async fn start_with_proxy(
    sandbox: &BubblewrapSandbox,
    mut spec: SandboxSpec,
    limits: &LaunchLimits,
    stdin: Option<std::fs::File>,
    timeout: Duration,
    ctx: ProxyContext,
) -> Result<(super::launch::Running, Option<Proxy>), SandboxError> {
    let env = proxy_env();
    spec.env.retain(|(k, _)| !env.iter().any(|(p, _)| p == k));
    spec.env.extend(env);
    let mut limits = limits.clone();
    limits.netns = Some(NetnsPlan {
        netlink: Vec::new(),
        ipv6_off_for_new_links: false,
        listen: Some(PROXY_ADDR),
    });
    let mut running = sandbox
        .start(spec, &limits, Vec::new(), stdin, timeout)
        .await?;
    let proxy = match running.take_listener() {
        Some(fd) => Some(Proxy::start(fd, ctx)?),
        None => None,
    };
    Ok((running, proxy))
}

/// A running proxy: its accept loop and the ledger of what it saw. Dropped, it stops serving.
pub struct Proxy {
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    ledger: Arc<Ledger>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
    }
}

impl Proxy {
    /// Serve `listener` (a listening socket of the sandbox's namespace) until `stop`.
    pub fn start(listener: OwnedFd, ctx: ProxyContext) -> std::io::Result<Proxy> {
        let listener = TcpListener::from_std(std::net::TcpListener::from(listener))?;
        let ledger = Arc::new(Ledger::default());
        let shared = Arc::new(Shared {
            ctx,
            ledger: ledger.clone(),
        });
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, shared, stopped));
        Ok(Proxy {
            stop: Some(stop),
            task: Some(task),
            ledger,
        })
    }

    /// The connections ended since the last call (those still open are reported when they
    /// end).
    pub fn take_connections(&self) -> Vec<crate::harness::egress::NetConnection> {
        self.ledger.drain()
    }

    /// Stop accepting, end every connection, and return the record of them all.
    pub async fn stop(mut self) -> Vec<crate::harness::egress::NetConnection> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        self.ledger.summary()
    }
}

struct Shared {
    ctx: ProxyContext,
    ledger: Arc<Ledger>,
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONCURRENT));
    let mut set = JoinSet::new();
    loop {
        let permit = tokio::select! {
            _ = &mut stopped => break,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let client = tokio::select! {
            _ = &mut stopped => break,
            c = listener.accept() => c,
        };
        // Reap what has finished, so the set does not grow with the connections served.
        while set.try_join_next().is_some() {}
        let client = match client {
            Ok((c, _)) => c,
            // Out of descriptors (or a connection reset before it was taken): wait a moment
            // rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = shared.clone();
        set.spawn(async move {
            serve(client, &shared).await;
            drop(permit);
        });
    }
    // The command has ended: its side of every connection is gone.
    set.shutdown().await;
}

/// Serve one client connection to its end, recording it.
async fn serve(mut client: TcpStream, shared: &Shared) {
    let read = tokio::time::timeout(request::HEAD_LIMIT, request::read_head(&mut client)).await;
    let (head, rest) = match read {
        Ok(Ok(Some(h))) => h,
        Ok(Ok(None)) => return,
        Ok(Err(bad)) => return refuse_unparsed(&mut client, shared, &bad.0).await,
        Err(_) => {
            return refuse_unparsed(&mut client, shared, "no request within 10 s").await;
        }
    };
    let req = match request::parse(&head) {
        Ok(r) => r,
        Err(bad) => return refuse_unparsed(&mut client, shared, &bad.0).await,
    };
    let tally = shared
        .ledger
        .open(&req.host.to_string(), req.port, req.kind.as_str());
    let target = match decide(shared, &req, &head).await {
        Ok(t) => t,
        Err(why) => return refuse(&mut client, &tally, &req, &why).await,
    };
    match req.kind {
        Kind::Connect => tunnel(client, &tally, &req, target, rest).await,
        Kind::Http => forward(client, &tally, &req, target, rest).await,
    }
}

/// Why a request is refused, or the addresses it may be pinned to (checked, in order).
async fn decide(shared: &Shared, req: &Request, head: &[u8]) -> Result<Vec<SocketAddr>, String> {
    let ctx = &shared.ctx;
    // The whole head: a request line, a header or a CONNECT name carrying a secret value.
    // As sent, and percent-decoded (`%73k-…` is the same value in a URL).
    let text = String::from_utf8_lossy(head);
    let mut named = ctx.secrets.names_in(&text);
    if named.is_empty() {
        named = ctx.secrets.names_in(&percent_decoded(&text));
    }
    if !named.is_empty() {
        return Err(format!(
            "the request carries the value of {}, which Spear knows as a secret",
            named.join(", ")
        ));
    }
    match ctx.egress.rules.verdict(&req.host, req.port) {
        NameVerdict::Denied(entry) => {
            return Err(format!("`{entry}` in [network] deny"));
        }
        NameVerdict::Allowed => {
            if let Some(why) = ctx.egress.decider.vetoes(&req.host, req.port) {
                return Err(why.to_string());
            }
        }
        NameVerdict::Unlisted => {
            match ctx
                .egress
                .decider
                .decide(&ctx.command, &req.host, req.port)
                .await
            {
                EgressAnswer::Allow => {}
                EgressAnswer::Deny(why) => return Err(why.to_string()),
            }
        }
    }
    let addresses = match &req.host {
        Host::Address(a) => vec![*a],
        Host::Name(name) => {
            match tokio::time::timeout(STEP_LIMIT, ctx.resolver.lookup(name, req.port)).await {
                Ok(Ok(a)) if !a.is_empty() => a,
                Ok(Ok(_)) => return Err(format!("`{name}` has no address")),
                Ok(Err(e)) => return Err(format!("`{name}` could not be looked up: {e}")),
                Err(_) => return Err(format!("looking `{name}` up took over 10 s")),
            }
        }
    };
    // This machine's addresses as they are now (a long-lived server's proxy outlives a DHCP
    // lease or a VPN coming up); unreadable, nothing is reached.
    let host = super::netns::refused::host_addresses()
        .map_err(|e| format!("this machine's own addresses could not be read ({e})"))?;
    let mut ok = Vec::new();
    let mut first_refused = None;
    for a in addresses {
        let at = SocketAddr::new(a, req.port);
        match refusal(shared, &host, at) {
            None => ok.push(at),
            Some(why) => {
                first_refused.get_or_insert(format!("its address {a} is refused: {why}"));
            }
        }
    }
    match (ok.is_empty(), first_refused) {
        (true, Some(why)) => Err(why),
        _ => Ok(ok),
    }
}

/// Why the proxy may not connect to `at`: the ranges that are not the internet, and this
/// machine's own addresses and networks, less `[sandbox] network_allow`.
fn refusal(shared: &Shared, host: &[HostAddress], at: SocketAddr) -> Option<String> {
    #[cfg(any(test, feature = "test-hooks"))]
    if shared.ctx.exempt.contains(&at) {
        return None;
    }
    let addr: IpAddr = match at.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    if shared.ctx.network_allow.iter().any(|p| p.contains(addr)) {
        return None;
    }
    if let Some(why) = refused::range_refusing(addr) {
        return Some(why.to_string());
    }
    host.iter()
        .any(|h| h.refused().any(|p| p.contains(addr)))
        .then(|| "one of this machine's own addresses or networks".to_string())
}

/// A CONNECT tunnel: answered, its ClientHello read and its server name checked, then pinned
/// to a checked address and relayed.
async fn tunnel(
    mut client: TcpStream,
    tally: &Tally,
    req: &Request,
    target: Vec<SocketAddr>,
    rest: Vec<u8>,
) {
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let hello = tokio::time::timeout(STEP_LIMIT, hello::read_client_hello(&mut client, rest)).await;
    let hello = match hello {
        Ok(Ok(h)) => h,
        Ok(Err(why)) => return tally.refuse(why.to_string()),
        Err(_) => return tally.refuse("no TLS ClientHello within 10 s".into()),
    };
    match (&req.host, hello.server_name.as_deref()) {
        (Host::Name(asked), Some(sni)) if asked == sni => {}
        (Host::Name(_), None) => {
            return tally.refuse("its TLS ClientHello names no server (SNI)".into());
        }
        (Host::Name(_), Some(other)) => {
            return tally.refuse(format!(
                "its TLS ClientHello names `{}`, not the host it asked for",
                request::cut(other)
            ));
        }
        // A listed address: no name to compare; a name it sends is not trusted either way.
        (Host::Address(_), _) => {}
    }
    let Some(mut upstream) = connect(tally, &target).await else {
        return;
    };
    if upstream.write_all(&hello.raw).await.is_err() {
        return tally.refuse("the server closed the connection at once".into());
    }
    tally.add_up(hello.raw.len() as u64);
    relay(client, upstream, tally).await;
}

/// Plain HTTP: one request, rewritten for the origin, then relayed.
async fn forward(
    mut client: TcpStream,
    tally: &Tally,
    req: &Request,
    target: Vec<SocketAddr>,
    rest: Vec<u8>,
) {
    let Some(mut upstream) = connect(tally, &target).await else {
        let _ = client
            .write_all(&answer(
                502,
                "Bad Gateway",
                &format!("could not connect to {}:{}", req.host, req.port),
            ))
            .await;
        return;
    };
    // The head, then exactly the body it announced: whatever the client sends after that (a
    // pipelined request) is never read, so every request that leaves is one that was judged.
    let mut first = req.upstream_head.clone();
    let from_rest = rest
        .len()
        .min(usize::try_from(req.body_len).unwrap_or(usize::MAX));
    first.extend_from_slice(&rest[..from_rest]);
    if upstream.write_all(&first).await.is_err() {
        return;
    }
    tally.add_up(first.len() as u64);
    let (cr, cw) = client.into_split();
    let (ur, mut uw) = upstream.into_split();
    let left = req.body_len - from_rest as u64;
    // The origin's write side stays open until the response ends: some servers read a
    // half-close as an abort.
    tokio::join!(
        pump(cr.take(left), &mut uw, |n| tally.add_up(n), false),
        pump(ur, cw, |n| tally.add_down(n), true),
    );
}

/// Connect to the first checked address that answers, recording which.
async fn connect(tally: &Tally, target: &[SocketAddr]) -> Option<TcpStream> {
    let mut last = String::from("no address");
    for at in target {
        match tokio::time::timeout(STEP_LIMIT, TcpStream::connect(at)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                tally.reached(*at);
                return Some(s);
            }
            Ok(Err(e)) => last = format!("{at}: {e}"),
            Err(_) => last = format!("{at}: no answer within 10 s"),
        }
    }
    tally.failed(format!("could not connect ({last})"));
    None
}

/// Copy both ways until both sides are done, counting the bytes.
async fn relay(client: TcpStream, upstream: TcpStream, tally: &Tally) {
    let (cr, cw) = client.into_split();
    let (ur, uw) = upstream.into_split();
    tokio::join!(
        pump(cr, uw, |n| tally.add_up(n), true),
        pump(ur, cw, |n| tally.add_down(n), true),
    );
}

/// Copy `from` to `to` until the end, counting; `close`: shut `to` down after.
async fn pump(
    mut from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
    count: impl Fn(u64),
    close: bool,
) {
    let mut buf = vec![0u8; RELAY_BUFFER];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
                count(n as u64);
            }
        }
    }
    if close {
        let _ = to.shutdown().await;
    }
}

/// Refuse a request that was read and parsed: the client is told why (a tunnel, before it
/// was answered; a plain request, as its response), and the ledger records it.
async fn refuse(client: &mut TcpStream, tally: &Tally, req: &Request, why: &str) {
    tally.refuse(why.to_string());
    let body = format!(
        "spear egress proxy: {} {}:{} refused: {why}\n",
        req.kind.as_str(),
        req.host,
        req.port
    );
    let _ = client.write_all(&answer(403, "Forbidden", &body)).await;
    let _ = client.shutdown().await;
}

/// Refuse what is not a proxy request at all; recorded under `?`.
async fn refuse_unparsed(client: &mut TcpStream, shared: &Shared, why: &str) {
    let tally = shared.ledger.open("?", 0, "?");
    tally.refuse(format!("not a proxy request: {why}"));
    let body = format!("spear egress proxy: not a proxy request: {why}\n");
    let _ = client.write_all(&answer(400, "Bad Request", &body)).await;
    let _ = client.shutdown().await;
}

/// `text` with every `%XX` escape decoded (invalid ones kept as written), lossily as UTF-8.
fn percent_decoded(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn answer(code: u16, text: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {code} {text}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
