//! The first stage of the configuration: `config.toml` exactly as the user typed it, every
//! value optional and carrying its place in the file. Invariant: a file that parses here holds
//! no key Spear does not know, and any error names the file, the line and the dotted key,
//! without ever echoing a line of the file (it may hold a key pasted in the wrong place).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::ConfigError;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub default_provider: Option<Spanned<String>>,
    pub mode: Option<Spanned<String>>,
    /// `network = true`, `network = "full"`, or a `[network]` table.
    pub network: Option<NetworkSetting>,
    pub theme: Option<Spanned<String>>,
    /// How the screen calls the person back: "auto", "bell", "osc9", "osc777" or "off".
    pub notify: Option<Spanned<String>>,
    pub max_tool_calls: Option<Spanned<u32>>,
    pub response_max_tokens: Option<Spanned<u32>>,
    #[serde(default)]
    pub sandbox: SandboxTable,
    #[serde(default)]
    pub limits: LimitsTable,
    #[serde(default)]
    pub cgroups: CgroupsTable,
    #[serde(default)]
    pub results: ResultsTable,
    #[serde(default)]
    pub checkpoints: CheckpointsTable,
    #[serde(default)]
    pub web: WebTable,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderTable>,
    #[serde(default)]
    pub hooks: HooksTable,
    #[serde(default)]
    pub mcp: McpTable,
}

/// `[mcp.servers.NAME]`: the person's MCP servers (never a project's: only this file names
/// them).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpTable {
    #[serde(default)]
    pub servers: BTreeMap<String, McpServerTable>,
}

/// One MCP server.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerTable {
    pub command: Option<Spanned<String>>,
    #[serde(default)]
    pub args: Vec<String>,
    /// `"read"` (default) or `"none"`.
    pub workspace: Option<Spanned<String>>,
    pub network: Option<bool>,
    #[serde(default)]
    pub read_paths: Vec<Spanned<String>>,
    #[serde(default)]
    pub env: Vec<Spanned<String>>,
    #[serde(default)]
    pub read_only_tools: Vec<String>,
    pub call_timeout_seconds: Option<Spanned<u64>>,
    /// Streamable HTTP: the server's address (then no command, args, workspace, read_paths or
    /// env).
    pub url: Option<Spanned<String>>,
    /// Header name → the variable of Spear's environment that holds its value.
    #[serde(default)]
    pub headers_env: std::collections::BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub allow_addresses: Vec<Spanned<String>>,
}

/// `[[hooks.pre_tool]]` and `[[hooks.post_tool]]`: the person's programs around every call.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksTable {
    #[serde(default)]
    pub pre_tool: Vec<HookTable>,
    #[serde(default)]
    pub post_tool: Vec<HookTable>,
}

/// One hook.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookTable {
    pub program: Spanned<String>,
    #[serde(default)]
    pub args: Vec<String>,
    pub timeout_seconds: Option<Spanned<u64>>,
    /// Only for these tools (default: every tool).
    #[serde(default)]
    pub tools: Vec<String>,
}

/// `[sandbox]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxTable {
    #[serde(default)]
    pub network_allow: Vec<Spanned<String>>,
    /// `"host"`: a root Spear's commands run as the host's root (the person's opt-out);
    /// `"sandbox"` (the default): as an unprivileged uid of Spear's own.
    pub root_uid: Option<Spanned<String>>,
}

/// `[limits]`: what one sandboxed command may use, each process on its own (`processes`: the
/// sandbox's processes together).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsTable {
    pub processes: Option<Spanned<u64>>,
    pub memory_bytes: Option<Spanned<u64>>,
    pub cpu_seconds: Option<Spanned<u64>>,
    pub file_size_bytes: Option<Spanned<u64>>,
    pub open_files: Option<Spanned<u64>>,
}

/// `[cgroups]`: limits on the whole sandbox together, through a systemd scope.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupsTable {
    pub memory_max_bytes: Option<Spanned<u64>>,
    pub tasks_max: Option<Spanned<u64>>,
    pub cpu_quota_percent: Option<Spanned<u64>>,
}

/// `[checkpoints]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsTable {
    pub enabled: Option<bool>,
    pub budget_bytes: Option<Spanned<u64>>,
    pub max_file_bytes: Option<Spanned<u64>>,
    #[serde(default)]
    pub ignore: Vec<Spanned<String>>,
}

/// `network = ...`: on or off, the path by name, or the whole table.
#[derive(Debug)]
pub enum NetworkSetting {
    On(bool),
    /// `"full"` (slirp4netns) or `"proxy"`: on, by that path.
    Path(NetworkPathName),
    Table(NetworkTable),
}

/// A network path as written (checked while the file is read, so its error has its place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkPathName {
    Proxy,
    Full,
}

impl std::str::FromStr for NetworkPathName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "proxy" => Ok(NetworkPathName::Proxy),
            "full" => Ok(NetworkPathName::Full),
            other => Err(format!(
                "`{other}` is not a network path: write \"proxy\" (by name, the default) or \
                 \"full\" (slirp4netns, every internet address)"
            )),
        }
    }
}

/// `[network]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkTable {
    pub enabled: Option<bool>,
    pub path: Option<Spanned<String>>,
    #[serde(default)]
    pub presets: Vec<Spanned<String>>,
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
}

impl<'de> Deserialize<'de> for NetworkSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = NetworkSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false, \"proxy\", \"full\" or a [network] table")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<NetworkSetting, E> {
                Ok(NetworkSetting::On(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NetworkSetting, E> {
                v.parse().map(NetworkSetting::Path).map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<NetworkSetting, A::Error> {
                NetworkTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(NetworkSetting::Table)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl NetworkSetting {
    /// Whether the session starts with the network on.
    pub fn enabled(&self) -> bool {
        match self {
            NetworkSetting::On(b) => *b,
            NetworkSetting::Path(_) => true,
            NetworkSetting::Table(t) => t.enabled.unwrap_or(false),
        }
    }
}

/// `[results]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsTable {
    pub max_result_bytes: Option<Spanned<u64>>,
    pub budget_bytes: Option<Spanned<u64>>,
}

/// `[web]`: the web pair (fetch_url, search_internet).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebTable {
    pub enabled: Option<bool>,
    pub allow_private_addresses: Option<bool>,
    #[serde(default)]
    pub allow_addresses: Vec<Spanned<String>>,
    pub search_backend: Option<Spanned<String>>,
    pub searxng_url: Option<Spanned<String>>,
    pub brave_api_key_env: Option<Spanned<String>>,
    pub brave_endpoint: Option<Spanned<String>>,
    pub max_bytes: Option<Spanned<u64>>,
    pub timeout_secs: Option<Spanned<u64>>,
    pub max_redirects: Option<Spanned<u32>>,
}

/// `[providers.NAME]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderTable {
    pub base_url: Option<Spanned<String>>,
    pub api_key_env: Option<Spanned<String>>,
    pub model: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub context_window: Option<Spanned<u64>>,
}

/// Where in the file a span lies, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub line: usize,
    pub column: usize,
    pub key: String,
}

/// Line and column (1-based) of `offset`, and the dotted key written at or before it: the key
/// of the `key = value` line the span is on, under the last `[table]` header above it.
pub fn place(text: &str, span: &Range<usize>) -> Place {
    let offset = span.start.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    let line_text = text[line_start..].lines().next().unwrap_or("");
    let table = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.starts_with("[["))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let spanned = text.get(span.clone()).unwrap_or("").trim();
    let key_here = match line_text.split_once('=') {
        Some((k, _)) => Some(k.trim().to_string()),
        _ if is_bare_key(spanned) => Some(spanned.to_string()),
        _ => None,
    };
    let header = line_text.trim_start().starts_with('[');
    if header {
        let key = line_text
            .trim()
            .trim_matches(|c| c == '[' || c == ']')
            .trim()
            .to_string();
        return Place { line, column, key };
    }
    let key = match (table, key_here) {
        (Some(t), Some(k)) => format!("{t}.{}", k.trim_matches('"')),
        (None, Some(k)) => k.trim_matches('"').to_string(),
        (Some(t), None) => t,
        (None, None) => "(top level)".to_string(),
    };
    Place { line, column, key }
}

fn is_bare_key(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// Parse `text` (read from `path`).
pub fn parse(path: &Path, text: &str) -> Result<ConfigFile, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let at = place(text, &span);
        let message = e.message().trim().to_string();
        ConfigError::invalid(path, &at, fix_for(&message, &at.key), message)
    })
}

/// How to fix what toml or serde said.
fn fix_for(message: &str, key: &str) -> String {
    let last = key.rsplit('.').next().unwrap_or(key);
    if message.starts_with("unknown field") {
        if matches!(last, "api_key" | "key" | "token" | "apikey") {
            return "Spear never reads API keys from the config file: put the key in an \
                    environment variable and name that variable with \
                    `api_key_env = \"OPENAI_API_KEY\"`. Remove this line (and rotate the key if \
                    this file was shared)."
                .to_string();
        }
        return "remove or rename this key; the keys Spear knows are listed in the message \
                (and in the commented defaults Spear writes for a new config)"
            .to_string();
    }
    if message.contains("invalid type") {
        return "give the value the type the message names (a string is quoted, a number is \
                not, a list is written [\"a\", \"b\"])"
            .to_string();
    }
    "correct the TOML syntax at this place (see https://toml.io for the format)".to_string()
}

/// Where the `[table]` header of `table` is, with `key` as the dotted key to name (line 0 when
/// the table is written inline or cannot be found).
pub fn place_of_table(text: &str, table: &str, key: String) -> Place {
    let line = text
        .lines()
        .position(|l| {
            let l = l.trim();
            l.starts_with('[') && l.trim_matches(|c| c == '[' || c == ']').replace(' ', "") == table
        })
        .map_or(0, |i| i + 1);
    Place {
        line,
        column: 1,
        key,
    }
}
