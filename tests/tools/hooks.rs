//! Issue 22, item 5: hooks that can only tighten. A `pre_tool` hook gets the call as JSON before
//! authorization and may deny (its message reaches the model) or ask; one that crashes, hangs,
//! prints garbage or tries to allow denies the call; a program inside the workspace is refused
//! at load; `post_tool` hooks observe the result; every run is in the audit record.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use spear::harness::audit::DecidedBy;
use spear::harness::command_policy::ApprovalDecision;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::approval::{CallApprovalRequest, CallApprover};
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::external::Program;
use spear::tools::hooks::{Hook, Hooks};
use spear::tools::host::HostConfig;
use spear::tools::router::turn::Turn;

use crate::support::{Fixture, Recorder, call};

/// A hook script outside the project, only its owner may change.
fn script(fx: &Fixture, name: &str, body: &str) -> PathBuf {
    let p = fx.base.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&fx.base, std::fs::Permissions::from_mode(0o700)).unwrap();
    p
}

fn hook(path: PathBuf, secs: u64) -> Hook {
    Hook {
        program: Program {
            path,
            args: Vec::new(),
            timeout: Duration::from_secs(secs),
        },
        tools: Vec::new(),
    }
}

#[derive(Default)]
struct Asks(Mutex<Vec<CallApprovalRequest>>);

impl CallApprover for Asks {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        self.0.lock().unwrap().push(request.clone());
        ApprovalDecision::Approve
    }
}

struct Hooked {
    fx: Fixture,
    router: spear::tools::router::ToolRouter,
    ran: Recorder,
}

fn hooked(fx: Fixture, hooks: Hooks) -> Hooked {
    let ran = Recorder::default();
    let host = fx.host(
        Box::new(ran.clone()),
        HostConfig {
            hooks,
            ..HostConfig::default()
        },
    );
    let router = fx.router_for(host);
    Hooked { fx, router, ran }
}

fn run(
    h: &Hooked,
    mode: ExecutionMode,
    line: &str,
) -> (spear::tools::envelope::ToolResultEnvelope, usize) {
    let asks = Arc::new(Asks::default());
    let view = ToolExposurePolicy::view(h.router.registry(), &ExposureSettings::default());
    let mut t = Turn::new(mode, view, asks.clone());
    let env = call(&h.router, &mut t, "terminal", json!({ "command": line }));
    let n = asks.0.lock().unwrap().len();
    (env, n)
}

#[test]
fn a_pre_tool_hook_denies_with_a_message_for_the_model_and_is_recorded() {
    let fx = Fixture::new();
    let seen = fx.base.join("seen.json");
    let deny = script(
        &fx,
        "deny",
        &format!(
            "cat > {}\necho '{{\"decision\":\"deny\",\"message\":\"no pushes on Fridays\"}}'",
            seen.display()
        ),
    );
    let h = hooked(
        fx,
        Hooks {
            pre_tool: vec![hook(deny, 5)],
            ..Hooks::default()
        },
    );
    let (env, asked) = run(&h, ExecutionMode::Auto, "git status");
    assert_eq!(env.status, ToolStatus::Denied, "{env:?}");
    assert_eq!(asked, 0);
    assert_eq!(env.decided_by, Some(DecidedBy::Hook));
    assert!(env.model_text().contains("no pushes on Fridays"));
    assert!(h.ran.ran.lock().unwrap().is_empty(), "nothing ran");
    // The hook got the call as JSON on stdin.
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(h.fx.base.join("seen.json")).unwrap())
            .unwrap();
    assert_eq!(input["event"], "pre_tool");
    assert_eq!(input["tool"], "terminal");
    assert_eq!(input["arguments"]["command"], "git status");
    assert_eq!(input["mode"], "AUTO");
    let last = h.fx.audit().pop().unwrap();
    assert_eq!(last.decided_by, Some(DecidedBy::Hook));
    assert_eq!(last.hooks.len(), 1);
    assert!(last.hooks[0].answer.starts_with("deny"), "{:?}", last.hooks);
}

#[test]
fn a_hook_that_asks_is_heard_even_where_the_mode_would_not_ask() {
    let fx = Fixture::new();
    let ask = script(
        &fx,
        "ask",
        r#"echo '{"decision":"ask","reason":"touches the lockfile"}'"#,
    );
    let h = hooked(
        fx,
        Hooks {
            pre_tool: vec![hook(ask, 5)],
            ..Hooks::default()
        },
    );
    for mode in [ExecutionMode::Auto, ExecutionMode::Ask] {
        let (env, asked) = run(&h, mode, "git status");
        assert_eq!(asked, 1, "{mode}: {env:?}");
        assert_eq!(env.status, ToolStatus::Ok);
        assert_eq!(env.decided_by, Some(DecidedBy::Person));
    }
    // A refusal by class stays final: the hook's ask cannot reach a DANGEROUS command.
    let (env, asked) = run(&h, ExecutionMode::Auto, "rm -rf /");
    assert_eq!(asked, 0);
    assert_eq!(env.status, ToolStatus::Denied);
}

#[test]
fn a_hook_that_fails_hangs_babbles_or_tries_to_allow_denies_the_call() {
    let fx = Fixture::new();
    let cases = [
        ("crash", "exit 3"),
        ("garbage", "echo 'sure, go ahead'"),
        ("allow", r#"echo '{"decision":"allow"}'"#),
        ("hang", "sleep 30"),
        ("flood", "head -c 300000 /dev/zero"),
    ];
    let paths: Vec<PathBuf> = cases.iter().map(|(n, b)| script(&fx, n, b)).collect();
    let fx_base = fx.base.clone();
    let mut fx = Some(fx);
    for (p, (name, _)) in paths.into_iter().zip(cases) {
        let f = fx.take().unwrap_or_else(Fixture::new);
        let h = hooked(
            f,
            Hooks {
                pre_tool: vec![hook(p, 1)],
                ..Hooks::default()
            },
        );
        let t = Instant::now();
        let (env, asked) = run(&h, ExecutionMode::Auto, "git status");
        assert_eq!(env.status, ToolStatus::Denied, "{name}: {env:?}");
        assert_eq!(asked, 0, "{name}");
        assert!(h.ran.ran.lock().unwrap().is_empty(), "{name}: nothing ran");
        assert!(
            t.elapsed() < Duration::from_secs(8),
            "{name} took {:?}",
            t.elapsed()
        );
        // What the hook printed never reaches the model; only why it was refused.
        assert!(!env.model_text().contains("sure, go ahead"), "{name}");
    }
    let _ = fx_base;
}

#[test]
fn a_hook_program_in_the_workspace_is_refused_at_load() {
    use spear::agent::builder::{Place, SessionBuilder};
    let fx = Fixture::new();
    let inside = fx.write("tools/hook.sh", "#!/bin/sh\ntrue\n");
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o700)).unwrap();
    let harness = spear::config::HarnessSettings {
        hooks: Hooks {
            pre_tool: vec![hook(inside, 5)],
            ..Hooks::default()
        },
        ..Default::default()
    };
    let place = Place::of(
        spear::harness::workspace::Workspace::new(&fx.project).unwrap(),
        fx.project.clone(),
        fx.state.clone(),
    );
    let err = match SessionBuilder::new(place, harness, "t").host() {
        Ok(_) => panic!("a hook inside the workspace was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("lies in the workspace"), "{err}");
}

#[test]
fn a_hook_in_the_config_file_is_checked_when_the_file_is_read() {
    let fx = Fixture::new();
    let cfg = fx.base.join("config.toml");
    std::fs::write(&cfg, "[[hooks.pre_tool]]\nprogram = \"relative/hook\"\n").unwrap();
    let e = spear::config::load_harness(&cfg).unwrap_err().to_string();
    assert!(
        e.contains("absolute") && e.contains("config.toml:2:"),
        "{e}"
    );
    let ok = script(&fx, "ok", "true");
    std::fs::write(
        &cfg,
        format!(
            "[[hooks.pre_tool]]\nprogram = \"{}\"\ntimeout_seconds = 3\ntools = [\"terminal\"]\n",
            ok.display()
        ),
    )
    .unwrap();
    let h = spear::config::load_harness(&cfg).unwrap().hooks;
    assert_eq!(h.pre_tool.len(), 1);
    assert_eq!(h.pre_tool[0].program.timeout, Duration::from_secs(3));
    std::fs::write(&cfg, "[hooks]\nallow_all = true\n").unwrap();
    assert!(
        spear::config::load_harness(&cfg).is_err(),
        "unknown keys are errors"
    );
}

#[test]
fn post_tool_hooks_observe_the_result_and_are_recorded() {
    let fx = Fixture::new();
    let seen = fx.base.join("post.json");
    let post = script(&fx, "post", &format!("cat > {}", seen.display()));
    let h = hooked(
        fx,
        Hooks {
            post_tool: vec![hook(post, 5)],
            ..Hooks::default()
        },
    );
    let (env, _) = run(&h, ExecutionMode::Auto, "git status");
    assert_eq!(env.status, ToolStatus::Ok);
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(h.fx.base.join("post.json")).unwrap())
            .unwrap();
    assert_eq!(input["event"], "post_tool");
    assert_eq!(input["envelope"]["status"], "ok");
    let last = h.fx.audit().pop().unwrap();
    assert_eq!(last.hooks[0].event, "post_tool");
    assert_eq!(last.hooks[0].answer, "observed");
}

#[test]
fn a_hook_that_asks_about_a_read_is_heard_too() {
    let fx = Fixture::new();
    fx.write("notes.txt", "n\n");
    let ask = script(&fx, "ask", r#"echo '{"decision":"ask"}'"#);
    let h = hooked(
        fx,
        Hooks {
            pre_tool: vec![hook(ask, 5)],
            ..Hooks::default()
        },
    );
    let asks = Arc::new(Asks::default());
    let view = ToolExposurePolicy::view(h.router.registry(), &ExposureSettings::default());
    let mut t = Turn::new(ExecutionMode::Auto, view, asks.clone());
    let env = call(&h.router, &mut t, "read_file", json!({"path": "notes.txt"}));
    assert_eq!(asks.0.lock().unwrap().len(), 1, "{env:?}");
    assert_eq!(env.decided_by, Some(DecidedBy::Person));
}

#[test]
fn hooks_run_outside_the_workspace_with_no_argument_in_it() {
    let fx = Fixture::new();
    // It runs in `/`, so a relative script is not the workspace's.
    let pwd = script(&fx, "pwd", "pwd >&2; exit 1");
    let seen = fx.base.join("cwd.txt");
    let records = script(&fx, "records", &format!("pwd > {}", seen.display()));
    let h = hooked(
        fx,
        Hooks {
            post_tool: vec![hook(records, 5)],
            pre_tool: Vec::new(),
        },
    );
    run(&h, ExecutionMode::Auto, "git status");
    assert_eq!(
        std::fs::read_to_string(h.fx.base.join("cwd.txt"))
            .unwrap()
            .trim(),
        "/"
    );
    let _ = pwd;
    // An argument naming a path in the workspace is refused at load.
    let mut inside = hook(script(&h.fx, "py", "true"), 5);
    inside.program.args = vec![h.fx.project.join("guard.py").display().to_string()];
    let hooks = Hooks {
        pre_tool: vec![inside],
        ..Hooks::default()
    };
    let e = hooks.check_for(&h.fx.project).unwrap_err();
    assert!(e.contains("names a path in the workspace"), "{e}");
}

#[test]
fn without_a_config_file_the_persons_rules_still_count() {
    let fx = Fixture::new();
    let cfg = fx.base.join("nowhere").join("config.toml");
    let h = spear::config::load_harness(&cfg).unwrap();
    assert_eq!(
        h.rules_file,
        Some(fx.base.join("nowhere").join("rules.toml"))
    );
}
