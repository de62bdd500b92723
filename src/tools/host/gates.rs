//! The router's hard gates on a plan's targets: workspace confinement for every path (with
//! searches kept inside the workspace roots), the target policy for every write and delete, and
//! for a terminal command every write `classify` found, which must stay in the project and off
//! generated, snapshot and third-party files. They live with SpearHost, not with the router that
//! runs them, because `GatedPath`, which only they make, is the one argument its writes take.

use crate::harness::command_policy::CommandAssessment;
use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::harness::target_policy::Writer;
use crate::harness::workspace::{Access, PathRefusalKind, WorkspacePath};
use crate::tools::host::SpearHost;
use crate::tools::refusal::{Gate, Refusal};

/// How a plan uses a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetAccess {
    Read,
    /// A directory searched recursively: it must lie inside the workspace.
    Search,
    /// Written or deleted by a file tool.
    Write(Writer),
}

/// A path a call names, as written, for the hard gates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub path: String,
    pub access: TargetAccess,
}

/// A workspace path that passed the router's gates for the access its target declared. Only
/// `gate_target` makes one (its field is private to this module), and `SpearHost` writes and
/// deletes only through one, so an action changes exactly what its plan named and the gates let
/// through: it cannot resolve a path of its own and write it.
#[derive(Debug, Clone)]
pub struct GatedPath {
    path: WorkspacePath,
}

impl std::ops::Deref for GatedPath {
    type Target = WorkspacePath;

    fn deref(&self) -> &WorkspacePath {
        &self.path
    }
}

/// Resolve one target, or say why not.
pub fn gate_target(host: &SpearHost, t: &Target) -> Result<GatedPath, Refusal> {
    let access = match t.access {
        TargetAccess::Read | TargetAccess::Search => Access::Read,
        TargetAccess::Write(_) => Access::Write,
    };
    let resolved = host.resolve(&t.path, access).map_err(|r| {
        let reason = match t.access {
            TargetAccess::Search => format!("refusing to search outside the project: {}", r.reason),
            _ => r.reason.clone(),
        };
        Refusal::new(
            Gate::Workspace,
            r.kind.as_str(),
            ToolResult::refused(ToolStatus::InvalidPath, reason),
        )
    })?;
    if let TargetAccess::Write(writer) = t.access {
        host.check_write(writer, &t.path).map_err(|r| {
            Refusal::new(
                Gate::TargetPolicy,
                r.rule.as_str(),
                ToolResult::denied(r.reason),
            )
        })?;
    }
    Ok(GatedPath { path: resolved })
}

/// The writes a command makes: none may leave the project for a sibling or climb out of it, and
/// none may hit a protected target. Absolute paths outside the roots are left to the classifier
/// and the sandbox, which binds nothing of the host writable.
pub fn gate_command_writes(host: &SpearHost, a: &CommandAssessment) -> Result<(), Refusal> {
    for w in &a.writes {
        if let Err(r) = host.resolve(w, Access::Write) {
            let leaves = matches!(
                r.kind,
                PathRefusalKind::SiblingTarget { .. }
                    | PathRefusalKind::Traversal
                    | PathRefusalKind::SymlinkEscape
                    | PathRefusalKind::SymlinkLoop
                    | PathRefusalKind::ReadOnlyRoot
            );
            if leaves {
                return Err(Refusal::new(
                    Gate::Workspace,
                    r.kind.as_str(),
                    ToolResult::denied(format!(
                        "the command writes outside the project: {}",
                        r.reason
                    )),
                ));
            }
        }
    }
    host.check_command_writes(a).map_err(|r| {
        Refusal::new(
            Gate::TargetPolicy,
            r.rule.as_str(),
            ToolResult::denied(r.reason),
        )
    })
}
