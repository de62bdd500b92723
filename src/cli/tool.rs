//! `spear tool NAME [JSON_ARGS] [--mode M] [--network] [--json] [--standard NAME]`: one tool
//! call through the same router the model's calls take, on the coding surface, or with
//! `--standard` on the normative runtime's (an IMPLEMENTATION turn's view: its lookups and its
//! own file and command tools). Exit codes as `spear exec`: the command's own code
//! when a terminal command ran, 0 ok, 126 refused or cancelled, 127 not found, 124 timeout,
//! 1 failed.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use spear::agent::builder::{Place, SessionBuilder};
use spear::harness::audit::display::escape_controls;
use spear::harness::primitives::ExecutionMode;
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::router::ToolCall;
use spear::tools::router::turn::Turn;

#[derive(Args)]
pub struct ToolArgs {
    /// The tool: read_file, search_files, patch, write_file, delete_file or terminal; with
    /// --standard: standard.list, standard.search, standard.read, search_corpus, workspace.*.
    pub name: String,
    /// The arguments as one JSON object (default: {}).
    pub arguments: Option<String>,
    /// Execution mode: safe, ask or auto (default: ask).
    #[arg(long, value_name = "M")]
    pub mode: Option<ExecutionMode>,
    /// Print the envelope as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Let terminal commands that need the network have it (through the egress proxy, by the
    /// names `[network]` allows; `network = "full"`: slirp4netns). Without it they are denied,
    /// as the spec's session setting.
    #[arg(long)]
    pub network: bool,
    /// Call on the normative surface with the standard NAME engaged (standard.search, …).
    #[arg(long, value_name = "NAME")]
    pub standard: Option<String>,
}

pub fn run(args: ToolArgs, workspace: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let arguments: serde_json::Value = match &args.arguments {
        Some(text) => serde_json::from_str(text).context("JSON_ARGS is not valid JSON")?,
        None => serde_json::json!({}),
    };
    let place = Place::find(workspace)?;
    let engaged = spear::tools::normative::EngagedStandard::default();
    if let Some(name) = &args.standard {
        super::standard::check_engageable(&place.state, name)?;
        engaged.set(Some(name.clone()));
    }
    let settings = ExposureSettings {
        standard_engaged: args.standard.is_some(),
        ..ExposureSettings::default()
    };
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let session = format!("tool-{}-{secs}", std::process::id());
    let router = SessionBuilder::new(place, super::common::harness_settings()?, session.clone())
        .network(args.network)
        .engaged(engaged)
        .router()?;
    let view = ToolExposurePolicy::view(router.registry(), &settings);
    let mut turn = Turn::new(
        args.mode.unwrap_or(ExecutionMode::Ask),
        view,
        super::common::TtyApprover,
    );
    let call = ToolCall {
        id: "cli-1".into(),
        name: args.name,
        arguments,
    };
    let env = router.call(&mut turn, &call)?;
    super::checkpoints::say_checkpoint(&env, &session);
    print(&env, args.json)?;
    Ok(exit_code(&env))
}

fn print(env: &ToolResultEnvelope, json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, env)?;
        writeln!(out)?;
    } else {
        out.write_all(env.preview.as_bytes())?;
        // The preview is the tool's output, passed through as a command's output would be;
        // Spear's own words about it may quote a command or a path, so they are escaped.
        if let Some(note) = &env.store_note {
            eprintln!("spear: note: {}", escape_controls(note));
        }
        if let Some(reason) = &env.reason {
            eprintln!("spear: {}: {}", env.status, escape_controls(reason));
        }
    }
    out.flush()?;
    Ok(())
}

fn exit_code(env: &ToolResultEnvelope) -> ExitCode {
    super::common::exit_code(env.status, env.exit_code)
}
