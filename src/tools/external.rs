//! Programs the person configured, which Spear runs on the host outside the sandbox: the
//! `pre_tool`/`post_tool` hooks and `spear run --approver`. Each gets one JSON document on
//! stdin and answers on stdout within a time limit; it is held by a pidfd and killed through it
//! when the limit passes. Invariant: such a program is taken only from the person's own
//! configuration or command line, only as an absolute path to an executable file that no
//! sandbox can write (not in the workspace; owned by the person or root, and neither it nor
//! its directory writable by others), with no argument naming a path in the workspace, checked
//! at load. It runs in `/`, never in the workspace, with the workspace's and relative
//! entries taken out of `PATH`, so nothing the workspace holds is run or imported through it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::harness::process::{
    BoundedCapture, Exit, NullSink, SpawnRequest, pump_output, spawn_held,
};

/// What a program may print before it is taken as unreadable.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// A checked program and how it is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// Absolute and canonical.
    pub path: PathBuf,
    pub args: Vec<String>,
    pub timeout: Duration,
}

/// Why a program gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    #[error("could not be started: {0}")]
    Start(String),
    #[error("gave no answer within {0:?} and was stopped")]
    TimedOut(Duration),
    #[error("failed ({status}){}", if .stderr.is_empty() { String::new() } else { format!(": {}", .stderr) })]
    Failed { status: String, stderr: String },
    #[error("printed more than {MAX_ANSWER_BYTES} bytes")]
    TooLong,
}

/// Check a configured program: an absolute path to an executable regular file, outside
/// `workspace` (after resolving links), neither it nor its directory writable by other users.
pub fn check(path: &str, workspace: Option<&Path>) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let given = Path::new(path);
    if !given.is_absolute() {
        return Err(format!(
            "`{path}` is not an absolute path: give the program's whole path, outside every \
             workspace"
        ));
    }
    let real = given
        .canonicalize()
        .map_err(|e| format!("`{path}` cannot be found: {e}"))?;
    if let Some(ws) = workspace {
        let ws = ws.canonicalize().unwrap_or_else(|_| ws.to_path_buf());
        if real.starts_with(&ws) {
            return Err(format!(
                "`{path}` lies in the workspace ({}), where a command could rewrite it: move it \
                 outside",
                ws.display()
            ));
        }
    }
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&real).map_err(|e| format!("`{path}`: {e}"))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(format!("`{path}` is not an executable file"));
    }
    let dir = real
        .parent()
        .and_then(|d| std::fs::metadata(d).ok())
        .ok_or_else(|| format!("`{path}`: its directory cannot be read"))?;
    let me = rustix::process::geteuid().as_raw();
    let owned = |uid: u32| uid == me || uid == 0;
    if !owned(meta.uid()) || !owned(dir.uid()) {
        return Err(format!(
            "`{path}` or its directory belongs to another user, who could change it: keep it \
             where only you (or root) can"
        ));
    }
    let dir_mode = dir.permissions().mode();
    // A sticky directory (/tmp) still lets others replace nothing of ours, but a program there
    // could be swapped before it was first created: refused too.
    if meta.permissions().mode() & 0o022 != 0 || dir_mode & 0o022 != 0 {
        return Err(format!(
            "`{path}` or its directory can be written by other users: keep it where only you \
             can change it"
        ));
    }
    Ok(real)
}

/// Check a program's arguments: none may name a path in `workspace` (an interpreter given a
/// script there would run what a command can rewrite). A relative one is read from `/`, where
/// the program runs.
pub fn check_args(args: &[String], workspace: &Path) -> Result<(), String> {
    let ws = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    for a in args {
        let value = a.split_once('=').map_or(a.as_str(), |(_, v)| v);
        if !value.contains('/') {
            continue;
        }
        let p = Path::new("/").join(value);
        // Judged where it lands: its nearest existing ancestor resolved, the rest as written
        // (a file a command could create later names the same place).
        let real = p
            .ancestors()
            .find_map(|a| {
                let base = a.canonicalize().ok()?;
                Some(base.join(p.strip_prefix(a).ok()?))
            })
            .unwrap_or_else(|| p.clone());
        if real.starts_with(&ws) || Path::new(value).starts_with(&ws) {
            return Err(format!(
                "the argument `{a}` names a path in the workspace ({}), which a command could \
                 rewrite",
                ws.display()
            ));
        }
    }
    Ok(())
}

/// Run `program` in `/` with `input` on stdin, `PATH` without `workspace`'s or relative
/// entries; its standard output when it exits 0.
pub fn run(program: &Program, workspace: &Path, input: &[u8]) -> Result<Vec<u8>, ProgramError> {
    let stdin = memfd_with(input).map_err(|e| ProgramError::Start(e.to_string()))?;
    let mut command = Command::new(&program.path);
    command.args(&program.args).current_dir("/");
    if let Some(path) = std::env::var_os("PATH") {
        let ws = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf());
        let kept: Vec<std::path::PathBuf> = std::env::split_paths(&path)
            .filter(|p| p.is_absolute() && !p.starts_with(&ws))
            .collect();
        if let Ok(joined) = std::env::join_paths(kept) {
            command.env("PATH", joined);
        }
    }
    let timeout = program.timeout;
    on_own_runtime(move |rt| rt.block_on(supervise(command, stdin, timeout)))
        .map_err(ProgramError::Start)?
}

async fn supervise(
    command: Command,
    stdin: std::fs::File,
    timeout: Duration,
) -> Result<Vec<u8>, ProgramError> {
    let mut child = spawn_held(SpawnRequest {
        command,
        inherit_fds: &[],
        rlimits: &[],
        capture: true,
        stderr_file: None,
        join_cgroup: None,
        stdin: Some(stdin),
        stage: None,
    })
    .map_err(|e| ProgramError::Start(e.to_string()))?;
    let (mut out, mut err) = (
        BoundedCapture::new(MAX_ANSWER_BYTES + 1, 0),
        BoundedCapture::new(2048, 0),
    );
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let work = async {
        let _ = pump_output(stdout, stderr, &mut NullSink, &mut out, &mut err).await;
        child.wait().await
    };
    let exit = tokio::select! {
        exit = work => exit.ok(),
        () = tokio::time::sleep(timeout) => {
            let _ = child.stop(Duration::from_secs(1)).await;
            return Err(ProgramError::TimedOut(timeout));
        }
    };
    if out.total() > MAX_ANSWER_BYTES as u64 {
        return Err(ProgramError::TooLong);
    }
    match exit {
        Some(Exit::Code(0)) => Ok(out.render().into_bytes()),
        other => Err(ProgramError::Failed {
            status: match other {
                Some(Exit::Code(c)) => format!("exit {c}"),
                Some(Exit::Signal(s)) => format!("signal {s}"),
                None => "not reaped".into(),
            },
            stderr: err.render().trim().chars().take(300).collect(),
        }),
    }
}

/// Run `work` on a thread of its own with a runtime of its own: a child is tied to the thread
/// that spawns it (its parent-death signal), and the caller may be on an async runtime already.
pub(crate) fn on_own_runtime<T: Send>(
    work: impl FnOnce(&tokio::runtime::Runtime) -> T + Send,
) -> Result<T, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?;
            Ok(work(&rt))
        })
        .join()
        .unwrap_or_else(|_| Err("the supervisor thread panicked".into()))
    })
}

/// `input` as an anonymous file positioned at its start, so no pipe needs feeding while the
/// child runs.
pub(crate) fn memfd_with(input: &[u8]) -> std::io::Result<std::fs::File> {
    use std::io::{Seek, Write};
    let fd = rustix::fs::memfd_create("spear-input", rustix::fs::MemfdFlags::CLOEXEC)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(input)?;
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
        p
    }

    fn program(path: PathBuf, secs: u64) -> Program {
        Program {
            path,
            args: Vec::new(),
            timeout: Duration::from_secs(secs),
        }
    }

    #[test]
    fn a_program_answers_fails_or_is_stopped() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let echo = script(d.path(), "echo", "cat");
        assert_eq!(
            run(&program(echo, 5), d.path(), b"{\"a\":1}").unwrap(),
            b"{\"a\":1}"
        );
        let fail = script(d.path(), "fail", "echo nope >&2; exit 3");
        let e = run(&program(fail, 5), d.path(), b"").unwrap_err();
        assert!(
            e.to_string().contains("exit 3") && e.to_string().contains("nope"),
            "{e}"
        );
        let hang = script(d.path(), "hang", "sleep 30");
        let t = std::time::Instant::now();
        assert!(matches!(
            run(&program(hang, 1), d.path(), b""),
            Err(ProgramError::TimedOut(_))
        ));
        assert!(t.elapsed() < Duration::from_secs(10));
        let flood = script(d.path(), "flood", "head -c 200000 /dev/zero");
        assert_eq!(
            run(&program(flood, 5), d.path(), b""),
            Err(ProgramError::TooLong)
        );
    }

    #[test]
    fn only_an_absolute_executable_outside_the_workspace_that_only_its_owner_writes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let ok = script(d.path(), "hook", "true");
        assert!(check(ok.to_str().unwrap(), Some(&ws)).is_ok());
        let inside = script(&ws, "hook", "true");
        let e = check(inside.to_str().unwrap(), Some(&ws)).unwrap_err();
        assert!(e.contains("lies in the workspace"), "{e}");
        // Through a link from outside: judged where it lands.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&inside, &link).unwrap();
        assert!(check(link.to_str().unwrap(), Some(&ws)).is_err());
        assert!(check("hook", Some(&ws)).unwrap_err().contains("absolute"));
        assert!(check("/nonexistent/hook", None).is_err());
        let plain = d.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        assert!(
            check(plain.to_str().unwrap(), None)
                .unwrap_err()
                .contains("executable")
        );
        std::fs::set_permissions(&ok, std::fs::Permissions::from_mode(0o722)).unwrap();
        assert!(
            check(ok.to_str().unwrap(), None)
                .unwrap_err()
                .contains("other users")
        );
        std::fs::set_permissions(&ok, std::fs::Permissions::from_mode(0o700)).unwrap();
        // Owned by another user: that user could change it. (Only root can hand a file over.)
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&ok, Some(65534), None).unwrap();
            let e = check(ok.to_str().unwrap(), None).unwrap_err();
            assert!(e.contains("another user"), "{e}");
        }
        // Arguments naming the workspace, directly or through a link, are refused.
        assert!(check_args(&["--strict".into(), "/usr/share/x".into()], &ws).is_ok());
        let named = ws.join("guard.py").display().to_string();
        assert!(check_args(std::slice::from_ref(&named), &ws).is_err());
        assert!(check_args(&[format!("--script={named}")], &ws).is_err());
        let to_ws = d.path().join("to-ws");
        std::os::unix::fs::symlink(&ws, &to_ws).unwrap();
        assert!(check_args(&[format!("{}/x", to_ws.display())], &ws).is_err());
    }
}
