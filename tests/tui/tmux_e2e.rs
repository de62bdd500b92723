//! The screen end to end, driven through tmux: Spear in ASK mode in a temporary git workspace
//! against the loopback model server; a request typed; the dialog shows the full command; `y`;
//! the workspace changed; F2 shows the call in the audit pane; a second call denied with `n`;
//! a `!COMMAND` asked and run the same way; Esc cancelling a hanging stream; `/quit`; the pane has left the alternate screen.
//! Needs tmux (`make` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::server::chunks::{text_answer, tool_calls_answer};
use crate::server::mock_server::{MockServer, Reply, StreamEnd};

struct Tmux {
    socket: String,
}

impl Tmux {
    /// Spear with `args` (after `--workspace PROJECT`) in a fresh tmux server's session `e2e`,
    /// 120x40, against `server`, with a clean environment under `base`; when Spear exits the
    /// pane prints `SPEAR-EXITED <status>` and stays.
    fn spear(name: &str, base: &Path, project: &Path, server: &MockServer, args: &str) -> Tmux {
        Tmux::spear_after(name, base, project, server, args, "")
    }

    /// As `spear`, with `prelude` (shell words) run in the pane first.
    fn spear_after(
        name: &str,
        base: &Path,
        project: &Path,
        server: &MockServer,
        args: &str,
        prelude: &str,
    ) -> Tmux {
        let tmux = Tmux {
            socket: format!("{name}-{}", std::process::id()),
        };
        let command = format!(
            "{prelude}env -i PATH='{path}' HOME='{home}' TERM=xterm-256color XDG_STATE_HOME='{home}/state' \
             XDG_CONFIG_HOME='{home}/config' SPEAR_BASE_URL='{url}' SPEAR_MODEL=mock-model \
             SPEAR_API_KEY=sk-e2e '{bin}' --workspace '{ws}' {args}; echo SPEAR-EXITED $?; sleep 60",
            path = std::env::var("PATH").unwrap_or_default(),
            home = base.display(),
            url = server.base_url,
            bin = env!("CARGO_BIN_EXE_spear"),
            ws = project.display(),
        );
        let cwd = project.display().to_string();
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            "120",
            "-y",
            "40",
            "-c",
            &cwd,
            &command,
        ]);
        tmux
    }

    /// As `spear_after` with a second's pause first, and everything the pane writes appended to
    /// `log` (tmux re-renders the screen, so bytes such as the bell or the keyboard protocol's
    /// are read there).
    fn spear_logged(
        name: &str,
        base: &Path,
        project: &Path,
        server: &MockServer,
        args: &str,
        log: &Path,
    ) -> Tmux {
        let tmux = Tmux::spear_after(name, base, project, server, args, "sleep 1; ");
        tmux.run(&[
            "pipe-pane",
            "-t",
            "e2e",
            "-o",
            &format!("cat >> '{}'", log.display()),
        ]);
        tmux
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux is needed for this test: apt-get install tmux (make test does it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-t", "e2e"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "e2e", "-l", text]);
    }

    /// Wait until the screen shows `what`; fail with the screen otherwise. The screen is
    /// polled: tmux has no event for "the pane now shows this", so the condition is awaited.
    fn wait_for(&self, what: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the screen never showed {what:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// Let the confirmation dialog's key guard pass (with a margin for a loaded machine).
fn past_the_guard() {
    std::thread::sleep(spear::tui::widgets::confirm::GUARD + Duration::from_millis(200));
}

fn workspace(base: &Path) -> PathBuf {
    let project = base.join("work");
    std::fs::create_dir_all(&project).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&project)
        .status();
    assert!(git.expect("git is needed: install git").success());
    std::fs::write(project.join("hello.txt"), "Hello, world\n").unwrap();
    project
}

#[test]
fn ask_approve_audit_deny_and_quit_through_tmux() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = workspace(&base);
    let edit = "sed -i s/world/Spear/ hello.txt";
    let server = MockServer::start([
        tool_calls_answer(&[("call_edit", "terminal", json!({ "command": edit }))]),
        text_answer("Changed it."),
        tool_calls_answer(&[("call_rm", "terminal", json!({ "command": "rm hello.txt" }))]),
        text_answer("Left it in place."),
        // A model that starts answering and then hangs: Esc cancels the turn.
        Reply::sse("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"pondering\"}}]}\n\n")
            .ending(StreamEnd::Hang(Duration::from_millis(200))),
    ]);
    // The screen takes `spear run`'s `--network` and `--model` (issue 21).
    let tmux = Tmux::spear(
        "spear-e2e",
        &base,
        &project,
        &server,
        "--mode ask --network --model mock-model",
    );
    let start = tmux.wait_for("Ask Spear");
    assert!(
        start.contains("net on") && start.contains("mock-model"),
        "{start}"
    );
    tmux.type_text("change world to Spear");
    tmux.keys(&["Enter"]);
    let dialog = tmux.wait_for("Spear asks");
    assert!(
        dialog.contains(edit),
        "the dialog shows the full command:\n{dialog}"
    );
    assert!(
        dialog.contains("hello.txt") && dialog.contains("WORKSPACE_MUTATING"),
        "{dialog}"
    );
    // The dialog ignores keys for its first GUARD; time itself is what is awaited here (the
    // dialog shows no sign when the guard ends), measured from when the dialog was seen.
    past_the_guard();
    tmux.keys(&["y"]);
    tmux.wait_for("Changed it.");
    assert_eq!(
        std::fs::read_to_string(project.join("hello.txt")).unwrap(),
        "Hello, Spear\n"
    );
    tmux.keys(&["F2"]);
    let audit = tmux.wait_for("approved");
    assert!(
        audit.contains("sed -i"),
        "the audit pane shows the call:\n{audit}"
    );
    tmux.keys(&["F2"]);
    tmux.type_text("now remove it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("rm hello.txt");
    tmux.wait_for("Spear asks");
    past_the_guard();
    tmux.keys(&["n"]);
    tmux.wait_for("Left it in place.");
    assert!(
        project.join("hello.txt").exists(),
        "the denied rm did not run"
    );
    tmux.type_text("/quit");
    tmux.keys(&["Enter"]);
    let after = tmux.wait_for("SPEAR-EXITED 0");
    assert!(!after.contains("Ask Spear"), "{after}");
    let alt = tmux.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]);
    assert_eq!(alt.trim(), "0", "the pane has left the alternate screen");
}

/// Issue 20 item 10: `spear run`'s line-mode question takes only a key pressed after it
/// appeared. A `y` typed while the model is still thinking (before the question) is discarded,
/// so the question still waits; the `n` typed after it answers.
#[test]
fn the_line_mode_question_ignores_keys_typed_before_it_appeared() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = workspace(&base);
    let server = MockServer::start([
        // The model takes a while: the early `y` lands in this time.
        tool_calls_answer(&[(
            "call_touch",
            "terminal",
            json!({ "command": "touch made.txt" }),
        )])
        .after(Duration::from_millis(1500)),
        text_answer("Did not make it."),
    ]);
    let tmux = Tmux::spear(
        "spear-line",
        &base,
        &project,
        &server,
        "run --mode ask 'make a file'",
    );
    // Typed ahead, before the question exists.
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["y", "Enter"]);
    tmux.wait_for("Allow? [y/N]");
    past_the_guard();
    std::thread::sleep(Duration::from_millis(500));
    let waiting = tmux.screen();
    assert!(
        !waiting.contains("SPEAR-EXITED") && !project.join("made.txt").exists(),
        "the early `y` answered the question:\n{waiting}"
    );
    tmux.keys(&["n", "Enter"]);
    let after = tmux.wait_for("SPEAR-EXITED");
    assert!(after.contains("Did not make it."), "{after}");
    assert!(!project.join("made.txt").exists(), "{after}");
}

/// Issue 21: the keyboard enhancement (so Shift+Enter is its own key) is pushed when the screen
/// starts and popped when it leaves, and SIGTERM leaves as /quit does: the terminal is given
/// back (tmux does not pass the protocol on, so its bytes are read from the pane's output).
#[test]
fn sigterm_gives_the_terminal_back_and_the_keyboard_flags_are_popped() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = workspace(&base);
    let server = MockServer::start([text_answer("unused")]);
    let log = base.join("pane.log");
    let tmux = Tmux::spear_logged(
        "spear-e2e-term",
        &base,
        &project,
        &server,
        "--mode ask",
        &log,
    );
    tmux.wait_for("Ask Spear");
    // Spear is the pane shell's child (env executes it).
    let shell = tmux.run(&["display-message", "-p", "-t", "e2e", "#{pane_pid}"]);
    let shell = shell.trim().to_string();
    let spear = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .find_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let after = stat.rsplit_once(") ")?.1;
            let ppid = after.split_whitespace().nth(1)?;
            (ppid == shell && stat.contains("(spear)"))
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
        .expect("spear runs in the pane");
    let killed = Command::new("kill")
        .args(["-TERM", &spear])
        .status()
        .unwrap();
    assert!(killed.success());
    let after = tmux.wait_for("SPEAR-EXITED");
    assert!(!after.contains("Ask Spear"), "{after}");
    let alt = tmux.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]);
    assert_eq!(alt.trim(), "0", "the pane has left the alternate screen");
    let written = std::fs::read(&log).unwrap();
    let at = |needle: &[u8]| written.windows(needle.len()).position(|w| w == needle);
    let pushed = at(b"\x1b[>1u").expect("the keyboard enhancement was pushed");
    let popped = at(b"\x1b[<1u").expect("the keyboard enhancement was popped");
    assert!(pushed < popped);
}

/// Issue 21: a 3,000-line result opened whole with Ctrl+O, searched and closed, in a real
/// terminal; and the bell byte written when a question opens (tmux reports no focus here, which
/// counts as not looking).
#[test]
fn a_long_output_is_read_whole_and_a_question_rings_the_bell() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = workspace(&base);
    let server = MockServer::start([
        tool_calls_answer(&[("call_seq", "terminal", json!({ "command": "seq 3000" }))]),
        text_answer("Counted."),
        tool_calls_answer(&[(
            "call_touch",
            "terminal",
            json!({ "command": "touch made.txt" }),
        )]),
        text_answer("Left it."),
    ]);
    let log = base.join("pane.log");
    let tmux = Tmux::spear_logged(
        "spear-e2e-view",
        &base,
        &project,
        &server,
        "--mode ask",
        &log,
    );
    tmux.wait_for("Ask Spear");
    tmux.type_text("count to 3000");
    tmux.keys(&["Enter"]);
    let cell = tmux.wait_for("Counted.");
    assert!(cell.contains("2988 earlier lines"), "{cell}");
    tmux.keys(&["C-o"]);
    let view = tmux.wait_for("of 3000");
    assert!(view.contains("lines 1–"), "{view}");
    tmux.type_text("/2999");
    tmux.keys(&["Enter"]);
    // The match is near the end: the view goes as far as it can (its last page).
    let found = tmux.wait_for("–3000 of 3000");
    assert!(found.lines().any(|l| l.trim() == "2999"), "{found}");
    tmux.keys(&["q"]);
    tmux.wait_for("Ask Spear");
    let bells = |bytes: &[u8]| bytes.iter().filter(|b| **b == 0x07).count();
    let before = bells(&std::fs::read(&log).unwrap_or_default());
    tmux.type_text("make a file");
    tmux.keys(&["Enter"]);
    tmux.wait_for("waiting for your answer");
    let start = Instant::now();
    while bells(&std::fs::read(&log).unwrap_or_default()) <= before {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no bell when the question opened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    past_the_guard();
    tmux.keys(&["n"]);
    tmux.wait_for("Left it.");
    assert!(!project.join("made.txt").exists());
}
