//! Host commands are answered by SpearHost and never reach a shell, even with a binary of the
//! same name first on PATH; with shell syntax around them they are refused. Knowledge search.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use spear::harness::primitives::{ExecutionMode::*, ToolStatus};
use spear::tools::host::HostConfig;
use spear::tools::refusal::Gate;

use crate::support::*;

#[test]
fn host_commands_never_reach_a_shell() {
    let f = Fixture::new();
    let bin = f.project.join("bin");
    let marker = f.base.join("marker");
    for name in ["spear-capability", "spear-knowledge"] {
        let p = f.write(
            &format!("bin/{name}"),
            format!("#!/bin/sh\necho ran >> '{}'\n", marker.display()),
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut bash = BashExecutor::new(&f.project);
    bash.path_prefix = Some(bin.clone());
    let ran = bash.ran.clone();
    let host = f.host(
        Box::new(bash),
        HostConfig {
            web_enabled: true,
            ..HostConfig::default()
        },
    );
    let r = f.router_for(host);
    let mut t = turn(&r, Auto);
    // The planted binary works when a shell runs it: the test can fail.
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "cat bin/spear-capability | sh"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{env:?}");
    assert!(
        marker.exists(),
        "the planted binary writes its marker when run"
    );
    std::fs::remove_file(&marker).unwrap();
    ran.lock().unwrap().clear();

    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "spear-capability list"}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    assert!(
        env.preview.contains("search_internet") && env.preview.contains("fetch_url"),
        "{}",
        env.preview
    );
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "spear-capability describe fetch_url"}),
    );
    assert!(env.preview.contains("save_as"), "{}", env.preview);
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "spear-capability describe nope"}),
    );
    assert_eq!(env.status, ToolStatus::NotFound);
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "spear-knowledge search anything"}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    for embedded in [
        "spear-capability list | cat",
        "spear-knowledge search x > out.txt",
        "ls && spear-capability list",
        "echo $(spear-capability list)",
        "bash -c 'spear-capability list'",
    ] {
        let env = call(&r, &mut t, "terminal", json!({"command": embedded}));
        assert_eq!(
            (env.status, env.gate),
            (ToolStatus::Denied, Some(Gate::Arguments)),
            "{embedded}"
        );
        assert!(env.reason.unwrap().contains("never handed to a shell"));
    }
    assert!(
        ran.lock().unwrap().is_empty(),
        "nothing reached the executor: {:?}",
        ran.lock().unwrap()
    );
    assert!(!marker.exists(), "a host command reached a shell");
}

#[test]
fn capability_list_is_empty_without_the_web() {
    let f = Fixture::new();
    let r = f.router(Box::new(Recorder::default()));
    let env = call(
        &r,
        &mut turn(&r, Safe),
        "terminal",
        json!({"command": "spear-capability list"}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    assert!(
        env.preview.contains("No external capabilities"),
        "{}",
        env.preview
    );
}

#[test]
fn knowledge_search_is_ranked_bounded_and_shows_sections() {
    let f = Fixture::new();
    f.write(
        "README.md",
        "# Spear\nA coding assistant.\n\n## Building\nRun make test to build.\n",
    );
    f.write(
        "AGENTS.md",
        "# Agents\nAlways run the sandbox tests before committing.\n",
    );
    f.write(
        "docs/sandbox.md",
        "# Sandbox\nThe sandbox uses bubblewrap. The sandbox is preflighted once.\n",
    );
    f.write(
        "notes/extra.md",
        "# Extra\nsandbox notes configured by path\n",
    );
    f.write(
        "src/main.rs",
        "// sandbox sandbox sandbox (code is not knowledge)\n",
    );
    for i in 0..20 {
        f.write(
            &format!("docs/more/{i}.md"),
            format!("# Page {i}\nsandbox page {i}\n"),
        );
    }
    let host = f.host(
        Box::new(Recorder::default()),
        HostConfig {
            knowledge_paths: vec!["notes".into()],
            ..HostConfig::default()
        },
    );
    let r = f.router_for(host);
    let mut t = turn(&r, Safe);
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "spear-knowledge search sandbox bubblewrap"}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    let hits: Vec<&str> = env.preview.lines().filter(|l| l.contains(".md:")).collect();
    assert_eq!(hits.len(), 10, "bounded: {}", env.preview);
    assert!(
        hits[0].contains("docs/sandbox.md:1"),
        "best first: {}",
        env.preview
    );
    assert!(!env.preview.contains("src/main.rs"));
    let all = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "spear-knowledge search configured"}),
    );
    assert!(all.preview.contains("notes/extra.md:1"), "{}", all.preview);
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "spear-knowledge show README.md:4"}),
    );
    assert_eq!(env.status, ToolStatus::Ok);
    assert!(env.preview.contains("Run make test"), "{}", env.preview);
    let env = call(
        &r,
        &mut t,
        "terminal",
        json!({"command": "spear-knowledge show ../other-repo/x.md:1"}),
    );
    assert_eq!(env.status, ToolStatus::NotFound);
}
