//! The rules for `git`: a forced push rewrites history others depend on (DANGEROUS); options
//! that run other programs make it SHELL_COMPLEX; a known mutating subcommand writes the
//! repository (and `-C DIR` moves that write to DIR); anything else is not read-only.

use super::assessment::CommandClass::{Dangerous, ShellComplex, WorkspaceMutating};
use super::classify::{Cx, WriteKind};
use crate::harness::shell::Word;

impl Cx<'_> {
    pub(super) fn git(&mut self, args: &[Word], listed_but: Option<String>) {
        let v: Vec<&str> = args.iter().map(|a| a.value.as_str()).collect();
        let sub = first_operand_after_globals(args);
        if sub == Some("push")
            && v.iter().any(|a| {
                [
                    "-f",
                    "--force",
                    "--force-with-lease",
                    "--mirror",
                    "--force-if-includes",
                ]
                .contains(a)
                    || a.starts_with("--force")
                    || (a.starts_with('+') && a.len() > 1)
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('f'))
            })
        {
            self.raise(
                Dangerous,
                "`git push --force` rewrites history others depend on",
            );
            return;
        }
        let mutating = [
            "add",
            "commit",
            "checkout",
            "switch",
            "restore",
            "reset",
            "rm",
            "mv",
            "merge",
            "rebase",
            "cherry-pick",
            "revert",
            "stash",
            "apply",
            "am",
            "init",
            "clone",
            "pull",
            "fetch",
            "push",
            "tag",
            "branch",
            "clean",
            "gc",
            "prune",
            "worktree",
            "submodule",
            "notes",
            "bisect",
            "config",
            "remote",
            "update-index",
            "update-ref",
            "commit-tree",
            "replace",
            "filter-branch",
            "format-patch",
            "mergetool",
            "sparse-checkout",
        ];
        let globals_forbidden = v.iter().take_while(|a| Some(**a) != sub).any(|a| {
            [
                "-c",
                "--config-env",
                "--exec-path",
                "--git-dir",
                "--work-tree",
                "-p",
                "--paginate",
            ]
            .iter()
            .any(|f| a == f || a.starts_with(&format!("{f}=")))
        });
        match sub {
            _ if globals_forbidden
                || v.iter().any(|a| {
                    a.starts_with("--upload-pack")
                        || a.starts_with("--receive-pack")
                        || a.starts_with("--exec=")
                }) =>
            {
                self.raise(
                    ShellComplex,
                    listed_but.unwrap_or_else(|| {
                        "`git` is given options that can run other programs".into()
                    }),
                );
            }
            Some(s) if mutating.contains(&s) => {
                self.raise(
                    WorkspaceMutating,
                    format!("`git {s}` changes the repository or the working tree"),
                );
                // `git -C DIR clean -fdx` changes DIR's repository, wherever it is.
                let globals = &args[..args.iter().position(|a| a.value == s).unwrap_or(0)];
                for (i, a) in globals.iter().enumerate() {
                    if a.value == "-C"
                        && let Some(dir) = globals.get(i + 1)
                    {
                        // `clean` deletes whole untracked trees there.
                        let kind = if s == "clean" {
                            WriteKind::Recursive
                        } else {
                            WriteKind::Plain
                        };
                        self.write_target(dir, &format!("`git -C … {s}`"), kind);
                    }
                }
            }
            _ => {
                let why = listed_but.unwrap_or_else(|| "`git` without a known subcommand".into());
                self.raise(ShellComplex, why);
            }
        }
    }
}

/// The git subcommand, skipping global options (and the values of `-C`, `-c`, …).
pub(super) fn first_operand_after_globals(args: &[Word]) -> Option<&str> {
    let mut i = 0;
    while i < args.len() {
        let v = args[i].value.as_str();
        if !v.starts_with('-') {
            return Some(v);
        }
        i += if [
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--config-env",
            "--super-prefix",
        ]
        .contains(&v)
        {
            2
        } else {
            1
        };
    }
    None
}
