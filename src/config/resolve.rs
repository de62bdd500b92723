//! The second stage: the file, the environment and the flags resolved into `Settings`, or an
//! error that says which input was wrong and how to fix it. Pure: the environment is passed in,
//! so every precedence rule is tested without touching the process.

use std::path::Path;

use secrecy::SecretString;
use toml::Spanned;

use super::env::Env;
use super::file::{ConfigFile, NetworkPathName, NetworkSetting, place, place_of_table};
use super::{
    ConfigError, DEFAULT_MAX_TOOL_CALLS, DEFAULT_RESPONSE_MAX_TOKENS, HarnessSettings, Notify,
    OPENAI_BASE_URL, ProviderConfig, Settings,
};
use crate::harness::primitives::ExecutionMode;
use crate::harness::sandbox::netns::IpPrefix;
use crate::tools::results::StoreLimits;
use crate::tools::router::turn::refusal_repeats;

/// What the command line said.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub mode: Option<ExecutionMode>,
    /// `--network` given (it can only switch the network on).
    pub network: bool,
}

/// Resolve the inputs. `text` is the file's text, for placing errors.
pub fn resolve(
    path: &Path,
    text: &str,
    file: &ConfigFile,
    env: &Env,
    flags: &Flags,
) -> Result<Settings, ConfigError> {
    let bad = |span: &std::ops::Range<usize>, problem: String, fix: &str| {
        ConfigError::invalid(path, &place(text, span), fix, problem)
    };
    let mode = match (&flags.mode, &file.mode) {
        (Some(m), _) => *m,
        (None, Some(m)) => m.get_ref().parse().map_err(|e| {
            bad(
                &m.span(),
                format!("{e}"),
                "write mode = \"safe\", \"ask\" or \"auto\"",
            )
        })?,
        (None, None) => ExecutionMode::Ask,
    };
    let max_tool_calls = positive(file.max_tool_calls.as_ref(), DEFAULT_MAX_TOOL_CALLS)
        .map_err(|s| bad(&s, "must be at least 1".into(), "write a positive number"))?;
    let response_max_tokens = match env.get("SPEAR_RESPONSE_MAX_TOKENS") {
        Some(v) => v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| ConfigError::BadEnv {
                var: "SPEAR_RESPONSE_MAX_TOKENS".into(),
                problem: format!("`{}` is not a positive whole number of tokens; unset it for the default ({DEFAULT_RESPONSE_MAX_TOKENS})", v.trim()),
            })?,
        None => positive(file.response_max_tokens.as_ref(), DEFAULT_RESPONSE_MAX_TOKENS)
            .map_err(|s| bad(&s, "must be at least 1".into(), "write a positive number of tokens"))?,
    };
    let theme = match &file.theme {
        Some(t) if t.get_ref().trim().is_empty() => {
            return Err(bad(&t.span(), "is empty".into(), "write theme = \"dark\""));
        }
        Some(t) => t.get_ref().trim().to_string(),
        None => "dark".to_string(),
    };
    let notify = match &file.notify {
        Some(n) => n.get_ref().parse().map_err(|e: String| {
            bad(
                &n.span(),
                e,
                "write notify = \"auto\", \"bell\", \"osc9\", \"osc777\" or \"off\"",
            )
        })?,
        None => Notify::Auto,
    };
    let harness = harness(path, text, file, env)?;
    Ok(Settings {
        notify,
        theme_set: file.theme.is_some(),
        config_path: path.to_path_buf(),
        provider: provider(path, text, file, env, flags)?,
        mode,
        network: flags.network || file.network.as_ref().is_some_and(NetworkSetting::enabled),
        theme,
        max_tool_calls,
        response_max_tokens,
        harness,
    })
}

fn positive(v: Option<&Spanned<u32>>, default: u32) -> Result<u32, std::ops::Range<usize>> {
    match v {
        Some(n) if *n.get_ref() == 0 => Err(n.span()),
        Some(n) => Ok(*n.get_ref()),
        None => Ok(default),
    }
}

/// `network = "full"` or `[network]`: the path a grant takes and the names it may reach.
fn egress(
    setting: Option<&NetworkSetting>,
    bad: &dyn Fn(&std::ops::Range<usize>, String, &str) -> ConfigError,
) -> Result<crate::harness::egress::Egress, ConfigError> {
    use crate::harness::egress::{Egress, HostPattern, HostRules, NetworkPath};
    let path_of = |p: NetworkPathName| match p {
        NetworkPathName::Proxy => NetworkPath::Proxy,
        NetworkPathName::Full => NetworkPath::Full,
    };
    let table = match setting {
        None | Some(NetworkSetting::On(_)) => return Ok(Egress::default()),
        Some(NetworkSetting::Path(p)) => {
            return Ok(Egress {
                path: path_of(*p),
                ..Egress::default()
            });
        }
        Some(NetworkSetting::Table(t)) => t,
    };
    let path =
        match &table.path {
            None => NetworkPath::Proxy,
            Some(p) => path_of(p.get_ref().parse().map_err(|e: String| {
                bad(&p.span(), e, "write path = \"proxy\" or path = \"full\"")
            })?),
        };
    let check = |entries: &[toml::Spanned<String>]| -> Result<Vec<String>, ConfigError> {
        entries
            .iter()
            .map(|e| {
                HostPattern::parse(e.get_ref())
                    .map(|_| e.get_ref().clone())
                    .map_err(|why| {
                        bad(
                            &e.span(),
                            why.to_string(),
                            "write names like \"crates.io\", \"*.crates.io\" or \"example.com:8443\"",
                        )
                    })
            })
            .collect()
    };
    let allow = check(&table.allow)?;
    let deny = check(&table.deny)?;
    let mut presets = Vec::new();
    for p in &table.presets {
        HostRules::new(std::slice::from_ref(p.get_ref()), &[], &[]).map_err(|why| {
            bad(
                &p.span(),
                why.to_string(),
                "write presets = [\"rust\", \"python\", \"node\", \"git-hosts\"] (any of them)",
            )
        })?;
        presets.push(p.get_ref().clone());
    }
    let rules = HostRules::new(&presets, &allow, &deny).map_err(|why| ConfigError::BadEnv {
        var: "[network]".into(),
        problem: why.to_string(),
    })?;
    Ok(Egress {
        path,
        ..Egress::by_name(std::sync::Arc::new(rules))
    })
}

/// The tables the harness reads (`[sandbox]`, `[limits]`, `[cgroups]`, `[results]`), resolved. `spear exec` and
/// `spear tool` read only these; `spear run` reads them as part of the whole.
pub fn harness(
    path: &Path,
    text: &str,
    file: &ConfigFile,
    env: &Env,
) -> Result<HarnessSettings, ConfigError> {
    let bad = |span: &std::ops::Range<usize>, problem: String, fix: &str| {
        ConfigError::invalid(path, &place(text, span), fix, problem)
    };
    let mut network_allow = Vec::new();
    for entry in &file.sandbox.network_allow {
        match entry.get_ref().trim().parse::<IpPrefix>() {
            Ok(p) => network_allow.push(p),
            Err(e) => {
                return Err(bad(
                    &entry.span(),
                    format!(
                        "`{}` is not an IP address or CIDR prefix: {e}",
                        entry.get_ref()
                    ),
                    "write addresses like \"192.168.1.10\" or prefixes like \"10.1.0.0/16\"",
                ));
            }
        }
    }
    let egress = egress(file.network.as_ref(), &bad)?;
    let root_uid_host = match &file.sandbox.root_uid {
        None => false,
        Some(v) => match v.get_ref().as_str() {
            "host" => true,
            "sandbox" => false,
            other => {
                return Err(bad(
                    &v.span(),
                    format!("root_uid is `{other}`"),
                    "write root_uid = \"sandbox\" (the default: a root Spear's commands run as \
                     an unprivileged uid of its own) or root_uid = \"host\" (they run as the \
                     host's root, and every command's audit record says so)",
                ));
            }
        },
    };
    let mut limits = StoreLimits::default();
    for (value, key, slot) in [
        (
            &file.results.max_result_bytes,
            "max_result_bytes",
            &mut limits.per_result_bytes,
        ),
        (
            &file.results.budget_bytes,
            "budget_bytes",
            &mut limits.total_bytes,
        ),
    ] {
        if let Some(v) = value {
            if *v.get_ref() == 0 {
                return Err(bad(
                    &v.span(),
                    format!("{key} must be more than 0"),
                    "write a number of bytes, or remove the line for the default",
                ));
            }
            *slot = *v.get_ref();
        }
    }
    let positive =
        |v: &Option<toml::Spanned<u64>>, key: &str| -> Result<Option<u64>, ConfigError> {
            match v {
                Some(v) if *v.get_ref() == 0 => Err(bad(
                    &v.span(),
                    format!("{key} must be more than 0"),
                    "write a positive number, or remove the line for the default",
                )),
                Some(v) => Ok(Some(*v.get_ref())),
                None => Ok(None),
            }
        };
    let mut resource_limits = crate::harness::resource_control::ResourceLimits::default();
    let l = &file.limits;
    for (value, key, slot) in [
        (&l.processes, "processes", &mut resource_limits.processes),
        (
            &l.memory_bytes,
            "memory_bytes",
            &mut resource_limits.data_bytes,
        ),
        (
            &l.cpu_seconds,
            "cpu_seconds",
            &mut resource_limits.cpu_seconds,
        ),
        (
            &l.file_size_bytes,
            "file_size_bytes",
            &mut resource_limits.file_size_bytes,
        ),
        (&l.open_files, "open_files", &mut resource_limits.open_files),
    ] {
        if let Some(v) = positive(value, key)? {
            *slot = Some(v);
        }
    }
    let c = &file.cgroups;
    let cpu_quota_percent = match positive(&c.cpu_quota_percent, "cpu_quota_percent")? {
        Some(p) => Some(u32::try_from(p).map_err(|_| {
            bad(
                &c.cpu_quota_percent.as_ref().map_or(0..0, |v| v.span()),
                format!("cpu_quota_percent {p} is too large"),
                "write a percentage of one CPU, such as 200 for two CPUs",
            )
        })?),
        None => None,
    };
    let cgroup_limits = crate::harness::resource_control::CgroupLimits {
        memory_max_bytes: positive(&c.memory_max_bytes, "memory_max_bytes")?,
        tasks_max: positive(&c.tasks_max, "tasks_max")?,
        cpu_quota_percent,
    };
    let (web_enabled, web) = super::web::resolve(path, text, &file.web, env)?;
    Ok(HarnessSettings {
        refusal_repeats: refusal_repeats(env.get("SPEAR_REFUSAL_REPEATS").as_deref()),
        web_enabled,
        web,
        network_allow,
        egress,
        root_uid_host,
        store_limits: limits,
        resource_limits,
        cgroup_limits,
        rules_file: Some(path.with_file_name("rules.toml")),
        hooks: hooks(path, text, &file.hooks)?,
        checkpoints_enabled: file.checkpoints.enabled.unwrap_or(true),
        checkpoint_limits: checkpoint_limits(&file.checkpoints, &bad)?,
        mcp_servers: mcp_servers(path, text, &file.mcp)?,
    })
}

/// `[mcp.servers.NAME]`: stdio servers, each with a program named by absolute path, a
/// workspace grant of `read` or `none`, absolute read paths outside Spear's own directories,
/// and a call timeout between 1 and 3600 seconds. What is not built yet (streamable HTTP,
/// passing environment variables) is refused with a reason rather than ignored.
fn mcp_servers(
    path: &Path,
    text: &str,
    table: &super::file::McpTable,
) -> Result<Vec<crate::tools::host::mcp::McpServerConfig>, ConfigError> {
    use crate::tools::host::mcp::config::valid_name;
    let invalid = |span: &std::ops::Range<usize>, how: &str, why: String| {
        ConfigError::invalid(path, &place(text, span), how, why)
    };
    let at_table = |name: &str, how: &str, why: String| {
        ConfigError::invalid(
            path,
            &super::file::place_of_table(text, &format!("mcp.servers.{name}"), String::new()),
            how,
            why,
        )
    };
    let mut out = Vec::new();
    for (name, s) in &table.servers {
        if !valid_name(name) {
            return Err(at_table(
                name,
                "name the server with letters, digits, `_` and `-` only",
                format!("`{name}` cannot name an MCP server (its tools are called NAME.TOOL)"),
            ));
        }
        let secs = s.call_timeout_seconds.as_ref().map_or(60, |t| *t.get_ref());
        if !(1..=3600).contains(&secs) {
            let span = s.call_timeout_seconds.as_ref().map_or(0..0, |t| t.span());
            return Err(invalid(
                &span,
                "set call_timeout_seconds between 1 and 3600",
                format!("call_timeout_seconds = {secs} is out of range"),
            ));
        }
        let call_timeout = std::time::Duration::from_secs(secs);
        let read_only_tools = s.read_only_tools.iter().cloned().collect();
        if let Some(url) = &s.url {
            let stdio_only = [
                ("command", s.command.is_some()),
                ("args", !s.args.is_empty()),
                ("workspace", s.workspace.is_some()),
                ("read_paths", !s.read_paths.is_empty()),
                ("env", !s.env.is_empty()),
                ("network", s.network == Some(false)),
            ];
            if let Some((key, _)) = stdio_only.iter().find(|(_, set)| *set) {
                return Err(at_table(
                    name,
                    "give either url (a remote server) or command (a local one), with only \
                     the keys that belong to it",
                    format!(
                        "[mcp.servers.{name}] has url, so `{key}` does not apply (it is for a \
                         server Spear runs; a remote server always needs the network)"
                    ),
                ));
            }
            let normalised =
                crate::tools::host::mcp::config::remote_url(url.get_ref()).map_err(|why| {
                    invalid(
                        &url.span(),
                        "give the server's whole http:// or https:// address, like \
                         \"https://mcp.example.com/mcp\"; credentials go in a header through \
                         headers_env",
                        format!("[mcp.servers.{name}] url `{}` {why}", url.get_ref()),
                    )
                })?;
            let mut headers_env = std::collections::BTreeMap::new();
            for (header, var) in &s.headers_env {
                let header_ok = crate::tools::host::mcp::config::valid_header_name(header);
                if !header_ok || !valid_env_name(var.get_ref()) {
                    return Err(invalid(
                        &var.span(),
                        "write headers_env = { Authorization = \"VARIABLE_NAME\" }: a header \
                         name and the variable of your environment that holds its value",
                        format!(
                            "[mcp.servers.{name}] headers_env: `{header}` = `{}` is not a header \
                             and a variable name",
                            var.get_ref()
                        ),
                    ));
                }
                headers_env.insert(header.clone(), var.get_ref().clone());
            }
            if normalised.starts_with("http://")
                && !headers_env.is_empty()
                && s.allow_addresses.is_empty()
            {
                return Err(invalid(
                    &url.span(),
                    "use https:// (a server of yours on loopback or a private address may keep \
                     http:// when allow_addresses names it)",
                    format!(
                        "[mcp.servers.{name}] would send its headers_env over plain http://, \
                         readable by anyone on the way"
                    ),
                ));
            }
            let mut allow_addresses = Vec::new();
            for entry in &s.allow_addresses {
                let p = entry
                    .get_ref()
                    .trim()
                    .parse::<crate::harness::sandbox::netns::IpPrefix>()
                    .map_err(|e| {
                        invalid(
                            &entry.span(),
                            "write addresses like \"127.0.0.1\" or prefixes like \"10.1.0.0/16\"",
                            format!(
                                "[mcp.servers.{name}] allow_addresses: `{}` is not an IP \
                                 address or CIDR prefix: {e}",
                                entry.get_ref()
                            ),
                        )
                    })?;
                allow_addresses.push(p);
            }
            out.push(crate::tools::host::mcp::McpServerConfig {
                name: name.clone(),
                launch: crate::tools::host::mcp::McpLaunch::Http {
                    url: normalised,
                    headers_env,
                    allow_addresses,
                },
                workspace_read: false,
                network: true,
                read_paths: Vec::new(),
                read_only_tools,
                call_timeout,
                env: Vec::new(),
            });
            continue;
        }
        if !s.headers_env.is_empty() || !s.allow_addresses.is_empty() {
            return Err(at_table(
                name,
                "remove headers_env and allow_addresses, or give the server's url",
                format!(
                    "[mcp.servers.{name}]: headers_env and allow_addresses belong to a remote \
                     (url) server"
                ),
            ));
        }
        let mut env = Vec::new();
        for v in &s.env {
            let n = v.get_ref();
            if !valid_env_name(n) {
                return Err(invalid(
                    &v.span(),
                    "name environment variables with letters, digits and `_` (not starting with a digit)",
                    format!("[mcp.servers.{name}] env: `{n}` is not a variable name"),
                ));
            }
            env.push(n.clone());
        }
        let Some(command) = &s.command else {
            return Err(at_table(
                name,
                "add `command = \"/absolute/path/to/server\"` (and `args = [...]`)",
                format!("[mcp.servers.{name}] names no command"),
            ));
        };
        let program = std::path::PathBuf::from(command.get_ref());
        if !program.is_absolute() {
            return Err(invalid(
                &command.span(),
                "give the program's absolute path (it runs in the sandbox, which has no PATH of yours)",
                format!(
                    "[mcp.servers.{name}] command `{}` is not absolute",
                    command.get_ref()
                ),
            ));
        }
        let workspace_read = match s.workspace.as_ref().map(|w| w.get_ref().as_str()) {
            None | Some("read") => true,
            Some("none") => false,
            Some(other) => {
                let span = s.workspace.as_ref().map_or(0..0, |w| w.span());
                return Err(invalid(
                    &span,
                    "write workspace = \"read\" or workspace = \"none\" (an MCP server never writes it)",
                    format!("[mcp.servers.{name}] workspace = \"{other}\" is not a grant"),
                ));
            }
        };
        let mut read_paths = Vec::new();
        for p in &s.read_paths {
            let rp = std::path::PathBuf::from(p.get_ref());
            if !rp.is_absolute() {
                return Err(invalid(
                    &p.span(),
                    "give absolute paths",
                    format!(
                        "[mcp.servers.{name}] read_paths: `{}` is not absolute",
                        p.get_ref()
                    ),
                ));
            }
            let config_dir = path.parent().unwrap_or(path);
            if rp.starts_with(config_dir) || config_dir.starts_with(&rp) {
                return Err(invalid(
                    &p.span(),
                    "name a directory that neither holds nor lies inside Spear's config directory",
                    format!(
                        "[mcp.servers.{name}] read_paths: `{}` would show the server Spear's \
                         configuration",
                        p.get_ref()
                    ),
                ));
            }
            read_paths.push(rp);
        }
        out.push(crate::tools::host::mcp::McpServerConfig {
            name: name.clone(),
            launch: crate::tools::host::mcp::McpLaunch::Stdio {
                command: program,
                args: s.args.clone(),
            },
            workspace_read,
            network: s.network.unwrap_or(false),
            read_paths,
            read_only_tools,
            call_timeout,
            env,
        });
    }
    Ok(out)
}

/// A name an environment variable can have: letters, digits and `_`, not starting with a digit.
fn valid_env_name(n: &str) -> bool {
    n.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `[checkpoints]`: sizes more than 0, patterns that are globs.
fn checkpoint_limits(
    table: &super::file::CheckpointsTable,
    bad: &dyn Fn(&std::ops::Range<usize>, String, &str) -> ConfigError,
) -> Result<crate::harness::checkpoint::Limits, ConfigError> {
    let mut limits = crate::harness::checkpoint::Limits::default();
    for (value, key, slot) in [
        (
            &table.budget_bytes,
            "budget_bytes",
            &mut limits.store_budget,
        ),
        (
            &table.max_file_bytes,
            "max_file_bytes",
            &mut limits.max_file_bytes,
        ),
    ] {
        if let Some(v) = value {
            if *v.get_ref() == 0 {
                return Err(bad(
                    &v.span(),
                    format!("[checkpoints] {key} must be more than 0"),
                    "write a number of bytes, or remove the line for the default",
                ));
            }
            *slot = *v.get_ref();
        }
    }
    for p in &table.ignore {
        let mut b = ignore::gitignore::GitignoreBuilder::new("/");
        if let Err(e) = b.add_line(None, p.get_ref()) {
            return Err(bad(
                &p.span(),
                format!(
                    "[checkpoints] ignore: `{}` is not a pattern ({e})",
                    p.get_ref()
                ),
                "write gitignore patterns, such as \"*.bin\" or \"data/\"",
            ));
        }
        limits.ignore.push(p.get_ref().clone());
    }
    Ok(limits)
}

/// The hooks, each program checked (absolute, executable, writable by its owner only); that
/// it lies outside the workspace is checked again when a session opens one.
fn hooks(
    path: &Path,
    text: &str,
    table: &super::file::HooksTable,
) -> Result<crate::tools::hooks::Hooks, ConfigError> {
    use crate::tools::external::Program;
    use crate::tools::hooks::{Hook, Hooks};
    let one = |h: &super::file::HookTable| -> Result<Hook, ConfigError> {
        let program = crate::tools::external::check(h.program.get_ref(), None).map_err(|why| {
            ConfigError::invalid(
                path,
                &place(text, &h.program.span()),
                "give the absolute path of an executable only you can change, outside every workspace",
                why,
            )
        })?;
        let secs = h.timeout_seconds.as_ref().map_or(10, |t| *t.get_ref());
        if !(1..=600).contains(&secs) {
            let span = h.timeout_seconds.as_ref().map(|t| t.span()).unwrap_or(0..0);
            return Err(ConfigError::invalid(
                path,
                &place(text, &span),
                "set timeout_seconds between 1 and 600",
                format!("timeout_seconds = {secs} is out of range"),
            ));
        }
        Ok(Hook {
            program: Program {
                path: program,
                args: h.args.clone(),
                timeout: std::time::Duration::from_secs(secs),
            },
            tools: h.tools.clone(),
        })
    };
    Ok(Hooks {
        pre_tool: table.pre_tool.iter().map(one).collect::<Result<_, _>>()?,
        post_tool: table.post_tool.iter().map(one).collect::<Result<_, _>>()?,
    })
}

/// The provider: `--provider`, else `default_provider`, else the only one configured, else the
/// built-in one that reads `SPEAR_*` and `OPENAI_*` variables only.
fn provider(
    path: &Path,
    text: &str,
    file: &ConfigFile,
    env: &Env,
    flags: &Flags,
) -> Result<ProviderConfig, ConfigError> {
    let known = || {
        let names: Vec<&str> = file.providers.keys().map(String::as_str).collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    let chosen = match (&flags.provider, &file.default_provider) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(p)) => {
            if !file.providers.contains_key(p.get_ref()) {
                return Err(ConfigError::invalid(
                    path,
                    &place(text, &p.span()),
                    format!(
                        "add [providers.{}] or name one of: {}",
                        p.get_ref(),
                        known()
                    ),
                    format!("no provider named `{}` is configured", p.get_ref()),
                ));
            }
            Some(p.get_ref().clone())
        }
        (None, None) if file.providers.len() == 1 => file.providers.keys().next().cloned(),
        (None, None) => None,
    };
    let table = match &chosen {
        Some(name) => {
            Some(
                file.providers
                    .get(name)
                    .ok_or_else(|| ConfigError::UnknownProvider {
                        name: name.clone(),
                        path: path.to_path_buf(),
                        known: known(),
                    })?,
            )
        }
        None => None,
    };
    let name = chosen.unwrap_or_else(|| "default".to_string());
    let at = |s: &Spanned<String>| place(text, &s.span());
    // The base URL: SPEAR_BASE_URL, the table's, and for the built-in provider OPENAI_BASE_URL.
    let (base_url, url_origin) = match (env.get("SPEAR_BASE_URL"), table) {
        (Some(u), _) => (u, UrlOrigin::Env("SPEAR_BASE_URL")),
        (None, Some(t)) => match &t.base_url {
            Some(u) => (u.get_ref().clone(), UrlOrigin::File(at(u))),
            None => {
                return Err(ConfigError::invalid(
                    path,
                    &place_of_table(
                        text,
                        &format!("providers.{name}"),
                        format!("providers.{name}"),
                    ),
                    format!("add base_url = \"https://…/v1\" to [providers.{name}]"),
                    "has no base_url",
                ));
            }
        },
        (None, None) => match env.get("OPENAI_BASE_URL") {
            Some(u) => (u, UrlOrigin::Env("OPENAI_BASE_URL")),
            None => (OPENAI_BASE_URL.to_string(), UrlOrigin::Default),
        },
    };
    let base_url = check_url(&base_url).map_err(|problem| match &url_origin {
        UrlOrigin::File(p) => ConfigError::invalid(
            path,
            p,
            "write the server's URL with its version path, like \"http://127.0.0.1:11434/v1\"",
            problem,
        ),
        UrlOrigin::Env(var) => ConfigError::BadEnv {
            var: var.to_string(),
            problem,
        },
        UrlOrigin::Default => ConfigError::BadEnv {
            var: "(built-in)".into(),
            problem,
        },
    })?;
    let model = flags
        .model
        .clone()
        .filter(|m| !m.trim().is_empty())
        .or_else(|| env.get("SPEAR_MODEL"))
        .or_else(|| {
            table
                .and_then(|t| t.model.as_ref())
                .map(|m| m.get_ref().clone())
        })
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ConfigError::NoModel {
            provider: name.clone(),
            path: path.to_path_buf(),
        })?;
    let (api_key, api_key_env) = api_key(path, text, &name, table, env, &base_url)?;
    let mut headers = Vec::new();
    if let Some(t) = table {
        for (k, v) in &t.headers {
            let valid = !k.is_empty() && k.bytes().all(|b| b.is_ascii_graphic() && b != b':');
            if !valid || v.contains(['\r', '\n']) {
                return Err(ConfigError::invalid(
                    path,
                    &place_of_table(
                        text,
                        &format!("providers.{name}.headers"),
                        format!("providers.{name}.headers.{k}"),
                    ),
                    "header names are single words without `:`; values are one line",
                    "is not a valid HTTP header",
                ));
            }
            headers.push((k.clone(), SecretString::from(v.clone())));
        }
    }
    Ok(ProviderConfig {
        name,
        base_url,
        api_key,
        api_key_env,
        model,
        headers,
        context_window: table
            .and_then(|t| t.context_window.as_ref())
            .map(|c| *c.get_ref())
            .filter(|c| *c > 0),
    })
}

enum UrlOrigin {
    Env(&'static str),
    File(super::Place),
    Default,
}

/// An http(s) URL with a host, without a trailing slash or the `/chat/completions` Spear adds.
fn check_url(raw: &str) -> Result<String, String> {
    let url = raw.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("`{url}` is not an http:// or https:// URL"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("`{url}` names no host"));
    }
    if url.ends_with("/chat/completions") {
        return Err(format!(
            "`{url}` already ends in /chat/completions; give the base URL with its version path \
             (…/v1): Spear appends /chat/completions itself"
        ));
    }
    Ok(url.to_string())
}

/// The key: `SPEAR_API_KEY`, else the variable the provider names in `api_key_env`, else (for
/// the built-in provider only) `OPENAI_API_KEY`. A configured provider without `api_key_env`
/// gets no key: `OPENAI_API_KEY` is never sent to a server the user did not pair it with.
fn api_key(
    path: &Path,
    text: &str,
    name: &str,
    table: Option<&super::ProviderTable>,
    env: &Env,
    base_url: &str,
) -> Result<(Option<SecretString>, String), ConfigError> {
    let secret = |k: String| Some(SecretString::from(k.trim().to_string()));
    if let Some(k) = env.get("SPEAR_API_KEY") {
        return Ok((secret(k), "SPEAR_API_KEY".into()));
    }
    let missing = |why: String| ConfigError::MissingKey {
        provider: name.to_string(),
        base_url: base_url.to_string(),
        why,
    };
    match table {
        Some(t) => match &t.api_key_env {
            Some(var) => {
                let var_name = var.get_ref().trim();
                let is_name = !var_name.is_empty()
                    && var_name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && !var_name.as_bytes()[0].is_ascii_digit();
                if !is_name {
                    // Never echo it: this is where a pasted key usually ends up.
                    return Err(ConfigError::invalid(
                        path,
                        &place(text, &var.span()),
                        "api_key_env names the environment variable holding the key, like \
                         \"OPENAI_API_KEY\"; if you pasted the key itself here, remove it and \
                         rotate it",
                        "is not an environment variable name",
                    ));
                }
                env.get(var_name)
                    .map(|k| (secret(k), var_name.to_string()))
                    .ok_or_else(|| {
                        missing(format!(
                            "[providers.{name}] in {} reads the key from ${var_name}, which is not \
                             set: export {var_name}=… (or SPEAR_API_KEY=…)",
                            path.display()
                        ))
                    })
            }
            None => Ok((None, "SPEAR_API_KEY".into())),
        },
        None => match env.get("OPENAI_API_KEY") {
            Some(k) => Ok((secret(k), "OPENAI_API_KEY".into())),
            // A local server needs no key; OpenAI's own does.
            None if base_url == OPENAI_BASE_URL => Err(missing(
                "set OPENAI_API_KEY or SPEAR_API_KEY, or point SPEAR_BASE_URL at a server that \
                 needs none (configure providers in the config file)"
                    .into(),
            )),
            None => Ok((None, "SPEAR_API_KEY".into())),
        },
    }
}
