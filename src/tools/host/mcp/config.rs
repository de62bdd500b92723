//! An MCP server as the person's config names it (`[mcp.servers.NAME]`), resolved: what to run
//! and the grant it runs with. Plain data; `config` builds it, `client` starts it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use crate::harness::sandbox::netns::IpPrefix;

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpLaunch {
    /// A program run as a long-lived confined process, spoken to over its stdin and stdout.
    Stdio {
        /// By absolute path, as the sandbox sees it (the system view, or one of `read_paths`).
        command: PathBuf,
        args: Vec<String>,
    },
    /// A remote server, spoken to over streamable HTTP by Spear itself: every address its name
    /// resolves to is checked as `fetch_url` checks one, the connection pinned to it, and a
    /// redirect to another origin refused.
    Http {
        url: String,
        /// Header name → the variable of Spear's environment that holds its value.
        headers_env: BTreeMap<String, String>,
        /// Addresses refused by default that this server may be at (a loopback server).
        allow_addresses: Vec<IpPrefix>,
    },
}

/// One MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The name tools are called by (`NAME.TOOL`): letters, digits, `_` and `-`.
    pub name: String,
    pub launch: McpLaunch,
    /// `workspace = "read"` (the default): it may read the workspace; `"none"`: it sees none.
    pub workspace_read: bool,
    /// `network = true`: it gets the network path (and then runs only where the session's
    /// network setting and the mode grant the network). Always true for an HTTP server.
    pub network: bool,
    /// Host paths bound read-only, vetted as a command's are.
    pub read_paths: Vec<PathBuf>,
    /// Tools the person says only read: SAFE runs these, and ASK does not ask for them. Every
    /// other tool is mutating, whatever the server's own hints say.
    pub read_only_tools: BTreeSet<String>,
    /// How long one call may take before it is abandoned and the server restarted.
    pub call_timeout: Duration,
    /// Variables of Spear's environment handed to the server (its secrets): their values are
    /// redacted wherever Spear records or shows text.
    pub env: Vec<String>,
}

/// The person's key and credential directories a read path would show a server.
pub const SENSITIVE_DIRS: [&str; 3] = [".ssh", ".gnupg", ".aws"];

impl McpServerConfig {
    /// The variables of Spear's environment the server is handed: its `env`, and the sources
    /// of its `headers_env`.
    pub fn handed_variables(&self) -> Vec<&str> {
        let headers: Vec<&str> = match &self.launch {
            McpLaunch::Http { headers_env, .. } => {
                headers_env.values().map(String::as_str).collect()
            }
            McpLaunch::Stdio { .. } => Vec::new(),
        };
        self.env.iter().map(String::as_str).chain(headers).collect()
    }

    /// The read paths that cover (hold, or lie inside) one of `SENSITIVE_DIRS` under `home`,
    /// each with the directory it covers. Decided on the path as written and on where its
    /// links lead.
    pub fn sensitive_read_paths(&self, home: &std::path::Path) -> Vec<(PathBuf, PathBuf)> {
        let mut out = Vec::new();
        for p in &self.read_paths {
            let resolved = p.canonicalize().unwrap_or_else(|_| p.clone());
            for dir in SENSITIVE_DIRS {
                let d = home.join(dir);
                let d_resolved = d.canonicalize().unwrap_or_else(|_| d.clone());
                let covers =
                    |a: &std::path::Path, b: &std::path::Path| a.starts_with(b) || b.starts_with(a);
                if covers(p, &d) || covers(&resolved, &d_resolved) {
                    out.push((p.clone(), d));
                }
            }
        }
        out
    }
}

/// A remote server's address as given, normalised; or what is wrong with it.
pub fn remote_url(text: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(text).map_err(|e| format!("is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err("is not http(s) with a host".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("carries credentials".into());
    }
    Ok(parsed.to_string())
}

/// A name an HTTP header can have.
pub fn valid_header_name(name: &str) -> bool {
    reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
}

/// A server name a tool can be called by.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_paths(paths: &[&std::path::Path]) -> McpServerConfig {
        McpServerConfig {
            name: "s".into(),
            launch: McpLaunch::Stdio {
                command: "/bin/true".into(),
                args: Vec::new(),
            },
            workspace_read: true,
            network: false,
            read_paths: paths.iter().map(|p| p.to_path_buf()).collect(),
            read_only_tools: BTreeSet::new(),
            call_timeout: Duration::from_secs(1),
            env: Vec::new(),
        }
    }

    #[test]
    fn read_paths_covering_keys_are_found_as_written_and_through_links() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path().canonicalize().unwrap();
        std::fs::create_dir_all(h.join(".ssh")).unwrap();
        std::fs::create_dir_all(h.join("docs")).unwrap();
        std::os::unix::fs::symlink(h.join(".ssh"), h.join("innocent")).unwrap();
        let found = |p: &std::path::Path| with_paths(&[p]).sensitive_read_paths(&h);
        // The home itself holds them; a path inside one is one.
        assert_eq!(found(&h).len(), 3);
        assert_eq!(found(&h.join(".ssh/id_ed25519")).len(), 1);
        assert_eq!(found(&h.join(".aws")).len(), 1);
        assert_eq!(found(&h.join("innocent")).len(), 1, "a link to ~/.ssh");
        assert!(found(&h.join("docs")).is_empty());
        assert!(found(std::path::Path::new("/usr/share")).is_empty());
    }
}
