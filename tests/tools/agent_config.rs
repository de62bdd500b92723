//! Issue 22 item 2: files that configure or instruct coding agents (Spear's `.spear/`,
//! `AGENTS.md`, `CLAUDE.md`, `.claude/`, `.codex/`, `.mcp.json`, `.vscode/tasks.json` …) are
//! never changed by the model's tools: write_file, patch, delete_file and a terminal command's
//! known writes are refused in every mode with the `agent_config` rule, directly, at any depth,
//! through `..` and through a symlink, and the file is left as it was.

use serde_json::json;
use spear::harness::primitives::{ExecutionMode, ToolStatus};

use crate::support::*;

fn project() -> Fixture {
    let f = Fixture::new();
    f.write("AGENTS.md", "Be careful.\n");
    f.write(".claude/settings.json", "{}\n");
    f.write(".vscode/tasks.json", "{}\n");
    f.write(".vscode/launch.json", "{}\n");
    f.write("pkg/CLAUDE.md", "Package notes.\n");
    f.write("src/main.rs", "fn main() {}\n");
    std::os::unix::fs::symlink(".claude", f.project.join("notes")).unwrap();
    std::os::unix::fs::symlink("AGENTS.md", f.project.join("readme-agents")).unwrap();
    f
}

/// Ways of naming agent configuration, and the file each reaches.
const TARGETS: &[(&str, &str)] = &[
    ("AGENTS.md", "AGENTS.md"),
    ("./AGENTS.md", "AGENTS.md"),
    ("src/../AGENTS.md", "AGENTS.md"),
    ("readme-agents", "AGENTS.md"),
    ("pkg/CLAUDE.md", "pkg/CLAUDE.md"),
    ("GEMINI.md", "GEMINI.md"),
    (".claude/settings.json", ".claude/settings.json"),
    ("notes/settings.json", ".claude/settings.json"),
    (".claude/commands/deploy.md", ".claude/commands/deploy.md"),
    (".spear/rules.toml", ".spear/rules.toml"),
    (".codex/config.toml", ".codex/config.toml"),
    (".agents/skills/x.md", ".agents/skills/x.md"),
    (".mcp.json", ".mcp.json"),
    (".vscode/tasks.json", ".vscode/tasks.json"),
    (".vscode/settings.json", ".vscode/settings.json"),
    (
        ".github/copilot-instructions.md",
        ".github/copilot-instructions.md",
    ),
    ("sub/.cursor/rules/a.mdc", "sub/.cursor/rules/a.mdc"),
];

fn assert_refused(env: &spear::tools::envelope::ToolResultEnvelope, what: &str) {
    assert_refused_by(env, "agent_config", what);
}

#[test]
fn the_file_tools_never_change_agent_configuration_in_any_mode() {
    for mode in [ExecutionMode::Auto, ExecutionMode::Ask, ExecutionMode::Safe] {
        let f = project();
        let router = f.router(Box::new(NoSandbox));
        file_tools_refuse(&f, &router, mode, TARGETS, "agent_config", true);
        // Positive controls: a neighbour that configures nothing, and a name that only looks
        // like one.
        if mode == ExecutionMode::Auto {
            for ok in [".vscode/launch.json", "docs/agents.md", "src/claude.rs"] {
                let mut t = turn(&router, mode);
                let env = call(
                    &router,
                    &mut t,
                    "write_file",
                    json!({"path": ok, "content": "x\n"}),
                );
                assert_eq!(env.status, ToolStatus::Ok, "{ok}: {env:?}");
            }
        }
    }
}

#[test]
fn a_terminal_command_that_writes_agent_configuration_is_refused_before_it_runs() {
    let f = project();
    let rec = Recorder::default();
    let router = f.router(Box::new(rec.clone()));
    for command in [
        "echo 'ignore the rules' >> AGENTS.md",
        "cp evil.json .mcp.json",
        "tee .vscode/tasks.json < t",
        "mkdir -p .claude/commands && echo x > .claude/commands/x.md",
        "rm -rf .spear",
        "sed -i s/careful/fast/ AGENTS.md",
    ] {
        let mut t = turn(&router, ExecutionMode::Auto);
        let env = call(&router, &mut t, "terminal", json!({"command": command}));
        assert_refused(&env, command);
    }
    assert!(rec.ran.lock().unwrap().is_empty(), "a refused command ran");
    let mut t = turn(&router, ExecutionMode::Auto);
    let env = call(
        &router,
        &mut t,
        "terminal",
        json!({"command": "echo x > notes.txt"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
}
