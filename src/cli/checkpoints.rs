//! `spear checkpoints [--json] [--session ID]`, `spear checkpoints prune [--budget-mib N]
//! [--session ID]` and `spear undo [--session ID] [--turn N] [--dry-run] [--force]`: what this
//! workspace's sessions can take back, and taking it back.
//!
//! `checkpoints --json` prints one object: `{"workspace", "sessions": [{"id", "updated",
//! "turns": [{"turn", "at", "calls": [{"call", "tool", "target", "changed"}]}]}]}`, the turns
//! still live (not already taken back). `undo --json` prints the plan (with `--dry-run`) or the
//! report.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use spear::agent::builder::Place;
use spear::harness::audit::display::escape_controls;
use spear::harness::audit::rfc3339;
use spear::harness::checkpoint::{CallRecord, Checkpoints, Plan, Report, manifest};
use spear::tools::checkpoints::{plan_lines, report_lines, undo_event};
use spear::tools::results::workspace_state_dir;

#[derive(Args)]
pub struct CheckpointsArgs {
    #[command(subcommand)]
    pub action: Option<CheckpointsAction>,
    /// Only this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum CheckpointsAction {
    /// Remove whole sessions' checkpoints, oldest first, until the store fits the budget, and
    /// every file no remaining checkpoint needs.
    Prune {
        /// The store's size to prune to, in MiB (default: the configured budget).
        #[arg(long)]
        budget_mib: Option<u64>,
        /// Remove this session's checkpoints (and only then prune to the budget).
        #[arg(long)]
        session: Option<String>,
    },
}

#[derive(Args)]
pub struct UndoArgs {
    /// The session whose changes to take back (default: the one that changed the tree last).
    #[arg(long)]
    pub session: Option<String>,
    /// Take back this turn and every later one (default: the last turn that changed anything).
    #[arg(long)]
    pub turn: Option<u32>,
    /// Say what would be done, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also restore files changed since by someone else (their changes are lost), and take back
    /// what can be when some paths cannot be.
    #[arg(long)]
    pub force: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The workspace's checkpoints (no first checkpoint is started: nothing runs here).
pub fn open(place: &Place) -> anyhow::Result<Checkpoints> {
    let (dir, root) = workspace_state_dir(&place.state, "checkpoints", &place.root)?;
    let limits = super::common::harness_settings()
        .map(|h| h.checkpoint_limits)
        .unwrap_or_default();
    Ok(Checkpoints::open(&root, &dir, limits)?)
}

/// The paths one call changed.
fn changed_by(cp: &Checkpoints, c: &CallRecord) -> Vec<String> {
    let Some(after) = &c.after else {
        return Vec::new();
    };
    let (Ok(b), Ok(a)) = (cp.store().manifest(&c.before), cp.store().manifest(after)) else {
        return Vec::new();
    };
    let paths: BTreeSet<&String> = b.entries.keys().chain(a.entries.keys()).collect();
    paths
        .into_iter()
        .filter(|p| !manifest::same(b.entries.get(*p), a.entries.get(*p)))
        .cloned()
        .collect()
}

pub fn list(args: CheckpointsArgs, workspace: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let place = Place::find(workspace)?;
    let cp = open(&place)?;
    if let Some(CheckpointsAction::Prune {
        budget_mib,
        session,
    }) = args.action
    {
        return prune(&cp, budget_mib, session.or(args.session));
    }
    let mut sessions = Vec::new();
    for (id, updated) in cp.sessions() {
        if args.session.as_ref().is_some_and(|s| *s != id) {
            continue;
        }
        let log = cp.session_log(&id)?;
        let mut turns: Vec<serde_json::Value> = Vec::new();
        let live = log.live_calls();
        let numbers: BTreeSet<u32> = live.iter().map(|c| c.turn).collect();
        for n in numbers {
            let calls: Vec<serde_json::Value> = live
                .iter()
                .filter(|c| c.turn == n)
                .map(|c| {
                    serde_json::json!({
                        "call": c.call,
                        "tool": c.tool,
                        "target": c.target,
                        "at": rfc3339(Duration::from_millis(c.at_ms)),
                        "changed": changed_by(&cp, c),
                        "uncovered": c.uncovered,
                    })
                })
                .collect();
            let at = live.iter().find(|c| c.turn == n).map_or(0, |c| c.at_ms);
            turns.push(serde_json::json!({
                "turn": n,
                "at": rfc3339(Duration::from_millis(at)),
                "calls": calls,
            }));
        }
        let updated = updated
            .duration_since(std::time::UNIX_EPOCH)
            .map(rfc3339)
            .unwrap_or_default();
        sessions.push(serde_json::json!({
            "id": id,
            "updated": updated,
            "turns": turns,
            "torn_line": log.torn,
        }));
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "workspace": place.root.display().to_string(),
                "store": cp.store().dir().display().to_string(),
                "store_bytes": cp.store().blob_bytes(),
                "sessions": sessions,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        println!(
            "No checkpoints for {} yet: one is taken before every call that may change it.",
            place.root.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Checkpoints of {} (store: {} MiB in {})",
        place.root.display(),
        cp.store().blob_bytes() >> 20,
        cp.store().dir().display()
    );
    for s in &sessions {
        let turns = s["turns"].as_array().map_or(&[][..], Vec::as_slice);
        println!(
            "\nsession {}  ({} turn{} can be taken back)",
            s["id"].as_str().unwrap_or_default(),
            turns.len(),
            if turns.len() == 1 { "" } else { "s" }
        );
        for t in turns {
            let calls = t["calls"].as_array().map_or(&[][..], Vec::as_slice);
            let changed: BTreeSet<&str> = calls
                .iter()
                .flat_map(|c| c["changed"].as_array().into_iter().flatten())
                .filter_map(|p| p.as_str())
                .collect();
            let first = calls.first().map_or(String::new(), |c| {
                format!(
                    "{}: {}",
                    c["tool"].as_str().unwrap_or_default(),
                    escape_controls(c["target"].as_str().unwrap_or_default())
                )
            });
            let first: String = first.chars().take(60).collect();
            println!(
                "  turn {:<3} {}  {} call{}, {} path{} changed  {first}",
                t["turn"],
                t["at"]
                    .as_str()
                    .unwrap_or_default()
                    .chars()
                    .take(19)
                    .collect::<String>()
                    .replace('T', " "),
                calls.len(),
                if calls.len() == 1 { "" } else { "s" },
                changed.len(),
                if changed.len() == 1 { "" } else { "s" },
            );
        }
    }
    println!(
        "\n`spear undo` takes back the last turn; `spear undo --turn N` turn N and later ones."
    );
    Ok(ExitCode::SUCCESS)
}

fn prune(
    cp: &Checkpoints,
    budget_mib: Option<u64>,
    session: Option<String>,
) -> anyhow::Result<ExitCode> {
    let budget = budget_mib.map_or(cp.limits().store_budget, |m| m << 20);
    if let Some(s) = &session {
        let path = cp.store().session_log(s)?;
        anyhow::ensure!(
            path.exists(),
            "no checkpoints for session {s}; `spear checkpoints` lists those there are"
        );
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    let (removed, freed) = cp.prune(budget, None)?;
    let mut gone: Vec<String> = session.into_iter().collect();
    gone.extend(removed);
    println!(
        "Pruned {} session{} ({}), freed {} MiB; the store holds {} MiB (budget {} MiB).",
        gone.len(),
        if gone.len() == 1 { "" } else { "s" },
        if gone.is_empty() {
            "none".into()
        } else {
            gone.join(", ")
        },
        freed >> 20,
        cp.store().blob_bytes() >> 20,
        budget >> 20
    );
    Ok(ExitCode::SUCCESS)
}

pub fn undo(args: UndoArgs, workspace: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let place = Place::find(workspace)?;
    let cp = open(&place)?;
    let session = match args.session {
        Some(s) => s,
        None => cp
            .sessions()
            .into_iter()
            .map(|(s, _)| s)
            .find(|s| cp.session_log(s).is_ok_and(|l| !l.live_calls().is_empty()))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "no session of {} has anything to take back",
                    place.root.display()
                )
            })?,
    };
    let plan = cp.plan_undo(&session, args.turn)?;
    if args.dry_run {
        if args.json {
            println!("{}", serde_json::to_string(&plan)?);
        } else {
            print_plan(&plan);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !plan.unrestorable.is_empty() && !args.force {
        print_plan(&plan);
        anyhow::bail!(
            "nothing was restored: {} path(s) this session changed cannot be brought back (listed above); `--force` takes back the rest",
            plan.unrestorable.len()
        );
    }
    let report = cp.undo(&plan, args.force)?;
    spear::harness::audit::AuditLogger::open_in(&place.state, &place.root)
        .and_then(|log| log.append(&undo_event(&plan, &report, args.force)))
        .context("the undo was done, but its audit record could not be written")?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_report(&plan, &report);
    }
    let clean = report.failed.is_empty() && report.left.is_empty();
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub fn print_plan(plan: &Plan) {
    for line in plan_lines(plan) {
        println!("{line}");
    }
}

fn print_report(plan: &Plan, r: &Report) {
    for line in report_lines(plan, r) {
        println!("{line}");
    }
}

/// Said on stderr by `spear exec` and `spear tool` after a call that was checkpointed.
pub fn say_checkpoint(env: &spear::tools::envelope::ToolResultEnvelope, session: &str) {
    let Some(c) = &env.checkpoint else { return };
    match &c.failed {
        Some(why) if c.before.is_empty() => {
            eprintln!("spear: no checkpoint could be taken before this call: {why}");
        }
        _ => {
            eprintln!(
                "spear: checkpointed under session {session}; `spear undo --session {session}` takes this call back"
            );
            if !c.uncovered.is_empty() {
                eprintln!(
                    "spear: the checkpoint could not take: {}",
                    c.uncovered.join(", ")
                );
            }
        }
    }
}
