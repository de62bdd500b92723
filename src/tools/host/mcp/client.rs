//! The person's MCP servers (`[mcp.servers.NAME]`), each run as a long-lived confined process
//! (`CommandRunner::start_long_lived`: the command sandbox, the workspace read-only or hidden,
//! never writable, the network only when granted) and spoken to over its stdin and stdout.
//!
//! A server starts when its tools are first needed and lives until the session ends (the
//! `McpClients` is dropped), a call takes longer than its timeout (it is restarted on the next
//! call), or it dies. Servers are spawned from a runtime of their own, whose worker threads
//! live as long as the session: the sandbox's parent-death signal follows the spawning thread.
//! Every call reaches here through the router (`tools::mcp::capability`); nothing here decides whether
//! a call may run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool};
use rmcp::service::{Peer, RoleClient, RunningService};

use super::bounded::{LineBound, MESSAGE_LIMIT};
use super::pins::{Seen, ToolPins, fingerprint};
use super::{McpLaunch, McpServerConfig};
use crate::harness::command_policy::{ExecutionProfile, Secrets};
use crate::harness::command_runner::CommandRunner;
use crate::harness::command_runner::{LongLived, StderrLog};
use crate::harness::primitives::{Capability, CapabilitySet};
use crate::harness::secrets::KnownSecrets;

/// How long a server may take to start and answer `initialize` and `tools/list`.
const START_WAIT: Duration = Duration::from_secs(30);
/// The tail of a server's stderr kept for when it fails.
const STDERR_KEPT: usize = 16 * 1024;
/// The most of a call's result kept as text.
pub const RESULT_TEXT_CAP: usize = 1 << 20;

/// One running server.
struct Live {
    service: RunningService<RoleClient, ()>,
    /// Set when the server sent a message over `MESSAGE_LIMIT` (its stream then ended).
    oversized: Arc<std::sync::atomic::AtomicBool>,
    tools: Vec<ToolInfo>,
    /// Killed (through its pidfds) when dropped; none for a remote server.
    process: Option<LongLived>,
    log: Option<StderrLog>,
}

/// What a server offers, as listed.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    pub server: String,
    pub name: String,
    /// The server's own words: data, never instructions.
    pub description: String,
    pub input_schema: serde_json::Value,
    /// The person's config lists it as read-only.
    pub read_only: bool,
    /// The server's own `readOnlyHint`: shown, never trusted.
    pub read_only_hint: Option<bool>,
    /// `pins::fingerprint` of its name, description and schema.
    pub hash: String,
}

/// How a call that returned no result ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallEnd {
    /// It failed: why, for the model and the person.
    Failed(String),
    /// The turn was cancelled while it ran: it was abandoned.
    Cancelled,
}

/// Where a server stands, for `/mcp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Not started yet (servers start when their tools are first needed).
    Idle,
    Running {
        tools: Vec<String>,
    },
    /// Its last start or call failed; it starts again when next needed.
    Failed(String),
}

/// One server as `/mcp` lists it.
#[derive(Debug, Clone)]
pub struct ServerStatus<'a> {
    pub config: &'a McpServerConfig,
    pub state: ServerState,
}

/// Where a server's failures are told, one line each.
pub type FailureSink = Box<dyn Fn(&str) + Send>;

/// The session's MCP servers.
pub struct McpClients {
    servers: Vec<McpServerConfig>,
    runner: Arc<CommandRunner>,
    state_dir: PathBuf,
    runtime: Option<tokio::runtime::Runtime>,
    live: Mutex<BTreeMap<String, Live>>,
    /// Why each server last failed (cleared when it starts).
    failures: Mutex<BTreeMap<String, String>>,
    pins: ToolPins,
    /// Told of every failure, for a line on the screen.
    on_failure: Mutex<Option<FailureSink>>,
    /// The values of the variables the servers are handed, as Spear's environment has them.
    known: KnownSecrets,
    /// Held while a server starts: one start at a time.
    starting: Mutex<()>,
    /// What the session last said of the network (`grant_network`); each call's own switch is
    /// checked besides.
    network_granted: std::sync::atomic::AtomicBool,
    /// What a server granted the network reaches (`[network]`): the same names as a command,
    /// no one asked about the rest (a server's connections come mid-call, unannounced).
    egress: crate::harness::egress::Egress,
}

/// Ends every server, and confirms its processes died (killed through their pidfds), before the
/// session goes on: a normal end leaves nothing running.
impl Drop for McpClients {
    fn drop(&mut self) {
        let live = std::mem::take(&mut *self.live.lock().unwrap_or_else(|p| p.into_inner()));
        if let Some(rt) = self.runtime.take() {
            stop_confirmed(&rt, live.into_values().collect());
            rt.shutdown_background();
        }
    }
}

/// How long ending the servers may take before Spear goes on (a process not confirmed dead by
/// then is still killed; the ledger and the parent-death signal remain behind it).
const STOP_WAIT: Duration = Duration::from_secs(5);

/// End `lives` and confirm their processes died, within `STOP_WAIT`. On a thread of its own:
/// the caller may be inside another runtime (the session's actor narrowing the network).
fn stop_confirmed(rt: &tokio::runtime::Runtime, lives: Vec<Live>) {
    if lives.is_empty() {
        return;
    }
    std::thread::scope(|scope| {
        scope.spawn(|| {
            rt.block_on(async move {
                let _ = tokio::time::timeout(STOP_WAIT, async move {
                    for l in lives {
                        drop(l.service);
                        if let Some(p) = l.process {
                            let _ = p.stop().await;
                        }
                    }
                })
                .await;
            });
        });
    });
}

impl McpClients {
    /// The servers `servers` names, to be started over `runner` when first used. `state_dir`
    /// is Spear's state, which no server's read paths may reach.
    pub fn new(
        servers: Vec<McpServerConfig>,
        runner: Arc<CommandRunner>,
        state_dir: &Path,
    ) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("spear-mcp")
            .enable_all()
            .build()?;
        let known = KnownSecrets::new(servers_env(&servers));
        Ok(McpClients {
            servers,
            runner,
            state_dir: state_dir.to_path_buf(),
            runtime: Some(runtime),
            live: Mutex::new(BTreeMap::new()),
            failures: Mutex::new(BTreeMap::new()),
            pins: ToolPins::open_in(state_dir),
            on_failure: Mutex::new(None),
            known,
            starting: Mutex::new(()),
            network_granted: std::sync::atomic::AtomicBool::new(true),
            egress: Default::default(),
        })
    }

    /// The servers reach the network by `egress`'s path and names (its decider is not used:
    /// an unlisted name is refused).
    pub fn with_egress(mut self, egress: crate::harness::egress::Egress) -> Self {
        self.egress = crate::harness::egress::Egress {
            decider: std::sync::Arc::new(crate::harness::egress::RefuseUnlisted),
            ..egress
        };
        self
    }

    /// The values handed to servers, for whoever records or shows text (the audit log).
    pub fn known_secrets(&self) -> &KnownSecrets {
        &self.known
    }

    /// `result_text` without any value handed to a server.
    pub fn result_text(&self, result: &CallToolResult) -> (String, bool) {
        result_text(result, &self.known)
    }

    /// `text` without any value handed to a server.
    pub fn redact(&self, text: &str) -> String {
        self.known.redact(text).into_owned()
    }

    /// Tell `sink` of every server failure (a start that failed, a call that ended a server),
    /// in one line: the front end shows it on the screen.
    pub fn on_failure(&self, sink: FailureSink) {
        *self.on_failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(sink);
    }

    /// Server `name` failed for `why`: kept for `/mcp` and told to the screen, without any
    /// value handed to a server. The words, so redacted, for the caller to return.
    fn failed(&self, name: &str, why: &str) -> String {
        let why = self.redact(why);
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), why.clone());
        if let Some(sink) = &*self.on_failure.lock().unwrap_or_else(|p| p.into_inner()) {
            sink(&format!("MCP server `{name}`: {}", one_line(&why)));
        }
        why
    }

    pub fn pins(&self) -> &ToolPins {
        &self.pins
    }

    /// Every configured server and where it stands.
    pub fn status(&self) -> Vec<ServerStatus<'_>> {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        self.servers
            .iter()
            .map(|s| ServerStatus {
                config: s,
                state: match (live.get(&s.name), failures.get(&s.name)) {
                    (Some(l), _) => ServerState::Running {
                        tools: l.tools.iter().map(|t| t.name.clone()).collect(),
                    },
                    (None, Some(why)) => ServerState::Failed(why.clone()),
                    (None, None) => ServerState::Idle,
                },
            })
            .collect()
    }

    /// End server `name` and start it again now (`/mcp restart NAME`). A server with the
    /// network starts only when `network_now`.
    pub fn restart(&self, name: &str, network_now: bool) -> Result<Vec<ToolInfo>, String> {
        self.end(name);
        self.tools(name, network_now)
    }

    /// Say whether the session grants the network now: from this moment no server that needs
    /// it starts without it (a start under way is stopped when it completes).
    pub fn grant_network(&self, granted: bool) {
        self.network_granted
            .store(granted, std::sync::atomic::Ordering::SeqCst);
    }

    fn network_granted(&self) -> bool {
        self.network_granted
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stop the running servers that need the network, when the session no longer grants it
    /// (`/network off`, a switch to SAFE). Their names.
    pub fn narrow(&self, network_now: bool) -> Vec<String> {
        self.grant_network(network_now);
        if network_now {
            return Vec::new();
        }
        let names: Vec<String> = {
            let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            self.servers
                .iter()
                .filter(|s| s.network && live.contains_key(&s.name))
                .map(|s| s.name.clone())
                .collect()
        };
        for n in &names {
            self.end(n);
        }
        names
    }

    pub fn servers(&self) -> &[McpServerConfig] {
        &self.servers
    }

    pub fn server(&self, name: &str) -> Option<&McpServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    fn runtime(&self) -> Result<&tokio::runtime::Runtime, String> {
        self.runtime
            .as_ref()
            .ok_or_else(|| "the MCP client was shut down".to_string())
    }

    /// The tools of server `name`, starting it if it is not running. A server with the network
    /// starts only when `network_now` (the session's switch on, the mode not SAFE); one running
    /// when the session no longer grants it is stopped.
    pub fn tools(&self, name: &str, network_now: bool) -> Result<Vec<ToolInfo>, String> {
        let cfg = self
            .server(name)
            .ok_or_else(|| format!("no MCP server named `{name}` is configured"))?;
        let refused = || {
            format!(
                "server `{name}` has the network, which this session does not grant now (the \
                 network is off or the mode is SAFE; the person turns it on with /network on \
                 or --network): it is not started"
            )
        };
        if cfg.network && !(network_now && self.network_granted()) {
            self.end(name);
            return Err(refused());
        }
        let running = || {
            self.live
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(name)
                .map(|l| l.tools.clone())
        };
        if let Some(tools) = running() {
            return Ok(tools);
        }
        // One start at a time, without holding `live`: `/mcp` and a narrowing never wait on
        // a server that is slow to start.
        let _one = self.starting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tools) = running() {
            return Ok(tools);
        }
        let started = match self.start(cfg) {
            Ok(started) => started,
            Err(why) => return Err(self.failed(name, &why)),
        };
        // The session may have taken the network away while it started.
        if cfg.network && !self.network_granted() {
            if let Ok(rt) = self.runtime() {
                stop_confirmed(rt, vec![started]);
            }
            return Err(refused());
        }
        let tools = started.tools.clone();
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), started);
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        Ok(tools)
    }

    /// Tool `tool` of server `server` as it is now (starting the server), and how it compares
    /// with the version last let run (a server never seen has all its tools pinned as they are).
    pub fn confirm(
        &self,
        server: &str,
        tool: &str,
        network_now: bool,
    ) -> Result<(ToolInfo, Seen), String> {
        let listed = self.tools(server, network_now)?;
        let found = listed
            .iter()
            .find(|t| t.name == tool)
            .cloned()
            .ok_or_else(|| {
                format!(
                    "server `{server}` has no tool `{tool}` (`spear-capability list` shows its \
                     tools)"
                )
            })?;
        let pairs: Vec<(&str, &str)> = listed
            .iter()
            .map(|t| (t.name.as_str(), t.hash.as_str()))
            .collect();
        let seen = self.pins.check(server, &pairs, tool)?;
        Ok((found, seen))
    }

    /// The connections server `name` made through the egress proxy since this was last asked
    /// (each call's record carries those made up to its end).
    pub fn take_connections(&self, name: &str) -> Vec<crate::harness::egress::NetConnection> {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.get(name)
            .and_then(|l| l.process.as_ref())
            .map(LongLived::take_connections)
            .unwrap_or_default()
    }

    /// Call `tool` of server `server` with `arguments`, provided the tool is still the version
    /// `hash` the call was decided on. A call past the server's timeout is abandoned and the
    /// server ended (the next call starts it again); a server that died is said with the end of
    /// its stderr.
    pub fn call(
        &self,
        server: &str,
        tool: &str,
        hash: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        cancel: &crate::harness::process::CancelToken,
    ) -> Result<CallToolResult, CallEnd> {
        let cfg = self.server(server).ok_or_else(|| {
            CallEnd::Failed(format!("no MCP server named `{server}` is configured"))
        })?;
        let (peer, oversized): (Peer<RoleClient>, _) = {
            let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            let Some(l) = live.get(server) else {
                return Err(CallEnd::Failed(format!(
                    "server `{server}` stopped after the call was decided; call again"
                )));
            };
            match l.tools.iter().find(|t| t.name == tool) {
                Some(t) if t.hash == hash => (l.service.peer().clone(), l.oversized.clone()),
                _ => {
                    return Err(CallEnd::Failed(format!(
                        "`{server}.{tool}` changed after the call was decided; call again to \
                         be asked about the new version"
                    )));
                }
            }
        };
        let rt = self.runtime().map_err(CallEnd::Failed)?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let wait = cfg.call_timeout;
        let cancel = cancel.clone();
        let outcome = rt
            .block_on(rt.spawn(async move {
                tokio::select! {
                    r = tokio::time::timeout(wait, peer.call_tool(params)) => Some(r),
                    () = cancel.cancelled() => None,
                }
            }))
            .map_err(|e| CallEnd::Failed(format!("the call failed inside Spear: {e}")))?;
        // Cancelled (Esc): the call is abandoned; its answer, should one come, is dropped, and
        // the server goes on serving.
        let Some(outcome) = outcome else {
            return Err(CallEnd::Cancelled);
        };
        let why = match outcome {
            Ok(Ok(result)) => return Ok(result),
            Ok(Err(_)) if oversized.load(std::sync::atomic::Ordering::SeqCst) => {
                let tail = self.end(server);
                format!(
                    "`{server}.{tool}` answered with a message over {} MiB, more than a server \
                     may send: the call ended and the server was ended (it starts again on the \
                     next call){tail}",
                    MESSAGE_LIMIT >> 20
                )
            }
            Ok(Err(e)) => {
                let tail = self.end(server);
                format!(
                    "the call to `{server}.{tool}` failed ({e}); the server was ended and \
                     starts again on the next call{tail}"
                )
            }
            Err(_) => {
                let tail = self.end(server);
                format!(
                    "`{server}.{tool}` took longer than {} s: the call was abandoned and the \
                     server ended (it starts again on the next call){tail}",
                    wait.as_secs()
                )
            }
        };
        Err(CallEnd::Failed(self.failed(server, &why)))
    }

    /// End server `name` (if running); the end of its stderr, as a suffix for a message.
    fn end(&self, name: &str) -> String {
        let gone = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        let Some(live) = gone else {
            return String::new();
        };
        let tail = live.log.as_ref().map(StderrLog::text).unwrap_or_default();
        if let Ok(rt) = self.runtime() {
            stop_confirmed(rt, vec![live]);
        }
        stderr_suffix(&tail)
    }

    /// Start `cfg`'s server and list its tools.
    fn start(&self, cfg: &McpServerConfig) -> Result<Live, String> {
        for p in &cfg.read_paths {
            if p.starts_with(&self.state_dir) || self.state_dir.starts_with(p) {
                return Err(format!(
                    "server `{}` is not started: its read path {} would show it Spear's state \
                     (audit log, results, checkpoints)",
                    cfg.name,
                    p.display()
                ));
            }
        }
        let mut caps = Vec::new();
        if cfg.workspace_read {
            caps.push(Capability::WorkspaceRead);
        }
        if cfg.network {
            caps.push(Capability::Network);
        }
        let mut handed = Vec::new();
        for name in &cfg.env {
            match std::env::var(name) {
                Ok(v) => handed.push((name.clone(), v)),
                Err(_) => {
                    return Err(format!(
                        "server `{}` is not started: its config hands it `{name}`, which is not \
                         set (or not UTF-8) in Spear's environment; set it before starting \
                         Spear, or take it out of env",
                        cfg.name
                    ));
                }
            }
        }
        let profile =
            ExecutionProfile::from_granted(CapabilitySet::of(&caps), cfg.read_paths.clone())
                .with_secrets(Secrets::new(handed))
                .with_egress(self.egress.clone());
        let McpLaunch::Stdio { command, args } = &cfg.launch else {
            return self.start_http(cfg);
        };
        let argv: Vec<std::ffi::OsString> = std::iter::once(command.clone().into_os_string())
            .chain(args.iter().map(Into::into))
            .collect();
        let runner = self.runner.clone();
        let name = cfg.name.clone();
        let cfg = cfg.clone();
        let known = self.known.clone();
        let oversized = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let rt = self.runtime()?;
        // Spawned onto the runtime's worker, which lives as long as the session: the
        // sandbox's parent-death signal follows the spawning thread.
        rt.block_on(rt.spawn(async move {
            let mut process = runner
                .start_long_lived(&profile, argv)
                .await
                .map_err(|e| format!("server `{name}` could not be started: {e}"))?;
            let log = process.keep_stderr(STDERR_KEPT);
            let (Some(stdout), Some(stdin)) = (process.stdout.take(), process.stdin.take()) else {
                return Err(format!("server `{name}` has no stdin or stdout"));
            };
            // One message at most MESSAGE_LIMIT: past it the stream ends (rmcp's own bound, set
            // above ours, never drops one silently).
            let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(
                LineBound::new(stdout, MESSAGE_LIMIT, oversized.clone()),
                stdin,
            )
            .with_max_line_length(MESSAGE_LIMIT + 1);
            let (service, tools) = match handshake(transport, &name).await {
                Ok(started) => started,
                Err(why) => {
                    // Why it failed is what it wrote last: ended, its stderr is whole.
                    let _ = process.stop().await;
                    if let Some(l) = &log {
                        l.settled(Duration::from_millis(500)).await;
                    }
                    let tail = log.as_ref().map(StderrLog::text).unwrap_or_default();
                    return Err(format!("{why}{}", stderr_suffix(&tail)));
                }
            };
            Ok(Live {
                service,
                oversized,
                tools: shown_tools(&cfg, &known, tools)?,
                process: Some(process),
                log,
            })
        }))
        .map_err(|e| format!("the server's start failed inside Spear: {e}"))?
    }

    /// Connect to `cfg`'s remote server over streamable HTTP: its address checked as
    /// `fetch_url` checks one (with the server's own `allow_addresses`) and pinned, a redirect
    /// followed only within its origin, its headers filled from Spear's environment.
    fn start_http(&self, cfg: &McpServerConfig) -> Result<Live, String> {
        let McpLaunch::Http {
            url,
            headers_env,
            allow_addresses,
        } = &cfg.launch
        else {
            return Err(format!("server `{}` is not a remote server", cfg.name));
        };
        let name = cfg.name.clone();
        let mut headers = reqwest::header::HeaderMap::new();
        for (header, var) in headers_env {
            let value = std::env::var(var).map_err(|_| {
                format!(
                    "server `{name}` is not started: its header {header} comes from `{var}`, \
                     which is not set (or not UTF-8) in Spear's environment"
                )
            })?;
            let (Ok(h), Ok(mut v)) = (
                reqwest::header::HeaderName::from_bytes(header.as_bytes()),
                reqwest::header::HeaderValue::from_str(&value),
            ) else {
                return Err(format!(
                    "server `{name}` is not started: `{var}` cannot be sent as header {header}"
                ));
            };
            v.set_sensitive(true);
            headers.insert(h, v);
        }
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| format!("server `{name}`: `{url}` is not a URL ({e})"))?;
        let policy = crate::tools::host::web::address::AddressPolicy {
            allow_private: false,
            allow: allow_addresses.clone(),
        };
        let origin = parsed.origin();
        let refused = Arc::new(Mutex::new(None::<String>));
        let said_refusal = refused.clone();
        let cfg = cfg.clone();
        let known = self.known.clone();
        let rt = self.runtime()?;
        rt.block_on(rt.spawn(async move {
            let builder = crate::tools::host::web::http::pinned_builder(
                &parsed,
                &policy,
                String::new(),
            )
            .await
            .map_err(|e| match e {
                crate::tools::host::web::http::FetchError::Refused { addr, why, .. } => format!(
                    "server `{name}` is not started: its address {addr} is refused ({why}); if \
                     it is yours, add \"{addr}\" to allow_addresses in [mcp.servers.{name}]"
                ),
                other => format!("server `{name}` could not be reached: {other}"),
            })?;
            let client = builder
                .connect_timeout(Duration::from_secs(10))
                .default_headers(headers)
                .user_agent(concat!("spear/", env!("CARGO_PKG_VERSION"), " (mcp)"))
                // Within the origin only: its headers (credentials) go nowhere else.
                .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                    if attempt.url().origin() != origin {
                        let why = format!(
                            "it redirected to another origin ({}), which is refused: its \
                             headers are sent to its own origin only",
                            attempt.url()
                        );
                        if let Ok(mut r) = refused.lock() {
                            *r = Some(why.clone());
                        }
                        attempt.error(why)
                    } else if attempt.previous().len() >= 5 {
                        attempt.error("more than 5 redirects")
                    } else {
                        attempt.follow()
                    }
                }))
                .build()
                .map_err(|e| format!("server `{name}`: {e}"))?;
            let mut config =
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    parsed.to_string(),
                );
            config.max_json_response_size = MESSAGE_LIMIT;
            config.max_sse_event_size = MESSAGE_LIMIT;
            let transport =
                rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
            // rmcp keeps only the words of a transport's error: a refused redirect is said
            // from what the policy recorded.
            let (service, tools) = handshake(transport, &name).await.map_err(|why| {
                let refused = said_refusal.lock().ok().and_then(|r| r.clone());
                match refused {
                    Some(r) => format!("{why}; {r}"),
                    None => why,
                }
            })?;
            Ok(Live {
                service,
                oversized: Arc::new(std::sync::atomic::AtomicBool::new(false)),
                tools: shown_tools(&cfg, &known, tools)?,
                process: None,
                log: None,
            })
        }))
        .map_err(|e| format!("the server's start failed inside Spear: {e}"))?
    }
}

/// `initialize`, then `tools/list`, each within `START_WAIT`.
async fn handshake<T, E, A>(
    transport: T,
    name: &str,
) -> Result<(RunningService<RoleClient, ()>, Vec<Tool>), String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let service = match tokio::time::timeout(START_WAIT, ().serve(transport)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Err(format!(
                "server `{name}` did not start an MCP session ({})",
                crate::tools::host::web::http::error_chain(&e),
            ));
        }
        Err(_) => {
            return Err(format!(
                "server `{name}` did not answer within {} s",
                START_WAIT.as_secs(),
            ));
        }
    };
    match tokio::time::timeout(START_WAIT, service.list_all_tools()).await {
        Ok(Ok(t)) => Ok((service, t)),
        Ok(Err(e)) => Err(format!(
            "server `{name}` did not list its tools ({})",
            crate::tools::host::web::http::error_chain(&e),
        )),
        Err(_) => Err(format!(
            "server `{name}` did not list its tools within {} s",
            START_WAIT.as_secs()
        )),
    }
}

/// The tools as listed: hashed as the server gave them, shown without any value handed to it.
/// A server that lists one name twice is refused (which of the two a call reaches, and which
/// was pinned, could not be told).
fn shown_tools(
    cfg: &McpServerConfig,
    known: &KnownSecrets,
    tools: Vec<Tool>,
) -> Result<Vec<ToolInfo>, String> {
    let mut names = std::collections::BTreeSet::new();
    if let Some(t) = tools.iter().find(|t| !names.insert(t.name.to_string())) {
        return Err(format!(
            "server `{}` lists a tool named `{}` twice, so it is not used",
            cfg.name,
            crate::harness::audit::display::escape_controls(&t.name)
        ));
    }
    Ok(tools
        .into_iter()
        .map(|t| {
            let mut i = info(cfg, t);
            i.description = known.redact(&i.description).into_owned();
            known.redact_json(&mut i.input_schema);
            i
        })
        .collect())
}

/// `text` on one line (a server's stderr tail included), at most 400 characters.
pub fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(400) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

/// Every variable a server is handed, with its value as Spear's environment has it.
fn servers_env(servers: &[McpServerConfig]) -> Vec<(String, String)> {
    servers
        .iter()
        .flat_map(McpServerConfig::handed_variables)
        .filter_map(|n| std::env::var(n).ok().map(|v| (n.to_string(), v)))
        .collect()
}

fn info(cfg: &McpServerConfig, t: Tool) -> ToolInfo {
    let description = t.description.map(|d| d.to_string()).unwrap_or_default();
    let input_schema = serde_json::Value::Object((*t.input_schema).clone());
    ToolInfo {
        server: cfg.name.clone(),
        read_only: cfg.read_only_tools.contains(t.name.as_ref()),
        read_only_hint: t.annotations.as_ref().and_then(|a| a.read_only_hint),
        hash: fingerprint(&t.name, &description, &input_schema),
        name: t.name.to_string(),
        description,
        input_schema,
    }
}

fn stderr_suffix(tail: &str) -> String {
    // A tail cut at the front may begin inside a line (inside a value that is redacted only
    // whole): that partial line is left out.
    let tail = if tail.len() >= STDERR_KEPT {
        tail.split_once('\n').map_or("", |(_, rest)| rest)
    } else {
        tail
    };
    let tail = tail.trim();
    if tail.is_empty() {
        String::new()
    } else {
        let escaped = crate::harness::audit::display::escape_controls(tail);
        format!("; the end of its stderr:\n{escaped}")
    }
}

/// A call's result as text for the model: its text content (what is not text is named, not
/// shown) without any of `known`'s values, at most `RESULT_TEXT_CAP` bytes, and whether the
/// server said it failed.
pub fn result_text(result: &CallToolResult, known: &KnownSecrets) -> (String, bool) {
    let mut text = String::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            other => text.push_str(&format!("[{} content not shown]", content_kind(other))),
        }
        text.push('\n');
    }
    // Redacted whole before it is cut: a value across the cut would be shown in part.
    let mut text = known.redact(&text).into_owned();
    if text.len() > RESULT_TEXT_CAP {
        let mut cut = RESULT_TEXT_CAP;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = text.len();
        text.truncate(cut);
        text.push_str(&format!(
            "\n[result cut at {RESULT_TEXT_CAP} of {total} bytes]\n"
        ));
    }
    (text, result.is_error == Some(true))
}

fn content_kind(c: &ContentBlock) -> &'static str {
    match c {
        ContentBlock::Text(_) => "text",
        ContentBlock::Image(_) => "image",
        ContentBlock::Audio(_) => "audio",
        ContentBlock::Resource(_) => "resource",
        ContentBlock::ResourceLink(_) => "resource link",
        _ => "other",
    }
}
