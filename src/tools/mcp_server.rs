//! `spear mcp serve`: Spear's harness as an MCP server over stdio. Another agent (Claude Code,
//! Codex, an editor) calls the six coding tools and `classify`; each call takes the router the
//! model's calls take (classification, rules, hooks, gates, sandbox, limits, audit, ResultStore,
//! checkpoints), in the mode the server was started in.
//!
//! Invariants: nothing but protocol is written to stdout (this module writes nothing at all;
//! rmcp owns the channel); DANGEROUS is refused in every mode (the router decides it); in ASK a
//! question goes to the client through elicitation and its answer is recorded as the MCP
//! client's, and a client that cannot be asked gets a refusal naming the mode that would run
//! the call; calls that may write take the workspace's write lock, so they run one at a time
//! across every `spear mcp serve` on the workspace.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::harness::audit::DecidedBy;
use crate::harness::command_policy::{ApprovalDecision, CommandClass};
use crate::harness::primitives::ExecutionMode;
use crate::tools::approval::{CallApprovalRequest, CallApprover};
use crate::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use crate::tools::observer::SessionLabel;
use crate::tools::router::turn::Turn;
use crate::tools::router::{ToolCall, ToolRouter};

/// The tool that classifies without running.
const CLASSIFY: &str = "classify";

/// How long an elicitation may wait for the client's answer before the call is denied.
const ANSWER_WAIT: Duration = Duration::from_secs(600);

/// Why serving ended early.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the MCP client did not start a session: {0}")]
    Start(String),
    #[error("the MCP session ended in an error: {0}")]
    Run(String),
}

/// What a server is started with.
pub struct ServeOptions {
    pub mode: ExecutionMode,
    /// The audit label, renamed after the client once it says who it is.
    pub label: SessionLabel,
    /// What the label says besides the client's name (`PID-SECONDS`).
    pub label_suffix: String,
    /// The lock file calls that may write hold, one per workspace.
    pub write_lock: PathBuf,
}

/// The MCP server over one router.
pub struct SpearMcp {
    router: Arc<ToolRouter>,
    options: ServeOptions,
    calls: AtomicU64,
    named: std::sync::Once,
}

impl SpearMcp {
    pub fn new(router: Arc<ToolRouter>, options: ServeOptions) -> Self {
        SpearMcp {
            router,
            options,
            calls: AtomicU64::new(0),
            named: std::sync::Once::new(),
        }
    }

    /// Serve one client over stdin and stdout until it ends the session or closes stdin.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        use rmcp::ServiceExt;
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Start(e.to_string()))?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| ServeError::Run(e.to_string()))
    }

    /// The coding surface, as a turn of the model's sees it.
    fn settings() -> ExposureSettings {
        ExposureSettings::default()
    }

    fn tools(&self) -> Vec<Tool> {
        let mut tools: Vec<Tool> =
            ToolExposurePolicy::visible(self.router.registry(), &Self::settings())
                .into_iter()
                .filter_map(|s| {
                    let Value::Object(schema) = s.parameters.clone() else {
                        return None;
                    };
                    let tool = Tool::new(s.wire_name(), s.description.clone(), Arc::new(schema));
                    Some(if s.mutates {
                        tool
                    } else {
                        tool.with_annotations(ToolAnnotations::new().read_only(true))
                    })
                })
                .collect();
        let Value::Object(schema) = json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "the bash command line to classify"}
            },
            "required": ["command"],
            "additionalProperties": false
        }) else {
            return tools;
        };
        tools.push(
            Tool::new(
                CLASSIFY,
                "Classify a bash command line as Spear would before running it (READ_ONLY, \
                 WORKSPACE_MUTATING, SHELL_COMPLEX or DANGEROUS), with what it runs, writes, \
                 whether it needs the network, and why. Runs nothing.",
                Arc::new(schema),
            )
            .with_annotations(ToolAnnotations::new().read_only(true)),
        );
        tools
    }

    /// The audit label names the client from its first call on (the client's name as a session
    /// name may spell it: letters, digits, `.`, `_`, `-`).
    fn name_session(&self, client: Option<&str>) {
        self.named.call_once(|| {
            let name: String = client
                .unwrap_or("client")
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                        c
                    } else {
                        '-'
                    }
                })
                .take(40)
                .collect();
            let name = name.trim_start_matches('.');
            self.options
                .label
                .set(&format!("mcp-{name}-{}", self.options.label_suffix));
        });
    }

    fn classify(&self, arguments: Option<&serde_json::Map<String, Value>>) -> CallToolResult {
        let Some(command) = arguments
            .and_then(|a| a.get("command"))
            .and_then(Value::as_str)
        else {
            return CallToolResult::error(vec![ContentBlock::text(
                "classify needs {\"command\": \"…\"}: the bash command line to classify",
            )]);
        };
        let a = self.router.host().classify(command);
        let out = json!({
            "command": a.command,
            "class": a.class.as_str(),
            "executables": a.executables,
            "writes": a.writes,
            "network": a.network,
            "reasons": a.reasons,
        });
        CallToolResult::success(vec![ContentBlock::text(out.to_string())])
    }

    /// Whether the call may change the workspace, so must hold the write lock: every tool but
    /// the readers, and a command unless it is READ_ONLY.
    fn may_write(&self, call: &ToolCall) -> bool {
        match call.name.as_str() {
            "read_file" | "search_files" => false,
            "terminal" => call
                .arguments
                .get("command")
                .and_then(Value::as_str)
                .is_none_or(|c| self.router.host().classify(c).class != CommandClass::ReadOnly),
            _ => true,
        }
    }
}

/// Holds the workspace's write lock while alive.
struct WriteLock(#[allow(dead_code)] File);

fn lock_writes(path: &PathBuf) -> std::io::Result<WriteLock> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(WriteLock(f))
}

impl ServerHandler for SpearMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("spear", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Spear's harness, in {} mode: read_file, search_files, patch, write_file, \
                 delete_file and terminal act on one workspace, every call classified, decided, \
                 confined and audited; classify says how a command would be judged.",
                self.options.mode
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.name_session(context.client_info().map(|i| i.name).as_deref());
        if request.name == CLASSIFY {
            return Ok(self.classify(request.arguments.as_ref()).into());
        }
        let view = ToolExposurePolicy::view(self.router.registry(), &Self::settings());
        if !view.offers(&request.name) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "there is no tool `{}`; tools/list names them",
                request.name
            ))])
            .into());
        }
        // Elicitation inside a running call needs a server-to-client request, which protocol
        // versions from 2026-07-28 no longer allow: there the client is treated as one that
        // cannot be asked.
        let can_ask = context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
            && context
                .protocol_version()
                .is_none_or(|v| v < ProtocolVersion::V_2026_07_28);
        let approver = ClientApprover {
            peer: can_ask.then(|| context.peer.clone()),
            runtime: tokio::runtime::Handle::current(),
        };
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let call = ToolCall {
            id: format!("mcp-{n}"),
            name: request.name.to_string(),
            arguments: Value::Object(request.arguments.unwrap_or_default()),
        };
        let mut turn = Turn::new(self.options.mode, view, approver);
        // A request the client cancels stops the call's command.
        let cancel = turn.cancel.clone();
        let cancelled = context.ct.clone();
        let watch = tokio::spawn(async move {
            cancelled.cancelled().await;
            cancel.cancel();
        });
        let router = self.router.clone();
        let lock = self
            .may_write(&call)
            .then(|| self.options.write_lock.clone());
        let outcome = tokio::task::spawn_blocking(move || {
            let _held = match lock.as_ref().map(lock_writes) {
                Some(Err(e)) => {
                    return Err(format!(
                        "the workspace's write lock could not be taken, so nothing ran: {e}"
                    ));
                }
                Some(Ok(l)) => Some(l),
                None => None,
            };
            router.call(&mut turn, &call).map_err(|e| e.to_string())
        })
        .await;
        watch.abort();
        let envelope = match outcome {
            Ok(Ok(env)) => env,
            Ok(Err(why)) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(why)]).into());
            }
            Err(e) => {
                return Err(ErrorData::internal_error(
                    format!("the call failed inside Spear: {e}"),
                    None,
                ));
            }
        };
        let text = vec![ContentBlock::text(envelope.model_text())];
        Ok(if envelope.succeeded() {
            CallToolResult::success(text)
        } else {
            CallToolResult::error(text)
        }
        .into())
    }
}

/// Asks the MCP client, through elicitation, what ASK mode would ask a person; a client that
/// cannot be asked gets a refusal that names the mode that would run the call.
struct ClientApprover {
    peer: Option<Peer<RoleServer>>,
    runtime: tokio::runtime::Handle,
}

impl ClientApprover {
    fn question(request: &CallApprovalRequest) -> String {
        let mut q = format!(
            "Spear asks before running this {} call ({}):\n{}",
            request.tool, request.class, request.command
        );
        for r in &request.reasons {
            q.push_str(&format!("\n- {r}"));
        }
        if !request.targets.is_empty() {
            q.push_str(&format!("\nwrites: {}", request.targets.join(", ")));
        }
        if request.network {
            q.push_str("\nneeds the network");
        }
        q.push_str("\nAllow it this once?");
        q
    }
}

impl CallApprover for ClientApprover {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        if request.class == CommandClass::Dangerous {
            return ApprovalDecision::Deny(Some("DANGEROUS is refused in every mode".into()));
        }
        let Some(peer) = &self.peer else {
            let network = if request.network {
                " with --network"
            } else {
                ""
            };
            // Nobody was asked, so nobody declined: the call is called off, saying why.
            return ApprovalDecision::Cancel(format!(
                "ASK mode needs an answer for this call, and this MCP client cannot be asked (it \
                 declared no elicitation support). `spear mcp serve --mode auto{network}` runs \
                 it without asking; SAFE never does."
            ));
        };
        let Ok(schema) = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "allow": {"type": "boolean", "title": "Allow", "description": "run this call once"}
            },
            "required": ["allow"]
        })) else {
            return ApprovalDecision::Deny(Some("the question could not be built".into()));
        };
        let form = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: Self::question(request),
            requested_schema: schema,
        };
        let asked = self.runtime.block_on(async {
            tokio::time::timeout(ANSWER_WAIT, peer.create_elicitation(form)).await
        });
        match asked {
            Ok(Ok(answer)) => {
                let allowed = answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("allow"))
                    .and_then(Value::as_bool)
                    == Some(true);
                match answer.action {
                    ElicitationAction::Accept if allowed => ApprovalDecision::Approve,
                    ElicitationAction::Accept | ElicitationAction::Decline => {
                        ApprovalDecision::Deny(Some("the MCP client said no".into()))
                    }
                    _ => {
                        ApprovalDecision::Deny(Some("the MCP client cancelled the question".into()))
                    }
                }
            }
            Ok(Err(e)) => ApprovalDecision::Deny(Some(format!(
                "the MCP client could not be asked ({e}), so the call was not run"
            ))),
            Err(_) => ApprovalDecision::Deny(Some(format!(
                "the MCP client did not answer within {} s, so the call was not run",
                ANSWER_WAIT.as_secs()
            ))),
        }
    }

    fn answerer(&self) -> DecidedBy {
        DecidedBy::McpClient
    }
}
