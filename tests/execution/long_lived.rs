//! Issue 24, item 1: a long-lived confined process (what an MCP stdio server runs as). It talks
//! over its stdin and stdout; it is confined as a command is (the workspace read-only, the
//! network only when granted and then a command's path, nothing of the host's outside the
//! system view); it lives past any command timeout; and it is gone, with everything it started,
//! when stopped or dropped. A profile that would let it write is refused.

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

type In = tokio::net::unix::pipe::Sender;
type Out = BufReader<tokio::net::unix::pipe::Receiver>;

async fn send(stdin: &mut In, line: &str) {
    stdin
        .write_all(format!("{line}\n").as_bytes())
        .await
        .unwrap();
}

async fn read_one(out: &mut Out) -> String {
    let mut got = String::new();
    tokio::time::timeout(HANG, out.read_line(&mut got))
        .await
        .expect("no answer")
        .unwrap();
    got
}

/// Send `line`, read one line back.
async fn ask(stdin: &mut In, out: &mut Out, line: &str) -> String {
    send(stdin, line).await;
    read_one(out).await
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

/// Granted no workspace (no `workspace_read`), it sees none of it and starts in its own home.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn granted_no_workspace_it_sees_none() {
    require_bwrap();
    let (_d, ws) = workspace();
    std::fs::write(ws.join("inside.txt"), "inside\n").unwrap();
    let mut none = read_only();
    none.workspace_read = false;
    let script = format!(
        "read -r x; echo \"pwd=$(pwd)\"; cat {}/inside.txt 2>/dev/null || echo unseen",
        ws.display()
    );
    let mut p = runner(&ws)
        .start_long_lived(&none, sh(&script))
        .await
        .expect("starts");
    let mut stdin = p.stdin.take().unwrap();
    let mut out = BufReader::new(p.stdout.take().unwrap());
    let pwd = ask(&mut stdin, &mut out, "go").await;
    assert!(!pwd.contains(ws.to_str().unwrap()), "{pwd}");
    assert_eq!(read_one(&mut out).await, "unseen\n");
    p.stop().await.unwrap();
}

/// A server that floods its stderr: only the last bytes are kept, and the log says how many
/// came before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_stderr_is_kept_bounded() {
    let (_d, ws) = workspace();
    let mut p = start(
        &ws,
        "i=0; while [ $i -lt 2000 ]; do echo \"line $i of noise on stderr\" >&2; i=$((i+1)); done; echo done",
    )
    .await;
    let log = p.keep_stderr(1024).expect("stderr is there to keep");
    let mut out = BufReader::new(p.stdout.take().unwrap());
    assert_eq!(read_one(&mut out).await, "done\n");
    tokio::time::timeout(HANG, p.exited())
        .await
        .unwrap()
        .unwrap();
    let text = tokio::time::timeout(HANG, async {
        loop {
            let t = log.text();
            if t.ends_with("line 1999 of noise on stderr\n") {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the last line reached the log");
    let kept = text.split_once('\n').map_or(0, |(_, rest)| rest.len());
    assert!(
        text.starts_with('[') && text.contains("earlier bytes not kept"),
        "{}",
        &text[..80]
    );
    assert!(kept <= 1024, "{kept} bytes kept");
}

#[tokio::test]
async fn a_profile_that_writes_is_refused() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    for (profile, why) in [(writable(), "not write"), (networked(), "not write")] {
        match r.start_long_lived(&profile, sh("cat")).await {
            Err(LongLivedError::Refused(msg)) => assert!(msg.contains(why), "{msg}"),
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(_) => panic!("started with a profile it may not have"),
        }
    }
}

/// With the network in its profile it gets a command's network path: slirp's interface and
/// DNS, and still no way to the host's loopback. Stopped, slirp goes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_network_it_gets_a_commands_path_and_never_host_loopback() {
    require_slirp();
    let (_d, ws) = workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut net_only = profile(&[spear::harness::primitives::Capability::Network]);
    net_only.egress.path = spear::harness::egress::NetworkPath::Full;
    let marker = format!("spear-long-lived-net-{}", std::process::id());
    let script = format!(
        r#"while read -r what; do
             case "$what" in
               iface) ip -4 addr show tap0 | grep -o 'inet [0-9./]*'; grep -m1 nameserver /etc/resolv.conf ;;
               host) for a in 10.0.2.2 127.0.0.1; do (timeout 3 bash -c "echo hi > /dev/tcp/$a/{port}") 2>/dev/null && echo connected-$a || echo refused-$a; done ;;
             esac
             echo end
           done; : {marker}"#
    );
    let mut p = runner(&ws)
        .start_long_lived(&net_only, sh(&script))
        .await
        .expect("a networked long-lived process starts");
    assert!(p.networked());
    let mut stdin = p.stdin.take().unwrap();
    let mut out = BufReader::new(p.stdout.take().unwrap());
    let got = until_end(&mut stdin, &mut out, "iface").await;
    assert!(
        got.contains("inet 10.0.2.100/24") && got.contains("nameserver 10.0.2.3"),
        "{got}"
    );
    let got = until_end(&mut stdin, &mut out, "host").await;
    assert!(
        got.contains("refused-10.0.2.2") && got.contains("refused-127.0.0.1"),
        "{got}"
    );
    assert!(
        listener.accept().is_err(),
        "the host loopback server saw a connection"
    );
    p.stop().await.expect("its death and slirp's are confirmed");
    assert_none_survive(&marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_its_network_is_the_egress_proxy_by_name() {
    let (_d, ws) = workspace();
    let origin = crate::origin::Origin::start(None);
    let rules = spear::harness::egress::HostRules::new(
        &[],
        &[format!("allowed.test:{}", origin.port())],
        &[],
    )
    .unwrap();
    let by_name = profile(&[spear::harness::primitives::Capability::Network]).with_egress(
        spear::harness::egress::Egress::by_name(std::sync::Arc::new(rules)),
    );
    let mut r = runner(&ws);
    r.resolve_egress_for_tests(
        spear::harness::sandbox::proxy::resolve::TableResolver::from_spec(
            "allowed.test=127.0.0.1;other.test=127.0.0.1",
            None,
        ),
    );
    r.exempt_egress_for_tests(origin.at);
    let script = format!(
        r#"while read -r what; do
             case "$what" in
               env) echo "$HTTPS_PROXY"; grep -c tap0 /proc/net/dev ;;
               get) curl -sS --max-time 10 http://allowed.test:{p}/x; echo; curl -sS --max-time 10 http://other.test:{p}/x | grep -o refused ;;
             esac
             echo end
           done"#,
        p = origin.port()
    );
    let mut p = r
        .start_long_lived(&by_name, sh(&script))
        .await
        .expect("a long-lived process on the proxy path starts");
    assert!(p.networked());
    let mut stdin = p.stdin.take().unwrap();
    let mut out = BufReader::new(p.stdout.take().unwrap());
    let got = until_end(&mut stdin, &mut out, "env").await;
    assert_eq!(got, "http://127.0.0.1:3128\n0\n", "{got}");
    let got = until_end(&mut stdin, &mut out, "get").await;
    assert!(got.starts_with("hello\n"), "{got}");
    assert!(
        got.contains("refused"),
        "an unlisted name must be refused: {got}"
    );
    assert_eq!(origin.received().len(), 1);
    p.stop().await.expect("its death is confirmed");
}

/// Send `line`; the lines answered before `end`.
async fn until_end(stdin: &mut In, out: &mut Out, line: &str) -> String {
    send(stdin, line).await;
    let mut got = String::new();
    loop {
        let l = read_one(out).await;
        if l == "end\n" || l.is_empty() {
            return got;
        }
        got.push_str(&l);
    }
}

/// Variables handed to a long-lived process (an MCP server's `env`) reach it, and never stand
/// on any command line (every local user can read those in /proc): bwrap's, its init's, or
/// the process's own. A command is never handed any.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handed_secrets_reach_the_process_and_no_command_line() {
    use spear::harness::command_policy::Secrets;
    const VALUE: &str = "handed-secret-9c1e4a77f2";
    let (_d, ws) = workspace();
    require_bwrap();
    let profile = read_only().with_secrets(Secrets::new(vec![(
        "SPEAR_TEST_HANDED".into(),
        VALUE.into(),
    )]));
    let r = runner(&ws);
    let mut p = r
        .start_long_lived(
            &profile,
            sh("while read -r what; do echo \"$SPEAR_TEST_HANDED\"; done"),
        )
        .await
        .expect("a long-lived process starts");
    let mut stdin = p.stdin.take().unwrap();
    let mut out = BufReader::new(p.stdout.take().unwrap());
    assert_eq!(ask(&mut stdin, &mut out, "x").await, format!("{VALUE}\n"));
    // While it runs: no process's command line holds the value.
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            assert!(
                !String::from_utf8_lossy(&cmd).contains(VALUE),
                "{:?} carries the value on its command line",
                e.path()
            );
        }
    }
    p.stop().await.unwrap();
    // A command with the same profile is refused, not run with the value.
    let req = spear::harness::command_runner::RunRequest {
        command: "echo $SPEAR_TEST_HANDED".into(),
        profile,
        timeout: None,
    };
    let got = r.run(&req, &mut spear::harness::process::NullSink).await;
    assert_ne!(
        got.status,
        spear::harness::primitives::ToolStatus::Ok,
        "{got:?}"
    );
    assert!(!got.stdout.contains(VALUE));
}
