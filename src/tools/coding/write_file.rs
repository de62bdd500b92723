//! `write_file {path, content}` and `delete_file {path}`: whole-file mutations through the
//! Workspace (atomic write, parents created beneath the root only; delete of a regular file,
//! never a directory, FIFO, socket or device). Both are gated by the target policy and
//! authorized as WORKSPACE_MUTATING.

use serde_json::{Value, json};

use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::harness::target_policy::Writer;
use crate::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use crate::tools::host::SpearHost;
use crate::tools::host::files::{current, fs_failure, reported};
use crate::tools::host::gates::GatedPath;
use crate::tools::host::gates::{Target, TargetAccess};
use crate::tools::preview::{FileChange, Preview};
use crate::tools::refusal::Refusal;
use crate::tools::working_state::content_hash;

pub fn write_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["path", "content"],
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "content": {"type": "string", "description": "The whole new content of the file"}
        }
    })
}

pub fn delete_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["path"],
        "properties": {"path": {"type": "string", "minLength": 1}}
    })
}

fn single_path_plan(args: &Value, writer: Writer, action: Box<dyn Action>) -> Plan {
    let path = args["path"].as_str().unwrap_or_default().to_string();
    Plan {
        targets: vec![Target {
            path: path.clone(),
            access: TargetAccess::Write(writer),
        }],
        command: None,
        audit_target: Some(path),
        action,
    }
}

pub struct WriteFile;

impl ToolHandler for WriteFile {
    fn plan(&self, args: &Value, _host: &SpearHost) -> Result<Plan, Refusal> {
        let content = args["content"].as_str().unwrap_or_default().to_string();
        Ok(single_path_plan(
            args,
            Writer::WriteFile,
            Box::new(WriteAction { content }),
        ))
    }
}

struct WriteAction {
    content: String,
}

/// The file as it is and as the call leaves it: what the person approves. A file that cannot
/// be read is said so in a note: the call is still authorized first, and `run` then answers
/// with the read's own refusal (a FIFO is `invalid_path` whatever the mode).
fn file_change(host: &SpearHost, paths: &[GatedPath], after: Option<&[u8]>) -> Option<Preview> {
    let p = paths.first()?;
    let shown = p.written().display().to_string();
    Some(match current(host, p) {
        Ok(before) => Preview::FileChange(FileChange::new(shown, before.as_deref(), after)),
        Err(r) => Preview::Note {
            text: format!(
                "{} `{shown}`, whose content cannot be read: {}",
                if after.is_some() { "write" } else { "delete" },
                r.reason.unwrap_or_default()
            ),
        },
    })
}

impl Action for WriteAction {
    fn prepare(
        &mut self,
        host: &SpearHost,
        paths: &[GatedPath],
    ) -> Result<Option<Preview>, ToolResult> {
        Ok(file_change(host, paths, Some(self.content.as_bytes())))
    }

    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        let Some(p) = ctx.paths.first() else {
            return ToolResult::failed("write_file was planned without a path").into();
        };
        let before = match current(host, p) {
            Ok(b) => b,
            Err(r) => return r.into(),
        };
        match host.write_atomic(p, self.content.as_bytes()) {
            Ok(outcome) => {
                let path = reported(p);
                host.record_mutation(
                    &path,
                    before.as_deref().map(content_hash),
                    Some(content_hash(self.content.as_bytes())),
                );
                let verb = if outcome.created { "created" } else { "wrote" };
                let mut r = ToolResult::ok(format!("{verb} `{path}` ({} bytes)\n", outcome.bytes));
                r.changed_paths = vec![path];
                ActionOutcome {
                    bytes_written: Some(outcome.bytes),
                    ..r.into()
                }
            }
            Err(e) => fs_failure(e).into(),
        }
    }
}

pub struct DeleteFile;

impl ToolHandler for DeleteFile {
    fn plan(&self, args: &Value, _host: &SpearHost) -> Result<Plan, Refusal> {
        Ok(single_path_plan(
            args,
            Writer::DeleteFile,
            Box::new(DeleteAction),
        ))
    }
}

struct DeleteAction;

impl Action for DeleteAction {
    fn prepare(
        &mut self,
        host: &SpearHost,
        paths: &[GatedPath],
    ) -> Result<Option<Preview>, ToolResult> {
        Ok(file_change(host, paths, None))
    }

    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        let Some(p) = ctx.paths.first() else {
            return ToolResult::failed("delete_file was planned without a path").into();
        };
        if !p.exists() {
            let shown = p.written().display();
            return ToolResult::refused(ToolStatus::NotFound, format!("`{shown}` does not exist"))
                .into();
        }
        if p.resolved().is_dir() {
            let shown = p.written().display();
            return ToolResult::failed(format!(
                "`{shown}` is a directory; delete_file removes files only"
            ))
            .into();
        }
        let before = match current(host, p) {
            Ok(b) => b,
            Err(r) => return r.into(),
        };
        match host.delete(p) {
            Ok(()) => {
                let path = reported(p);
                host.record_mutation(&path, before.as_deref().map(content_hash), None);
                let mut r = ToolResult::ok(format!("deleted `{path}`\n"));
                r.changed_paths = vec![path];
                r.into()
            }
            Err(e) => fs_failure(e).into(),
        }
    }
}
