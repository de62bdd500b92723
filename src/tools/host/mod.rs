//! `SpearHost`: the control plane in front of the coding core. The coding tools reach the
//! harness only through it (workspace resolution and file operations, the target policy, the
//! command policy, the command executor, the ResultStore and WorkingState), and it answers the
//! host commands `spear-capability` and `spear-knowledge` itself, without any shell. Below it:
//! `gates` (the only maker of a `GatedPath`), `files`, `command`, `knowledge`, `mcp` (the
//! person's MCP servers, each a long-lived confined process), and `web`, the
//! session's web client. It never names a tool, a plan or the router.

pub(crate) mod command;
pub(crate) mod files;
pub(crate) mod gates;
pub(crate) mod knowledge;
pub mod mcp;
pub mod web;

use std::fs::File;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use crate::harness::command_policy::{
    Approver, AuthorizationResult, CommandAssessment, CommandPolicy, ExecutionProfile,
};
use crate::harness::primitives::{ExecutionMode, ToolResult, ToolStatus, WorkspaceChanges};
use crate::harness::rules::{Asked, Explanation, RuleBook};
use crate::harness::target_policy::{TargetPolicy, TargetRefusal, Writer};
use crate::harness::workspace::{
    Access, FsError, PathRefusal, Workspace, WorkspacePath, WriteOutcome,
};
use crate::tools::executor::{CancelToken, CommandExecutor, ExecOutcome, OutputSink};
use crate::tools::host::command::HostCommand;
use crate::tools::host::gates::GatedPath;
use crate::tools::host::web::{WebPair, WebSettings};
use crate::tools::refusal::{Gate, Refusal};
use crate::tools::results::ResultStore;
use crate::tools::working_state::{NOT_HASHED, Observed, WorkingState, content_hash};

/// A command's changes read back for WorkingState: this many paths at most, files up to this
/// size (the rest are recorded as changed, `NOT_HASHED`).
const HASHED_PATHS: usize = 1_000;
const HASHED_BYTES: u64 = 4 << 20;

/// Session facts the host needs besides the harness objects.
#[derive(Debug, Clone, Default)]
pub struct HostConfig {
    /// Recorded in every audit event.
    pub session: String,
    /// The web pair is configured (and so listed by `spear-capability`).
    pub web_enabled: bool,
    /// Extra knowledge paths (files or directories) besides README*, AGENTS.md and docs/.
    pub knowledge_paths: Vec<String>,
    /// How the web pair fetches and searches (`[web]`).
    pub web: WebSettings,
    /// The permission rules in force (none by default).
    pub rules: RuleBook,
    /// The person's hooks (none by default).
    pub hooks: crate::tools::hooks::Hooks,
    /// Secret values Spear knows (its environment's, the workspace's `.env` files', those
    /// handed to MCP servers): no call granted the network may carry one out.
    pub known_secrets: crate::harness::secrets::KnownSecrets,
    /// `network = "full"` or `[network]`: the path a network grant takes and the names it may
    /// reach; the router supplies the decider for each command.
    pub egress: crate::harness::egress::Egress,
}

/// An external capability as `spear-capability` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub arguments: &'static str,
}

const WEB_PAIR: [CapabilityInfo; 2] = [
    CapabilityInfo {
        name: "search_internet",
        summary: "find web pages for a query (runs in the chat process; works in SAFE)",
        arguments: "{query: string, max_results?: integer}; from the terminal: \
                    spear-capability run search_internet QUERY... [--max-results N]",
    },
    CapabilityInfo {
        name: "fetch_url",
        summary: "read one page, or save it with save_as (saving is a write and is authorized \
                  like one); long PDFs come back in page ranges",
        arguments: "{url: string, pages?: string, save_as?: string}; from the terminal: \
                    spear-capability run fetch_url URL [--pages A-B] [--save-as PATH]",
    },
];

/// The harness objects the coding core may use, behind one door.
pub struct SpearHost {
    workspace: Workspace,
    target_policy: TargetPolicy,
    command_policy: CommandPolicy,
    executor: Box<dyn CommandExecutor>,
    results: ResultStore,
    working_state: Mutex<WorkingState>,
    web: WebPair,
    config: HostConfig,
    /// The person's MCP servers, when any are configured and the sandbox can run them.
    mcp: Option<std::sync::Arc<crate::tools::host::mcp::McpClients>>,
}

impl SpearHost {
    pub fn new(
        workspace: Workspace,
        target_policy: TargetPolicy,
        command_policy: CommandPolicy,
        executor: Box<dyn CommandExecutor>,
        results: ResultStore,
        config: HostConfig,
    ) -> Self {
        SpearHost {
            workspace,
            target_policy,
            command_policy,
            executor,
            results,
            working_state: Mutex::new(WorkingState::new()),
            web: WebPair::new(config.web.clone()),
            config,
            mcp: None,
        }
    }

    /// With the person's MCP servers.
    #[must_use]
    pub fn with_mcp(mut self, mcp: std::sync::Arc<crate::tools::host::mcp::McpClients>) -> Self {
        self.mcp = Some(mcp);
        self
    }

    /// The person's MCP servers, if any.
    pub fn mcp(&self) -> Option<&crate::tools::host::mcp::McpClients> {
        self.mcp.as_deref()
    }

    /// The refusal of a call that would carry a known secret out (`text` is what it would
    /// send: a command line granted the network, a URL, a query), naming the variables, never
    /// their values; `None` when it carries none.
    pub fn secret_out(&self, text: &str) -> Option<Refusal> {
        let found = self.secrets_in(text);
        (!found.is_empty()).then(|| self.secret_out_refusal(&found))
    }

    /// The refusal of a call carrying the secrets `found` (as `secrets_in` names them) out.
    pub fn secret_out_refusal(&self, found: &[String]) -> Refusal {
        Refusal::new(
            Gate::SecretGuard,
            "secret_out",
            ToolResult::denied(secret_out_reason(found)),
        )
    }

    /// The known secrets whose values `text` carries, by name and origin.
    pub fn secrets_in(&self, text: &str) -> Vec<String> {
        self.config.known_secrets.names_in(text)
    }

    pub fn command_policy(&self) -> &CommandPolicy {
        &self.command_policy
    }

    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// The web pair's settings and state for this session.
    pub fn web(&self) -> &WebPair {
        &self.web
    }

    pub fn project_root(&self) -> &Path {
        self.workspace.project_root()
    }

    pub fn resolve(&self, path: &str, access: Access) -> Result<WorkspacePath, PathRefusal> {
        self.workspace.resolve(path, access)
    }

    pub fn check_write(&self, writer: Writer, path: &str) -> Result<(), TargetRefusal> {
        self.target_policy
            .check_write(&self.workspace, writer, path)
    }

    pub fn check_command_writes(&self, a: &CommandAssessment) -> Result<(), TargetRefusal> {
        self.target_policy.check_command_writes(&self.workspace, a)
    }

    /// What a host command (`spear-capability`, `spear-knowledge`) amounts to: read-only,
    /// since SpearHost answers it itself and nothing reaches a shell.
    pub fn host_command_assessment(
        &self,
        command: &str,
        classified: &CommandAssessment,
    ) -> CommandAssessment {
        CommandAssessment {
            command: command.to_string(),
            class: crate::harness::command_policy::CommandClass::ReadOnly,
            executables: classified.executables.clone(),
            writes: Vec::new(),
            network: false,
            reasons: vec!["a host command: Spear answers it itself and runs nothing".into()],
            literal_argv: None,
        }
    }

    pub fn classify(&self, command: &str) -> CommandAssessment {
        self.command_policy.classify(command)
    }

    /// How the permission rules decide a call, part by part (a segment is classified on its
    /// own by the host's command policy).
    pub fn rule_explain(&self, mode: ExecutionMode, asked: Asked<'_>) -> Explanation {
        self.config.rules.explain(mode, asked, &|text: &str| {
            self.command_policy.classify(text)
        })
    }

    /// The permission rules in force.
    pub fn rules(&self) -> &RuleBook {
        &self.config.rules
    }

    /// The person's hooks.
    pub fn hooks(&self) -> &crate::tools::hooks::Hooks {
        &self.config.hooks
    }

    /// Authorize under `mode`, with the network as `network` says (`None`: the session's
    /// setting the command policy was built with).
    pub fn authorize(
        &self,
        mode: ExecutionMode,
        network: Option<bool>,
        assessment: &CommandAssessment,
        approver: &dyn Approver,
    ) -> AuthorizationResult {
        match network {
            None => self.command_policy.authorize(mode, assessment, approver),
            Some(on) => self
                .command_policy
                .authorize_with_network(mode, on, assessment, approver),
        }
    }

    pub fn open_read(&self, p: &WorkspacePath) -> Result<File, FsError> {
        self.workspace.open_read(p)
    }

    pub fn read(&self, p: &WorkspacePath) -> Result<Vec<u8>, FsError> {
        self.workspace.read(p)
    }

    /// Write a path the router's gates let through for writing (see [`GatedPath`]).
    pub fn write_atomic(&self, p: &GatedPath, bytes: &[u8]) -> Result<WriteOutcome, FsError> {
        self.workspace.write_atomic(p, bytes)
    }

    /// Delete a path the router's gates let through for deleting.
    pub fn delete(&self, p: &GatedPath) -> Result<(), FsError> {
        self.workspace.delete(p)
    }

    pub fn run_command(
        &self,
        command: &str,
        profile: &ExecutionProfile,
        timeout: Duration,
        sink: &mut dyn OutputSink,
        cancel: &CancelToken,
    ) -> ExecOutcome {
        self.executor
            .run_cancellable(command, profile, timeout, sink, cancel)
    }

    pub fn results(&self) -> &ResultStore {
        &self.results
    }

    /// Record a mutation a tool really made (content hashes before and after).
    pub fn record_mutation(&self, path: &str, before: Option<String>, after: Option<String>) {
        self.working_state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(path, before, after);
    }

    /// Record what a command changed (from the workspace compared before and after it), with
    /// the content each created or modified regular file has now.
    pub fn record_command_changes(&self, changes: &WorkspaceChanges) {
        let kinds = [
            (Observed::Created, &changes.created),
            (Observed::Modified, &changes.modified),
            (Observed::Deleted, &changes.deleted),
        ];
        let mut hashed = 0;
        let mut state = self.working_state.lock().unwrap_or_else(|p| p.into_inner());
        for (kind, paths) in kinds {
            for path in paths {
                let after = match kind {
                    Observed::Deleted => None,
                    _ if hashed >= HASHED_PATHS => Some(NOT_HASHED.to_string()),
                    _ => {
                        hashed += 1;
                        Some(
                            self.hash_now(path)
                                .unwrap_or_else(|| NOT_HASHED.to_string()),
                        )
                    }
                };
                state.record_observed(path, kind, after);
            }
        }
    }

    /// The content hash of a regular file of the project, if it is small enough to read.
    fn hash_now(&self, path: &str) -> Option<String> {
        let p = self.workspace.resolve(path, Access::Read).ok()?;
        let file = self.workspace.open_read(&p).ok()?;
        if file.metadata().ok()?.len() > HASHED_BYTES {
            return None;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, HASHED_BYTES), &mut bytes)
            .ok()?;
        Some(content_hash(&bytes))
    }

    /// A copy of what this task has changed so far.
    pub fn working_state(&self) -> WorkingState {
        self.working_state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The external capabilities configured for this session.
    pub fn capabilities(&self) -> Vec<CapabilityInfo> {
        if self.config.web_enabled {
            WEB_PAIR.to_vec()
        } else {
            Vec::new()
        }
    }

    /// Answer a host command. Nothing reaches a shell; listing or describing an MCP server's
    /// tools starts that server (confined) if it is not running, one with the network only when
    /// `network_now` (`RunContext::network_now`).
    pub fn answer(&self, cmd: &HostCommand, network_now: bool) -> ToolResult {
        let args: Vec<&str> = cmd.args.iter().map(String::as_str).collect();
        match (cmd.name, args.as_slice()) {
            ("spear-capability", ["list"]) => self.capability_list(network_now),
            ("spear-capability", ["describe", name]) => mcp::describe(self, name, network_now)
                .unwrap_or_else(|| self.capability_describe(name)),
            ("spear-knowledge", ["search", query @ ..]) if !query.is_empty() => {
                self.knowledge_search(&query.join(" "))
            }
            ("spear-knowledge", ["show", id]) => self.knowledge_show(id),
            ("spear-capability", _) => ToolResult::failed(
                "usage: spear-capability list | spear-capability describe NAME | \
                 spear-capability run NAME ARGS... | spear-capability call SERVER.TOOL 'JSON'",
            ),
            _ => {
                ToolResult::failed("usage: spear-knowledge search QUERY | spear-knowledge show ID")
            }
        }
    }

    fn capability_list(&self, network_now: bool) -> ToolResult {
        let caps = self.capabilities();
        let mcp = mcp::list_lines(self, network_now);
        if caps.is_empty() && !mcp.is_empty() {
            return ToolResult::ok(mcp.join("\n") + "\n");
        }
        if caps.is_empty() {
            return ToolResult::ok(
                "No external capabilities are configured for this session (the web pair is \
                 listed when the web is enabled).\n",
            );
        }
        let mut out = String::from("External capabilities configured for this session:\n");
        for c in caps {
            out.push_str(&format!("  {:<16} {}\n", c.name, c.summary));
        }
        out.push_str(
            "Use `spear-capability describe NAME` for the arguments, and \
             `spear-capability run NAME ARGS...` (typed alone) to use one.\n",
        );
        for line in mcp {
            out.push_str(&line);
            out.push('\n');
        }
        ToolResult::ok(out)
    }

    fn capability_describe(&self, name: &str) -> ToolResult {
        match self.capabilities().into_iter().find(|c| c.name == name) {
            Some(c) => ToolResult::ok(format!(
                "{}: {}\narguments: {}\n",
                c.name, c.summary, c.arguments
            )),
            None => ToolResult::refused(
                ToolStatus::NotFound,
                format!(
                    "no external capability named `{name}` is configured; \
                     `spear-capability list` shows those that are"
                ),
            ),
        }
    }

    fn all_sections(&self) -> Vec<knowledge::Section> {
        knowledge::knowledge_files(&self.workspace, &self.config.knowledge_paths)
            .iter()
            .flat_map(|f| knowledge::sections(&self.workspace, f))
            .collect()
    }

    fn knowledge_search(&self, query: &str) -> ToolResult {
        let all = self.all_sections();
        let hits = knowledge::search(&all, query);
        if hits.is_empty() {
            return ToolResult::ok(format!(
                "No workspace knowledge matches `{query}` (searched {} sections of README*, \
                 AGENTS.md, docs/ and configured paths).\n",
                all.len()
            ));
        }
        let mut out = format!(
            "Best {} of {} sections for `{query}`:\n",
            hits.len(),
            all.len()
        );
        for (score, i) in hits {
            let s = &all[i];
            let snippet: String = s
                .lines
                .iter()
                .map(|l| l.trim())
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(160)
                .collect();
            out.push_str(&format!(
                "{:>6.2}  {}  {} — {snippet}\n",
                score, s.id, s.heading
            ));
        }
        out.push_str("Read one with `spear-knowledge show ID`.\n");
        ToolResult::ok(out)
    }

    fn knowledge_show(&self, id: &str) -> ToolResult {
        let Some((path, _)) = id.rsplit_once(':') else {
            return ToolResult::failed("an ID looks like `docs/setup.md:12` (from a search)");
        };
        let section = knowledge::sections(&self.workspace, Path::new(path))
            .into_iter()
            .find(|s| s.id == id);
        match section {
            Some(s) => {
                let shown: Vec<&str> = s
                    .lines
                    .iter()
                    .take(knowledge::MAX_SHOW_LINES)
                    .map(String::as_str)
                    .collect();
                ToolResult::ok(format!("{}\n{}\n", s.id, shown.join("\n")))
            }
            None => ToolResult::refused(
                ToolStatus::NotFound,
                format!("no knowledge section `{id}`; `spear-knowledge search QUERY` lists them"),
            ),
        }
    }
}

/// Why a call carrying `found` out is refused.
fn secret_out_reason(found: &[String]) -> String {
    format!(
        "refused: this would carry the value of {} over the network, and Spear lets no known \
         secret out. Leave the value out (let the program read it from its own \
         configuration), or ask the person to run the command themselves (!COMMAND)",
        found.join(", ")
    )
}
