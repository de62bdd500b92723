//! Runs commands only inside the real sandbox (the library's `CommandRunner`, with a writable
//! profile so a command could write if it tried), each traced by `strace -f -y` as its parent.
//! One sandbox launch runs a batch: a driver script copies the pristine seed to a fresh scratch
//! directory for each command and runs it there under strace, with a timeout. strace writes
//! the trace on its own standard error, a pipe back to this process; the traced wrapper points
//! its standard error at /dev/null before it becomes `bash -c COMMAND`, so the command holds no
//! descriptor of the trace and no path in the sandbox names it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spear::harness::command_policy::ExecutionProfile;
use spear::harness::command_runner::{CommandRunner, RunRequest, RunnerConfig};
use spear::harness::primitives::{Capability, CapabilitySet, ToolStatus};
use spear::harness::process::{OutputSink, OutputStream};

use crate::judge::SCRATCH_ROOT;
use crate::seed;
use crate::trace::{self, Trace};

/// Seconds one command may run before it is stopped (its trace so far is still judged).
pub const COMMAND_TIMEOUT_SECS: u64 = 10;

/// What strace records: every call a verdict needs, and the process calls that follow
/// children, programs and working directories. `?` lets a kernel or strace that lacks a call
/// leave it out instead of refusing to start.
const TRACED: &str = "open,openat,?openat2,creat,truncate,ftruncate,unlink,unlinkat,rmdir,\
rename,renameat,?renameat2,mkdir,mkdirat,mknod,mknodat,chmod,fchmod,fchmodat,?fchmodat2,chown,\
fchown,lchown,fchownat,link,linkat,symlink,symlinkat,utime,utimes,futimesat,utimensat,setxattr,\
lsetxattr,fsetxattr,removexattr,lremovexattr,fremovexattr,bind,connect,sendto,sendmsg,\
?sendmmsg,kill,tkill,tgkill,rt_sigqueueinfo,rt_tgsigqueueinfo,?pidfd_send_signal,execve,\
execveat,clone,?clone3,fork,vfork,chdir,fchdir";

/// The driver: `driver.sh TIMEOUT TRACED SCRATCH_ROOT`, commands NUL-separated in `cmds`
/// beside it. Markers go to standard output; so does strace's trace (its standard error), and
/// nothing of the command's. Each command's fresh copy of the pristine seed (which stays in
/// the read-only workspace) is made on the sandbox's `/tmp` tmpfs, where copying is cheap;
/// the judge counts that directory as the command's workspace, not as private.
const DRIVER: &str = r#"set -u
ws=$(cd "$(dirname "$0")" && pwd)
root=$3
mkdir -p "$root"
printf '\n@@oracle home %s\n' "$HOME"
i=0
while IFS= read -r -d '' cmd; do
    if [ -e "$root/scratch" ] && ! rm -rf "$root/scratch" 2>/dev/null; then
        chmod -R u+rwX "$root/scratch" 2>/dev/null
        rm -rf "$root/scratch" 2>/dev/null || mv "$root/scratch" "$root/gone.$i"
    fi
    cp -a "$ws/seed" "$root/scratch"
    printf '\n@@oracle begin %d %s\n' "$i" "$root/scratch"
    t0=${EPOCHREALTIME/./}
    ( cd "$root/scratch" && exec timeout -k 2 "$1" strace -f --seccomp-bpf -y -qq -s 4096 -e signal=none -o /dev/stderr \
        -e trace="$2" -- /bin/bash -c 'exec 2>/dev/null; exec /bin/bash -c "$1"' oracle "$cmd" \
        2>&1 >/dev/null </dev/null )
    rc=$?
    printf '\n@@oracle end %d %d %d\n' "$i" "$rc" "$(( ${EPOCHREALTIME/./} - t0 ))"
    i=$((i + 1))
done < "$ws/cmds"
rm -rf "$root" 2>/dev/null
printf '\n@@oracle done %d\n' "$i"
"#;

/// A command's run: its exit status under the driver and its trace.
#[derive(Debug)]
pub struct Traced {
    pub command: String,
    /// strace's status: the command's, or 124 when the timeout stopped it.
    pub status: Option<i32>,
    pub scratch: String,
    /// How long the traced command took, strace's start and end included.
    pub micros: u64,
    pub trace: Trace,
    pub raw: String,
}

/// A sandbox workspace that holds the seed and the driver.
pub struct OracleBox {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    runner: CommandRunner,
    pub home: Option<String>,
}

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<(Vec<u8>, Vec<u8>)>>);

impl OutputSink for Collect {
    fn write(&mut self, stream: OutputStream, bytes: &[u8]) {
        let Ok(mut g) = self.0.lock() else { return };
        match stream {
            OutputStream::Stdout => g.0.extend_from_slice(bytes),
            OutputStream::Stderr if g.1.len() < 64 * 1024 => g.1.extend_from_slice(bytes),
            OutputStream::Stderr => {}
        }
    }
}

/// Fails (never skips) when a mechanism the oracle needs is missing.
pub fn require_mechanisms() {
    for tool in ["bwrap", "strace"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .any(|d| d.join(tool).is_file());
        let pkg = if tool == "bwrap" { "bubblewrap" } else { tool };
        assert!(
            found,
            "{tool} is not installed: run `apt-get install {pkg}` (or `make test`, which \
             installs it); the write-attempt oracle cannot run without it"
        );
    }
    if let Ok(v) = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope") {
        let v = v.trim();
        assert!(
            v != "2" && v != "3",
            "Yama's ptrace_scope is {v} on this host, which refuses ptrace inside the sandbox \
             (2: admin only, 3: nobody), so strace cannot trace the commands; the oracle \
             needs `sysctl kernel.yama.ptrace_scope=1` (or 0)"
        );
    }
}

/// Where the throwaway workspaces go: never under a path the judge treats as private (`/tmp`,
/// `$HOME`), or every write to the scratch copy would look harmless.
fn base_dir() -> PathBuf {
    std::env::var_os("SPEAR_ORACLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp"))
}

fn writable() -> ExecutionProfile {
    ExecutionProfile::from_granted(
        CapabilitySet::of(&[
            Capability::WorkspaceRead,
            Capability::WorkspaceWrite,
            Capability::ShellComplex,
        ]),
        Vec::new(),
    )
}

impl OracleBox {
    pub fn new() -> OracleBox {
        require_mechanisms();
        let base = base_dir();
        let dir = tempfile::Builder::new()
            .prefix("spear-oracle-")
            .tempdir_in(&base)
            .unwrap_or_else(|e| panic!("cannot make a workspace in {}: {e}", base.display()));
        let ws = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let home = std::env::var("HOME").unwrap_or_default();
        for private in ["/tmp", "/run", "/dev/shm", home.as_str()] {
            assert!(
                private.len() <= 1 || !ws.starts_with(private),
                "the oracle's workspace {} lies under {private}, a private tmpfs in the sandbox \
                 where writes are allowed: set SPEAR_ORACLE_DIR to a directory elsewhere",
                ws.display()
            );
        }
        seed::build(&ws.join("seed"));
        std::fs::write(ws.join("driver.sh"), DRIVER).unwrap();
        // The pristine seed is read-only to the driver (each command gets a fresh copy, which
        // the driver removes): so no command can change what the next one starts from, and
        // the after-run check for git control files (whose seed/.git the test just made) has
        // nothing of the run's to find. Launch records and any quarantine stay in the
        // throwaway directory, not the person's state directory.
        let mut config = RunnerConfig::for_workspace(&ws);
        config.protected_paths = vec![PathBuf::from("seed")];
        config.ledger_dir = Some(dir.path().join("state/sandboxes"));
        let runner = CommandRunner::new(config).unwrap();
        OracleBox {
            _dir: dir,
            ws,
            runner,
            home: None,
        }
    }

    /// Runs `commands` in one sandbox launch, each traced over a fresh scratch copy.
    pub async fn run(&mut self, commands: &[String]) -> Vec<Traced> {
        let mut list = Vec::new();
        for c in commands {
            assert!(!c.contains('\0'), "a command with a NUL byte: {c:?}");
            list.extend_from_slice(c.as_bytes());
            list.push(0);
        }
        std::fs::write(self.ws.join("cmds"), list).unwrap();
        let driver = self.ws.join("driver.sh");
        let req = RunRequest {
            command: format!(
                "/bin/bash '{}' {COMMAND_TIMEOUT_SECS} '{TRACED}' '{SCRATCH_ROOT}'",
                driver.display()
            ),
            profile: writable(),
            timeout: Some(Duration::from_secs(
                120 + commands.len() as u64 * (COMMAND_TIMEOUT_SECS + 3),
            )),
        };
        let sink = Collect::default();
        let result = self.runner.run(&req, &mut sink.clone()).await;
        let (out, err) = sink.0.lock().unwrap().clone();
        let out = String::from_utf8_lossy(&out).into_owned();
        let err = String::from_utf8_lossy(&err).into_owned();
        assert!(
            result.status == ToolStatus::Ok,
            "the oracle's sandbox run failed ({:?}): {}\nstderr: {err}",
            result.status,
            result.reason.clone().unwrap_or_default()
        );
        let traced = split(&out, commands, &mut self.home);
        assert!(
            out.contains(&format!("\n@@oracle done {}\n", commands.len())),
            "the driver did not finish its {} commands; stderr: {err}",
            commands.len()
        );
        traced
    }
}

/// The driver's output cut at its markers, one `Traced` per command.
fn split(out: &str, commands: &[String], home: &mut Option<String>) -> Vec<Traced> {
    let mut traced = Vec::new();
    let mut current: Option<(usize, String, String)> = None;
    for line in out.split_inclusive('\n') {
        if let Some(h) = line.strip_prefix("@@oracle home ") {
            *home = Some(h.trim_end().to_string());
        } else if let Some(rest) = line.strip_prefix("@@oracle begin ") {
            let (i, scratch) = rest.trim_end().split_once(' ').unwrap();
            current = Some((i.parse().unwrap(), scratch.to_string(), String::new()));
        } else if let Some(rest) = line.strip_prefix("@@oracle end ") {
            let mut f = rest.split_whitespace();
            let (i, rc, micros) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            let (j, scratch, raw) = current.take().expect("an end marker without a begin");
            let i: usize = i.parse().unwrap();
            assert_eq!(i, j, "markers out of order");
            traced.push(Traced {
                command: commands[i].clone(),
                status: rc.parse().ok(),
                scratch,
                micros: micros.parse().unwrap_or(0),
                trace: trace::parse(&raw),
                raw,
            });
        } else if let Some((_, _, raw)) = current.as_mut() {
            raw.push_str(line);
        }
    }
    traced
}
