//! Issue 24, the server: `spear mcp serve` driven by an rmcp client, as another agent drives it.
//! It lists the six coding tools and `classify`; reads, patches and runs commands through the
//! harness in each mode; refuses DANGEROUS in every mode; in ASK asks the client through
//! elicitation (its answer recorded as the MCP client's) and refuses a client that cannot be
//! asked, naming the mode that would run the call; every call is in the audit log under a
//! session named after the client; a malformed line is answered or ignored and the server goes
//! on serving; stdout carries nothing but JSON-RPC.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use spear::harness::audit::DecidedBy;

/// A guard against a hang, not a measurement.
const HANG: Duration = Duration::from_secs(120);

struct Ws {
    _dir: tempfile::TempDir,
    project: PathBuf,
    state: PathBuf,
    config: PathBuf,
}

impl Ws {
    fn new() -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (project, state, config) = (base.join("work"), base.join("state"), base.join("config"));
        for d in [&project, &state, &config] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(project.join("hello.txt"), "Hello, world\n").unwrap();
        Ws {
            _dir: dir,
            project,
            state,
            config,
        }
    }

    /// `spear mcp serve --mode MODE` on this workspace, with its own state and config.
    fn command(&self, mode: &str) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_spear"));
        c.args(["mcp", "serve", "--mode", mode, "--workspace"])
            .arg(&self.project)
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.state.parent().unwrap())
            .env("XDG_STATE_HOME", &self.state)
            .env("XDG_CONFIG_HOME", &self.config);
        c
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.project.join(rel)).ok()
    }

    fn audit(&self) -> Vec<spear::harness::audit::AuditRecord> {
        crate::audit_log::records(&self.state, &self.project)
    }
}

/// An MCP client: with `answer`, it declares elicitation and answers every question with it.
#[derive(Clone)]
struct Client {
    name: &'static str,
    answer: Option<(ElicitationAction, bool)>,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Client {
    fn new(name: &'static str, answer: Option<(ElicitationAction, bool)>) -> Client {
        Client {
            name,
            answer,
            asked: Default::default(),
        }
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let caps = if self.answer.is_some() {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new(self.name, "1.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        let (action, allow) = self
            .answer
            .clone()
            .expect("asked a client that cannot answer");
        Ok(ElicitResult::new(action).with_content(json!({ "allow": allow })))
    }
}

async fn start(ws: &Ws, mode: &str, client: Client) -> RunningService<RoleClient, Client> {
    let cmd = ws.command(mode).configure(|_| {});
    let transport = TokioChildProcess::new(cmd).expect("spawn spear mcp serve");
    tokio::time::timeout(HANG, client.serve(transport))
        .await
        .expect("the server did not start in time")
        .expect("initialize")
}

/// Call `tool` with `args`; the result's text and whether it is an error.
async fn call(c: &RunningService<RoleClient, Client>, tool: &str, args: Value) -> (String, bool) {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let r: CallToolResult = tokio::time::timeout(
        HANG,
        c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args)),
    )
    .await
    .expect("the call did not end in time")
    .expect("tools/call");
    let text = r
        .content
        .iter()
        .filter_map(|b| b.as_text())
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    if text.contains("bubblewrap (bwrap) is not installed") {
        panic!("the sandbox is missing: install bubblewrap ({text})");
    }
    (text, r.is_error == Some(true))
}

fn terminal(command: &str) -> Value {
    json!({ "command": command })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_the_coding_tools_and_classify_and_runs_them_in_auto() {
    let ws = Ws::new();
    let c = start(&ws, "auto", Client::new("agent-auto", None)).await;
    let tools = c.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "classify",
            "delete_file",
            "patch",
            "read_file",
            "search_files",
            "terminal",
            "write_file"
        ]
    );
    let (text, err) = call(&c, "read_file", json!({"path": "hello.txt"})).await;
    assert!(!err && text.contains("Hello, world"), "{text}");
    let (text, err) = call(
        &c,
        "patch",
        json!({"path": "hello.txt", "edits": [{"old": "world", "new": "MCP"}]}),
    )
    .await;
    assert!(!err, "{text}");
    assert_eq!(ws.read("hello.txt").as_deref(), Some("Hello, MCP\n"));
    let (text, err) = call(
        &c,
        "terminal",
        terminal("echo made > made.txt && cat made.txt"),
    )
    .await;
    assert!(!err && text.contains("made"), "{text}");
    assert_eq!(ws.read("made.txt").as_deref(), Some("made\n"));
    // DANGEROUS: refused by its class, even in AUTO.
    let (text, err) = call(&c, "terminal", terminal("rm -rf /")).await;
    assert!(err && text.contains("refused in every mode"), "{text}");
    let (text, err) = call(&c, "classify", json!({"command": "git status | head"})).await;
    let verdict: Value = serde_json::from_str(&text).unwrap();
    assert!(!err && verdict["class"] == "READ_ONLY", "{text}");
    let (text, err) = call(&c, "no_such_tool", json!({})).await;
    assert!(err && text.contains("no tool"), "{text}");
    c.cancel().await.unwrap();

    // The audit log has each call, under a session named after the client.
    let records = ws.audit();
    let ours: Vec<_> = records
        .iter()
        .filter(|r| r.session.starts_with("mcp-agent-auto-"))
        .collect();
    // Reads are not audited (the log holds every mutating attempt and every refusal).
    for tool in ["patch", "terminal"] {
        assert!(
            ours.iter().any(|r| r.tool == tool),
            "no {tool} record: {records:?}"
        );
    }
    let refused = ours
        .iter()
        .find(|r| r.target.as_deref() == Some("rm -rf /"))
        .expect("the refusal is recorded");
    assert!(
        matches!(
            refused.decided_by,
            Some(DecidedBy::Class | DecidedBy::Policy)
        ),
        "{refused:?}"
    );

    // The client's changes are checkpointed under its session, and `spear undo` takes the
    // last call's back.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_spear"))
        .arg("--workspace")
        .arg(&ws.project)
        .args(["undo", "--session", &refused.session])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", ws.state.parent().unwrap())
        .env("XDG_STATE_HOME", &ws.state)
        .env("XDG_CONFIG_HOME", &ws.config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        ws.read("made.txt"),
        None,
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(ws.read("hello.txt").as_deref(), Some("Hello, MCP\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_refuses_writes_and_ask_needs_a_client_that_can_be_asked() {
    let ws = Ws::new();
    let c = start(&ws, "safe", Client::new("agent-safe", None)).await;
    let (text, err) = call(&c, "terminal", terminal("cat hello.txt")).await;
    assert!(
        !err && text.contains("Hello"),
        "SAFE runs READ_ONLY: {text}"
    );
    let (text, err) = call(&c, "write_file", json!({"path": "x.txt", "content": "x"})).await;
    assert!(err, "{text}");
    assert_eq!(ws.read("x.txt"), None);
    c.cancel().await.unwrap();

    // ASK, and the client declared no elicitation: refused, with the mode that would run it.
    let c = start(&ws, "ask", Client::new("agent-plain", None)).await;
    let (text, err) = call(&c, "terminal", terminal("echo x > x.txt")).await;
    assert!(err && text.contains("--mode auto"), "{text}");
    assert_eq!(ws.read("x.txt"), None);
    let (text, err) = call(&c, "read_file", json!({"path": "hello.txt"})).await;
    assert!(
        !err && text.contains("Hello"),
        "reads need no answer: {text}"
    );
    c.cancel().await.unwrap();

    // ASK with a client that says yes: it was asked what will run, and the call ran.
    let yes = Client::new("agent-yes", Some((ElicitationAction::Accept, true)));
    let asked = yes.asked.clone();
    let c = start(&ws, "ask", yes).await;
    let (text, err) = call(&c, "terminal", terminal("echo yes > yes.txt")).await;
    assert!(!err, "{text}");
    assert_eq!(ws.read("yes.txt").as_deref(), Some("yes\n"));
    let questions = asked.lock().unwrap().clone();
    assert!(
        questions.len() == 1 && questions[0].contains("echo yes > yes.txt"),
        "{questions:?}"
    );
    c.cancel().await.unwrap();

    // ASK with a client that says no (accepting the form with allow = false, or declining).
    for (name, action, allow) in [
        ("agent-no", ElicitationAction::Accept, false),
        ("agent-decline", ElicitationAction::Decline, true),
    ] {
        let c = start(&ws, "ask", Client::new(name, Some((action, allow)))).await;
        let (text, err) = call(&c, "write_file", json!({"path": "no.txt", "content": "no"})).await;
        assert!(err && text.contains("said no"), "{name}: {text}");
        assert_eq!(ws.read("no.txt"), None);
        c.cancel().await.unwrap();
    }

    let records = ws.audit();
    let by = |session: &str| {
        records
            .iter()
            .filter(|r| r.session.starts_with(session))
            .filter_map(|r| r.decided_by)
            .collect::<Vec<_>>()
    };
    assert!(
        by("mcp-agent-yes-").contains(&DecidedBy::McpClient),
        "{records:?}"
    );
    assert!(
        by("mcp-agent-no-").contains(&DecidedBy::McpClient),
        "{records:?}"
    );
}

/// A line on stdin that is not JSON, or JSON that is no request, and the server still serves;
/// every line on stdout is a JSON-RPC message.
#[test]
fn malformed_input_leaves_the_server_serving_and_stdout_is_protocol_only() {
    let ws = Ws::new();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_spear"))
        .args(["mcp", "serve", "--mode", "auto", "--workspace"])
        .arg(&ws.project)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", ws.state.parent().unwrap())
        .env("XDG_STATE_HOME", &ws.state)
        .env("XDG_CONFIG_HOME", &ws.config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "{not json",
        "\u{0}\u{1}garbage\u{7f}",
        r#"{"foo":1}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"hello.txt"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"no/such/method"}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":"not an object"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
    ];
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    // A request line of 20 MB (past the transport's 16 MiB line bound) is dropped whole, and
    // a command's output reaches stdout only inside its result.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"huge.txt","content":"{}"}}}}}}"#,
        "a".repeat(20 << 20)
    );
    writeln!(stdin, "{huge}").unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"terminal","arguments":{{"command":"echo to-stdout; echo to-stderr >&2"}}}}}}"#
    )
    .unwrap();
    stdin.flush().unwrap();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = std::collections::BTreeMap::new();
    let mut all = Vec::new();
    for line in out.lines() {
        let line = line.unwrap();
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried something not JSON ({e}): {line}"));
        assert_eq!(msg["jsonrpc"], "2.0", "{line}");
        if let Some(id) = msg["id"].as_u64() {
            seen.insert(id, msg.clone());
        }
        all.push(line);
        // Replies come in any order.
        if [2, 3, 4, 5, 7].iter().all(|id| seen.contains_key(id)) {
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    let read = &seen[&2]["result"]["content"][0]["text"];
    assert!(
        read.as_str().is_some_and(|t| t.contains("Hello, world")),
        "{all:?}"
    );
    assert!(seen[&3].get("error").is_some(), "{all:?}");
    assert!(
        seen[&4].get("error").is_some() || seen[&4]["result"]["isError"] == true,
        "{all:?}"
    );
    assert!(
        seen[&5]["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() == 7),
        "{all:?}"
    );
}

/// A path the MCP server cannot be steered out of: the same gates as the model's calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_the_workspace_are_refused() {
    let ws = Ws::new();
    let outside: &Path = ws.state.parent().unwrap();
    std::fs::write(outside.join("secret.txt"), "outside\n").unwrap();
    let c = start(&ws, "auto", Client::new("agent-paths", None)).await;
    for path in [
        "../secret.txt",
        outside.join("secret.txt").to_str().unwrap(),
    ] {
        let (text, err) = call(&c, "read_file", json!({ "path": path })).await;
        assert!(err && !text.contains("outside\n"), "{path}: {text}");
    }
    // A command reaching out of the workspace reads nothing there, whatever its status.
    let (text, _) = call(&c, "terminal", terminal("cat ../secret.txt")).await;
    assert!(!text.contains("outside\n"), "{text}");
    c.cancel().await.unwrap();
}

/// Calls that may write take the workspace's write lock: a second server's write waits while
/// the first one's command runs, and runs once it ends. A read does not wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_from_two_servers_on_one_workspace_run_one_at_a_time() {
    let ws = Ws::new();
    let first = start(&ws, "auto", Client::new("agent-one", None)).await;
    let second = start(&ws, "auto", Client::new("agent-two", None)).await;
    let held = tokio::spawn(async move {
        let r = call(
            &first,
            "terminal",
            terminal("echo started > started; while [ ! -e go ]; do sleep 0.05; done; echo done"),
        )
        .await;
        first.cancel().await.unwrap();
        r
    });
    let started = ws.project.join("started");
    tokio::time::timeout(HANG, async {
        while !started.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the first command never started");
    let (text, err) = call(&second, "read_file", json!({"path": "hello.txt"})).await;
    assert!(
        !err && text.contains("Hello"),
        "a read does not wait: {text}"
    );
    let second = std::sync::Arc::new(second);
    let writer = {
        let second = second.clone();
        tokio::spawn(async move {
            call(
                &second,
                "write_file",
                json!({"path": "second.txt", "content": "2"}),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        ws.read("second.txt"),
        None,
        "the second write ran while the first held the lock"
    );
    std::fs::write(ws.project.join("go"), "").unwrap();
    let (text, err) = held.await.unwrap();
    assert!(!err && text.contains("done"), "{text}");
    let (text, err) = writer.await.unwrap();
    assert!(!err, "{text}");
    assert_eq!(ws.read("second.txt").as_deref(), Some("2"));
}

/// A command that prints 100 MB: the result the client gets is bounded, and says where the
/// whole output is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_output_reaches_the_client_bounded() {
    let ws = Ws::new();
    let c = start(&ws, "auto", Client::new("agent-flood", None)).await;
    let (text, _) = call(
        &c,
        "terminal",
        terminal("yes 0123456789abcdef | head -c 100000000"),
    )
    .await;
    assert!(
        text.len() < 1_000_000,
        "{} bytes reached the client",
        text.len()
    );
    assert!(
        text.contains("0123456789abcdef"),
        "{}",
        &text[..text.len().min(500)]
    );
    c.cancel().await.unwrap();
}
