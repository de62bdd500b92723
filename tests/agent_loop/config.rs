//! Configuration: the commented defaults written on first run, every error naming the file, the
//! line and the key with a fix, the precedence of flags, `SPEAR_*` and the file, a missing key,
//! and an API key that never shows in `Debug` or an error.

use std::path::{Path, PathBuf};

use secrecy::ExposeSecret;
use spear::config::{self, ConfigError, Env, Flags, Settings};
use spear::harness::primitives::ExecutionMode;
use spear::harness::resource_control::{CgroupLimits, ResourceLimits};

const KEY: &str = "sk-test-5f3a9c1e-NEVER-PRINT-ME";

fn dir() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("spear").join("config.toml");
    (d, p)
}

fn load_text(
    path: &Path,
    text: &str,
    env: &[(&str, &str)],
    flags: &Flags,
) -> Result<Settings, ConfigError> {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    config::load(path, &Env::from_pairs(env.iter().copied()), flags)
}

fn err(path: &Path, text: &str, env: &[(&str, &str)]) -> String {
    load_text(path, text, env, &Flags::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn the_first_run_writes_commented_defaults_that_resolve_to_the_documented_values() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, path) = dir();
    let s = config::load(
        &path,
        &Env::from_pairs([("OPENAI_API_KEY", KEY), ("SPEAR_MODEL", "gpt-test")]),
        &Flags::default(),
    )
    .unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(written, config::DEFAULT_CONFIG);
    assert!(written.contains("# mode = \"ask\"") && written.contains("api_key_env"));
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(s.mode, ExecutionMode::Ask);
    assert!(!s.network);
    assert_eq!(s.max_tool_calls, 50);
    assert_eq!(s.response_max_tokens, 16384);
    assert_eq!(s.harness.refusal_repeats, 5);
    assert_eq!(s.theme, "dark");
    assert_eq!(s.notify, config::Notify::Auto);
    for (text, want) in [
        ("osc9", config::Notify::Osc9),
        ("osc777", config::Notify::Osc777),
        ("bell", config::Notify::Bell),
        ("off", config::Notify::Off),
    ] {
        let set = load_text(
            &path,
            &format!("notify = \"{text}\"\n"),
            &[("SPEAR_MODEL", "m"), ("OPENAI_API_KEY", KEY)],
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(set.notify, want, "{text}");
    }
    assert_eq!(s.provider.name, "default");
    assert_eq!(s.provider.base_url, "https://api.openai.com/v1");
    assert_eq!(s.provider.model, "gpt-test");
    assert_eq!(s.provider.api_key.as_ref().unwrap().expose_secret(), KEY);
    assert!(s.harness.network_allow.is_empty());
    assert!(!s.harness.root_uid_host);
    // `root_uid` takes "sandbox" (the default) and "host", the opt-out.
    for (text, host) in [("sandbox", false), ("host", true)] {
        let set = load_text(
            &path,
            &format!("[sandbox]\nroot_uid = \"{text}\"\n"),
            &[("SPEAR_MODEL", "m"), ("OPENAI_API_KEY", KEY)],
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(set.harness.root_uid_host, host, "{text}");
    }
    assert_eq!(
        s.harness.store_limits,
        spear::tools::results::StoreLimits::default()
    );
    assert_eq!(s.harness.resource_limits, ResourceLimits::default());
    assert_eq!(s.harness.cgroup_limits, CgroupLimits::default());
    // Each commented `[limits]` line shows the default: uncommented, nothing changes.
    let limits: String = written
        .split("[limits]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("# ").filter(|l| l.contains(" = ")))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(limits.lines().count(), 5, "{limits}");
    let uncommented = load_text(
        &path,
        &format!("[limits]\n{limits}"),
        &[("SPEAR_MODEL", "m"), ("OPENAI_API_KEY", KEY)],
        &Flags::default(),
    )
    .unwrap();
    assert_eq!(
        uncommented.harness.resource_limits,
        ResourceLimits::default()
    );
    // No temporary file is left beside it.
    assert_eq!(
        std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
        1
    );
}

#[test]
fn errors_name_the_file_the_line_and_the_key_with_a_fix() {
    let (_d, path) = dir();
    let file = path.display().to_string();
    let cases: &[(&str, &str, &str)] = &[
        (
            "mode = \"ask\"\n[providers.local]\nbase_urll = \"http://127.0.0.1:8080/v1\"\n",
            ":3:",
            "`providers.local.base_urll`",
        ),
        ("# a comment\n\nmode = \"fast\"\n", ":3:", "`mode`"),
        ("max_tool_calls = \"ten\"\n", ":1:", "`max_tool_calls`"),
        ("max_tool_calls = 0\n", ":1:", "`max_tool_calls`"),
        (
            "[sandbox]\nnetwork_allow = [\"10.0.0.0/8\", \"intranet\"]\n",
            ":2:",
            "`sandbox.network_allow`",
        ),
        ("network = \"fullx\"\n", ":1:", "`network`"),
        (
            "[network]\nallow = [\"crates.io\", \"*.com\"]\n",
            ":2:",
            "`network.allow`",
        ),
        (
            "[network]\npresets = [\"ruby\"]\n",
            ":2:",
            "`network.presets`",
        ),
        ("[network]\npath = \"direct\"\n", ":2:", "`network.path`"),
        ("[network]\nallowed = []\n", ":2:", "`network.allowed`"),
        (
            "[sandbox]\nroot_uid = \"nobody\"\n",
            ":2:",
            "`sandbox.root_uid`",
        ),
        (
            "[results]\nbudget_bytes = 0\n",
            ":2:",
            "`results.budget_bytes`",
        ),
        (
            "[checkpoints]\nbudget_bytes = 0\n",
            ":2:",
            "`checkpoints.budget_bytes`",
        ),
        (
            "[checkpoints]\nignore = [\"data/\", \"[z-a]\"]\n",
            ":2:",
            "`checkpoints.ignore`",
        ),
        (
            "[checkpoints]\nenable = true\n",
            ":2:",
            "`checkpoints.enable`",
        ),
        ("[themes]\n", ":1:", "`themes`"),
        ("[limits]\nprocesses = 0\n", ":2:", "`limits.processes`"),
        ("[limits]\nmemory = 1\n", ":2:", "`limits.memory`"),
        ("[cgroups]\ntasks_max = -1\n", ":2:", "`cgroups.tasks_max`"),
        (
            "[cgroups]\ncpu_quota_percent = 0\n",
            ":2:",
            "`cgroups.cpu_quota_percent`",
        ),
        ("default_provider = \"nope\"\n", ":1:", "`default_provider`"),
        (
            "[providers.x]\nbase_url = \"ftp://host/v1\"\nmodel = \"m\"\n",
            ":2:",
            "`providers.x.base_url`",
        ),
        (
            "[providers.x]\nbase_url = \"http://h/v1/chat/completions\"\nmodel = \"m\"\n",
            ":2:",
            "`providers.x.base_url`",
        ),
        ("mode = \n", ":1:", "`mode`"),
        ("\nnotify = \"loud\"\n", ":2:", "`notify`"),
    ];
    for (text, line, key) in cases {
        let e = err(&path, text, &[("SPEAR_MODEL", "m")]);
        assert!(e.starts_with(&format!("{file}{line}")), "{text:?}: {e}");
        assert!(e.contains(key), "{text:?}: {e}");
        assert!(e.contains("fix:"), "{text:?}: {e}");
    }
    // The message says what Spear knows or expects.
    assert!(err(&path, "mode = \"fast\"\n", &[]).contains("safe, ask, auto"));
    assert!(err(&path, "[providers.l]\nbase_urll = \"x\"\n", &[]).contains("expected one of"));
}

#[test]
fn limits_and_cgroups_are_read_into_the_harness_settings() {
    let (_d, path) = dir();
    let s = load_text(
        &path,
        "[limits]\nprocesses = 64\nmemory_bytes = 1048576\n\
         [cgroups]\nmemory_max_bytes = 2097152\ncpu_quota_percent = 150\n",
        &[("SPEAR_MODEL", "m"), ("OPENAI_API_KEY", KEY)],
        &Flags::default(),
    )
    .unwrap();
    assert_eq!(s.harness.resource_limits.processes, Some(64));
    assert_eq!(s.harness.resource_limits.data_bytes, Some(1 << 20));
    // What is not named keeps its default.
    assert_eq!(
        s.harness.resource_limits.cpu_seconds,
        ResourceLimits::default().cpu_seconds
    );
    assert_eq!(
        s.harness.cgroup_limits,
        CgroupLimits {
            memory_max_bytes: Some(2 << 20),
            tasks_max: None,
            cpu_quota_percent: Some(150),
        }
    );
}

#[test]
fn a_key_pasted_into_the_file_is_refused_without_being_echoed() {
    let (_d, path) = dir();
    for text in [
        format!(
            "[providers.openai]\nbase_url = \"https://api.openai.com/v1\"\napi_key = \"{KEY}\"\n"
        ),
        format!(
            "[providers.openai]\nbase_url = \"https://api.openai.com/v1\"\napi_key_env = \"{KEY}\"\nmodel = \"m\"\n"
        ),
    ] {
        let e = err(&path, &text, &[]);
        assert!(e.contains(":3:"), "{e}");
        assert!(e.contains("environment variable"), "{e}");
        assert!(!e.contains("5f3a9c1e"), "the key was echoed: {e}");
    }
}

#[test]
fn flags_beat_spear_variables_which_beat_the_file() {
    let (_d, path) = dir();
    let text = "default_provider = \"local\"\nmode = \"safe\"\nresponse_max_tokens = 2048\n\
                [providers.local]\nbase_url = \"http://127.0.0.1:11434/v1/\"\nmodel = \"file-model\"\n\
                context_window = 32768\nheaders = { \"X-Title\" = \"Spear\" }\n\
                [providers.other]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"o\"\n";
    let s = load_text(&path, text, &[], &Flags::default()).unwrap();
    assert_eq!(s.provider.name, "local");
    assert_eq!(s.provider.base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(s.provider.model, "file-model");
    assert_eq!(s.provider.context_window, Some(32768));
    assert_eq!(s.provider.headers.len(), 1);
    assert_eq!(s.mode, ExecutionMode::Safe);
    assert_eq!(s.response_max_tokens, 2048);
    // A configured provider without api_key_env gets no key, even with OPENAI_API_KEY set.
    let s = load_text(
        &path,
        text,
        &[
            ("OPENAI_API_KEY", KEY),
            ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
        ],
        &Flags::default(),
    )
    .unwrap();
    assert!(s.provider.api_key.is_none());
    assert_eq!(s.provider.base_url, "http://127.0.0.1:11434/v1");
    let env = [
        ("SPEAR_BASE_URL", "http://127.0.0.1:8000/v1"),
        ("SPEAR_MODEL", "env-model"),
        ("SPEAR_RESPONSE_MAX_TOKENS", "512"),
        ("SPEAR_REFUSAL_REPEATS", "3"),
        ("SPEAR_API_KEY", KEY),
    ];
    let s = load_text(&path, text, &env, &Flags::default()).unwrap();
    assert_eq!(s.provider.base_url, "http://127.0.0.1:8000/v1");
    assert_eq!(s.provider.model, "env-model");
    assert_eq!(s.response_max_tokens, 512);
    assert_eq!(s.harness.refusal_repeats, 3);
    assert_eq!(s.provider.api_key.as_ref().unwrap().expose_secret(), KEY);
    let flags = Flags {
        provider: Some("other".into()),
        model: Some("flag-model".into()),
        mode: Some(ExecutionMode::Auto),
        network: true,
    };
    let s = load_text(&path, text, &[("SPEAR_MODEL", "env-model")], &flags).unwrap();
    assert_eq!(s.provider.name, "other");
    assert_eq!(s.provider.model, "flag-model");
    assert_eq!(s.mode, ExecutionMode::Auto);
    assert!(s.network);
    let e = load_text(
        &path,
        text,
        &[("SPEAR_RESPONSE_MAX_TOKENS", "lots")],
        &Flags::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("SPEAR_RESPONSE_MAX_TOKENS:") && e.contains("lots"),
        "{e}"
    );
    let e = load_text(
        &path,
        text,
        &[],
        &Flags {
            provider: Some("gone".into()),
            ..Flags::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`gone`") && e.contains("local, other"), "{e}");
}

#[test]
fn a_missing_key_or_model_says_how_to_provide_it() {
    let (_d, path) = dir();
    let text = "[providers.router]\nbase_url = \"https://openrouter.ai/api/v1\"\napi_key_env = \"ROUTER_KEY\"\nmodel = \"m\"\n";
    let e = err(&path, text, &[]);
    assert!(
        e.contains("no API key") && e.contains("$ROUTER_KEY") && e.contains("export ROUTER_KEY"),
        "{e}"
    );
    let s = load_text(&path, text, &[("ROUTER_KEY", KEY)], &Flags::default()).unwrap();
    assert_eq!(s.provider.api_key.unwrap().expose_secret(), KEY);
    // The built-in provider at OpenAI needs one; a local base URL does not.
    let e = err(&path, "", &[("SPEAR_MODEL", "m")]);
    assert!(
        e.contains("OPENAI_API_KEY") && e.contains("SPEAR_API_KEY"),
        "{e}"
    );
    let s = load_text(
        &path,
        "",
        &[
            ("SPEAR_MODEL", "m"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
        ],
        &Flags::default(),
    )
    .unwrap();
    assert!(s.provider.api_key.is_none());
    let e = err(&path, "", &[("OPENAI_API_KEY", KEY)]);
    assert!(e.contains("--model") && e.contains("SPEAR_MODEL"), "{e}");
}

#[test]
fn the_key_never_shows_in_debug_or_errors() {
    let (_d, path) = dir();
    let text = "[providers.p]\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key_env = \"P_KEY\"\nmodel = \"m\"\nheaders = { \"api-key\" = \"header-secret-77\" }\n";
    let s = load_text(&path, text, &[("P_KEY", KEY)], &Flags::default()).unwrap();
    // Positive control: the key and the header were read.
    assert_eq!(s.provider.api_key.as_ref().unwrap().expose_secret(), KEY);
    assert_eq!(s.provider.headers[0].1.expose_secret(), "header-secret-77");
    let shown = format!("{s:?} {:?}", s.provider);
    assert!(
        !shown.contains("5f3a9c1e") && !shown.contains("header-secret-77"),
        "{shown}"
    );
    let e = load_text(
        &path,
        &format!("{text}mode = 3\n"),
        &[("P_KEY", KEY)],
        &Flags::default(),
    )
    .unwrap_err();
    assert!(!format!("{e} {e:?}").contains("5f3a9c1e"));
}

#[test]
fn the_readme_configuration_resolves_for_every_provider_it_shows() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = &readme[readme
        .find("## Connect a model")
        .expect("the README has a Connect a model section")..];
    let start = section.find("```toml\n").unwrap() + "```toml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let (_d, path) = dir();
    let env = [("OPENAI_API_KEY", KEY), ("OPENROUTER_API_KEY", KEY)];
    let mut seen = Vec::new();
    for name in ["openai", "openrouter", "ollama", "vllm", "llamacpp"] {
        let flags = Flags {
            provider: Some(name.into()),
            ..Flags::default()
        };
        let s = load_text(&path, block, &env, &flags).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(s.provider.base_url.ends_with("/v1"), "{name}");
        assert!(!s.provider.model.is_empty());
        seen.push((name, s.provider.api_key.is_some()));
    }
    assert_eq!(
        seen,
        [
            ("openai", true),
            ("openrouter", true),
            ("ollama", false),
            ("vllm", false),
            ("llamacpp", false)
        ]
    );
    // Without --provider, the file's default.
    assert_eq!(
        load_text(&path, block, &env, &Flags::default())
            .unwrap()
            .provider
            .name,
        "openai"
    );
}

#[test]
fn the_network_setting_reads_as_a_switch_a_path_or_a_table() {
    use spear::harness::egress::{Host, NameVerdict, NetworkPath};
    let (_d, path) = dir();
    let env = [
        ("SPEAR_MODEL", "m"),
        ("SPEAR_BASE_URL", "http://127.0.0.1:9/v1"),
    ];
    let load = |text: &str| load_text(&path, text, &env, &Flags::default()).unwrap();
    let off = load("network = false\n");
    assert!(!off.network);
    assert_eq!(off.harness.egress.path, NetworkPath::Proxy);
    let full = load("network = \"full\"\n");
    assert!(full.network);
    assert_eq!(full.harness.egress.path, NetworkPath::Full);
    let table = load(
        "[network]\nenabled = true\npresets = [\"rust\"]\nallow = [\"*.example.com\"]\n\
         deny = [\"static.crates.io\"]\n",
    );
    assert!(table.network);
    let rules = &table.harness.egress.rules;
    let name = |n: &str| Host::parse(n).unwrap();
    assert_eq!(
        rules.verdict(&name("index.crates.io"), 443),
        NameVerdict::Allowed
    );
    assert_eq!(
        rules.verdict(&name("a.example.com"), 443),
        NameVerdict::Allowed
    );
    assert!(matches!(
        rules.verdict(&name("static.crates.io"), 443),
        NameVerdict::Denied(_)
    ));
    assert_eq!(rules.verdict(&name("pypi.org"), 443), NameVerdict::Unlisted);
    assert_eq!(rules.presets(), ["rust".to_string()]);
    // The table without `enabled` leaves the network off until --network or /network on.
    assert!(!load("[network]\nallow = [\"crates.io\"]\n").network);
}
