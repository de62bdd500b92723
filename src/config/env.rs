//! Every environment variable Spear reads, in one table with what it does, and `Env`, the one
//! way the settings read them (the process, or a fixed map in tests). Invariant: a variable read
//! by name anywhere in Spear is listed in `VARIABLES` (tests/layers.rs reads `src/` for reads and
//! checks), so a new one cannot go undocumented.

use std::collections::BTreeMap;

/// One variable Spear reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variable {
    pub name: &'static str,
    pub what: &'static str,
}

/// Every variable Spear reads by name, with what it does. Two more are named by the config
/// file: a provider's `api_key_env` and `[web] brave_api_key_env`; and the live tests' hook
/// `SPEAR_TEST_PID_MAX_NOT_NAMESPACED` and the egress proxy's `SPEAR_TEST_EGRESS_*` exist only
/// in a `test-hooks` build.
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "SPEAR_BASE_URL",
        what: "the model server's base URL (falls back to OPENAI_BASE_URL)",
    },
    Variable {
        name: "OPENAI_BASE_URL",
        what: "the built-in provider's base URL when SPEAR_BASE_URL is unset",
    },
    Variable {
        name: "SPEAR_API_KEY",
        what: "the model server's key (falls back to the provider's api_key_env, then OPENAI_API_KEY)",
    },
    Variable {
        name: "OPENAI_API_KEY",
        what: "the built-in provider's key when SPEAR_API_KEY is unset",
    },
    Variable {
        name: "SPEAR_MODEL",
        what: "the model to ask (after --model)",
    },
    Variable {
        name: "SPEAR_RESPONSE_MAX_TOKENS",
        what: "the cap on one response (16384)",
    },
    Variable {
        name: "SPEAR_REFUSAL_REPEATS",
        what: "identical refusals that stop a turn (5)",
    },
    Variable {
        name: "SPEAR_WEB",
        what: "offer the web pair (overrides [web] enabled)",
    },
    Variable {
        name: "SPEAR_SEARXNG_URL",
        what: "the SearXNG instance search_internet asks (overrides [web] searxng_url)",
    },
    Variable {
        name: "SPEAR_BRAVE_API_KEY",
        what: "the Brave Search key (else the variable [web] brave_api_key_env names)",
    },
    Variable {
        name: "SPEAR_LOG",
        what: "the screen's log filter, written under $XDG_STATE_HOME/spear/ (info,rmcp=warn)",
    },
    Variable {
        name: "NO_COLOR",
        what: "any non-empty value: no colours on the screen or in `spear audit`",
    },
    Variable {
        name: "TERM_PROGRAM",
        what: "the terminal's name: with notify = \"auto\", iTerm.app, WezTerm and ghostty also get a desktop notification (OSC 9)",
    },
    Variable {
        name: "TMUX",
        what: "set inside tmux: notifications go through tmux's passthrough",
    },
    Variable {
        name: "XDG_CONFIG_HOME",
        what: "where config.toml lives (else ~/.config)",
    },
    Variable {
        name: "XDG_STATE_HOME",
        what: "where the audit log, the ResultStore and sessions live (else ~/.local/state)",
    },
    Variable {
        name: "XDG_RUNTIME_DIR",
        what: "where the preflight cache and the systemd user manager are found",
    },
    Variable {
        name: "HOME",
        what: "the fallback for the XDG directories",
    },
    Variable {
        name: "PATH",
        what: "where bwrap, slirp4netns, prlimit, systemd-run and pdftotext are looked up",
    },
];

/// Where environment variables come from: the process, or a fixed map (tests). Deliberately
/// not `Debug`: it can read any variable, keys included.
pub enum Env {
    Process,
    Map(BTreeMap<String, String>),
}

impl Env {
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Env::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    /// The variable's value; unset and empty are the same (an exported empty variable is a
    /// common leftover and must not count as a key).
    pub fn get(&self, name: &str) -> Option<String> {
        let v = match self {
            Env::Process => std::env::var(name).ok(),
            Env::Map(m) => m.get(name).cloned(),
        };
        v.filter(|s| !s.trim().is_empty())
    }

    /// `NO_COLOR` set to anything non-empty.
    pub fn no_color(&self) -> bool {
        self.get("NO_COLOR").is_some()
    }

    /// The terminal's name as it says it (`TERM_PROGRAM`).
    pub fn term_program(&self) -> Option<String> {
        self.get("TERM_PROGRAM")
    }

    /// Running inside tmux (`TMUX` set).
    pub fn in_tmux(&self) -> bool {
        self.get("TMUX").is_some()
    }

    /// The screen's log filter (`SPEAR_LOG`, default `info,rmcp=warn`: rmcp logs every MCP
    /// notification whole at info, which would put a server's words in the log).
    pub fn log_filter(&self) -> String {
        self.get("SPEAR_LOG")
            .unwrap_or_else(|| "info,rmcp=warn".into())
    }
}
