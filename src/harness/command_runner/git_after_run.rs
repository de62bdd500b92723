//! What a writable run left in git's hands is put right before the result goes back: a
//! sequencer state (`rebase-merge`, `rebase-apply`, `sequencer`) the command started is aborted
//! by git inside the sandbox; the control files it created or changed under any git directory
//! are moved to the quarantine (`workspace::git_leftovers`); a gitlink it added to the
//! repository's index is removed by git inside the sandbox, once the nested config is gone, with
//! `core.fsmonitor` off. A state that existed before the run is the person's: the sandbox kept
//! it read-only and it is left alone. git never runs on the host for any of this.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::CommandRunner;
use crate::harness::command_policy::ExecutionProfile;
use crate::harness::process::NullSink;
use crate::harness::sandbox::{End, spec};
use crate::harness::workspace::git_index;
use crate::harness::workspace::git_leftovers;
use crate::harness::workspace::modes::CtimeMark;

/// How long one of git's own clean-ups may take inside the sandbox.
const GIT_LIMIT: Duration = Duration::from_secs(30);

/// The repository's state before a writable run.
pub(super) struct GitBefore {
    sequencers: Vec<&'static str>,
    gitlinks: Result<BTreeSet<PathBuf>, git_index::IndexError>,
}

impl GitBefore {
    pub(super) fn take(workspace: &Path) -> Self {
        GitBefore {
            sequencers: present_sequencers(workspace),
            gitlinks: git_index::gitlinks_of(workspace),
        }
    }
}

fn present_sequencers(workspace: &Path) -> Vec<&'static str> {
    spec::SEQUENCER_STATES
        .iter()
        .copied()
        .filter(|p| workspace.join(p).symlink_metadata().is_ok())
        .collect()
}

impl CommandRunner {
    /// Put right what the run left (see the module's text). Each sentence names what was found
    /// and what was done; an empty list means nothing was.
    pub(super) async fn git_after_run(
        &self,
        before: GitBefore,
        since: CtimeMark,
        held: &[PathBuf],
    ) -> Vec<String> {
        let mut told = Vec::new();
        let started: Vec<&str> = present_sequencers(&self.workspace)
            .into_iter()
            .filter(|s| !before.sequencers.contains(s))
            .collect();
        if !started.is_empty() {
            let aborts: &[&[&str]] = &[
                &["rebase", "--abort"],
                &["am", "--abort"],
                &["cherry-pick", "--abort"],
                &["revert", "--abort"],
            ];
            for args in aborts {
                if present_sequencers(&self.workspace).len() <= before.sequencers.len() {
                    break;
                }
                let _ = self.git_inside(args, &started).await;
            }
            let still: Vec<&str> = present_sequencers(&self.workspace)
                .into_iter()
                .filter(|s| !before.sequencers.contains(s))
                .collect();
            let quarantine = self.quarantine_dir();
            let moved: Vec<String> = still
                .iter()
                .map(|s| {
                    match git_leftovers::quarantine_path(&self.workspace, Path::new(s), &quarantine)
                    {
                        Ok(to) => format!("`{s}` moved to `{}`", to.display()),
                        Err(why) => format!("`{s}` could not be moved ({why}): remove it yourself"),
                    }
                })
                .collect();
            told.push(format!(
                "the command left git in the middle of an operation ({}), which a later `git \
                 rebase --continue` or `git cherry-pick --continue` would carry on with its \
                 instructions; {}",
                started.join(", "),
                match moved.is_empty() {
                    true => "it was aborted".to_string(),
                    false => format!("it could not be aborted: {}", moved.join(", ")),
                }
            ));
        }
        let quarantine = self.quarantine_dir();
        match git_leftovers::quarantine_after_run(&self.workspace, since, &quarantine, held) {
            Ok(found) if !found.is_empty() => {
                const SHOWN: usize = 8;
                let mut names: Vec<String> =
                    found.iter().take(SHOWN).map(ToString::to_string).collect();
                if found.len() > SHOWN {
                    names.push(format!("and {} more", found.len() - SHOWN));
                }
                told.push(format!(
                    "the command created or changed git control files, which git would run or \
                     read as configuration in your own shell: {}; moved to `{}`. Look at them \
                     there, and set up what you meant yourself outside Spear",
                    names.join(", "),
                    quarantine.display()
                ));
            }
            Ok(_) => {}
            Err(e) => told.push(e.to_string()),
        }
        let after = git_index::gitlinks_of(&self.workspace);
        if let (Ok(b), Ok(a)) = (&before.gitlinks, &after) {
            let added: Vec<&PathBuf> = a.difference(b).collect();
            if !added.is_empty() {
                let mut args: Vec<&str> =
                    vec!["rm", "--cached", "-f", "-q", "--ignore-unmatch", "--"];
                let paths: Vec<String> = added.iter().map(|p| p.display().to_string()).collect();
                args.extend(paths.iter().map(String::as_str));
                let outcome = match self.git_inside(&args, &[]).await {
                    Ok(()) => "removed from the index again".to_string(),
                    Err(why) => format!(
                        "which could not be removed ({why}): run `git rm --cached` on it yourself"
                    ),
                };
                told.push(format!(
                    "the command added the nested repositories {} to the index as gitlinks, \
                     which makes your own git commands enter them; {outcome}",
                    paths
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        told
    }

    /// `$XDG_STATE_HOME/spear/quarantine` beside the ledger, or a directory of this user's
    /// under the system's temporary directory; never inside the workspace.
    fn quarantine_dir(&self) -> PathBuf {
        self.config
            .ledger_dir
            .as_deref()
            .and_then(Path::parent)
            .map(|state| state.join("quarantine"))
            .filter(|q| !q.starts_with(&self.workspace))
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!(
                    "spear-quarantine-{}",
                    rustix::process::getuid().as_raw()
                ))
            })
    }

    /// git with `args` inside a writable sandbox (the repository's config and hooks read-only
    /// as for any command), with fsmonitor and hooks off. `writable` are sequencer states this
    /// clean-up must be able to remove, though a command would get them read-only.
    async fn git_inside(&self, args: &[&str], writable: &[&str]) -> Result<(), String> {
        let mut command: Vec<OsString> = [
            "git",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        command.extend(args.iter().map(OsString::from));
        let mut profile = ExecutionProfile::read_only();
        profile.workspace_write = true;
        let mut spec = self
            .build_spec(&profile, command)
            .map_err(|e| e.to_string())?;
        spec.protections
            .retain(|p| !writable.iter().any(|w| p.path() == self.workspace.join(w)));
        let mut sink = NullSink;
        match self
            .sandbox
            .run(spec, &self.launch_limits(), &mut sink, GIT_LIMIT)
            .await
        {
            Ok(o) if o.end == End::Exited(0) => Ok(()),
            Ok(o) => Err(o.stderr.render().trim().to_string()),
            Err(e) => Err(e.to_string()),
        }
    }
}
