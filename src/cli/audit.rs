//! `spear audit`: read, follow and verify the workspace's audit log. Human output is one aligned
//! line per record, newest last, coloured by decision only on a terminal without `NO_COLOR`;
//! every text a record holds is shown escaped (`escape_controls`), so a command's own control
//! characters can neither fake a line nor reach the terminal. `--json` prints the lines exactly.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use spear::harness::audit::display::escape_controls;
use spear::harness::audit::{self, AuditPaths, AuditRecord, Decision, default_state_home, reader};

#[derive(Args)]
pub struct AuditArgs {
    /// Print each record as its JSON line.
    #[arg(long)]
    pub json: bool,
    /// Only the last N records (read backwards from the end).
    #[arg(long, value_name = "N")]
    pub tail: Option<usize>,
    /// Keep printing records as they are appended.
    #[arg(long)]
    pub follow: bool,
    /// Only records whose line contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub grep: Option<String>,
    /// Check the hash chain and the head; name the first bad line.
    #[arg(long)]
    pub verify: bool,
    /// The workspace whose log to read (default: the git root or the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

pub fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let root = match &args.workspace {
        Some(dir) => dir.clone(),
        None => super::default_workspace()?,
    };
    let root = root
        .canonicalize()
        .with_context(|| format!("workspace {}", root.display()))?;
    let paths = AuditPaths::new(&default_state_home()?, &root);
    if args.verify {
        return verify(&paths);
    }
    let file = match File::open(&paths.log) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !args.follow => {
            eprintln!("spear: no audit log yet for {}", root.display());
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e).with_context(|| format!("open {}", paths.log.display())),
    };
    let grep = args.grep.clone().unwrap_or_default();
    let keep = |line: &[u8]| grep.is_empty() || contains(line, grep.as_bytes());
    let style = Style::detect(args.json);
    let out = std::io::stdout();
    let mut out = out.lock();
    let tail = reader::tail(&file, args.tail.unwrap_or(usize::MAX), &keep)
        .with_context(|| format!("read {}", paths.log.display()))?;
    for line in &tail.lines {
        print_line(&mut out, line, style)?;
    }
    if let Some((offset, bytes)) = &tail.torn {
        eprintln!(
            "spear: the log ends with an incomplete line ({} bytes at offset {offset}): a writer was interrupted",
            bytes.len()
        );
    }
    if !args.follow {
        return Ok(ExitCode::SUCCESS);
    }
    let mut offset = tail.end;
    loop {
        out.flush()?;
        std::thread::sleep(Duration::from_millis(250));
        let (lines, next) = reader::lines_from(&file, offset)?;
        // A writer cut an incomplete line off: continue from the new end.
        let len = file.metadata()?.len();
        offset = if len < next { len } else { next };
        for line in lines.iter().filter(|l| keep(l)) {
            print_line(&mut out, line, style)?;
        }
    }
}

fn verify(paths: &AuditPaths) -> anyhow::Result<ExitCode> {
    if !paths.log.exists() {
        println!("ok: no audit log yet ({})", paths.log.display());
        return Ok(ExitCode::SUCCESS);
    }
    match audit::verify(&paths.log, &paths.head)? {
        Ok(report) => {
            println!(
                "ok: {} records verified ({})",
                report.records,
                paths.log.display()
            );
            if let Some((line, bytes)) = report.torn_line {
                println!(
                    "note: line {line} is incomplete ({bytes} bytes): a writer was killed mid-write; \
                     every earlier record verified and the next writer will set it aside"
                );
            }
            if report.head_lagging {
                println!(
                    "note: the head lags by {} record(s): a writer was interrupted after \
                     writing a record, or the machine stopped before the head reached the disk",
                    report.head_lag
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            println!("FAILED: line {}: {}", failure.line, failure.problem);
            Ok(ExitCode::from(1))
        }
    }
}

/// The git root above the current directory, or the current directory.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Json,
    Plain,
    Colour,
}

impl Style {
    fn detect(json: bool) -> Style {
        let no_color = spear::config::Env::Process.no_color();
        match (json, std::io::stdout().is_terminal() && !no_color) {
            (true, _) => Style::Json,
            (false, true) => Style::Colour,
            (false, false) => Style::Plain,
        }
    }
}

fn print_line(out: &mut impl Write, line: &[u8], style: Style) -> anyhow::Result<()> {
    if style == Style::Json {
        out.write_all(line)?;
        out.write_all(b"\n")?;
        return Ok(());
    }
    match serde_json::from_slice::<AuditRecord>(line) {
        Ok(r) => writeln!(out, "{}", human(&r, style == Style::Colour))?,
        Err(_) => writeln!(
            out,
            "?  {}",
            escape_controls(&String::from_utf8_lossy(line))
        )?,
    }
    Ok(())
}

/// `2026-11-30 15:43:00  refused    write_file    invalid_path   -  vendor/x.rs  [third_party]`
fn human(r: &AuditRecord, colour: bool) -> String {
    let label = format!("{:<9}", r.decision.label());
    let decision = if colour {
        let code = match r.decision {
            Decision::Allowed | Decision::Approved => "32",
            Decision::Denied | Decision::Refused => "31",
            Decision::Cancelled
            | Decision::RepeatedRefusalStopped
            | Decision::Recovered
            | Decision::AnswerRefused => "33",
        };
        format!("\x1b[{code}m{label}\x1b[0m")
    } else {
        label
    };
    r.summary(&decision)
}
