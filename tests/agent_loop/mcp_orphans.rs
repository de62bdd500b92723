//! Issue 24, the client's end: the person's MCP server is gone after the session, and after
//! Spear is SIGKILLed. `spear run` (the headless agent, against the loopback mock model) calls
//! the test server's `sleep` through the terminal tool; the test sees the server's processes
//! (found by a tag unique to the test in `/proc/*/cmdline`), then either lets the session end
//! or SIGKILLs Spear (its direct child here, so nothing else sends a signal), and requires every
//! process carrying the tag to be gone. A survivor is named with its parent, for the fix.
//!
//! The server is started through `/bin/sh`, which first leaves a keeper behind (`sleep` under a
//! tagged shell) and then execs the test server: the test server ends by itself when its stdin
//! closes, the keeper never does, so only the sandbox's own teardown can take it.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::server::chunks::{text_answer, tool_calls_answer};
use crate::server::mock_server::MockServer;

/// How long a killed Spear's server may take to go.
const GONE_WITHIN: Duration = Duration::from_secs(10);
/// How long the server may take to start once `spear run` is launched.
const STARTED_WITHIN: Duration = Duration::from_secs(30);

fn spear_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_spear"))
}

/// A process as `/proc` shows it.
#[derive(Debug)]
struct Proc {
    pid: u32,
    ppid: u32,
    argv: Vec<String>,
}

impl Proc {
    fn read(pid: u32) -> Option<Proc> {
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let argv = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        // `pid (comm) state ppid ...`: the command name may hold spaces and parentheses.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 1..];
        let ppid = after.split_whitespace().nth(1)?.parse().ok()?;
        Some(Proc { pid, ppid, argv })
    }

    /// The test server itself (not the bwrap that confines it, nor the keeper).
    fn is_server(&self) -> bool {
        self.argv.first() == Some(&spear_bin().display().to_string())
            && self.argv.iter().any(|a| a == "__mcp-test-server")
    }

    /// The keeper the server's shell left behind.
    fn is_keeper(&self, tag: &str) -> bool {
        self.argv.last() == Some(&keeper_tag(tag))
    }

    /// Its command line, the middle of a long one (bwrap's) left out.
    fn line(&self) -> String {
        let line = self.argv.join(" ");
        let chars: Vec<char> = line.chars().collect();
        if chars.len() <= 200 {
            return line;
        }
        let head: String = chars[..60].iter().collect();
        let tail: String = chars[chars.len() - 120..].iter().collect();
        format!("{head} … {tail}")
    }

    /// One line naming it and its parent, for a failure message.
    fn describe(&self) -> String {
        let parent = Proc::read(self.ppid)
            .map(|p| p.line())
            .unwrap_or_else(|| "(gone)".into());
        format!(
            "pid {} `{}`, parent pid {} `{parent}`",
            self.pid,
            self.line(),
            self.ppid
        )
    }
}

/// Live processes whose command line holds `tag`: the bwrap confining the server, the server,
/// the keeper. (A zombie's command line is empty: it is gone.)
fn tagged(tag: &str) -> Vec<Proc> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(Proc::read)
        .filter(|p| p.argv.iter().any(|a| a.contains(tag)))
        .collect()
}

fn keeper_tag(tag: &str) -> String {
    format!("{tag}-keeper")
}

fn describe_all(procs: &[Proc]) -> String {
    procs
        .iter()
        .map(Proc::describe)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Poll every 20 ms until `done` or `limit` passes; whether it came true.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A workspace, Spear's state and a config naming the test server tagged `tag` (started by a
/// shell that leaves the keeper behind), whose calls may take two minutes.
struct Env {
    _dir: tempfile::TempDir,
    base: PathBuf,
    project: PathBuf,
    state: PathBuf,
    config: PathBuf,
}

impl Env {
    fn new(tag: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (project, state, config) = (base.join("work"), base.join("state"), base.join("config"));
        for d in [&project, &state, &config.join("spear")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let bin = spear_bin();
        // `sh -c SCRIPT KEEPER`: `: ` after the sleep keeps the shell from exec'ing it, so the
        // keeper's command line keeps its tag.
        let script = format!(
            "sh -c 'sleep 3600; :' {} & exec \"$0\" __mcp-test-server {tag}",
            keeper_tag(tag)
        );
        let text = format!(
            "[mcp.servers.test]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {script:?}, {:?}]\n\
             read_paths = [{:?}]\nread_only_tools = [\"echo\", \"read\"]\n\
             call_timeout_seconds = 120\n",
            bin.display().to_string(),
            bin.parent().unwrap().display().to_string(),
        );
        std::fs::write(config.join("spear/config.toml"), text).unwrap();
        Env {
            _dir: dir,
            base,
            project,
            state,
            config,
        }
    }

    /// `spear run --mode auto` against `server`, started directly (the child is Spear itself,
    /// so `Child::kill` is a SIGKILL to Spear and to nothing else); its output goes to files.
    fn spawn_run(&self, server: &MockServer, tag: &str) -> Run {
        let child = Command::new(spear_bin())
            .args(["run", "--mode", "auto", "call the sleep tool"])
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.base)
            .env("XDG_STATE_HOME", &self.state)
            .env("XDG_CONFIG_HOME", &self.config)
            .env("SPEAR_BASE_URL", &server.base_url)
            .env("SPEAR_MODEL", "mock-model")
            .env("SPEAR_API_KEY", "sk-mcp-orphans")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(self.base.join("stdout")).unwrap())
            .stderr(std::fs::File::create(self.base.join("stderr")).unwrap())
            .spawn()
            .unwrap();
        Run {
            child,
            tag: tag.to_string(),
        }
    }

    fn output(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.base.join(name)).unwrap_or_default();
        format!("stdout:\n{}\nstderr:\n{}", read("stdout"), read("stderr"))
    }
}

/// Spear's process. Whatever of it and of the server is left when the test ends, passed or
/// failed, is SIGKILLed by pid: a failing run leaves no keeper behind for an hour.
struct Run {
    child: Child,
    tag: String,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for p in tagged(&self.tag) {
            if let Some(pid) = i32::try_from(p.pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// The model's script: call `test.sleep` for `seconds` through the terminal, then finish.
fn sleeping_model(seconds: u64) -> MockServer {
    let command = format!(
        "spear-capability call test.sleep '{}'",
        json!({ "seconds": seconds })
    );
    MockServer::start([
        tool_calls_answer(&[("call_1", "terminal", json!({ "command": command }))]),
        text_answer("Done."),
    ])
}

fn tag(what: &str) -> String {
    format!("tag-orphans-{what}-{}", std::process::id())
}

/// Wait for the confined server of `run` and its keeper to run; fails with Spear's output and
/// what the model was told when they do not (Spear ended, or took too long), saying what to
/// install when the sandbox is missing.
fn wait_for_server(env: &Env, server: &MockServer, run: &mut Run) {
    let (child, tag) = (&mut run.child, run.tag.as_str());
    let both = || {
        let running = tagged(tag);
        running.iter().any(Proc::is_server) && running.iter().any(|p| p.is_keeper(tag))
    };
    let started = wait_for(STARTED_WITHIN, || {
        both() || child.try_wait().unwrap().is_some()
    });
    if started && both() {
        return;
    }
    let told: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    let said = format!("{}\nthe model was sent:\n{}", env.output(), told.join("\n"));
    if said.contains("bubblewrap (bwrap) is not installed") {
        panic!("the sandbox is missing: install bubblewrap\n{said}");
    }
    panic!(
        "the MCP server and its keeper never ran (Spear: {:?}; running: {})\n{said}",
        child.try_wait().unwrap(),
        describe_all(&tagged(tag)),
    );
}

/// Spear SIGKILLed in the middle of a call: nothing of the server outlives it.
#[test]
fn the_server_is_gone_after_spear_is_sigkilled() {
    let t = tag("sigkill");
    let env = Env::new(&t);
    let server = sleeping_model(60);
    let mut run = env.spawn_run(&server, &t);
    wait_for_server(&env, &server, &mut run);
    // The call is in flight: the model asked for it and has not been answered.
    assert!(
        wait_for(STARTED_WITHIN, || server.hits() >= 1),
        "{}",
        env.output()
    );
    assert_eq!(server.hits(), 1, "the sleep ended early:\n{}", env.output());
    let before = tagged(&t);

    run.child.kill().unwrap();
    let status = run.child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL),
        "{status:?}"
    );
    let gone = wait_for(GONE_WITHIN, || tagged(&t).is_empty());
    let left = tagged(&t);
    assert!(
        gone,
        "{} process(es) of the MCP server outlived a SIGKILLed Spear by {GONE_WITHIN:?}:\n{}\n\
         (running before the kill:\n{})",
        left.len(),
        describe_all(&left),
        describe_all(&before)
    );
}

/// A session that ends by itself ends its server with it.
#[test]
fn the_server_is_gone_after_the_session() {
    let t = tag("session");
    let env = Env::new(&t);
    let server = sleeping_model(1);
    let mut run = env.spawn_run(&server, &t);
    wait_for_server(&env, &server, &mut run);
    let status = run.child.wait().unwrap();
    assert!(status.success(), "{status:?}\n{}", env.output());
    // The call ran to its end and its result went back to the model.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}\n{}", env.output());
    assert!(
        requests[1].body.to_string().contains("slept"),
        "{}",
        requests[1].body
    );
    let left = tagged(&t);
    assert!(
        left.is_empty(),
        "{} process(es) of the MCP server outlived the session:\n{}",
        left.len(),
        describe_all(&left)
    );
}
