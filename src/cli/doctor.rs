//! `spear doctor`: which confinement mechanisms work here, and how to fix those that do not.
//! Every verdict comes from trying the mechanism (a real sandbox, a real slirp path, a real
//! syscall), not from version strings alone.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use spear::harness::command_policy::ExecutionProfile;
use spear::harness::process::pid_max_is_namespaced;
use spear::harness::resource_control::{SystemdScopeRunner, rlimit_mechanism};
use spear::harness::runtime::{CommandRunner, RunnerConfig};
use spear::harness::sandbox::PreflightFailure;

#[derive(Args)]
pub struct DoctorArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    Works,
    Missing,
    Refused,
}

#[derive(Debug, Serialize)]
struct Check {
    mechanism: &'static str,
    status: Verdict,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
    /// Spear refuses to run commands without it.
    required: bool,
}

fn check(
    mechanism: &'static str,
    required: bool,
    r: Result<String, (Verdict, String, String)>,
) -> Check {
    match r {
        Ok(detail) => Check {
            mechanism,
            status: Verdict::Works,
            detail,
            fix: None,
            required,
        },
        Err((status, detail, fix)) => Check {
            mechanism,
            status,
            detail,
            fix: Some(fix),
            required,
        },
    }
}

pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let dir = tempfile_dir()?;
    let runner = CommandRunner::new(RunnerConfig::for_workspace(&dir))
        .context("cannot set up a sandbox for the checks")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut checks = Vec::new();

    let bwrap = runner.sandbox().bwrap().map(|p| p.to_path_buf());
    checks.push(check(
        "bwrap",
        true,
        match &bwrap {
            Ok(p) => Ok(format!("{} ({})", version(p, "--version"), p.display())),
            Err(e) => Err((
                Verdict::Missing,
                e.clone(),
                "apt-get install bubblewrap".into(),
            )),
        },
    ));
    let preflight = rt.block_on(runner.ensure_sandbox());
    checks.push(check(
        "user_namespaces",
        true,
        match preflight {
            Ok(()) => Ok("a real sandbox ran its preflight script".into()),
            Err(PreflightFailure::Refused(r)) => {
                Err((Verdict::Refused, r, "see the likely cause above".into()))
            }
            Err(f) => Err((
                Verdict::Missing,
                f.reason().to_string(),
                "install bubblewrap".into(),
            )),
        },
    ));
    let slirp = runner.sandbox().slirp().map(|p| p.to_path_buf());
    checks.push(check(
        "slirp4netns",
        false,
        match &slirp {
            Err(e) => Err((
                Verdict::Missing,
                e.clone(),
                "apt-get install slirp4netns".into(),
            )),
            Ok(p) => {
                let mut profile = ExecutionProfile::read_only();
                profile.network = true;
                match runner
                    .check_mechanisms(&profile)
                    .and_then(|()| rt.block_on(runner.ensure_network()))
                {
                    Ok(()) => Ok(format!(
                        "{}; pinned-namespace network path ready, host and private ranges refused",
                        version(p, "--version").lines().next().unwrap_or("")
                    )),
                    Err(e) => Err((Verdict::Refused, e, "see the reason".into())),
                }
            }
        },
    ));
    checks.push(check(
        "rlimits",
        true,
        rlimit_mechanism()
            .map(|()| "setrlimit works (data, cpu, fsize, nofile, core)".into())
            .map_err(|e| {
                (
                    Verdict::Refused,
                    e,
                    "run outside a seccomp filter that blocks prlimit".into(),
                )
            }),
    ));
    let root = rustix::process::geteuid().is_root();
    checks.push(check(
        "process_cap",
        root,
        if pid_max_is_namespaced() {
            Ok("pid_max per PID namespace (Linux >= 6.14): the process limit counts the sandbox only".into())
        } else if root {
            Err((
                Verdict::Missing,
                "RLIMIT_NPROC does not bind root and this kernel cannot cap a PID namespace".into(),
                "run Spear as an ordinary user, or on Linux 6.14 or later".into(),
            ))
        } else {
            Ok("RLIMIT_NPROC (counts every process of this user)".into())
        },
    ));
    let path = std::env::var_os("PATH").unwrap_or_default();
    checks.push(check(
        "cgroups_systemd",
        false,
        SystemdScopeRunner::for_host(&path)
            .available()
            .map(|()| "systemd-run --scope can apply MemoryMax/TasksMax/CPUQuota".into())
            .map_err(|e| {
                (
                    Verdict::Missing,
                    e,
                    "cgroup limits stay off; rlimits still apply".into(),
                )
            }),
    ));
    checks.push(check("openat2", false, probe_openat2()));
    checks.push(check("pidfd", true, probe_pidfd()));
    let _ = std::fs::remove_dir(&dir);

    let healthy = checks
        .iter()
        .all(|c| !c.required || matches!(c.status, Verdict::Works));
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "healthy": healthy, "mechanisms": checks })
        );
    } else {
        for c in &checks {
            let word = match c.status {
                Verdict::Works => "works",
                Verdict::Missing => "missing",
                Verdict::Refused => "refused",
            };
            println!("{:<16} {:<8} {}", c.mechanism, word, c.detail);
            if let Some(fix) = &c.fix {
                println!("{:<16} {:<8} fix: {fix}", "", "");
            }
        }
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("spear-doctor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("cannot create a scratch workspace")?;
    Ok(dir)
}

fn version(program: &std::path::Path, flag: &str) -> String {
    std::process::Command::new(program)
        .arg(flag)
        .env_clear()
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|e| format!("cannot run: {e}"))
}

fn probe_openat2() -> Result<String, (Verdict, String, String)> {
    use rustix::fs::{CWD, Mode, OFlags, ResolveFlags, openat2};
    match openat2(
        CWD,
        ".",
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH,
    ) {
        Ok(_) => Ok("RESOLVE_BENEATH works".into()),
        Err(e) if e == rustix::io::Errno::NOSYS => Err((
            Verdict::Missing,
            "openat2 is not available (Linux < 5.6)".into(),
            "file tools fall back to an O_NOFOLLOW walk; upgrade the kernel for openat2".into(),
        )),
        Err(e) => Err((
            Verdict::Refused,
            format!("openat2 failed: {e}"),
            "check seccomp filters".into(),
        )),
    }
}

fn probe_pidfd() -> Result<String, (Verdict, String, String)> {
    let me = rustix::process::getpid();
    match rustix::process::pidfd_open(me, rustix::process::PidfdFlags::empty()) {
        Ok(_) => Ok("pidfd_open works".into()),
        Err(e) => Err((
            Verdict::Missing,
            format!("pidfd_open failed: {e}"),
            "Linux 5.3 or later is needed".into(),
        )),
    }
}
