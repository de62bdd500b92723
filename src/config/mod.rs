//! `config`: Spear's settings in two stages, as ripgrep does: what the user typed (the
//! file, the environment, the flags) and the resolved, immutable `Settings` the rest of Spear
//! reads. Precedence: flags, then `SPEAR_*` variables, then the file, then the `OPENAI_*`
//! fallbacks (only for the built-in provider), then defaults. Invariant: an API key is held as a
//! `SecretString` from the moment it is read, so no `Debug`, log, audit record, transcript or
//! `--json` line can carry it; only the provider client exposes it, to build its header.

pub mod env;
mod file;
mod resolve;
mod web;

pub use env::Env;
pub use file::{ConfigFile, Place, ProviderTable};
pub use resolve::{Flags, resolve};

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use secrecy::SecretString;
use thiserror::Error;

use crate::harness::primitives::ExecutionMode;

/// One response may generate at most this many tokens unless configured otherwise.
pub const DEFAULT_RESPONSE_MAX_TOKENS: u32 = 16_384;
/// Tool calls one request may make before the loop stops it.
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 50;
/// The server used when nothing names another.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The commented defaults written on first run.
pub const DEFAULT_CONFIG: &str = include_str!("../../assets/config.toml");

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{path}:{line}:{column}: `{key}`: {problem}\n  fix: {fix}")]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        key: String,
        problem: String,
        fix: String,
    },
    #[error("cannot read the config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the default config file {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no config directory: neither XDG_CONFIG_HOME nor HOME is set")]
    NoConfigDir,
    #[error(
        "no provider named `{name}` in {path} (configured: {known}); add [providers.{name}] or pick one of those"
    )]
    UnknownProvider {
        name: String,
        path: PathBuf,
        known: String,
    },
    #[error(
        "no model is configured for provider `{provider}`: pass --model NAME, set SPEAR_MODEL, or add `model = \"...\"` to [providers.{provider}] in {path}"
    )]
    NoModel { provider: String, path: PathBuf },
    #[error("no API key for provider `{provider}` ({base_url}): {why}")]
    MissingKey {
        provider: String,
        base_url: String,
        why: String,
    },
    #[error("{var}: {problem}")]
    BadEnv { var: String, problem: String },
    #[error("{what}: {problem}")]
    BadFlag { what: String, problem: String },
}

impl ConfigError {
    pub(crate) fn invalid(
        path: &Path,
        at: &Place,
        fix: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line: at.line,
            column: at.column,
            key: at.key.clone(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// The server Spear talks to, resolved.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The name under `[providers]`, or `default` for the built-in one.
    pub name: String,
    /// With the version path and without a trailing slash (`https://api.openai.com/v1`).
    pub base_url: String,
    pub api_key: Option<SecretString>,
    /// The environment variable the key is read from (named in "bad key" errors): the one
    /// that gave it, else the one that would.
    pub api_key_env: String,
    pub model: String,
    /// Extra request headers; values are held as secrets (some servers take keys this way).
    pub headers: Vec<(String, SecretString)>,
    pub context_window: Option<u64>,
}

/// How the screen calls the person back (a question opened, a turn ended) while its window
/// may not have the focus. Every choice but `Off` rings the bell; the OSC ones also post a
/// desktop notification whose text is fixed (never the model's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Notify {
    /// The bell, and OSC 9 where `TERM_PROGRAM` names a terminal that shows it.
    #[default]
    Auto,
    Bell,
    /// iTerm2, WezTerm, Ghostty, kitty, Windows Terminal.
    Osc9,
    /// urxvt, foot, VTE terminals (GNOME Terminal, Tilix), WezTerm, Ghostty.
    Osc777,
    Off,
}

impl std::str::FromStr for Notify {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.trim() {
            "auto" => Notify::Auto,
            "bell" => Notify::Bell,
            "osc9" => Notify::Osc9,
            "osc777" => Notify::Osc777,
            "off" => Notify::Off,
            other => return Err(format!("`{other}` is not a way to call you back")),
        })
    }
}

/// Everything resolved: immutable for the session.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The file the settings came from (it exists: it is written on first run).
    pub config_path: PathBuf,
    pub provider: ProviderConfig,
    pub mode: ExecutionMode,
    pub network: bool,
    pub theme: String,
    /// `theme` was written in the file (else the terminal's background may pick one).
    pub theme_set: bool,
    /// How the screen calls the person back when a question opens or a turn ends.
    pub notify: Notify,
    pub max_tool_calls: u32,
    pub response_max_tokens: u32,
    /// `[sandbox]`, `[limits]`, `[cgroups]` and `[results]`: what the harness under the tools
    /// is built with.
    pub harness: HarnessSettings,
}

/// The harness's part of the configuration, and the web pair's (both serve the tools that
/// `spear tool` and `spear run` alike build).
#[derive(Debug, Clone)]
pub struct HarnessSettings {
    /// `SPEAR_REFUSAL_REPEATS`: identical refusals that stop a turn.
    pub refusal_repeats: u32,
    /// `[web] enabled` (or `SPEAR_WEB`): the web pair is offered. Exposure follows this alone.
    pub web_enabled: bool,
    /// The rest of `[web]`, resolved.
    pub web: crate::tools::host::web::WebSettings,
    /// `[sandbox] network_allow`: addresses or prefixes the network path may reach although
    /// they are refused by default (the host's own, private, link-local and special ranges).
    pub network_allow: Vec<crate::harness::sandbox::netns::IpPrefix>,
    /// `network = "full"` or `[network]`: the path a network grant takes and, on the proxy,
    /// the names it may reach (its decider refuses the rest until the session supplies one).
    pub egress: crate::harness::egress::Egress,
    /// `[sandbox] root_uid = "host"`: a root Spear's commands run as the host's root.
    pub root_uid_host: bool,
    /// `[results] max_result_bytes` and `budget_bytes`.
    pub store_limits: crate::tools::results::StoreLimits,
    /// `[limits]`: per-command resource limits (rlimits and the process cap).
    pub resource_limits: crate::harness::resource_control::ResourceLimits,
    /// `[cgroups]`: limits on the sandbox as a whole, applied through a systemd scope.
    pub cgroup_limits: crate::harness::resource_control::CgroupLimits,
    /// The person's permission rules, `rules.toml` beside the config file (none: no rules of
    /// the person's, as in tests).
    pub rules_file: Option<PathBuf>,
    /// `[[hooks.pre_tool]]` and `[[hooks.post_tool]]`, checked.
    pub hooks: crate::tools::hooks::Hooks,
    /// `[checkpoints] enabled` (default true): a checkpoint before and after every call that
    /// may change the tree.
    pub checkpoints_enabled: bool,
    /// `[checkpoints]`: what one checkpoint may take, the store's budget per workspace, and
    /// patterns left out besides the ignore files'.
    pub checkpoint_limits: crate::harness::checkpoint::Limits,
    /// `[mcp.servers.NAME]`: the person's MCP servers, checked.
    pub mcp_servers: Vec<crate::tools::host::mcp::McpServerConfig>,
}

impl Default for HarnessSettings {
    fn default() -> Self {
        HarnessSettings {
            refusal_repeats: crate::tools::router::turn::DEFAULT_REFUSAL_REPEATS,
            web_enabled: false,
            web: Default::default(),
            network_allow: Vec::new(),
            egress: Default::default(),
            root_uid_host: false,
            store_limits: Default::default(),
            resource_limits: Default::default(),
            cgroup_limits: Default::default(),
            rules_file: None,
            hooks: Default::default(),
            checkpoints_enabled: true,
            checkpoint_limits: Default::default(),
            mcp_servers: Vec::new(),
        }
    }
}

/// `$XDG_CONFIG_HOME/spear/config.toml` (or `~/.config/spear/config.toml`).
pub fn default_path() -> Result<PathBuf, ConfigError> {
    let dirs = directories::BaseDirs::new().ok_or(ConfigError::NoConfigDir)?;
    Ok(dirs.config_dir().join("spear").join("config.toml"))
}

/// Read the file at `path`, writing the commented defaults there first when it does not exist.
/// The first write is atomic (a private temporary file renamed into place), so a second Spear
/// starting at the same moment reads either nothing or the whole file.
pub fn load_or_create(path: &Path) -> Result<(ConfigFile, String), ConfigError> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_default(path)?;
            DEFAULT_CONFIG.to_string()
        }
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    Ok((file::parse(path, &text)?, text))
}

fn write_default(path: &Path) -> Result<(), ConfigError> {
    let err = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    let tmp = dir.join(format!(".config.toml.{}.tmp", std::process::id()));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(DEFAULT_CONFIG.as_bytes())?;
            f.sync_all()
        });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(err(e));
    }
    // Never replace a file another Spear wrote meanwhile: link fails if it exists.
    let placed = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match placed {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(err(e)),
    }
}

/// The harness's part of the file at `path`, for subcommands that run tools without a model
/// (`spear exec`, `spear tool`): nothing is written, and no file means the defaults.
pub fn load_harness(path: &Path) -> Result<HarnessSettings, ConfigError> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        // No config file: the defaults, but the person's rules beside where it would be still
        // count (`spear rules add` writes them there).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(HarnessSettings {
                rules_file: Some(path.with_file_name("rules.toml")),
                ..HarnessSettings::default()
            });
        }
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    resolve::harness(path, &text, &file::parse(path, &text)?, &Env::Process)
}

/// Load (creating on first run) and resolve: the whole pipeline `spear run` uses.
pub fn load(path: &Path, env: &Env, flags: &Flags) -> Result<Settings, ConfigError> {
    let (file, text) = load_or_create(path)?;
    resolve(path, &text, &file, env, flags)
}
