//! `spear standard add FILE|URL [--name NAME] [--json]`, `spear standard list [--json]`,
//! `spear standard remove NAME`: the standards library in `$XDG_STATE_HOME/spear/standards`.
//! Exit codes: 0 done, 1 when the source is refused or the name is unknown (the message says
//! why and what to do).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use spear::harness::audit::default_state_home;
use spear::tools::normative::StandardsLibrary;
use spear::tools::normative::library::{AddOutcome, StandardMeta};

#[derive(Args)]
pub struct StandardArgs {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Subcommand)]
pub enum Action {
    /// Add a standard from a file or an http(s) URL (re-adding a changed one re-indexes it).
    Add {
        #[arg(value_name = "FILE|URL")]
        source: String,
        /// Its name in the library (default: the file name without its extension).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        #[arg(long)]
        json: bool,
        /// Fetch a URL even when it resolves to a loopback, private or link-local address (a
        /// local server on purpose).
        #[arg(long)]
        allow_private: bool,
    },
    /// The standards in the library.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a standard from the library.
    Remove {
        #[arg(value_name = "NAME")]
        name: String,
    },
}

fn library() -> anyhow::Result<StandardsLibrary> {
    let state = default_state_home()?;
    Ok(StandardsLibrary::open_in(&state)?)
}

/// Fail unless `name` is in the library under `state`, so a session never starts engaged to
/// a standard that is not there.
pub fn check_engageable(state: &Path, name: &str) -> anyhow::Result<()> {
    StandardsLibrary::open_in(state)?
        .load(name)
        .map(|_| ())
        .with_context(|| format!("--standard {name}"))
}

pub fn run(args: StandardArgs) -> anyhow::Result<ExitCode> {
    let lib = library()?;
    match args.action {
        Action::Add {
            source,
            name,
            json,
            allow_private,
        } => {
            let (outcome, meta) = if is_url(&source) {
                super::standard_fetch::add_url(&lib, &source, name.as_deref(), allow_private)?
            } else {
                lib.add_file(&PathBuf::from(&source), name.as_deref())?
            };
            if json {
                println!(
                    "{}",
                    serde_json::json!({"outcome": outcome, "standard": meta})
                );
            } else {
                let what = match outcome {
                    AddOutcome::Added => "added",
                    AddOutcome::Reindexed => "re-indexed (the source changed)",
                    AddOutcome::Unchanged => "unchanged (same content; nothing re-indexed)",
                };
                println!("{}: {what}: {}", meta.name, describe(&meta));
            }
        }
        Action::List { json } => {
            let list = lib.list()?;
            if json {
                println!("{}", serde_json::json!({ "standards": list }));
            } else if list.is_empty() {
                println!("the library is empty: `spear standard add FILE|URL` adds a standard");
            } else {
                for m in &list {
                    println!("{}  {}", m.name, describe(m));
                }
            }
        }
        Action::Remove { name } => {
            let meta = lib.remove(&name)?;
            println!("{}: removed ({})", meta.name, meta.source);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn is_url(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.starts_with("http://") || l.starts_with("https://")
}

fn describe(m: &StandardMeta) -> String {
    let pages = if m.pages > 0 {
        format!(", {} pages", m.pages)
    } else {
        String::new()
    };
    format!(
        "{} units{pages}, {} from {}, added {}",
        m.units,
        m.kind.as_str(),
        m.source,
        m.added
    )
}
