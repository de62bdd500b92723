//! Issue 22 item 2, the sandbox's side: agents' configuration in the workspace stays as it was
//! whatever a command does, including writers the classifier cannot see. Through the executor
//! the terminal tool uses (`builder::command_executor`): existing configuration, at the root and
//! deeper, is read-only; configuration a command creates at the root is removed again and the
//! run fails saying so; an ordinary file is still written.

use std::time::Duration;

use crate::support::*;
use spear::config::HarnessSettings;
use spear::harness::primitives::ToolStatus;

#[test]
fn agents_configuration_stays_as_it_was_and_what_a_command_creates_is_removed() {
    require_bwrap();
    let (_d, ws) = workspace();
    std::fs::write(ws.join("AGENTS.md"), "Be careful.\n").unwrap();
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    std::fs::write(ws.join(".claude/settings.json"), "{}\n").unwrap();
    std::fs::create_dir_all(ws.join("pkg/.codex")).unwrap();
    let exec = spear::agent::builder::command_executor(&ws, &HarnessSettings::default());
    let run = |command: &str| {
        exec.run(
            command,
            &writable(),
            Duration::from_secs(60),
            &mut spear::tools::executor::DiscardSink,
        )
        .result
    };
    // Writers a classifier would miss: an append through bash, a rename over the directory, a
    // new file in a nested agent directory. Each fails; the command itself goes on.
    let res = run(
        "echo x >> AGENTS.md; echo '{\"x\":1}' > .claude/settings.json; \
         mv .claude .claude-old; touch pkg/.codex/config.toml; echo ran > ran.txt",
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("AGENTS.md")).unwrap(),
        "Be careful.\n",
        "{res:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".claude/settings.json")).unwrap(),
        "{}\n"
    );
    assert!(!ws.join(".claude-old").exists());
    assert!(!ws.join("pkg/.codex/config.toml").exists());
    // Positive control: the command ran, and an ordinary file was written.
    assert_eq!(
        std::fs::read_to_string(ws.join("ran.txt")).unwrap(),
        "ran\n",
        "{res:?}"
    );
    // Configuration that was not there: created, then removed again, and the run says so.
    let res =
        run("echo '{\"mcpServers\":{}}' > .mcp.json; mkdir -p .spear && touch .spear/rules.toml");
    assert_eq!(res.status, ToolStatus::Failed, "{res:?}");
    let reason = res.reason.unwrap_or_default();
    assert!(
        reason.contains("`.mcp.json` (removed again)") && reason.contains("`.spear`"),
        "{reason}"
    );
    assert!(!ws.join(".mcp.json").exists());
    assert!(!ws.join(".spear").exists());
}
