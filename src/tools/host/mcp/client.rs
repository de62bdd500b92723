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

use super::McpServerConfig;
use crate::harness::command_policy::ExecutionProfile;
use crate::harness::command_runner::CommandRunner;
use crate::harness::command_runner::{LongLived, StderrLog};
use crate::harness::primitives::{Capability, CapabilitySet};

/// How long a server may take to start and answer `initialize` and `tools/list`.
const START_WAIT: Duration = Duration::from_secs(30);
/// The tail of a server's stderr kept for when it fails.
const STDERR_KEPT: usize = 16 * 1024;
/// The most of a call's result kept as text.
pub const RESULT_TEXT_CAP: usize = 1 << 20;

/// One running server.
struct Live {
    service: RunningService<RoleClient, ()>,
    tools: Vec<Tool>,
    /// Killed (through its pidfds) when dropped.
    _process: LongLived,
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
    pub read_only: bool,
}

/// The session's MCP servers.
pub struct McpClients {
    servers: Vec<McpServerConfig>,
    runner: Arc<CommandRunner>,
    state_dir: PathBuf,
    runtime: Option<tokio::runtime::Runtime>,
    live: Mutex<BTreeMap<String, Live>>,
}

/// Ends every server: their processes are killed through their pidfds, inside the runtime
/// (the protocol's tasks need it), which is then shut down without blocking.
impl Drop for McpClients {
    fn drop(&mut self) {
        let live = std::mem::take(&mut *self.live.lock().unwrap_or_else(|p| p.into_inner()));
        if let Some(rt) = self.runtime.take() {
            {
                let _inside = rt.enter();
                drop(live);
            }
            rt.shutdown_background();
        }
    }
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
        Ok(McpClients {
            servers,
            runner,
            state_dir: state_dir.to_path_buf(),
            runtime: Some(runtime),
            live: Mutex::new(BTreeMap::new()),
        })
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

    /// The tools of server `name`, starting it if it is not running.
    pub fn tools(&self, name: &str) -> Result<Vec<ToolInfo>, String> {
        let cfg = self
            .server(name)
            .ok_or_else(|| format!("no MCP server named `{name}` is configured"))?;
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if !live.contains_key(name) {
            let started = self.start(cfg)?;
            live.insert(name.to_string(), started);
        }
        let tools = live.get(name).map(|l| l.tools.clone()).unwrap_or_default();
        Ok(tools
            .into_iter()
            .map(|t| ToolInfo {
                server: name.to_string(),
                read_only: cfg.read_only_tools.contains(t.name.as_ref()),
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: serde_json::Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Call `tool` of server `server` with `arguments`. A call past the server's timeout is
    /// abandoned and the server ended (the next call starts it again); a server that died is
    /// said with the end of its stderr.
    pub fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, String> {
        let cfg = self
            .server(server)
            .ok_or_else(|| format!("no MCP server named `{server}` is configured"))?;
        let peer: Peer<RoleClient> = {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            if !live.contains_key(server) {
                let started = self.start(cfg)?;
                live.insert(server.to_string(), started);
            }
            match live.get(server) {
                Some(l) if !l.tools.iter().any(|t| t.name == tool) => {
                    return Err(format!(
                        "server `{server}` has no tool `{tool}` (`spear-capability list` shows \
                         its tools)"
                    ));
                }
                Some(l) => l.service.peer().clone(),
                None => return Err(format!("server `{server}` is not running")),
            }
        };
        let rt = self.runtime()?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let wait = cfg.call_timeout;
        let outcome = rt
            .block_on(
                rt.spawn(async move { tokio::time::timeout(wait, peer.call_tool(params)).await }),
            )
            .map_err(|e| format!("the call failed inside Spear: {e}"))?;
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => {
                let tail = self.end(server);
                Err(format!(
                    "the call to `{server}.{tool}` failed ({e}); the server was ended and \
                     starts again on the next call{tail}"
                ))
            }
            Err(_) => {
                let tail = self.end(server);
                Err(format!(
                    "`{server}.{tool}` took longer than {} s: the call was abandoned and the \
                     server ended (it starts again on the next call){tail}",
                    wait.as_secs()
                ))
            }
        }
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
            let _inside = rt.enter();
            drop(live);
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
        let profile =
            ExecutionProfile::from_granted(CapabilitySet::of(&caps), cfg.read_paths.clone());
        let argv: Vec<std::ffi::OsString> = std::iter::once(cfg.command.clone().into_os_string())
            .chain(cfg.args.iter().map(Into::into))
            .collect();
        let runner = self.runner.clone();
        let name = cfg.name.clone();
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
            let tail = |log: &Option<StderrLog>| {
                stderr_suffix(&log.as_ref().map(StderrLog::text).unwrap_or_default())
            };
            let service = match tokio::time::timeout(START_WAIT, ().serve((stdout, stdin))).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    return Err(format!(
                        "server `{name}` did not start an MCP session ({e}){}",
                        tail(&log)
                    ));
                }
                Err(_) => {
                    return Err(format!(
                        "server `{name}` did not answer within {} s{}",
                        START_WAIT.as_secs(),
                        tail(&log)
                    ));
                }
            };
            let tools = match tokio::time::timeout(START_WAIT, service.list_all_tools()).await {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => {
                    return Err(format!(
                        "server `{name}` did not list its tools ({e}){}",
                        tail(&log)
                    ));
                }
                Err(_) => {
                    return Err(format!(
                        "server `{name}` did not list its tools within {} s",
                        START_WAIT.as_secs()
                    ));
                }
            };
            Ok(Live {
                service,
                tools,
                _process: process,
                log,
            })
        }))
        .map_err(|e| format!("the server's start failed inside Spear: {e}"))?
    }
}

fn stderr_suffix(tail: &str) -> String {
    let tail = tail.trim();
    if tail.is_empty() {
        String::new()
    } else {
        let escaped = crate::harness::audit::display::escape_controls(tail);
        format!("; the end of its stderr:\n{escaped}")
    }
}

/// A call's result as text for the model: its text content (what is not text is named, not
/// shown), at most `RESULT_TEXT_CAP` bytes, and whether the server said it failed.
pub fn result_text(result: &CallToolResult) -> (String, bool) {
    let mut text = String::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            other => text.push_str(&format!("[{} content not shown]", content_kind(other))),
        }
        text.push('\n');
    }
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
