//! `patch {path, edits: [{old, new, replace_all?}] | diff}`: exact edits or a unified diff on one
//! existing file. The change is computed before authorization (so the person is shown it, and a
//! patch that does not apply is refused without asking), then written atomically only if the
//! file is still what the patch was computed from.

use serde_json::{Value, json};

use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::harness::target_policy::Writer;
use crate::tools::coding::patch_diff::apply_diff;
use crate::tools::coding::patch_edits::{Edit, apply_edits};
use crate::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use crate::tools::host::SpearHost;
use crate::tools::host::files::{current, fs_failure, reported};
use crate::tools::host::gates::GatedPath;
use crate::tools::host::gates::{Target, TargetAccess};
use crate::tools::preview::{FileChange, Preview};
use crate::tools::refusal::{Refusal, invalid_arguments};
use crate::tools::working_state::content_hash;

pub fn schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["path"],
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "edits": {"type": "array", "minItems": 1, "items": {
                "type": "object",
                "additionalProperties": false,
                "required": ["old", "new"],
                "properties": {
                    "old": {"type": "string", "minLength": 1, "description": "Exact text, matched once"},
                    "new": {"type": "string"},
                    "replace_all": {"type": "boolean"}
                }
            }},
            "diff": {"type": "string", "minLength": 1, "description": "A unified diff of this one file"}
        }
    })
}

enum Change {
    Edits(Vec<Edit>),
    Diff(String),
}

pub struct Patch;

impl ToolHandler for Patch {
    fn plan(&self, args: &Value, _host: &SpearHost) -> Result<Plan, Refusal> {
        let path = args["path"].as_str().unwrap_or_default().to_string();
        let change = match (args.get("edits"), args.get("diff").and_then(Value::as_str)) {
            (Some(Value::Array(edits)), None) => Change::Edits(
                edits
                    .iter()
                    .map(|e| Edit {
                        old: e["old"].as_str().unwrap_or_default().to_string(),
                        new: e["new"].as_str().unwrap_or_default().to_string(),
                        replace_all: e
                            .get("replace_all")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    })
                    .collect(),
            ),
            (None, Some(diff)) => Change::Diff(diff.to_string()),
            _ => {
                return Err(invalid_arguments(
                    "`edits`/`diff`: give exactly one of them",
                ));
            }
        };
        Ok(Plan {
            targets: vec![Target {
                path: path.clone(),
                access: TargetAccess::Write(Writer::Patch),
            }],
            command: None,
            audit_target: Some(path),
            action: Box::new(PatchAction {
                change,
                prepared: None,
            }),
        })
    }
}

struct Prepared {
    before_hash: String,
    after: Vec<u8>,
}

struct PatchAction {
    change: Change,
    prepared: Option<Prepared>,
}

impl Action for PatchAction {
    fn prepare(
        &mut self,
        host: &SpearHost,
        paths: &[GatedPath],
    ) -> Result<Option<Preview>, ToolResult> {
        let p = paths
            .first()
            .ok_or_else(|| ToolResult::failed("patch was planned without a path"))?;
        let shown = p.written().display().to_string();
        let not_found = || {
            ToolResult::refused(
                ToolStatus::NotFound,
                format!(
                    "`{shown}` does not exist; patch changes existing files (write_file creates them)"
                ),
            )
        };
        if !p.exists() {
            return Err(not_found());
        }
        let before = current(host, p)?.ok_or_else(not_found)?;
        let after = match &self.change {
            Change::Edits(edits) => apply_edits(&before, edits, &shown),
            Change::Diff(diff) => apply_diff(&before, diff, &shown),
        }
        .map_err(ToolResult::failed)?;
        if after == before {
            return Err(ToolResult::failed(format!(
                "the patch leaves `{shown}` unchanged"
            )));
        }
        let preview = FileChange::new(shown, Some(&before), Some(&after));
        self.prepared = Some(Prepared {
            before_hash: content_hash(&before),
            after,
        });
        Ok(Some(Preview::FileChange(preview)))
    }

    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        let (Some(p), Some(prep)) = (ctx.paths.first(), self.prepared) else {
            return ToolResult::failed("patch ran without being prepared").into();
        };
        // The person may have taken a while to approve; write only over what was patched.
        let now = match current(host, p) {
            Ok(Some(b)) => b,
            Ok(None) => {
                return ToolResult::failed(
                    "the file was deleted before the patch could be written",
                )
                .into();
            }
            Err(r) => return r.into(),
        };
        if content_hash(&now) != prep.before_hash {
            return ToolResult::failed(
                "the file changed after the patch was computed; nothing was written, read it again",
            )
            .into();
        }
        match host.write_atomic(p, &prep.after) {
            Ok(w) => {
                let path = reported(p);
                host.record_mutation(
                    &path,
                    Some(prep.before_hash),
                    Some(content_hash(&prep.after)),
                );
                let mut r = ToolResult::ok(format!("patched `{path}` ({} bytes)\n", w.bytes));
                r.changed_paths = vec![path];
                ActionOutcome {
                    bytes_written: Some(w.bytes),
                    ..r.into()
                }
            }
            Err(e) => fs_failure(e).into(),
        }
    }
}
