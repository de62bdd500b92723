//! An MCP server as the person's config names it (`[mcp.servers.NAME]`), resolved: what to run
//! and the grant it runs with. Plain data; `config` builds it, `client` starts it.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// One stdio MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The name tools are called by (`NAME.TOOL`): letters, digits, `_` and `-`.
    pub name: String,
    /// The program, by absolute path, as the sandbox sees it (the system view, or one of
    /// `read_paths`).
    pub command: PathBuf,
    pub args: Vec<String>,
    /// `workspace = "read"` (the default): it may read the workspace; `"none"`: it sees none.
    pub workspace_read: bool,
    /// `network = true`: it gets the network path (and then runs only where the session's
    /// network setting and the mode grant the network).
    pub network: bool,
    /// Host paths bound read-only, vetted as a command's are.
    pub read_paths: Vec<PathBuf>,
    /// Tools the person says only read: SAFE runs these, and ASK does not ask for them. Every
    /// other tool is mutating, whatever the server's own hints say.
    pub read_only_tools: BTreeSet<String>,
    /// How long one call may take before it is abandoned and the server restarted.
    pub call_timeout: Duration,
}

/// A server name a tool can be called by.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
