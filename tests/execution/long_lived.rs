//! Issue 24, item 1: a long-lived confined process (what an MCP stdio server runs as). It talks
//! over its stdin and stdout; it is confined as a command is (the workspace read-only, no
//! network, nothing of the host's outside the system view); it lives past any command timeout;
//! and it is gone, with everything it started, when stopped or dropped. A profile that would
//! let it write or reach the network is refused.

use std::ffi::OsString;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::support::*;
use spear::harness::command_runner::LongLivedError;
use spear::harness::sandbox::LongLived;

/// A guard against a hang, not a measurement.
const HANG: Duration = Duration::from_secs(30);

fn sh(script: &str) -> Vec<OsString> {
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

async fn start(ws: &std::path::Path, script: &str) -> LongLived {
    require_bwrap();
    runner(ws)
        .start_long_lived(&read_only(), sh(script))
        .await
        .expect("a long-lived process starts")
}

/// Send `line`, read one line back.
async fn ask(
    stdin: &mut tokio::net::unix::pipe::Sender,
    out: &mut BufReader<tokio::net::unix::pipe::Receiver>,
    line: &str,
) -> String {
    stdin
        .write_all(format!("{line}\n").as_bytes())
        .await
        .unwrap();
    let mut got = String::new();
    tokio::time::timeout(HANG, out.read_line(&mut got))
        .await
        .expect("no answer")
        .unwrap();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_talks_over_stdio_for_as_long_as_it_lives_confined_as_a_command() {
    let (_d, ws) = workspace();
    std::fs::write(ws.join("inside.txt"), "inside\n").unwrap();
    let outside = ws.parent().unwrap().join("outside-secret.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    // One answer per request line: what the request asked for, as the server sees it.
    let script = format!(
        r#"while read -r what; do
             case "$what" in
               read) cat inside.txt ;;
               outside) cat {out} 2>/dev/null || echo unreadable ;;
               write) (echo x > written.txt) 2>/dev/null && echo wrote || echo refused ;;
               net) (exec 3<>/dev/tcp/127.0.0.1/9) 2>/dev/null && echo connected || echo no-network ;;
               *) echo "echo $what" ;;
             esac
           done"#,
        out = outside.display()
    );
    let mut p = start(&ws, &script).await;
    let mut stdin = p.stdin.take().unwrap();
    let mut out = BufReader::new(p.stdout.take().unwrap());
    assert_eq!(ask(&mut stdin, &mut out, "hello").await, "echo hello\n");
    assert_eq!(ask(&mut stdin, &mut out, "read").await, "inside\n");
    assert_eq!(ask(&mut stdin, &mut out, "outside").await, "unreadable\n");
    assert_eq!(ask(&mut stdin, &mut out, "write").await, "refused\n");
    assert!(!ws.join("written.txt").exists());
    assert_eq!(ask(&mut stdin, &mut out, "net").await, "no-network\n");
    // Past the command time limit of the test runner's config: still there.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(ask(&mut stdin, &mut out, "later").await, "echo later\n");
    // stdin closed: the server's loop ends and so does the sandbox.
    drop(stdin);
    let mut rest = String::new();
    out.read_to_string(&mut rest).await.unwrap();
    assert_eq!(rest, "");
    tokio::time::timeout(HANG, p.exited())
        .await
        .expect("the process did not end with its stdin")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_or_dropped_it_is_gone_with_everything_it_started() {
    let (_d, ws) = workspace();
    for how in ["stop", "drop"] {
        let marker = format!("spear-long-lived-{how}-{}", std::process::id());
        // It starts a child of its own, then waits on stdin forever.
        let p = start(
            &ws,
            &format!("sleep 1000 & echo started; read -r x; : {marker}"),
        )
        .await;
        let mut p = p;
        let mut out = BufReader::new(p.stdout.take().unwrap());
        let mut line = String::new();
        tokio::time::timeout(HANG, out.read_line(&mut line))
            .await
            .expect("never started")
            .unwrap();
        assert_eq!(line, "started\n");
        assert!(
            !processes_with(&marker).is_empty(),
            "positive control: the marked process is visible from the host"
        );
        match how {
            "stop" => p.stop().await.expect("its death is confirmed"),
            _ => drop(p),
        }
        assert_none_survive(&marker).await;
    }
}

#[tokio::test]
async fn a_profile_that_writes_or_reaches_the_network_is_refused() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let net_only = profile(&[spear::harness::primitives::Capability::Network]);
    for (profile, why) in [
        (writable(), "not write"),
        (networked(), "not write"),
        (net_only, "network"),
    ] {
        match r.start_long_lived(&profile, sh("cat")).await {
            Err(LongLivedError::Refused(msg)) => assert!(msg.contains(why), "{msg}"),
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(_) => panic!("started with a profile it may not have"),
        }
    }
}
