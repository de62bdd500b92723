//! `spear doctor`: which confinement mechanisms work here, and how to fix those that do not.
//! Every verdict comes from trying the mechanism (a real sandbox, a real slirp path, a real
//! syscall), not from version strings alone.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use spear::harness::command_policy::ExecutionProfile;
use spear::harness::command_runner::{CommandRunner, RunRequest, RunnerConfig};
use spear::harness::primitives::ToolStatus;
use spear::harness::process::NullSink;
use spear::harness::resource_control::{SystemdScopeRunner, rlimit_mechanism};
use spear::harness::sandbox::PreflightFailure;
use spear::harness::sandbox::preflight::{UsernsRestriction, userns_restrictions};
use spear::harness::sandbox::procfs::{PROC_HIDDEN, PROC_READ_ONLY};
use spear::harness::sandbox::seccomp::{self, RefusedCall};

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
    /// Works, but the person should know something (an MCP server's read path over keys).
    Warning,
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
    /// For the seccomp filter: every call it refuses, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    refused_calls: Option<Vec<RefusedCall>>,
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
            refused_calls: None,
        },
        Err((status, detail, fix)) => Check {
            mechanism,
            status,
            detail,
            fix: Some(fix),
            required,
            refused_calls: None,
        },
    }
}

/// Which host uid the sandbox runs as, and as root what stands between it and root's files.
fn sandbox_user(
    host_root: bool,
    workspace: &std::path::Path,
) -> Result<String, (Verdict, String, String)> {
    use spear::harness::sandbox::root_uid;
    let uid = rustix::process::geteuid();
    if !uid.is_root() {
        return Ok(format!(
            "the sandbox runs as your own uid {}: it reads only what you can",
            uid.as_raw()
        ));
    }
    if host_root {
        return Err((
            Verdict::Missing,
            "Spear runs as root and `[sandbox] root_uid = \"host\"` runs its commands as the \
             host's uid 0: file permissions are no wall, a file only root may read is readable \
             in SAFE mode unless it is masked by name. Every command's audit record says so"
                .into(),
            "remove root_uid = \"host\" from config.toml, or run Spear as an ordinary user".into(),
        ));
    }
    let ids = root_uid::choose_for_host().map_err(|e| {
        (
            Verdict::Missing,
            format!("Spear runs as root and no unprivileged uid is available for its sandbox, so commands are refused: {e}"),
            "give root a subordinate range (usermod --add-subuids 100000-165535 \
             --add-subgids 100000-165535 root), or set [sandbox] root_uid = \"host\""
                .into(),
        )
    })?;
    let from = match ids.source {
        root_uid::IdSource::SubordinateRange => "the first of root's /etc/subuid range",
        root_uid::IdSource::Fixed => "a fixed id no account or range uses",
    };
    match root_uid::probe_idmapped_workspace(workspace, ids) {
        Ok(()) => Ok(format!(
            "Spear runs as root; the sandbox runs as the unprivileged uid {} ({from}), with \
             `{}` bound through a mount idmapped to it: it reads only what that uid can",
            ids.uid,
            workspace.display()
        )),
        Err(e) => Err((
            Verdict::Missing,
            format!(
                "Spear runs as root and its sandbox would run as uid {} ({from}), but `{}` \
                 cannot be idmapped to it, so commands are refused here: {e}",
                ids.uid,
                workspace.display()
            ),
            "keep the workspace on ext4, xfs or btrfs (tmpfs from Linux 6.3) on Linux 5.12 or \
             later, run Spear as an ordinary user, or set [sandbox] root_uid = \"host\""
                .into(),
        )),
    }
}

pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let dir = tempfile_dir()?;
    let harness = super::common::harness_settings()
        .context("spear doctor checks the sandbox with the configuration file's limits")?;
    // As text: the sandbox's message already ends with its io cause, which `{:#}` would
    // print a second time from the source chain.
    let runner = CommandRunner::new(spear::agent::builder::runner_config(&dir, &harness))
        .map_err(|e| anyhow::anyhow!("cannot set up a sandbox for the checks: {e}"))?;
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
                e.to_string(),
                "apt-get install bubblewrap".into(),
            )),
        },
    ));
    let preflight = rt.block_on(runner.ensure_sandbox());
    checks.push(check(
        "user_namespaces",
        true,
        match preflight.clone() {
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
    let bwrap_path = bwrap
        .clone()
        .unwrap_or_else(|_| std::path::PathBuf::from("/usr/bin/bwrap"));
    checks.push(check(
        "userns_policy",
        false,
        userns_policy(
            &userns_restrictions(std::path::Path::new("/")),
            matches!(preflight, Ok(())),
            rustix::process::geteuid().is_root(),
            &bwrap_path,
        ),
    ));
    let walls = rt.block_on(probe_walls(&runner));
    let mut filter = check("seccomp", true, walls.seccomp);
    filter.refused_calls = Some(seccomp::refused_calls());
    checks.push(filter);
    checks.push(check("kernel_view", true, walls.proc_sys));
    checks.push(check(
        "sandbox_ledger",
        false,
        match runner.ledger_sweep() {
            Some(swept) => Ok(format!(
                "every launch is recorded until its death is confirmed, so a Spear killed \
                 mid-launch leaves nothing behind for long: this start ended {} process(es) of {} \
                 dead Spear launch(es){}",
                swept.ended,
                swept.stale,
                match swept.unconfirmed {
                    0 => String::new(),
                    n => format!(", {n} could not be confirmed dead and are kept for the next start"),
                }
            )),
            None => Err((
                Verdict::Missing,
                "no sandbox ledger could be kept (no writable state directory outside the \
                 workspace), so a sandbox left by a Spear killed mid-launch is not ended later"
                    .into(),
                "set XDG_STATE_HOME or HOME to a writable directory outside the workspace".into(),
            )),
        },
    ));
    checks.push(check(
        "egress_proxy",
        false,
        rt.block_on(runner.ensure_proxy())
            .map(|found| format!("{found}; {}", egress_words(&harness.egress)))
            .map_err(|e| (Verdict::Refused, e, "see the reason".into())),
    ));
    let slirp = runner.sandbox().slirp().map(|p| p.to_path_buf());
    checks.push(check(
        "slirp4netns",
        false,
        match &slirp {
            Err(e) => Err((
                Verdict::Missing,
                e.to_string(),
                "apt-get install slirp4netns".into(),
            )),
            Ok(p) => {
                let mut profile = ExecutionProfile::read_only();
                profile.network = true;
                let ready = match runner.check_mechanisms(&profile) {
                    Ok(()) => rt
                        .block_on(runner.ensure_network())
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                match ready {
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
                    e.to_string(),
                    "run outside a seccomp filter that blocks prlimit".into(),
                )
            }),
    ));
    checks.push(check(
        "process_cap",
        true,
        match runner.process_cap() {
            Ok(Some(cap)) => Ok(cap.describe()),
            Ok(None) => Ok("no process limit is configured ([limits] processes)".into()),
            Err(e) => Err((
                Verdict::Missing,
                e.to_string(),
                "see the reason: each option named there works".into(),
            )),
        },
    ));
    checks.push(check("memory_cap", false, Ok(describe_memory_cap(&runner))));
    checks.push(check("cpu_cap", false, Ok(describe_cpu_cap(&runner))));
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
                    e.to_string(),
                    "cgroup limits stay off; rlimits still apply".into(),
                )
            }),
    ));
    checks.push(check("tmpfs", false, Ok(describe_tmpfs(runner.config()))));
    let here = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
    checks.push(check(
        "sandbox_user",
        false,
        sandbox_user(harness.root_uid_host, &here),
    ));
    checks.push(check("openat2", false, probe_openat2()));
    checks.push(check("pidfd", true, probe_pidfd()));
    if !harness.mcp_servers.is_empty() {
        checks.push(check(
            "mcp_servers",
            false,
            mcp_servers(&harness.mcp_servers),
        ));
    }
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
                Verdict::Warning => "warning",
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

type Verdicted = Result<String, (Verdict, String, String)>;

/// The person's MCP servers: a warning for a read path that shows one of them `~/.ssh`,
/// `~/.gnupg` or `~/.aws`.
fn mcp_servers(servers: &[spear::tools::host::mcp::McpServerConfig]) -> Verdicted {
    let Some(home) = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()) else {
        return Ok(format!(
            "{} configured (no home directory to check read paths against)",
            servers.len()
        ));
    };
    let mut warnings = Vec::new();
    for s in servers {
        for (path, covers) in s.sensitive_read_paths(&home) {
            warnings.push(format!(
                "server `{}` reads {}, which shows it {}",
                s.name,
                path.display(),
                covers.display()
            ));
        }
    }
    if warnings.is_empty() {
        return Ok(format!(
            "{} configured; no read path covers ~/.ssh, ~/.gnupg or ~/.aws",
            servers.len()
        ));
    }
    Err((
        Verdict::Warning,
        warnings.join("; "),
        "narrow the server's read_paths in [mcp.servers.NAME] to the directories it needs".into(),
    ))
}

/// What the host's user-namespace settings mean for Spear: each restriction found, whether it
/// binds here (root holds the capability the unprivileged-only ones ask for), and its fix.
fn userns_policy(
    found: &[UsernsRestriction],
    sandbox_ran: bool,
    privileged: bool,
    bwrap: &std::path::Path,
) -> Verdicted {
    let settings: Vec<&str> = found.iter().map(|r| r.setting()).collect();
    let binding = found.iter().find(|r| r.binds_root() || !privileged);
    match (binding, sandbox_ran) {
        _ if found.is_empty() => Ok(
            "no host setting restricts user namespaces (kernel.apparmor_restrict_unprivileged_userns, \
             user.max_user_namespaces, kernel.unprivileged_userns_clone)"
                .into(),
        ),
        (Some(r), false) => Err((
            Verdict::Refused,
            format!("{} stops bwrap from creating its user namespace", r.setting()),
            r.fix(bwrap),
        )),
        (_, true) => Ok(format!(
            "{} is set, and bwrap still gets its namespaces here ({})",
            settings.join(", "),
            if privileged {
                "Spear runs as root, which the unprivileged-only restrictions do not bind"
            } else {
                "a profile or the distribution allows it for bwrap"
            }
        )),
        (None, false) => Ok(format!(
            "{} is set but does not bind root; the sandbox fails for another reason \
             (see user_namespaces)",
            settings.join(", ")
        )),
    }
}

/// What a real sandboxed command sees of the filter and of `/proc/sys`.
struct Walls {
    seccomp: Verdicted,
    proc_sys: Verdicted,
}

async fn probe_walls(runner: &CommandRunner) -> Walls {
    let req = RunRequest {
        command: "grep '^Seccomp:' /proc/self/status; grep ' /proc/sys ' /proc/self/mountinfo"
            .into(),
        profile: ExecutionProfile::read_only(),
        timeout: None,
    };
    let res = runner.run(&req, &mut NullSink).await;
    if res.status != ToolStatus::Ok {
        let why = res.reason.unwrap_or_default();
        let missing = |what: &str| {
            Err((
                Verdict::Missing,
                format!("no sandbox ran to check {what}: {why}"),
                "fix the sandbox first (see above)".to_string(),
            ))
        };
        return Walls {
            seccomp: missing("the seccomp filter"),
            proc_sys: missing("/proc/sys"),
        };
    }
    let names: Vec<&str> = seccomp::refused_calls().iter().map(|c| c.name).collect();
    let seccomp = if res
        .stdout
        .lines()
        .any(|l| l.split_whitespace().eq(["Seccomp:", "2"]))
    {
        Ok(format!(
            "on in every sandbox: {} calls fail with EPERM ({}); {} fail with EPERM when the \
             mode carries a set-uid or set-gid bit; openat2 answers ENOSYS; a call through \
             another ABI (x32 or i386 on x86_64, arm32 on aarch64) kills the process",
            names.len(),
            names.join(", "),
            seccomp::set_id::mode_calls()
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else {
        Err((
            Verdict::Refused,
            format!(
                "a sandboxed command ran without the filter: {}",
                res.stdout.trim()
            ),
            "use bubblewrap 0.3 or later, which loads `--seccomp`".into(),
        ))
    };
    let ro_mount = res
        .stdout
        .lines()
        .find(|l| l.contains(" /proc/sys "))
        .and_then(|l| l.split_whitespace().nth(5))
        .is_some_and(|opts| opts.split(',').any(|o| o == "ro"));
    let listed =
        |list: &[(&str, &str)]| list.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", ");
    let proc_sys = if ro_mount {
        Ok(format!(
            "read-only where present: {}; hidden: {}",
            listed(PROC_READ_ONLY),
            listed(PROC_HIDDEN)
        ))
    } else {
        Err((
            Verdict::Refused,
            "/proc/sys is writable in the sandbox".into(),
            "report this: the sandbox's argv binds it read-only".into(),
        ))
    };
    Walls { seccomp, proc_sys }
}

/// What bounds a sandbox's memory here, and how far.
fn describe_memory_cap(runner: &CommandRunner) -> String {
    let config = runner.config();
    let per_process = match config.resource_limits.data_bytes {
        Some(b) => format!(
            "RLIMIT_DATA {} MiB per process (its private writable memory)",
            b >> 20
        ),
        None => "no per-process memory rlimit".into(),
    };
    let whole = match config.cgroup_limits.memory_max_bytes {
        Some(b) => format!(
            "MemoryMax {} MiB for the whole sandbox, in a systemd scope",
            b >> 20
        ),
        None => "no limit for the sandbox as a whole: `[cgroups] memory_max_bytes` is not set \
                 (it needs a systemd manager)"
            .into(),
    };
    format!("{per_process}; {whole}")
}

/// What bounds a sandbox's CPU here.
fn describe_cpu_cap(runner: &CommandRunner) -> String {
    let config = runner.config();
    let per_process = match config.resource_limits.cpu_seconds {
        Some(s) => format!("RLIMIT_CPU {s} s of CPU time per process (SIGXCPU, then SIGKILL)"),
        None => "no per-process CPU-time rlimit".into(),
    };
    let quota = match config.cgroup_limits.cpu_quota_percent {
        Some(p) => format!("CPUQuota {p}% for the whole sandbox, in a systemd scope"),
        None => "no CPU share limit (`[cgroups] cpu_quota_percent` is not set)".into(),
    };
    format!(
        "{per_process}; {quota}; every command also ends at its time limit ({} s by default)",
        config.default_timeout.as_secs()
    )
}

fn describe_tmpfs(config: &RunnerConfig) -> String {
    let sizes: Vec<String> = config
        .tmpfs
        .entries()
        .iter()
        .map(|(mount, bytes)| format!("{mount} {} MiB", bytes >> 20))
        .collect();
    format!(
        "{}; /dev itself read-only. Their pages count against the command's memory only under \
         cgroup limits (a systemd scope's MemoryMax); without them these sizes are the bound \
         (rlimits do not count tmpfs)",
        sizes.join(", ")
    )
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

/// What a network grant reaches, as configured.
fn egress_words(egress: &spear::harness::egress::Egress) -> String {
    use spear::harness::egress::NetworkPath;
    if egress.path == NetworkPath::Full {
        return "network = \"full\": a grant takes slirp4netns (every internet address, no \
                names, no per-connection record)"
            .into();
    }
    let presets = egress.rules.presets();
    let allow = egress.rules.allowed().count();
    let deny = egress.rules.denied().count();
    format!(
        "a grant takes the proxy: {allow} allowed name(s){}, {deny} denied; other names are \
         asked about in ASK and refused in AUTO",
        if presets.is_empty() {
            String::new()
        } else {
            format!(" (presets {})", presets.join(", "))
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_userns_policy_line_names_each_case_and_its_fix() {
        let bwrap = std::path::Path::new("/usr/bin/bwrap");
        assert!(userns_policy(&[], true, false, bwrap).is_ok());
        let Err((Verdict::Refused, detail, fix)) =
            userns_policy(&[UsernsRestriction::AppArmor], false, false, bwrap)
        else {
            panic!("an AppArmor-restricted user must be refused with a fix");
        };
        assert!(
            detail.contains("apparmor_restrict_unprivileged_userns = 1"),
            "{detail}"
        );
        assert!(
            fix.contains("apparmor_parser -r /etc/apparmor.d/bwrap"),
            "{fix}"
        );
        let root = userns_policy(&[UsernsRestriction::AppArmor], true, true, bwrap).unwrap();
        assert!(
            root.contains("does not bind") || root.contains("root"),
            "{root}"
        );
        let Err((_, _, fix)) = userns_policy(
            &[UsernsRestriction::MaxUserNamespacesZero],
            false,
            true,
            bwrap,
        ) else {
            panic!("max_user_namespaces = 0 binds root too");
        };
        assert!(
            fix.contains("sysctl -w user.max_user_namespaces=15000"),
            "{fix}"
        );
        let Err((_, _, fix)) = userns_policy(
            &[UsernsRestriction::UnprivilegedCloneOff],
            false,
            false,
            bwrap,
        ) else {
            panic!("unprivileged_userns_clone = 0 binds an ordinary user");
        };
        assert!(fix.contains("kernel.unprivileged_userns_clone=1"), "{fix}");
    }
}
