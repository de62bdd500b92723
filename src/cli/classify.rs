//! `spear classify`: assessments for commands given as arguments or read from stdin (one per
//! line, or NUL-separated with `-0`). A command that does not parse is an answer, not an error.

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use spear::harness::audit::display::escape_controls;
use spear::harness::command_policy::{CommandAssessment, CommandPolicy, PolicyConfig};

#[derive(Args)]
pub struct ClassifyArgs {
    /// Print one JSON object per command.
    #[arg(long)]
    pub json: bool,
    /// Read commands separated by NUL bytes instead of newlines (so a command may span lines).
    #[arg(short = '0')]
    pub nul: bool,
    /// Show each segment's own class and which permission rule (of this directory's
    /// workspace) decides it in ASK mode.
    #[arg(long, conflicts_with = "json")]
    pub explain: bool,
    /// Commands to classify, one per argument. Read from stdin when none are given.
    pub commands: Vec<String>,
}

#[derive(Serialize)]
struct JsonLine<'a> {
    command: &'a str,
    class: &'a str,
    executables: &'a [String],
    writes: &'a [String],
    network: bool,
    reasons: &'a [String],
}

pub fn run(args: ClassifyArgs) -> anyhow::Result<ExitCode> {
    let commands = if args.commands.is_empty() {
        let mut raw = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut raw)
            .context("reading commands from stdin")?;
        // Invalid UTF-8 is classified as its lossy text: U+FFFD never matches an allow-listed name.
        let text = String::from_utf8_lossy(&raw);
        split_commands(&text, args.nul)
    } else {
        args.commands
    };
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| d.canonicalize().ok());
    let policy = CommandPolicy::new(PolicyConfig {
        workspace_root: cwd,
        ..PolicyConfig::default()
    });
    let assessments: Vec<CommandAssessment> = commands.iter().map(|c| policy.classify(c)).collect();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.explain {
        super::rules::explain_for_classify(&mut out, &policy, &assessments)?;
    } else if args.json {
        for a in &assessments {
            let line = JsonLine {
                command: &a.command,
                class: a.class.as_str(),
                executables: &a.executables,
                writes: &a.writes,
                network: a.network,
                reasons: &a.reasons,
            };
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
        }
    } else {
        write_table(&mut out, &assessments)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn split_commands(text: &str, nul: bool) -> Vec<String> {
    let sep = if nul { '\0' } else { '\n' };
    text.split(sep)
        .map(|c| {
            if nul {
                c
            } else {
                c.strip_suffix('\r').unwrap_or(c)
            }
        })
        .filter(|c| !c.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// An aligned table: class, network marker, command; then the findings indented below.
fn write_table(out: &mut impl Write, assessments: &[CommandAssessment]) -> io::Result<()> {
    let width = assessments
        .iter()
        .map(|a| a.class.as_str().len())
        .max()
        .unwrap_or(0);
    for a in assessments {
        let net = if a.network { "net" } else { "   " };
        let shown = escape_controls(&a.command);
        writeln!(out, "{:<width$}  {net}  {shown}", a.class.as_str())?;
        let pad = " ".repeat(width + 7);
        if !a.executables.is_empty() {
            writeln!(
                out,
                "{pad}runs:   {}",
                escape_controls(&a.executables.join(", "))
            )?;
        }
        if !a.writes.is_empty() {
            writeln!(
                out,
                "{pad}writes: {}",
                escape_controls(&a.writes.join(", "))
            )?;
        }
        for r in &a.reasons {
            writeln!(out, "{pad}- {}", escape_controls(r))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitting_honours_nul_and_skips_blank_lines() {
        assert_eq!(split_commands("ls\n\ncat x\r\n", false), ["ls", "cat x"]);
        assert_eq!(
            split_commands("echo a\necho b\0ls\0", true),
            ["echo a\necho b", "ls"]
        );
    }
}
