//! `spear run` end to end against the loopback mock server, in a temporary git workspace, with
//! the real sandbox: it reads, patches and runs a command, and the workspace, the audit log, the
//! session file and the requests the server received show exactly that. SAFE denies the patch
//! and tells the model why; a DANGEROUS command is refused and reported; ASK without a terminal
//! cancels; SIGINT exits 130; an unreachable server, a bad key and a bad config each exit 1 with
//! a clear message; the API key never appears anywhere but the Authorization header.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::server::chunks::{text_answer, tool_calls_answer};
use crate::server::mock_server::{MockServer, Reply, StreamEnd};

const KEY: &str = "sk-e2e-7c1d0b5a-NEVER-SHOWN";

pub(crate) struct Env {
    _dir: tempfile::TempDir,
    pub(crate) project: PathBuf,
    state: PathBuf,
    config: PathBuf,
}

impl Env {
    pub(crate) fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("work");
        let state = base.join("state");
        let config = base.join("config");
        for d in [&project, &state, &config] {
            std::fs::create_dir_all(d).unwrap();
        }
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&project)
            .status()
            .expect("git is needed for these tests: install git");
        assert!(git.success());
        std::fs::write(project.join("hello.txt"), "Hello, world\n").unwrap();
        Env {
            _dir: dir,
            project,
            state,
            config,
        }
    }

    /// The state home (`XDG_STATE_HOME`) the binary is run with.
    pub(crate) fn state(&self) -> &std::path::Path {
        &self.state
    }

    fn command(&self, base_url: &str, args: &[&str]) -> Command {
        let mut c = self.spear(base_url);
        c.arg("run").args(args);
        c
    }

    /// The binary with this environment (its state, its config, the mock server), no arguments.
    fn spear(&self, base_url: &str) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_spear"));
        c.current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.state.parent().unwrap())
            .env("XDG_STATE_HOME", &self.state)
            .env("XDG_CONFIG_HOME", &self.config)
            .env("SPEAR_BASE_URL", base_url)
            .env("SPEAR_MODEL", "mock-model")
            .env("SPEAR_API_KEY", KEY)
            .stdin(Stdio::null());
        c
    }

    /// Run without a controlling terminal (a new session), as CI does.
    fn run(&self, base_url: &str, args: &[&str]) -> Output {
        self.detached(&self.command(base_url, args))
    }

    /// `spear ARGS` (any subcommand) without a controlling terminal.
    pub(crate) fn run_spear(&self, base_url: &str, args: &[&str]) -> Output {
        let mut c = self.spear(base_url);
        c.args(args);
        self.detached(&c)
    }

    fn detached(&self, c: &Command) -> Output {
        let program = c.get_program().to_owned();
        let mut detached = Command::new("setsid");
        detached
            .arg("-w")
            .arg(program)
            .args(c.get_args())
            .current_dir(&self.project)
            .env_clear()
            .envs(c.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .stdin(Stdio::null());
        detached
            .output()
            .expect("setsid (util-linux) is needed: install util-linux")
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.project.join(rel)).unwrap()
    }

    pub(crate) fn audit(&self) -> Vec<Value> {
        let log = spear::harness::audit::AuditPaths::new(&self.state, &self.project).log;
        lines(&log)
    }

    /// The records of the only session of the workspace.
    fn session(&self) -> (String, Vec<Value>) {
        let store =
            spear::agent::transcript::SessionStore::open_in(&self.state, &self.project).unwrap();
        let list = store.list().unwrap();
        assert_eq!(list.len(), 1, "{list:?}");
        let id = list[0].id.clone();
        (id.clone(), lines(&store.dir().join(format!("{id}.jsonl"))))
    }

    /// Every file Spear wrote for this run, as text.
    fn everything_written(&self) -> String {
        let mut all = String::new();
        for root in [&self.state, &self.config] {
            for f in walk(root) {
                all.push_str(&String::from_utf8_lossy(&std::fs::read(f).unwrap()));
            }
        }
        all
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON event: {l:?}: {e}"))
        })
        .collect()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The `tool` message answering `id` in a request body.
fn tool_message(body: &Value, id: &str) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no tool message for {id} in {body}"))["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn finished<'a>(events: &'a [Value], id: &str) -> &'a Value {
    &events
        .iter()
        .find(|e| e["type"] == "tool_call_finished" && e["call_id"] == id)
        .unwrap_or_else(|| panic!("no tool_call_finished for {id}"))["envelope"]
}

#[test]
fn spear_run_reads_patches_and_runs_a_command_and_every_record_shows_it() {
    let env = Env::new();
    let server = MockServer::start([
        tool_calls_answer(&[("call_read", "read_file", json!({"path": "hello.txt"}))]),
        tool_calls_answer(&[(
            "call_patch",
            "patch",
            json!({"path": "hello.txt", "edits": [{"old": "world", "new": "Spear"}]}),
        )]),
        tool_calls_answer(&[("call_run", "terminal", json!({"command": "cat hello.txt"}))]),
        text_answer("Changed world to Spear and checked it."),
    ]);
    let out = env.run(
        &server.base_url,
        &["--mode", "auto", "--json", "Change world to Spear"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The workspace.
    assert_eq!(env.read("hello.txt"), "Hello, Spear\n");
    // The events on stdout.
    let ev = events(&out);
    assert_eq!(finished(&ev, "call_read")["status"], "ok");
    assert_eq!(finished(&ev, "call_patch")["status"], "ok");
    let run = finished(&ev, "call_run");
    assert_eq!(run["status"], "ok", "{run}");
    assert!(
        run["stdout"].as_str().unwrap().contains("Hello, Spear"),
        "{run}"
    );
    assert_eq!(ev.last().unwrap()["type"], "done");
    assert_eq!(ev.last().unwrap()["reason"], "finished");
    let streamed: String = ev
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "Changed world to Spear and checked it.");
    // The requests the server received: each answer under its call's id, in order.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    for r in &reqs {
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(r.body["model"], "mock-model");
        assert_eq!(r.body["stream"], true);
        assert_eq!(r.body["tools"].as_array().unwrap().len(), 6);
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    assert!(tool_message(&reqs[1].body, "call_read").contains("Hello, world"));
    assert!(
        tool_message(&reqs[2].body, "call_patch")
            .to_lowercase()
            .contains("hello.txt")
    );
    assert!(tool_message(&reqs[3].body, "call_run").contains("Hello, Spear"));
    let ids: Vec<&str> = reqs[3].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_read", "call_patch", "call_run"]);
    // The session file: the conversation and the calls, under the session id the audit uses.
    let (id, session) = env.session();
    assert_eq!(session[0]["type"], "session");
    assert_eq!(session[0]["model"], "mock-model");
    let calls: Vec<&str> = session
        .iter()
        .filter(|r| r["event"]["type"] == "tool_call_finished")
        .map(|r| r["event"]["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["call_read", "call_patch", "call_run"]);
    assert_eq!(
        session.iter().filter(|r| r["type"] == "message").count(),
        8,
        "user, 3 x (assistant + tool), final assistant"
    );
    // The audit log: the patch and the command, under the same session.
    let audit = env.audit();
    let patch = audit
        .iter()
        .find(|r| r["tool"] == "patch")
        .expect("the patch is audited");
    assert_eq!(patch["session"], id.as_str());
    assert_eq!(patch["status"], "ok");
    let cmd = audit
        .iter()
        .find(|r| r["tool"] == "terminal")
        .expect("the command is audited");
    assert_eq!(cmd["target"], "cat hello.txt");
    assert_eq!(cmd["session"], id.as_str());
    // The key: sent to the server (above), and nowhere else.
    assert!(!text(&out).contains("7c1d0b5a"));
    let written = env.everything_written();
    assert!(
        written.contains("Hello, Spear"),
        "positive control: the records were read"
    );
    assert!(
        !written.contains("7c1d0b5a"),
        "the API key was written to a file"
    );
}

#[test]
fn in_safe_the_patch_is_denied_and_the_model_is_told_why() {
    let env = Env::new();
    let server = MockServer::start([
        tool_calls_answer(&[(
            "call_patch",
            "patch",
            json!({"path": "hello.txt", "edits": [{"old": "world", "new": "Spear"}]}),
        )]),
        text_answer("SAFE mode does not allow the change."),
    ]);
    let out = env.run(
        &server.base_url,
        &["--mode", "safe", "Change world to Spear"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(env.read("hello.txt"), "Hello, world\n");
    let told = tool_message(&server.requests()[1].body, "call_patch");
    assert!(
        told.starts_with("[denied]") && told.contains("SAFE"),
        "{told}"
    );
    // Human output: the text as it streamed and one line for the call with its status.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("✗ patch hello.txt [denied]"), "{stdout}");
    assert!(
        stdout.contains("SAFE mode does not allow the change."),
        "{stdout}"
    );
}

#[test]
fn a_dangerous_command_the_model_asks_for_is_refused_and_reported() {
    let env = Env::new();
    // Kept in Rust source and sent as data: it never reaches a shell.
    let dangerous = "rm -rf --no-preserve-root /";
    let server = MockServer::start([
        tool_calls_answer(&[("call_rm", "terminal", json!({"command": dangerous}))]),
        text_answer("That was refused."),
    ]);
    let out = env.run(
        &server.base_url,
        &["--mode", "auto", "--json", "clean everything"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let env_ = finished(&events(&out), "call_rm").clone();
    assert_eq!(env_["status"], "denied");
    assert_eq!(env_["class"], "DANGEROUS");
    assert!(tool_message(&server.requests()[1].body, "call_rm").contains("refused in every mode"));
    let audit = env.audit();
    assert!(
        audit
            .iter()
            .any(|r| r["class"] == "DANGEROUS" && r["decision"] == "denied"),
        "{audit:?}"
    );
    assert!(env.project.join("hello.txt").exists());
}

#[test]
fn in_ask_without_a_terminal_every_approval_is_cancelled() {
    let env = Env::new();
    let server = MockServer::start([
        tool_calls_answer(&[(
            "call_w",
            "write_file",
            json!({"path": "new.txt", "content": "x"}),
        )]),
        text_answer("It was cancelled."),
    ]);
    let out = env.run(
        &server.base_url,
        &["--mode", "ask", "--json", "write new.txt"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ev = events(&out);
    assert!(
        ev.iter()
            .any(|e| e["type"] == "approval_requested" && e["call_id"] == "call_w")
    );
    assert_eq!(finished(&ev, "call_w")["status"], "cancelled");
    assert!(!env.project.join("new.txt").exists());
    assert!(tool_message(&server.requests()[1].body, "call_w").starts_with("[cancelled]"));
}

#[test]
fn sigint_cancels_the_task_and_exits_130() {
    let env = Env::new();
    let server = MockServer::start([Reply::sse(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"thinking\"}}]}\n\n",
    )
    .ending(StreamEnd::Hang(Duration::from_millis(200)))]);
    let child = env
        .command(&server.base_url, &["--json", "think for a long time"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The request is in flight once the server has it: that count is itself what is awaited,
    // polled with a deadline (the server raises no event the test could block on).
    let mut waited = 0;
    while server.hits() == 0 {
        assert!(waited < 3000, "spear never reached the server");
        std::thread::sleep(Duration::from_millis(10));
        waited += 1;
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let ev = events(&out);
    assert_eq!(ev.last().unwrap()["type"], "done");
    assert_eq!(ev.last().unwrap()["reason"], "cancelled");
    // The connection was dropped, not left open.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(server.wait_closed(1, Duration::from_secs(10)));
}

#[test]
fn an_unreachable_server_a_bad_key_and_a_bad_config_each_exit_1_with_a_clear_message() {
    let env = Env::new();
    // A port that was just free on this machine's loopback: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = env.run(&format!("http://127.0.0.1:{port}/v1"), &["hello"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("cannot reach") && said.contains(&port.to_string()),
        "{said}"
    );
    // A bad key: the server says 401.
    let server = MockServer::start([Reply::error(401, "Incorrect API key provided")]);
    let out = env.run(&server.base_url, &["hello"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("401") && said.contains(&server.base_url),
        "{said}"
    );
    assert!(said.contains("SPEAR_API_KEY"), "{said}");
    assert!(!said.contains("7c1d0b5a"), "{said}");
    // A bad config: the file, the line, the key; nothing is sent.
    let cfg = env.config.join("spear").join("config.toml");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(&cfg, "mode = \"ask\"\nmax_tool_calls = \"many\"\n").unwrap();
    let server = MockServer::start([text_answer("never")]);
    let out = env.run(&server.base_url, &["hello"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("{}:2:", cfg.display())) && said.contains("`max_tool_calls`"),
        "{said}"
    );
    assert_eq!(server.hits(), 0);
    // A missing key: the provider names a variable that is not set.
    std::fs::write(
        &cfg,
        format!(
            "[providers.p]\nbase_url = \"{}\"\napi_key_env = \"P_KEY_UNSET\"\nmodel = \"m\"\n",
            server.base_url
        ),
    )
    .unwrap();
    let mut c = env.command(&server.base_url, &["hello"]);
    c.env_remove("SPEAR_API_KEY").env_remove("SPEAR_BASE_URL");
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no API key") && said.contains("P_KEY_UNSET"),
        "{said}"
    );
    assert_eq!(server.hits(), 0);
}

#[test]
fn spear_sessions_lists_the_run_and_resume_continues_it() {
    let env = Env::new();
    let server = MockServer::start([text_answer("First answer."), text_answer("Second answer.")]);
    let out = env.run(&server.base_url, &["first question"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let listed = Command::new(env!("CARGO_BIN_EXE_spear"))
        .args(["sessions", "--json"])
        .current_dir(&env.project)
        .env("XDG_STATE_HOME", &env.state)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{v}");
    assert_eq!(sessions[0]["title"], "first question");
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    let out = env.run(&server.base_url, &["--resume", &id, "second question"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let second = &server.requests()[1].body;
    let contents: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        contents,
        ["first question", "First answer.", "second question"]
    );
    let human = Command::new(env!("CARGO_BIN_EXE_spear"))
        .args(["sessions"])
        .current_dir(&env.project)
        .env("XDG_STATE_HOME", &env.state)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains(&id));
}

#[test]
fn spear_run_with_a_standard_classifies_and_offers_the_lookups_on_the_wire() {
    let env = Env::new();
    let code = env.project.parent().unwrap().join("fire-code.md");
    std::fs::write(
        &code,
        "# 4.2 Fire doors\nFire doors shall close within 30 seconds.\n",
    )
    .unwrap();
    let added = Command::new(env!("CARGO_BIN_EXE_spear"))
        .args(["standard", "add", code.to_str().unwrap()])
        .env_clear()
        .env("HOME", env.state.parent().unwrap())
        .env("XDG_STATE_HOME", &env.state)
        .env("XDG_CONFIG_HOME", &env.config)
        .output()
        .unwrap();
    assert!(added.status.success(), "{}", text(&added));

    // An unknown standard is refused before a session is made or the server is asked.
    let out = env.run("http://127.0.0.1:9/v1", &["--standard", "nope", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("no standard named `nope`"),
        "{}",
        text(&out)
    );
    let store = spear::agent::transcript::SessionStore::open_in(&env.state, &env.project).unwrap();
    assert!(store.list().unwrap().is_empty());

    let server = MockServer::start([
        tool_calls_answer(&[(
            "call_std",
            "standard_read",
            json!({"standard": "fire-code", "clause": "4.2"}),
        )]),
        text_answer("fire-code §4.2: \"Fire doors shall close within 30 seconds.\""),
    ]);
    let out = env.run(
        &server.base_url,
        &[
            "--mode",
            "safe",
            "--json",
            "--standard",
            "fire-code",
            "What does the standard say about fire doors?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ev = events(&out);
    let classified = ev
        .iter()
        .find(|e| e["type"] == "request_classified")
        .unwrap();
    assert_eq!(classified["class"], "NORMATIVE");
    assert_eq!(classified["by"], "rules");
    assert_eq!(finished(&ev, "call_std")["status"], "ok");
    assert_eq!(finished(&ev, "call_std")["tool"], "standard.read");
    let reqs = server.requests();
    let mut names: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "search_corpus",
            "standard_list",
            "standard_read",
            "standard_search"
        ]
    );
    assert!(tool_message(&reqs[1].body, "call_std").contains("close within 30 seconds"));
}

/// Issue 21: started where the state directory would lie inside the workspace (in `$HOME`, with
/// no XDG_STATE_HOME), Spear says so once, with the fix, and exits 2: the screen, `spear run`
/// and `spear sessions` alike. Nothing is created in the state directory.
#[test]
fn started_in_home_spear_says_once_where_its_state_would_lie_and_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    for args in [&["sessions"][..], &["run", "hello"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_spear"))
            .args(args)
            .current_dir(&home)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("SPEAR_BASE_URL", "http://127.0.0.1:9/v1")
            .env("SPEAR_MODEL", "m")
            .env("SPEAR_API_KEY", "sk-test")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.matches("inside the workspace").count(),
            1,
            "{args:?}: said once: {stderr}"
        );
        assert!(stderr.contains("XDG_STATE_HOME"), "{stderr}");
        assert!(
            !home.join(".local/state/spear").exists(),
            "nothing was made in the state directory"
        );
    }
}

/// Issue 22 item 2: a workspace that holds Spear's configuration directory (its config file,
/// rules and hooks) is refused at start, as one that holds the state directory is: the model's
/// commands could otherwise change what Spear allows. Exit 2, said once, with the fix.
#[test]
fn a_workspace_holding_spears_configuration_is_refused_at_start() {
    let base = tempfile::tempdir().unwrap();
    let base = base.path().canonicalize().unwrap();
    let project = base.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_spear"))
        .args(["sessions"])
        .current_dir(&project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", base.join("home"))
        .env("XDG_STATE_HOME", base.join("state"))
        .env("XDG_CONFIG_HOME", project.join(".config"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.matches("inside the workspace").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("XDG_CONFIG_HOME"), "{stderr}");
}

/// An approver script beside the project (outside it), only its owner may change.
fn approver_script(env: &Env, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let base = env.project.parent().unwrap();
    std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o700)).unwrap();
    let p = base.join(name);
    std::fs::write(
        &p,
        format!("#!/bin/sh\nid=$(sed -n 's/.*\"request_id\":\\([0-9]*\\).*/\\1/p')\n{body}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
    p
}

#[test]
fn an_external_approver_decides_and_anything_but_an_exact_allow_is_a_deny() {
    for (name, body, written, told) in [
        (
            "allow",
            r#"echo "{\"request_id\": $id, \"decision\": \"allow\"}""#,
            true,
            "",
        ),
        (
            "deny",
            r#"echo "{\"request_id\": $id, \"decision\": \"deny\", \"message\": \"use the staging dir\"}""#,
            false,
            "use the staging dir",
        ),
        (
            "wrong_id",
            r#"echo "{\"request_id\": 999999, \"decision\": \"allow\"}""#,
            false,
            "another request",
        ),
        ("crash", "exit 7", false, "exit 7"),
        ("hang", "sleep 30", false, "no answer"),
        ("silent", "true", false, "not JSON"),
    ] {
        let env = Env::new();
        let script = approver_script(&env, name, body);
        let server = MockServer::start([
            tool_calls_answer(&[(
                "call_w",
                "write_file",
                json!({"path": "new.txt", "content": "x\n"}),
            )]),
            text_answer("Done."),
        ]);
        let approver = script.display().to_string();
        let out = env.run(
            &server.base_url,
            &[
                "--mode",
                "ask",
                "--json",
                "--approver",
                &approver,
                "--approver-timeout",
                "2",
                "write new.txt",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
        assert_eq!(env.project.join("new.txt").exists(), written, "{name}");
        let told_model = tool_message(&server.requests()[1].body, "call_w");
        if written {
            assert!(!told_model.starts_with("[denied]"), "{name}: {told_model}");
        } else {
            assert!(told_model.starts_with("[denied]"), "{name}: {told_model}");
            assert!(told_model.contains(told), "{name}: {told_model}");
        }
    }
}

#[test]
fn an_approver_inside_the_workspace_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let inside = env.project.join("approve.sh");
    std::fs::write(&inside, "#!/bin/sh\necho yes\n").unwrap();
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o700)).unwrap();
    let server = MockServer::start([text_answer("never asked")]);
    let approver = inside.display().to_string();
    let out = env.run(&server.base_url, &["--approver", &approver, "hello"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out).contains("lies in the workspace"),
        "{}",
        text(&out)
    );
    assert!(
        server.requests().is_empty(),
        "nothing was asked of the model"
    );
}
