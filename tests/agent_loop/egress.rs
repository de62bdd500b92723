//! Issue 25 through the front ends: `[network]` read from the person's config, the egress
//! proxy's decisions by mode (AUTO refuses an unlisted name without asking; ASK holds the
//! connection and asks the approver, once, again in a new session; headless denies), and every
//! connection in the command's audit record and the envelope. The origin is a loopback server
//! the test starts, named through the test resolver and reachable through the test-only
//! exemption (`SPEAR_TEST_EGRESS_*`, read only by a `test-hooks` build).

use serde_json::{Value, json};

use crate::mcp_client::{Env, status};
use crate::origin::Origin;
use crate::server::chunks::{text_answer, tool_calls_answer};
use crate::server::mock_server::MockServer;

/// A config with the network on and `allow` listed, a loopback origin, and the variables that
/// name it `allowed.test` and `unlisted.test` and exempt its address.
fn setup(allow: &str) -> (Env, Origin, Vec<(String, String)>) {
    let origin = Origin::start(None);
    let env = Env::with_config(&format!(
        "[network]\nenabled = true\nallow = [{allow}]\n",
        allow = allow.replace("PORT", &origin.port().to_string())
    ));
    let vars = vec![
        (
            "SPEAR_TEST_EGRESS_RESOLVE".to_string(),
            "allowed.test=127.0.0.1;unlisted.test=127.0.0.1".to_string(),
        ),
        (
            "SPEAR_TEST_EGRESS_EXEMPT".to_string(),
            origin.at.to_string(),
        ),
    ];
    (env, origin, vars)
}

/// The audit record of the last terminal call.
fn last_terminal(env: &Env) -> spear::harness::audit::AuditRecord {
    env.audit()
        .into_iter()
        .rev()
        .find(|r| r.tool == "terminal")
        .unwrap()
}

/// A rule of the person's that lets `curl …` run unasked: only the name is asked about.
fn allow_curl_by_rule(env: &Env) {
    std::fs::write(
        env.config.join("spear/rules.toml"),
        "[[rule]]\naction = \"allow\"\ncommand = \"curl *\"\nclass = \"SHELL_COMPLEX\"\n\
         capabilities = [\"workspace_read\", \"network\"]\nglobal = true\n",
    )
    .unwrap();
}

fn vars_ref(vars: &[(String, String)]) -> Vec<(&str, &str)> {
    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[test]
fn auto_reaches_an_allowed_name_refuses_an_unlisted_one_and_records_both() {
    let (env, origin, vars) = setup("\"allowed.test:PORT\"");
    let p = origin.port();
    let cmd = format!(
        "curl -sS --max-time 10 http://allowed.test:{p}/a; echo; curl -sS --max-time 10 http://unlisted.test:{p}/b; true"
    );
    let out = env.terminal_with("auto", &cmd, &["--network"], &vars_ref(&vars));
    assert_eq!(status(&out), "ok", "{out}");
    assert!(
        out["stdout"].as_str().unwrap_or_default().contains("hello"),
        "{out}"
    );
    let conns = out["connections"].as_array().cloned().unwrap_or_default();
    let find = |h: &str| {
        conns
            .iter()
            .find(|c| c["host"] == h)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(find("allowed.test")["refused"], Value::Null, "{out}");
    let refused = find("unlisted.test")["refused"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(refused.contains("only ASK mode asks"), "{out}");
    assert_eq!(
        origin.received().len(),
        1,
        "only the allowed request reached the origin"
    );
    // The audit record lists both, and `spear audit --grep` finds the command by host.
    let rec = last_terminal(&env);
    let hosts: Vec<&str> = rec.connections.iter().map(|c| c.host.as_str()).collect();
    assert_eq!(hosts, ["allowed.test", "unlisted.test"], "{rec:?}");
    assert!(rec.connections[0].bytes_down > 0, "{rec:?}");
    let grep = env.spear(&["audit", "--grep", "unlisted.test"]);
    let listed = String::from_utf8_lossy(&grep.stdout);
    assert!(
        listed.contains("terminal") && listed.contains("unlisted.test"),
        "{listed}"
    );
}

/// An approver script that logs each request it is sent and answers `decision`.
fn logging_approver(env: &Env, decision: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let base = env.project.parent().unwrap();
    std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o700)).unwrap();
    let log = base.join("asked.log");
    let script = base.join("approve.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nreq=$(cat)\necho \"$req\" >> {log}\n\
             id=$(echo \"$req\" | sed -n 's/.*\"request_id\":\\([0-9]*\\).*/\\1/p')\n\
             echo \"{{\\\"request_id\\\": $id, \\\"decision\\\": \\\"{decision}\\\"}}\"\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
    (script, log)
}

fn name_questions(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("net:unlisted.test"))
        .count()
}

/// One `spear run` in ASK whose model runs `command` once.
fn run_once(env: &Env, vars: &[(String, String)], approver: &std::path::Path, command: &str) {
    let server = MockServer::start([
        tool_calls_answer(&[("call_n", "terminal", json!({ "command": command }))]),
        text_answer("Done."),
    ]);
    let out = env
        .command(&[
            "run",
            "--mode",
            "ask",
            "--network",
            "--approver",
            &approver.display().to_string(),
            "fetch it",
        ])
        .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("SPEAR_BASE_URL", &server.base_url)
        .env("SPEAR_MODEL", "mock-model")
        .env("SPEAR_API_KEY", "sk-egress-test")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn ask_holds_the_connection_asks_once_and_asks_again_in_a_new_session() {
    let (env, origin, vars) = setup("");
    let (approver, log) = logging_approver(&env, "allow");
    let cmd = format!(
        "curl -sS --max-time 20 http://unlisted.test:{}/x",
        origin.port()
    );
    run_once(&env, &vars, &approver, &cmd);
    assert_eq!(
        name_questions(&log),
        1,
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(
        origin.received().len(),
        1,
        "the allowed-once connection did not go through"
    );
    let rec = last_terminal(&env);
    assert_eq!(rec.connections.len(), 1, "{rec:?}");
    assert_eq!(rec.connections[0].refused, None, "{rec:?}");
    // Allowed once: a new session asks again.
    run_once(&env, &vars, &approver, &cmd);
    assert_eq!(name_questions(&log), 2);
    assert_eq!(origin.received().len(), 2);
}

#[test]
fn ask_with_a_person_who_declines_refuses_and_the_name_reaches_the_model() {
    let (env, origin, vars) = setup("");
    // The command is let run by a rule; only the name is asked about, and declined.
    allow_curl_by_rule(&env);
    let (approver, log) = logging_approver(&env, "deny");
    let cmd = format!(
        "curl -sS --max-time 20 http://unlisted.test:{}/x",
        origin.port()
    );
    run_once(&env, &vars, &approver, &cmd);
    assert_eq!(name_questions(&log), 1);
    assert!(origin.received().is_empty(), "a declined name was reached");
    let rec = last_terminal(&env);
    let why = rec.connections[0].refused.clone().unwrap_or_default();
    assert!(why.contains("declined"), "{rec:?}");
}

#[test]
fn headless_ask_denies_an_unlisted_name_and_says_which() {
    let (env, origin, vars) = setup("");
    allow_curl_by_rule(&env);
    let cmd = format!(
        "curl -sS --max-time 20 http://unlisted.test:{}/x",
        origin.port()
    );
    let out = env.terminal_with("ask", &cmd, &["--network"], &vars_ref(&vars));
    assert!(origin.received().is_empty(), "{out}");
    let text = out.to_string();
    assert!(text.contains("unlisted.test"), "{out}");
    let conns = out["connections"].as_array().cloned().unwrap_or_default();
    assert!(
        conns
            .iter()
            .any(|c| c["host"] == "unlisted.test" && c["refused"].is_string()),
        "{out}"
    );
}

#[test]
fn an_mcp_server_granted_the_network_reaches_names_as_a_command_and_each_call_lists_them() {
    let origin = Origin::start(None);
    let bin = env!("CARGO_BIN_EXE_spear");
    let env = Env::with_config(&format!(
        "[network]\nallow = [\"allowed.test:{p}\"]\n\n[mcp.servers.test]\ncommand = {bin:?}\n\
         args = [\"__mcp-test-server\", \"egress\"]\nread_paths = [{dir:?}]\nnetwork = true\n\
         read_only_tools = [\"fetch\"]\n",
        p = origin.port(),
        dir = std::path::Path::new(bin)
            .parent()
            .unwrap()
            .display()
            .to_string(),
    ));
    let vars = [
        (
            "SPEAR_TEST_EGRESS_RESOLVE",
            "allowed.test=127.0.0.1;unlisted.test=127.0.0.1".to_string(),
        ),
        ("SPEAR_TEST_EGRESS_EXEMPT", origin.at.to_string()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let call = |host: &str| {
        format!(
            "spear-capability call test.fetch '{}'",
            json!({ "url": format!("http://{host}:{}/x", origin.port()) })
        )
    };
    let ok = env.terminal_with("auto", &call("allowed.test"), &["--network"], &vars);
    assert_eq!(status(&ok), "ok", "{ok}");
    assert!(ok.to_string().contains("HTTP/1.1 200"), "{ok}");
    let refused = env.terminal_with("auto", &call("unlisted.test"), &["--network"], &vars);
    assert!(refused.to_string().contains("HTTP/1.1 403"), "{refused}");
    assert_eq!(origin.received().len(), 1);
    let calls: Vec<_> = env
        .audit()
        .into_iter()
        .filter(|r| {
            r.target
                .as_deref()
                .is_some_and(|t| t.contains("test.fetch"))
        })
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].connections[0].host, "allowed.test", "{calls:?}");
    assert_eq!(calls[0].connections[0].refused, None);
    assert_eq!(calls[1].connections[0].host, "unlisted.test", "{calls:?}");
    assert!(calls[1].connections[0].refused.is_some());
}
