//! The third-party parsers (pdf-extract, dom_smoothie, html2text) never run in Spear's own
//! process: each extraction is a child, Spear's own binary run as `spear __extract pdf|html`,
//! with the input on stdin (a memfd), hard rlimits set before exec (address space, CPU time,
//! file size 0, a few descriptors, no core), a cleared environment, no inherited descriptor,
//! its own user and network namespaces (so no network), a parent-death signal, and a wall-clock
//! limit and the task's cancellation that kill it through its pidfd. Invariant: whatever a
//! hostile document makes a parser do, Spear's own memory and time stay bounded by these
//! limits, and a cancelled task stops waiting at once.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use rustix::process::{Resource, Rlimit};

use super::pdftotext::Capped;
use crate::harness::process::{
    BoundedCapture, CancelToken, Exit, SpawnRequest, become_ids, pump_output, spawn_held,
};

/// The hidden subcommand of Spear's binary that serves one extraction.
pub const SUBCOMMAND: &str = "__extract";

/// The binary that serves `__extract`; set once by whoever embeds the library.
static EXTRACTOR: OnceLock<PathBuf> = OnceLock::new();

/// Name the binary that serves `spear __extract` (Spear's `main` passes `/proc/self/exe`, a
/// test its `CARGO_BIN_EXE_spear`). Without it every extraction in a child fails, saying so.
pub fn set_extractor(program: PathBuf) {
    let _ = EXTRACTOR.set(program);
}

/// The limits one extraction runs under.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// The child's address space (RLIMIT_AS).
    pub memory_bytes: u64,
    /// Wall-clock limit; CPU time is limited to the same number of seconds.
    pub timeout: Duration,
    /// Output beyond this is refused (the child is killed at the first byte past it).
    pub max_output: usize,
}

/// What one extraction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job<'a> {
    /// A PDF's pages through pdf-extract, as a JSON array of strings.
    Pdf,
    /// HTML as Markdown, links made absolute against `base` (already checked to be a URL).
    Html { base: Option<&'a str> },
}

/// Why a confined extraction gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The task was cancelled; the child was killed.
    Cancelled,
    /// The parser reported an error, or one of the limits ended it: the reason, for a person.
    Failed(String),
}

/// Exit code of a child whose parser reported an error (its message on stderr).
pub(super) const PARSER_ERROR: i32 = 2;

/// Run `job` on `input` in a confined child and return its standard output.
pub fn run(
    job: Job<'_>,
    input: &[u8],
    bounds: &Bounds,
    cancel: Option<&CancelToken>,
) -> Result<Vec<u8>, Failure> {
    let Some(program) = EXTRACTOR.get() else {
        return Err(Failure::Failed(
            "no confined extractor is set up (the embedding program must call \
             documents::set_extractor with Spear's binary)"
                .into(),
        ));
    };
    if cancel.is_some_and(CancelToken::is_cancelled) {
        return Err(Failure::Cancelled);
    }
    let stdin = crate::tools::external::memfd_with(input)
        .map_err(|e| Failure::Failed(format!("cannot hand the document to the extractor: {e}")))?;
    let mut command = Command::new(program);
    command.arg(SUBCOMMAND);
    match job {
        Job::Pdf => command.arg("pdf"),
        Job::Html { base: None } => command.arg("html"),
        Job::Html { base: Some(b) } => command.args(["html", "--base", b]),
    };
    command.env_clear().current_dir("/");
    let ids = parser_ids()?;
    // SAFETY: the closure runs between fork and exec and makes raw system calls only (the id
    // change, unshare), which allocate nothing and take no lock.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            // A root Spear's parser is not root: it leaves root before anything else, while it
            // still may (spawn_held sets the parent-death signal again after this closure).
            if let Some((uid, gid)) = ids {
                become_ids(uid, gid)?;
            }
            // A user namespace of its own makes the network namespace possible unprivileged;
            // the new network namespace has only a loopback that is down: no network at all.
            rustix::thread::unshare_unsafe(
                rustix::thread::UnshareFlags::NEWUSER | rustix::thread::UnshareFlags::NEWNET,
            )?;
            Ok(())
        });
    }
    let secs = bounds.timeout.as_secs().max(1);
    let rlimits = [
        (Resource::As, both(bounds.memory_bytes)),
        (
            Resource::Cpu,
            Rlimit {
                current: Some(secs),
                maximum: Some(secs + 1),
            },
        ),
        (Resource::Fsize, both(0)),
        (Resource::Nofile, both(32)),
        (Resource::Core, both(0)),
    ];
    let what = match job {
        Job::Pdf => "the PDF's text",
        Job::Html { .. } => "the HTML's text",
    };
    let ended = crate::tools::external::on_own_runtime(|rt| {
        rt.block_on(supervise(command, stdin, &rlimits, bounds, cancel))
    })
    .map_err(|why| Failure::Failed(format!("the extractor's supervisor: {why}")))??;
    explain(ended, what, bounds)
}

/// The ids a root Spear's parser runs as: the sandbox's unprivileged uid (`root_uid`), whatever
/// `root_uid = "host"` says for commands; a parser never needs root. `None` when Spear is not
/// root (the parser keeps Spear's own uid).
pub(crate) fn parser_ids() -> Result<Option<(u32, u32)>, Failure> {
    if !rustix::process::geteuid().is_root() {
        return Ok(None);
    }
    crate::harness::sandbox::root_uid::choose_for_host()
        .map(|ids| Some((ids.uid, ids.gid)))
        .map_err(|e| {
            Failure::Failed(format!(
                "Spear runs as root and has no unprivileged uid to run the document parser as: {e}"
            ))
        })
}

fn both(v: u64) -> Rlimit {
    Rlimit {
        current: Some(v),
        maximum: Some(v),
    }
}

/// How the child ended, with what it printed.
struct Ended {
    exit: Option<Exit>,
    stdout: Vec<u8>,
    overflow: bool,
    stderr: String,
    timed_out: bool,
}

async fn supervise(
    command: Command,
    stdin: std::fs::File,
    rlimits: &[(Resource, Rlimit)],
    bounds: &Bounds,
    cancel: Option<&CancelToken>,
) -> Result<Ended, Failure> {
    let mut child = spawn_held(SpawnRequest {
        command,
        inherit_fds: &[],
        rlimits,
        capture: true,
        stderr_file: None,
        join_cgroup: None,
        stdin: Some(stdin),
        stage: None,
    })
    .map_err(|e| Failure::Failed(format!("cannot start the extractor: {e}")))?;
    let overflowed = CancelToken::new();
    let mut sink = Capped {
        limit: bounds.max_output,
        stop: overflowed.clone(),
        stdout: Vec::new(),
        overflow: false,
        stderr: Vec::new(),
    };
    // The sink keeps what is believed; these two only count.
    let (mut out, mut err) = (BoundedCapture::new(0, 0), BoundedCapture::new(0, 0));
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let never = CancelToken::new();
    let cancel = cancel.unwrap_or(&never);
    let finished = {
        let work = async {
            let _ = pump_output(stdout, stderr, &mut sink, &mut out, &mut err).await;
            child.wait().await
        };
        tokio::select! {
            exit = work => Some(exit.ok()),
            () = tokio::time::sleep(bounds.timeout) => None,
            () = overflowed.cancelled() => None,
            () = cancel.cancelled() => {
                let _ = child.stop(Duration::from_secs(1)).await;
                return Err(Failure::Cancelled);
            }
        }
    };
    let (exit, stopped) = match finished {
        Some(exit) => (exit, false),
        None => (child.stop(Duration::from_secs(1)).await.ok(), true),
    };
    let overflow = sink.overflow;
    Ok(Ended {
        exit,
        stdout: sink.stdout,
        overflow,
        stderr: String::from_utf8_lossy(&sink.stderr).trim().to_string(),
        timed_out: stopped && !overflow,
    })
}

/// The child's output, or why there is none, in words a person can act on.
fn explain(e: Ended, what: &str, bounds: &Bounds) -> Result<Vec<u8>, Failure> {
    let limits = format!(
        "{} MiB of memory and {} s",
        bounds.memory_bytes >> 20,
        bounds.timeout.as_secs()
    );
    if e.timed_out {
        return Err(Failure::Failed(format!(
            "{what} could not be extracted within {limits}: the parser was still running after \
             {} s and was stopped",
            bounds.timeout.as_secs()
        )));
    }
    if e.overflow {
        return Err(Failure::Failed(format!(
            "{what} is more than {} bytes; the document is too large to extract whole",
            bounds.max_output
        )));
    }
    let detail = match e.stderr.is_empty() {
        true => String::new(),
        false => format!(" ({})", e.stderr),
    };
    match e.exit {
        Some(Exit::Code(0)) => Ok(e.stdout),
        Some(Exit::Code(PARSER_ERROR)) => Err(Failure::Failed(e.stderr)),
        // Rust aborts when an allocation fails: the address-space limit was reached.
        Some(Exit::Signal(6)) if e.stderr.contains("memory allocation") => {
            Err(Failure::Failed(format!(
                "{what} could not be extracted within {limits}: the parser needed more than {} \
                 MiB of memory and was stopped",
                bounds.memory_bytes >> 20
            )))
        }
        Some(Exit::Signal(sig)) if sig == libc::SIGXCPU || sig == libc::SIGKILL => {
            Err(Failure::Failed(format!(
                "{what} could not be extracted within {limits}: the parser used its {} s of CPU \
                 time and was stopped",
                bounds.timeout.as_secs()
            )))
        }
        Some(Exit::Code(101)) => Err(Failure::Failed(format!(
            "the parser panicked on this document{detail}"
        ))),
        Some(Exit::Code(c)) => Err(Failure::Failed(format!(
            "the extractor exited with {c}{detail}"
        ))),
        Some(Exit::Signal(sig)) => Err(Failure::Failed(format!(
            "the extractor was ended by signal {sig}{detail}"
        ))),
        None => Err(Failure::Failed(format!(
            "the extractor could not be waited for{detail}"
        ))),
    }
}
