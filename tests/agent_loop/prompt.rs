//! The system prompt: Spear's text for the mode, then the AGENTS.md files from the workspace
//! root down to the working directory (root first), capped, a cut said; a file outside the
//! workspace reached through a symlink is never read.

use spear::agent::model::ChatMessage;
use spear::agent::prompt::AGENTS_MD_CAP;
use spear::agent::runtime::AgentRuntime;
use spear::harness::primitives::ExecutionMode;

use crate::support::*;

async fn system_prompt(f: &Fixture, cwd: &str, mode: ExecutionMode) -> (String, Vec<String>) {
    let model = ScriptedModel::new(vec![text("ok")]);
    let mut opts = f.options();
    opts.cwd = f.project.join(cwd);
    let mut rt = AgentRuntime::new(model.clone(), f.router(), opts);
    run(&mut rt, "hi", mode).await;
    let notes = rt.system_prompt().unwrap().notes.clone();
    match &model.requests()[0].messages[0] {
        ChatMessage::System { content } => (content.clone(), notes),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn agents_files_from_the_root_down_to_the_working_directory_in_order() {
    let f = Fixture::new();
    f.write("AGENTS.md", "ROOT RULE: run make test.\n");
    f.write("sub/AGENTS.md", "SUB RULE: no unsafe here.\n");
    f.write("other/AGENTS.md", "OTHER RULE\n");
    std::fs::create_dir_all(f.project.join("sub/deeper")).unwrap();
    // Outside the workspace, reached by a symlink placed where an AGENTS.md would be.
    let outside = f.state.join("secret.txt");
    std::fs::write(&outside, "HOST SECRET\n").unwrap();
    std::os::unix::fs::symlink(&outside, f.project.join("sub/deeper/AGENTS.md")).unwrap();
    let (prompt, notes) = system_prompt(&f, "sub/deeper", ExecutionMode::Safe).await;
    let root = prompt.find("ROOT RULE").expect("the root's AGENTS.md");
    let sub = prompt
        .find("SUB RULE")
        .expect("the working directory's parent's AGENTS.md");
    assert!(root < sub, "root first");
    assert!(!prompt.contains("OTHER RULE"));
    assert!(
        !prompt.contains("HOST SECRET"),
        "a symlink out of the workspace was followed"
    );
    assert!(prompt.contains("SAFE"));
    assert!(notes.is_empty(), "{notes:?}");
}

#[tokio::test]
async fn agents_files_are_capped_and_the_cut_is_said() {
    let f = Fixture::new();
    let big = "Keep functions short. ".repeat(AGENTS_MD_CAP / 10);
    f.write("AGENTS.md", &big);
    f.write("sub/AGENTS.md", "SUB RULE\n");
    let (prompt, notes) = system_prompt(&f, "sub", ExecutionMode::Auto).await;
    assert!(prompt.contains("Keep functions short."));
    assert!(prompt.len() < big.len(), "the file was not cut");
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("AGENTS.md was cut to"), "{notes:?}");
    assert!(prompt.contains("was cut to"), "the model is told too");
    assert!(prompt.contains("AUTO"));
}
