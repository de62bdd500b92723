//! The allowed-dependency table of every module of `src/`: DESIGN.md's direction
//! (`harness` <- `tools` <- `agent` <- `tui` <- `main.rs`/cli) and, inside the harness, the
//! decision layer (primitives, shell, command_policy) that knows nothing of confinement, the
//! boundary (workspace, target_policy), the execution layer (process, resource_control, sandbox
//! with its network path) that never knows why a command was allowed, the audit log, and
//! `command_runner::CommandRunner`, the one place an `ExecutionProfile` crosses into execution.
//!
//! A layer may use only what its row lists, and each listed edge says why it is legitimate.
//! Item rows (`within`) narrow an edge to the values a layer hands out, so "the coding tools may
//! use a resolved `WorkspacePath`" does not also mean "the coding tools may open a `Workspace`".
//! A file that names no module of ours needs no row (the crate roots only declare modules).
//!
//! `CRATE_RULES`: the external crates only some layers may use, each place with its reason. The
//! screen's crates stay in `tui`, so everything below it can run without a terminal; the HTTP
//! client stays where Spear itself talks to the network, so no other code can open a
//! connection the address policy did not judge. A crate with no row may be used anywhere.

use super::check::{CrateRule, Layer};

const NONE: &[(&str, &str)] = &[];

pub const TABLE: &[Layer] = &[
    // ---- harness: leaves -------------------------------------------------------------------
    Layer {
        name: "secrets",
        holds: &["spear::harness::secrets"],
        within: None,
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "egress",
        holds: &["spear::harness::egress"],
        within: None,
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "atomic_file",
        holds: &["spear::harness::atomic_file"],
        within: None,
        may_use: NONE,
        private: &[],
    },
    // ---- harness: decision ------------------------------------------------------------------
    Layer {
        name: "primitives",
        holds: &["spear::harness::primitives"],
        within: None,
        may_use: &[(
            "egress",
            "a command's result lists the connections the egress proxy saw (NetConnection)",
        )],
        private: &[],
    },
    Layer {
        name: "shell",
        holds: &["spear::harness::shell"],
        within: None,
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "command_policy",
        holds: &["spear::harness::command_policy"],
        within: None,
        may_use: &[
            (
                "primitives",
                "a mode's grants (CapabilityPolicy) decide what a class needs",
            ),
            (
                "shell",
                "classification works on the real bash parse, never on the string",
            ),
        ],
        private: &[],
    },
    Layer {
        name: "execution profile",
        holds: &[
            "spear::harness::command_policy::profile",
            "spear::harness::command_policy::ExecutionProfile",
        ],
        within: Some("command_policy"),
        may_use: &[
            ("primitives", "a profile is the set of capabilities granted"),
            (
                "secrets",
                "a profile may hand a long-lived process the person's variables (Secrets)",
            ),
            (
                "egress",
                "a profile carries the network path, the names it may reach and an opaque decider",
            ),
        ],
        private: &[],
    },
    Layer {
        name: "rules",
        holds: &["spear::harness::rules"],
        within: None,
        may_use: &[
            (
                "egress",
                "a net: rule's `*.SUFFIX` means what a [network] entry's does (is_below)",
            ),
            (
                "primitives",
                "a rule's ceiling is a set of capabilities; rules are scoped to modes",
            ),
            (
                "shell",
                "segments are read on the real bash parse, never on the string",
            ),
            (
                "command_policy",
                "a ceiling is a class, and a segment is classified on its own",
            ),
            (
                "atomic_file",
                "rules files and trust records are written whole",
            ),
        ],
        private: &[],
    },
    // ---- harness: boundary ------------------------------------------------------------------
    Layer {
        name: "workspace",
        holds: &["spear::harness::workspace"],
        within: None,
        may_use: &[(
            "primitives",
            "a snapshot comparison yields WorkspaceChanges",
        )],
        private: &[],
    },
    Layer {
        name: "checkpoint",
        holds: &["spear::harness::checkpoint"],
        within: None,
        may_use: &[(
            "workspace",
            "a checkpoint walks and a restore writes through the workspace's descriptor walk, never through a link, under the same ignore rules as a snapshot",
        )],
        private: &[],
    },
    Layer {
        name: "workspace values",
        holds: &[
            "spear::harness::workspace::WorkspacePath",
            "spear::harness::workspace::Access",
            "spear::harness::workspace::FsError",
            "spear::harness::workspace::PathRefusalKind",
        ],
        within: Some("workspace"),
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "target_policy",
        holds: &["spear::harness::target_policy"],
        within: None,
        may_use: &[
            ("workspace", "a target is a resolved workspace path"),
            (
                "command_policy",
                "a command's writes are the ones its CommandAssessment found",
            ),
        ],
        private: &[],
    },
    Layer {
        name: "target writer",
        holds: &["spear::harness::target_policy::Writer"],
        within: Some("target_policy"),
        may_use: NONE,
        private: &[],
    },
    // ---- harness: audit ---------------------------------------------------------------------
    Layer {
        name: "audit",
        holds: &["spear::harness::audit"],
        within: None,
        may_use: &[
            ("primitives", "a record holds the mode and the status"),
            (
                "command_policy",
                "a record holds the class; summaries know which executables are shells",
            ),
            ("secrets", "every record is redacted"),
            ("rules", "a record names the rule that decided"),
            (
                "egress",
                "a command's record lists the connections the egress proxy saw",
            ),
        ],
        private: &[],
    },
    // ---- harness: execution -----------------------------------------------------------------
    Layer {
        name: "process",
        holds: &["spear::harness::process"],
        within: None,
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "pid namespace facts",
        holds: &[
            "spear::harness::process::kernel_at_least",
            "spear::harness::process::pid_max_is_namespaced",
            "spear::harness::process::PID_MAX_MIN",
        ],
        within: Some("process"),
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "resource_control",
        holds: &["spear::harness::resource_control"],
        within: None,
        may_use: &[(
            "pid namespace facts",
            "the process cap's mechanism follows whether the kernel keeps pid_max per namespace",
        )],
        private: &[],
    },
    Layer {
        name: "resource limits",
        holds: &[
            "spear::harness::resource_control::ResourceLimits",
            "spear::harness::resource_control::CgroupLimits",
        ],
        within: Some("resource_control"),
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "sandbox",
        holds: &["spear::harness::sandbox"],
        within: None,
        may_use: &[
            (
                "process",
                "the sandbox child is spawned, watched and killed through pidfds",
            ),
            (
                "resource_control",
                "the sandbox runs inside its cgroup scope and rlimits",
            ),
            (
                "secrets",
                "the environment allow-list drops secret-looking variables; the egress proxy \
                 refuses a plain-HTTP request carrying a known secret",
            ),
            (
                "egress",
                "the egress proxy decides by the person's names, asks the opaque decider, and \
                 records each connection",
            ),
        ],
        private: &[(
            "spear::harness::sandbox::launch",
            "a running sandbox is driven only from inside sandbox/ (netns included); \
             other layers go through BubblewrapSandbox",
        )],
    },
    Layer {
        name: "network allow-list",
        holds: &["spear::harness::sandbox::netns::IpPrefix"],
        within: Some("sandbox"),
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "refused address ranges",
        holds: &[
            "spear::harness::sandbox::netns::refused::REFUSED_RANGES",
            "spear::harness::sandbox::netns::refused::RefusedRange",
            "spear::harness::sandbox::netns::refused::range_refusing",
        ],
        within: Some("sandbox"),
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "system view",
        holds: &["spear::harness::sandbox::spec::SYSTEM_PATHS"],
        within: Some("sandbox"),
        may_use: NONE,
        private: &[],
    },
    Layer {
        name: "unprivileged uid",
        holds: &["spear::harness::sandbox::root_uid::choose_for_host"],
        within: Some("sandbox"),
        may_use: NONE,
        private: &[],
    },
    // ---- harness: composition ---------------------------------------------------------------
    Layer {
        name: "command_runner",
        holds: &["spear::harness::command_runner"],
        within: None,
        may_use: &[
            (
                "execution profile",
                "the one value that crosses from decision into execution",
            ),
            ("primitives", "CommandRunner answers with a ToolResult"),
            ("sandbox", "CommandRunner owns the sandbox"),
            (
                "egress",
                "the profile's network path picks the proxy or slirp4netns",
            ),
            (
                "secrets",
                "it hands the egress proxy the secret values no request may carry",
            ),
            ("process", "it streams output and honours cancellation"),
            (
                "resource_control",
                "it owns the resource contracts and checks their mechanisms",
            ),
            (
                "workspace",
                "changed paths come from a snapshot before and after",
            ),
        ],
        private: &[],
    },
    // ---- tools ------------------------------------------------------------------------------
    Layer {
        name: "tools",
        holds: &["spear::tools"],
        within: None,
        may_use: &[
            ("primitives", "every call ends in a ToolResult, in a mode"),
            (
                "shell",
                "host commands are recognised on the bash parse (host::command)",
            ),
            (
                "command_policy",
                "the router classifies and authorizes; the gates judge what classify found",
            ),
            (
                "workspace",
                "the gates resolve every path; SpearHost holds the Workspace",
            ),
            (
                "target_policy",
                "the gates refuse generated, snapshot and third-party targets",
            ),
            (
                "audit",
                "the audit observer records every mutating attempt and refusal",
            ),
            (
                "network allow-list",
                "the web pair's address exceptions are prefixes, as the sandbox's are",
            ),
            (
                "secrets",
                "the values handed to an MCP server are redacted from what the tools return",
            ),
            (
                "egress",
                "the router supplies the egress decider (rules, mode, approver); the envelope \
                 shows the connections; MCP servers reach names as commands do",
            ),
            (
                "refused address ranges",
                "the web pair refuses the same ranges as the sandbox's network path: one table",
            ),
            (
                "resource limits",
                "the PDF extractor's sandbox sets its own tighter limits",
            ),
            (
                "system view",
                "the PDF extractor binds a pdftotext outside the sandbox's system view",
            ),
            (
                "unprivileged uid",
                "a root Spear's document parser runs as the sandbox's unprivileged uid",
            ),
            (
                "command_runner",
                "executor::runner is the terminal's CommandExecutor backed by CommandRunner",
            ),
            (
                "process",
                "the executor seam shares the runner's output streams and cancel token",
            ),
            (
                "coding tools",
                "the registry of the coding surface is built from them",
            ),
            (
                "rules",
                "the router reads the rules where the mode would ask, and records which decided",
            ),
            ("atomic_file", "the standards library is written whole"),
            (
                "checkpoint",
                "the router takes a checkpoint before and after every call that may change the tree",
            ),
        ],
        private: &[],
    },
    Layer {
        name: "coding tools",
        holds: &["spear::tools::coding"],
        within: None,
        may_use: &[
            (
                "tools",
                "a tool is a handler the router drives; it reaches the harness through SpearHost",
            ),
            ("primitives", "a tool answers with a ToolResult"),
            (
                "workspace values",
                "a tool acts on the paths the gates resolved, never on the Workspace",
            ),
            (
                "target writer",
                "a tool says which writer it is, for the target gate",
            ),
        ],
        private: &[],
    },
    // ---- agent, tui, cli --------------------------------------------------------------------
    Layer {
        name: "config",
        holds: &["spear::config"],
        within: None,
        may_use: &[
            (
                "egress",
                "`network = \"full\"` and `[network]` are read into the egress path and names",
            ),
            ("primitives", "the file and the flags name a mode"),
            (
                "tools",
                "it resolves the web pair's settings, the ResultStore's limits and the refusal limit",
            ),
            (
                "network allow-list",
                "the config file names the network allow-list",
            ),
            (
                "resource limits",
                "the config file sets the per-command and cgroup limits",
            ),
            (
                "checkpoint",
                "the config file sets what a checkpoint may take",
            ),
        ],
        private: &[],
    },
    Layer {
        name: "composition root",
        holds: &["spear::agent::builder"],
        within: None,
        may_use: &[
            (
                "agent",
                "it puts the session actor over the router it builds",
            ),
            ("config", "it builds from the resolved settings"),
            (
                "tools",
                "it assembles the host, the registry, the observers and the router",
            ),
            ("coding tools", "the coding surface is registered here"),
            ("primitives", "the session starts in a mode"),
            (
                "command_policy",
                "the host's command policy is made here, from the session's network setting",
            ),
            ("workspace", "the place is a resolved Workspace"),
            (
                "target_policy",
                "the protected directories are bound read-only in every writable run",
            ),
            (
                "audit",
                "the audit log is opened here, outside the workspace",
            ),
            (
                "secrets",
                "the secret values Spear knows (its environment's, the workspace's .env files') \
                 are gathered once for the host's guard and the audit log's scrub",
            ),
            (
                "command_runner",
                "the terminal's executor is the sandboxed CommandRunner",
            ),
            (
                "rules",
                "the session's rules are loaded here, the project's allows only when trusted",
            ),
            (
                "checkpoint",
                "the workspace's checkpoints are opened here, outside the workspace",
            ),
        ],
        private: &[],
    },
    Layer {
        name: "agent",
        holds: &["spear::agent"],
        within: None,
        may_use: &[
            ("tools", "every model call goes through the router"),
            (
                "primitives",
                "modes, statuses and results are the harness's words",
            ),
            (
                "command_policy",
                "events and refusals carry the class and assessment",
            ),
            ("workspace", "the prompt names the workspace roots"),
            ("audit", "a session links to its audit records"),
            (
                "network allow-list",
                "the config file names the network allow-list",
            ),
            (
                "resource limits",
                "the config file sets the per-command and cgroup limits",
            ),
        ],
        private: &[],
    },
    Layer {
        name: "tui",
        holds: &["spear::tui"],
        within: None,
        may_use: &[
            ("agent", "the screen drives the session actor"),
            (
                "config",
                "the log filter and NO_COLOR are read where every variable is; `notify` says \
                 how the person is called back",
            ),
            (
                "tools",
                "the screen shows envelopes, drives the router, draws the tools' own previews \
                 (it reaches no tool's code: no second parser of a call) and pages stored \
                 results",
            ),
            (
                "primitives",
                "modes, statuses and results are the harness's words",
            ),
            ("command_policy", "the ASK dialog shows the class and why"),
            ("workspace", "paths are shown relative to the workspace"),
            ("audit", "the audit pane reads the log"),
            (
                "secrets",
                "the prompt history kept across runs is redacted with the audit log's table",
            ),
            (
                "atomic_file",
                "the prompt history and theme are written whole",
            ),
        ],
        private: &[],
    },
    Layer {
        name: "cli",
        holds: &["main"],
        within: None,
        may_use: &[
            (
                "egress",
                "spear doctor says which network path a grant takes and what it allows",
            ),
            ("agent", "main.rs wires the layers"),
            ("config", "main.rs reads the settings"),
            (
                "composition root",
                "every front end builds through the library's builder",
            ),
            ("tui", "main.rs wires the layers"),
            ("tools", "main.rs wires the layers"),
            ("coding tools", "main.rs wires the layers"),
            ("primitives", "main.rs wires the layers"),
            ("shell", "main.rs wires the layers"),
            ("command_policy", "`spear classify` and `spear exec` decide"),
            ("workspace", "main.rs wires the layers"),
            ("target_policy", "main.rs wires the layers"),
            ("audit", "`spear audit` reads the log"),
            (
                "checkpoint",
                "`spear checkpoints` lists and `spear undo` takes changes back",
            ),
            ("secrets", "headless output is redacted like the log"),
            (
                "command_runner",
                "`spear exec` and `spear doctor` drive CommandRunner",
            ),
            ("sandbox", "`spear doctor` preflights the sandbox"),
            ("process", "`spear doctor` probes the process mechanisms"),
            (
                "resource_control",
                "`spear doctor` probes cgroups and rlimits",
            ),
            (
                "rules",
                "`spear rules` lists, edits, explains and trusts rules",
            ),
        ],
        private: &[],
    },
];

pub const CRATE_RULES: &[CrateRule] = &[
    // ---- the screen ------------------------------------------------------------------------
    CrateRule {
        krate: "ratatui",
        used_by: &[(
            "spear::tui",
            "the screen is drawn with ratatui; nothing below it draws",
        )],
    },
    CrateRule {
        krate: "crossterm",
        used_by: &[(
            "spear::tui",
            "keys and the terminal's modes are read and set by the screen alone",
        )],
    },
    CrateRule {
        krate: "ratatui_textarea",
        used_by: &[("spear::tui", "the screen's input box")],
    },
    CrateRule {
        krate: "ansi_to_tui",
        used_by: &[(
            "spear::tui",
            "a command's coloured output becomes ratatui text for the screen",
        )],
    },
    // ---- the network -----------------------------------------------------------------------
    CrateRule {
        krate: "reqwest",
        used_by: &[
            (
                "spear::agent::provider",
                "the streaming client talks to the model server",
            ),
            (
                "spear::tools::host::web",
                "the web pair's fetch and search backends, each hop judged by the address policy",
            ),
            (
                "spear::tools::documents",
                "links of fetched HTML are resolved against the page's URL (reqwest::Url); \
                 nothing here connects",
            ),
            (
                "spear::tools::host::mcp",
                "a remote MCP server's client (rmcp's streamable HTTP transport over reqwest), \
                 built on the web pair's pinned, address-checked builder",
            ),
        ],
    },
    // ---- the Model Context Protocol -----------------------------------------------------------
    CrateRule {
        krate: "rmcp",
        used_by: &[
            (
                "spear::tools::mcp_server",
                "Spear as an MCP server: the protocol over the router every call takes",
            ),
            (
                "spear::tools::host::mcp",
                "the client of the person's MCP servers, each a long-lived confined process",
            ),
            (
                "spear::tools::mcp",
                "the test server the client's tests start (built with test-hooks only)",
            ),
        ],
    },
];
