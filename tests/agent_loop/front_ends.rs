//! One call pipeline, whatever asked: the same command through `spear exec`, `spear tool
//! terminal` and a model's call (`spear run` against the loopback mock server) reaches the same
//! decision and leaves an audit record of the same shape (the same keys, decision, class, who
//! decided, status). All three run the real binary, the real wiring and the real sandbox,
//! without a controlling terminal (so ASK is answered `cancelled`, never a silent yes).
//!
//! The screen's `!COMMAND` is the fourth: the screen sends it to the session actor as a
//! `RunCommand` op, so the row drives that actor in-process, built by the library's builder as
//! the binary builds it, and answers a question as nobody at the screen would: not at all
//! (`cancelled`).

use std::collections::BTreeSet;
use std::process::Output;

use serde_json::{Value, json};

use crate::run_cli::Env;
use crate::server::chunks::{text_answer, tool_calls_answer};
use crate::server::mock_server::MockServer;

/// One command in one mode, and what every front end must decide.
struct Row {
    mode: &'static str,
    command: &'static str,
    decision: &'static str,
    class: &'static str,
    decided_by: Option<&'static str>,
}

const ROWS: &[Row] = &[
    Row {
        mode: "auto",
        command: "cat hello.txt",
        decision: "allowed",
        class: "READ_ONLY",
        decided_by: Some("mode"),
    },
    Row {
        mode: "safe",
        command: "touch made.txt",
        decision: "denied",
        class: "WORKSPACE_MUTATING",
        decided_by: Some("mode"),
    },
    Row {
        mode: "ask",
        command: "touch made.txt",
        decision: "cancelled",
        class: "WORKSPACE_MUTATING",
        decided_by: None,
    },
    Row {
        mode: "auto",
        command: "rm -rf /",
        decision: "denied",
        class: "DANGEROUS",
        // Refused by its class, in every mode (issue 22: the record names who decided).
        decided_by: Some("class"),
    },
];

/// A front end: runs `row` in `env` and hands back the process's output (the audit record is
/// read afterwards, the same way for all).
type FrontEnd = fn(&Env, &Row) -> Output;

const FRONT_ENDS: &[(&str, FrontEnd)] = &[
    ("spear exec", via_exec),
    ("spear tool terminal", via_tool),
    ("a model's call (spear run)", via_model),
    (
        "the screen's !COMMAND (the session actor)",
        via_screen_command,
    ),
];

fn via_exec(env: &Env, row: &Row) -> Output {
    env.run_spear(
        "http://127.0.0.1:9",
        &["exec", "--mode", row.mode, "--", row.command],
    )
}

fn via_tool(env: &Env, row: &Row) -> Output {
    let args = json!({ "command": row.command }).to_string();
    env.run_spear(
        "http://127.0.0.1:9",
        &["tool", "terminal", &args, "--mode", row.mode],
    )
}

fn via_model(env: &Env, row: &Row) -> Output {
    let server = MockServer::start([
        tool_calls_answer(&[("call_1", "terminal", json!({ "command": row.command }))]),
        text_answer("Done."),
    ]);
    env.run_spear(
        &server.base_url,
        &["run", "--mode", row.mode, "run the command"],
    )
}

fn via_screen_command(env: &Env, row: &Row) -> Output {
    use spear::agent::event::AgentEvent;
    use spear::agent::session::SessionOp;
    use std::os::unix::process::ExitStatusExt;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut said = Vec::new();
    rt.block_on(async {
        let place = spear::agent::builder::Place::of(
            spear::harness::workspace::Workspace::new(&env.project).unwrap(),
            env.project.clone(),
            env.state().to_path_buf(),
        );
        let options = spear::agent::runtime::RuntimeOptions {
            max_tool_calls: 50,
            response_max_tokens: 1000,
            context_window: None,
            cwd: env.project.clone(),
        };
        let actor = spear::agent::builder::SessionBuilder::new(
            place,
            spear::config::HarnessSettings::default(),
            "screen",
        )
        .session::<crate::support::ScriptedModel>(
            None,
            Box::new(|_: &str| Err("no model".into())),
            options,
            row.mode.parse().unwrap(),
        )
        .unwrap();
        let (handle, mut streams, _join) = actor.spawn();
        handle.send(SessionOp::RunCommand {
            call_id: "you-1".into(),
            command: row.command.into(),
        });
        while let Some(e) = streams.agent.recv().await {
            said.push(format!("{e:?}"));
            match e {
                AgentEvent::ApprovalRequested { request } => {
                    handle.send(SessionOp::Answer {
                        request_id: request.id,
                        decision: spear::harness::command_policy::ApprovalDecision::Cancel(
                            "nobody answered at the screen".into(),
                        ),
                    });
                }
                AgentEvent::Done { .. } => break,
                _ => {}
            }
        }
        handle.send(SessionOp::Quit);
    });
    Output {
        status: std::process::ExitStatus::from_raw(0),
        stdout: Vec::new(),
        stderr: said.join("\n").into_bytes(),
    }
}

/// The one audit record of the terminal call a front end made, given the records before it.
fn terminal_record(env: &Env, before: usize) -> Value {
    let new: Vec<Value> = env
        .audit()
        .into_iter()
        .skip(before)
        .filter(|r| r["tool"] == "terminal")
        .collect();
    assert_eq!(new.len(), 1, "one terminal record: {new:?}");
    new.into_iter().next().unwrap()
}

fn keys(record: &Value) -> BTreeSet<String> {
    record.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn every_front_end_takes_the_same_decision_and_leaves_the_same_record() {
    for row in ROWS {
        let env = Env::new();
        let mut seen: Vec<(&str, Value)> = Vec::new();
        for (name, front_end) in FRONT_ENDS {
            let before = env.audit().len();
            let out = front_end(&env, row);
            let record = terminal_record(&env, before);
            let what = format!(
                "{name}, {} `{}`: {record}\n{}",
                row.mode,
                row.command,
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(record["decision"], row.decision, "{what}");
            assert_eq!(record["class"], row.class, "{what}");
            assert_eq!(record["target"], row.command, "{what}");
            assert_eq!(
                record.get("decided_by").and_then(Value::as_str),
                row.decided_by,
                "{what}"
            );
            seen.push((name, record));
        }
        // Everything but the values that name the process and the time is the same.
        let (first_name, first) = &seen[0];
        for (name, record) in &seen[1..] {
            assert_eq!(
                keys(record),
                keys(first),
                "{name} and {first_name} on {} `{}`",
                row.mode,
                row.command
            );
            for k in [
                "decision",
                "class",
                "status",
                "mode",
                "refusal_rule",
                "decided_by",
            ] {
                assert_eq!(record.get(k), first.get(k), "{k}: {name} and {first_name}");
            }
        }
    }
}
