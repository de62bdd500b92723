//! What a sandboxed command can see and touch.

use std::path::Path;

use crate::support::*;
use spear::harness::primitives::ToolStatus;

#[tokio::test]
async fn a_command_runs_in_the_workspace_with_a_private_home_and_tmp() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let res = run(
        &r,
        read_only(),
        "echo pwd=$PWD; echo home=$HOME; echo tmp=$TMPDIR; ls -A $HOME | wc -l",
    )
    .await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(
        res.stdout.contains(&format!("pwd={}", ws.display())),
        "{res:?}"
    );
    assert!(res.stdout.contains("tmp=/tmp"), "{res:?}");
    assert!(
        res.stdout.ends_with("0\n"),
        "HOME must start empty: {res:?}"
    );
    assert_eq!(res.exit_code, Some(0));
}

#[tokio::test]
async fn writes_outside_the_workspace_do_not_reach_the_host() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let marker = format!("spear-outside-{}", std::process::id());
    let host_tmp = std::env::temp_dir().join(&marker);
    // Each write says whether it landed inside the sandbox, where /tmp and $HOME are its own.
    let cmd = format!(
        "echo x > /tmp/{marker} && echo tmp-written; echo x > $HOME/{marker} && echo home-written; \
         echo x > {ws}/../{marker} ; touch /usr/{marker} /etc/{marker} 2>/dev/null; \
         cat /tmp/{marker} $HOME/{marker}; echo done",
        ws = ws.display()
    );
    let res = run(&r, writable(), &cmd).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    // Positive control: the writes to /tmp and $HOME succeeded, in the sandbox.
    assert!(
        res.stdout.contains("tmp-written\nhome-written\nx\nx\ndone"),
        "{res:?}"
    );
    assert!(!host_tmp.exists(), "a write to /tmp reached the host");
    assert!(
        !ws.parent().unwrap().join(&marker).exists(),
        "a write beside the workspace reached the host"
    );
    assert!(!Path::new("/usr").join(&marker).exists() && !Path::new("/etc").join(&marker).exists());
    if let Some(home) = std::env::var_os("HOME") {
        assert!(
            !Path::new(&home).join(&marker).exists(),
            "a write to $HOME reached the host"
        );
    }
}

#[tokio::test]
async fn host_home_files_and_etc_secrets_are_unreadable() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let home = std::env::var("HOME").expect("HOME is set");
    let secret = Path::new(&home).join(format!(".spear-secret-{}", std::process::id()));
    std::fs::write(&secret, "TOPSECRET").unwrap();
    let cmd = format!(
        "cat {s} $HOME/{n} 2>&1; cat /etc/shadow /etc/gshadow 2>&1; ls /etc/ssh 2>&1; env; \
         echo probed",
        s = secret.display(),
        n = secret.file_name().unwrap().to_string_lossy()
    );
    let res = run(&r, writable(), &cmd).await;
    // Positive control: the secret is there for the host to read, and the probe ran.
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "TOPSECRET");
    std::fs::remove_file(&secret).unwrap();
    assert!(res.stdout.ends_with("probed\n"), "{res:?}");
    assert!(!res.stdout.contains("TOPSECRET"), "{res:?}");
    assert!(
        !res.stdout.contains("root:"),
        "shadow was readable: {res:?}"
    );
    assert!(!res.stdout.contains("ssh_host_"), "{res:?}");
}

#[tokio::test]
async fn secret_looking_variables_never_reach_a_command() {
    let (_d, ws) = workspace();
    let mut cfg = config(&ws);
    cfg.host_env
        .push(("OPENAI_API_KEY".into(), "sk-test-abcdefghijklmnop".into()));
    cfg.host_env.push(("LANG".into(), "C.UTF-8".into()));
    cfg.host_env
        .push(("TERM".into(), "ghp_abcdefghijklmnopqrstuvwxyz".into()));
    let r = spear::harness::command_runner::CommandRunner::new(cfg).unwrap();
    let res = run(&r, read_only(), "env").await;
    assert!(res.stdout.contains("LANG=C.UTF-8"), "{res:?}");
    assert!(
        !res.stdout.contains("sk-test") && !res.stdout.contains("ghp_"),
        "{res:?}"
    );
}

#[tokio::test]
async fn a_read_only_command_cannot_write_the_workspace() {
    let (_d, ws) = workspace();
    std::fs::write(ws.join("file"), "original").unwrap();
    let r = runner(&ws);
    let res = run(
        &r,
        read_only(),
        "touch new; echo changed > file; rm file; mkdir d; echo end",
    )
    .await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(res.stderr.contains("Read-only file system"), "{res:?}");
    assert!(!ws.join("new").exists() && !ws.join("d").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("file")).unwrap(),
        "original"
    );
}

fn git_workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let (d, ws) = workspace();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    (d, ws)
}

#[tokio::test]
async fn git_hooks_and_config_stay_read_only_whatever_is_renamed() {
    let (_d, ws) = git_workspace();
    let r = runner(&ws);
    // The rest of .git stays writable (git must be able to commit).
    let res = run(&r, writable(), "echo x > .git/objects/o && echo ok").await;
    assert_eq!(res.exit_code, Some(0), "{res:?}");
    let tricks = [
        "echo evil > .git/hooks/pre-commit",
        "echo '[core] fsmonitor = evil' >> .git/config",
        "mv .git g && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit",
        "mv .git/hooks h && mkdir .git/hooks && echo evil > .git/hooks/pre-commit",
        "rm -rf .git/hooks && mkdir .git/hooks && echo evil > .git/hooks/pre-commit",
        "rm -f .git/config && echo evil > .git/config",
        "cp -r .git g2 && rm -rf .git; mv g2 .git && echo evil > .git/hooks/pre-commit",
    ];
    for t in tricks {
        let res = run(&r, writable(), t).await;
        assert_ne!(res.exit_code, Some(0), "{t} succeeded: {res:?}");
    }
    assert_eq!(std::fs::read_dir(ws.join(".git/hooks")).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
}

#[tokio::test]
async fn absent_protected_paths_cannot_be_created_and_leave_no_mount_point() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let res = run(
        &r,
        writable(),
        "mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit",
    )
    .await;
    assert_ne!(res.exit_code, Some(0), "{res:?}");
    assert!(
        !ws.join(".git").exists(),
        "a placeholder or a .git was left behind"
    );
    // .git present but hooks absent: the placeholder goes into .git and is removed afterwards.
    std::fs::create_dir(ws.join(".git")).unwrap();
    let res = run(&r, writable(), "mkdir .git/hooks || echo refused").await;
    assert!(res.stdout.contains("refused"), "{res:?}");
    let left: Vec<_> = std::fs::read_dir(ws.join(".git"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "mount points left behind: {left:?}");
    let top: Vec<_> = std::fs::read_dir(&ws)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(top, vec![std::ffi::OsString::from(".git")]);
}

#[tokio::test]
async fn host_processes_cannot_be_traced_or_signalled() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = victim.id();
    let cmd = format!(
        "perl -e 'exit(syscall(101, 16, {pid}, 0, 0) == -1 ? 0 : 1)' && echo ptrace-failed; \
         kill -9 {pid} 2>/dev/null || echo kill-failed; kill -9 -1 2>/dev/null; echo after"
    );
    let res = run(&r, writable(), &cmd).await;
    assert!(res.stdout.contains("ptrace-failed"), "{res:?}");
    assert!(res.stdout.contains("kill-failed"), "{res:?}");
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the host process was killed"
    );
    // Test cleanup of our own child (std's kill is fine in a test; src/ never does this).
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[tokio::test]
async fn terminal_input_cannot_be_injected() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let cmd = r#"perl -e 1 && echo perl-ok; for t in /dev/tty /dev/console /dev/pts/*; do
      perl -e 'open(my $t, "+<", $ARGV[0]) or exit 0; my $c = "x"; ioctl($t, 0x5412, $c) or exit 0; exit 1' "$t"
      [ $? = 1 ] && echo "INJECTED via $t"
    done; echo checked"#;
    let res = run(&r, writable(), cmd).await;
    assert!(
        res.stdout.contains("perl-ok") && res.stdout.contains("checked"),
        "{res:?}"
    );
    assert!(!res.stdout.contains("INJECTED"), "{res:?}");
}

#[tokio::test]
async fn the_closed_network_cannot_reach_a_host_loopback_server() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let cmd = format!(
        "(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo refused"
    );
    let res = run(&r, writable(), &cmd).await;
    assert!(res.stdout.contains("refused"), "{res:?}");
    assert!(
        listener.accept().is_err(),
        "the host server saw a connection"
    );
    // Positive control: a connect from the host itself is seen by the same check.
    let _client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert!(wait_readable(
        &[&listener],
        std::time::Duration::from_secs(5)
    ));
    assert!(
        listener.accept().is_ok(),
        "the check cannot see a connection"
    );
}

#[tokio::test]
async fn no_nested_user_namespace_and_no_capabilities() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    // Positive control: unshare is there and tried (it says why it failed).
    let res = run(
        &r,
        writable(),
        "command -v unshare >/dev/null && echo have-unshare; \
         unshare -U true 2>&1 && echo NESTED; grep CapEff /proc/self/status",
    )
    .await;
    assert!(res.stdout.contains("have-unshare"), "{res:?}");
    assert!(res.stdout.contains("unshare: "), "{res:?}");
    assert!(!res.stdout.contains("NESTED"), "{res:?}");
    assert!(res.stdout.contains("CapEff:\t0000000000000000"), "{res:?}");
}
