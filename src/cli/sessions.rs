//! `spear sessions [--json]`: this workspace's sessions, newest first, for `spear run --resume`.
//! `--json` prints one object: `{"workspace", "sessions": [{"id", "created", "updated",
//! "model", "mode", "messages", "title"}]}`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use spear::agent::transcript::SessionStore;

#[derive(Args)]
pub struct SessionsArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: SessionsArgs, workspace: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let place = spear::agent::builder::Place::find(workspace)?;
    let store = SessionStore::open_in(&place.state, &place.root)?;
    let sessions = store.list()?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "workspace": place.root.display().to_string(),
                "sessions": sessions,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        println!(
            "No sessions for {} yet. Start one with `spear run OBJECTIVE`.",
            place.root.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<20}  {:<19}  {:<5}  {:>4}  {:<20}  TITLE",
        "ID", "UPDATED", "MODE", "MSGS", "MODEL"
    );
    for s in sessions {
        let updated: String = s
            .updated
            .chars()
            .take(19)
            .collect::<String>()
            .replace('T', " ");
        let title: String = s.title.chars().filter(|c| !c.is_control()).collect();
        println!(
            "{:<20}  {updated:<19}  {:<5}  {:>4}  {:<20}  {title}",
            s.id, s.mode, s.messages, s.model
        );
    }
    Ok(ExitCode::SUCCESS)
}
