//! `pdftotext` run confined: the PDF is copied into a fresh directory that becomes a read-only
//! workspace of an ordinary `CommandRunner` sandbox (closed network, private `/tmp` and `$HOME`,
//! rlimits, a time limit that kills the whole sandbox), and only its standard output comes back,
//! bounded. A hostile PDF that exploits the parser gets a process that can read the system view
//! and its own input, write nothing that outlives it, and reach no network.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::command_policy::ExecutionProfile;
use crate::harness::command_runner::{CommandRunner, RunRequest, RunnerConfig};
use crate::harness::primitives::ToolStatus;
use crate::harness::process::{CancelToken, OutputSink, OutputStream};
use crate::harness::resource_control::ResourceLimits;
use crate::harness::sandbox::spec::SYSTEM_PATHS;

/// The name the input has inside the sandbox's workspace.
const INPUT: &str = "input.pdf";
const STDERR_KEPT: usize = 2_000;

/// Stdout up to a limit (past it, only counted), and the start of stderr. Shared with the
/// confined extractor, whose output is believed the same way.
pub(super) struct Capped {
    pub(super) limit: usize,
    /// Cancelled at the first byte past the limit: nothing more will be believed, so the run
    /// ends now rather than at its time limit.
    pub(super) stop: CancelToken,
    pub(super) stdout: Vec<u8>,
    pub(super) overflow: bool,
    pub(super) stderr: Vec<u8>,
}

impl OutputSink for Capped {
    fn write(&mut self, stream: OutputStream, bytes: &[u8]) {
        match stream {
            OutputStream::Stdout if self.stdout.len() + bytes.len() <= self.limit => {
                self.stdout.extend_from_slice(bytes)
            }
            OutputStream::Stdout => {
                self.overflow = true;
                self.stop.cancel();
            }
            OutputStream::Stderr => {
                let room = STDERR_KEPT.saturating_sub(self.stderr.len());
                self.stderr
                    .extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
        }
    }
}

/// `program` on `PATH`, as an absolute path.
pub(super) fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The bash source the sandbox runs: fixed words and one quoted program path, nothing from the
/// document. `-q` keeps warnings about a damaged file out of the text.
pub(super) fn command_line(program: &Path) -> String {
    format!(
        "exec {} -q -enc UTF-8 -eol unix {INPUT} -",
        shell_quote(&program.to_string_lossy())
    )
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The limits pdftotext runs under: enough for a large standard, not for a decompression bomb.
fn limits(timeout: Duration) -> ResourceLimits {
    ResourceLimits {
        data_bytes: Some(2 << 30),
        address_space_bytes: None,
        // pdftotext starts no process of its own; the cap counts the sandbox's alone.
        processes: Some(16),
        cpu_seconds: Some(timeout.as_secs().max(1) + 1),
        file_size_bytes: Some(64 << 20),
        open_files: Some(256),
    }
}

/// The text pdftotext prints for `bytes`, or why it gave none.
pub(super) fn run(
    program: &Path,
    bytes: &[u8],
    timeout: Duration,
    max_text: usize,
) -> Result<String, String> {
    let dir = tempfile::Builder::new()
        .prefix("spear-pdf-")
        .tempdir()
        .map_err(|e| format!("cannot make a directory for the PDF: {e}"))?;
    let input = dir.path().join(INPUT);
    std::fs::File::create(&input)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| format!("cannot write the PDF for pdftotext: {e}"))?;
    let program_dir = program.parent().unwrap_or(Path::new("/"));
    let in_system = SYSTEM_PATHS.iter().any(|s| program_dir.starts_with(s));
    // A pdftotext outside the system view (a test double, an /opt install) is bound read-only.
    let host_read_paths = match in_system {
        true => Vec::new(),
        false => vec![
            std::fs::canonicalize(program_dir)
                .map_err(|e| format!("cannot resolve {}: {e}", program_dir.display()))?,
        ],
    };
    let mut config = RunnerConfig::for_workspace(dir.path());
    config.resource_limits = limits(timeout);
    config.default_timeout = timeout;
    config.search_path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin"));
    let runner =
        CommandRunner::new(config).map_err(|e| format!("no sandbox for pdftotext: {e}"))?;
    let mut profile = ExecutionProfile::read_only();
    profile.host_read_paths = host_read_paths;
    let request = RunRequest {
        command: command_line(program),
        profile,
        timeout: Some(timeout),
    };
    let stop = CancelToken::new();
    let mut sink = Capped {
        limit: max_text,
        stop: stop.clone(),
        stdout: Vec::new(),
        overflow: false,
        stderr: Vec::new(),
    };
    // The sandbox child is tied to the thread that spawns it, and a caller may be on an async
    // runtime already: a thread of its own with a runtime of its own serves both.
    let joined = std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime for pdftotext: {e}"))?;
            Ok::<_, String>(rt.block_on(runner.run_cancellable(&request, &mut sink, Some(&stop))))
        })
        .join()
    });
    let result = match joined {
        Ok(r) => r?,
        Err(_) => return Err("the pdftotext runner panicked".into()),
    };
    if sink.overflow {
        return Err(format!(
            "pdftotext printed more than {max_text} bytes of text; the document is too large to \
             extract whole"
        ));
    }
    let stderr = String::from_utf8_lossy(&sink.stderr).trim().to_string();
    match (result.status, result.exit_code) {
        (ToolStatus::Ok, Some(0)) => Ok(String::from_utf8_lossy(&sink.stdout).into_owned()),
        (ToolStatus::Ok, code) => Err(format!(
            "pdftotext exited with {}{}",
            code.map_or("no code".to_string(), |c| c.to_string()),
            if stderr.is_empty() {
                String::new()
            } else {
                format!(": {stderr}")
            }
        )),
        (status, _) => Err(format!(
            "pdftotext did not finish ({}): {}",
            status.as_str(),
            result.reason.unwrap_or(stderr)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_fixed_words_and_a_quoted_program() {
        assert_eq!(
            command_line(Path::new("/usr/bin/pdftotext")),
            "exec '/usr/bin/pdftotext' -q -enc UTF-8 -eol unix input.pdf -"
        );
        assert_eq!(
            command_line(Path::new("/opt/it's/pdftotext")),
            r"exec '/opt/it'\''s/pdftotext' -q -enc UTF-8 -eol unix input.pdf -"
        );
    }

    #[test]
    fn stdout_past_the_cap_is_an_overflow_not_a_truncated_success() {
        let mut s = Capped {
            limit: 4,
            stop: CancelToken::new(),
            stdout: Vec::new(),
            overflow: false,
            stderr: Vec::new(),
        };
        s.write(OutputStream::Stdout, b"abc");
        assert!(!s.overflow);
        s.write(OutputStream::Stdout, b"de");
        assert!(s.overflow && s.stop.is_cancelled());
        assert_eq!(s.stdout, b"abc");
    }
}
