//! `terminal {command, timeout?}`: one shell command in the sandbox, through the command policy.
//! 180 s unless the call asks for another timeout, which replaces the sandbox's default for this
//! call; more than 600 s is refused. Output streams into the ResultStore; the model sees at most
//! 50,000 characters (head and tail) with a marker saying how much was cut and where the whole
//! output is. Host commands typed alone are answered by SpearHost and never reach a shell.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::primitives::ToolResult;
use crate::tools::executor::{OutputSink, OutputStream, OutputTap};
use crate::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use crate::tools::host::SpearHost;
use crate::tools::host::command::{HostCommand, HostCommandUse, detect};
use crate::tools::preview::Preview;
use crate::tools::refusal::{Gate, Refusal};

pub const DEFAULT_TIMEOUT_SECS: u64 = 180;
pub const MAX_TIMEOUT_SECS: u64 = 600;

pub fn schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["command"],
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "A bash command line"},
            "timeout": {"type": "integer", "minimum": 1,
                        "description": "Seconds before the command is killed (default 180, at most 600)"}
        }
    })
}

pub struct Terminal;

impl ToolHandler for Terminal {
    fn plan(&self, args: &Value, host: &SpearHost) -> Result<Plan, Refusal> {
        let command = args["command"].as_str().unwrap_or_default().to_string();
        let secs = args.get("timeout").and_then(Value::as_u64);
        let assessment = host.classify(&command);
        match detect(&command, &assessment) {
            HostCommandUse::Alone(cmd) => {
                let read_only = host.host_command_assessment(&command, &assessment);
                if let Some(plan) =
                    crate::tools::web::capability::plan(host, &cmd, &command, read_only.clone())
                {
                    return plan;
                }
                if let Some(plan) = crate::tools::mcp::capability::plan(host, &cmd, &command) {
                    return plan;
                }
                // Said outright, so the terminal's mutating spec does not make SpearHost's own
                // answer a write: nothing reaches a shell, nothing changes.
                return Ok(Plan {
                    targets: Vec::new(),
                    command: Some(read_only),
                    audit_target: Some(command),
                    action: Box::new(HostAction { cmd }),
                });
            }
            HostCommandUse::Embedded(why) => {
                return Err(Refusal::new(
                    Gate::Arguments,
                    "host_command_syntax",
                    ToolResult::denied(why),
                ));
            }
            HostCommandUse::None => {}
        }
        if let Some(secs) = secs.filter(|s| *s > MAX_TIMEOUT_SECS) {
            return Err(Refusal::new(
                Gate::Arguments,
                "timeout_too_long",
                ToolResult::denied(format!(
                    "a timeout of {secs} s is refused: the most a command may run is \
                     {MAX_TIMEOUT_SECS} s; split the work or ask for {MAX_TIMEOUT_SECS} or less"
                )),
            ));
        }
        Ok(Plan {
            targets: Vec::new(),
            command: Some(assessment.clone()),
            audit_target: Some(command.clone()),
            action: Box::new(RunCommand {
                command,
                preview: Preview::Command { assessment },
                timeout: secs.map(Duration::from_secs),
            }),
        })
    }
}

struct HostAction {
    cmd: HostCommand,
}

impl Action for HostAction {
    fn prepare(
        &mut self,
        _host: &SpearHost,
        _paths: &[crate::tools::host::gates::GatedPath],
    ) -> Result<Option<Preview>, ToolResult> {
        Ok(Some(Preview::Note {
            text: format!(
                "{} {} (answered by Spear)",
                self.cmd.name,
                self.cmd.args.join(" ")
            ),
        }))
    }

    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        host.answer(&self.cmd, ctx.network_now).into()
    }
}

struct RunCommand {
    command: String,
    /// The command with what the policy made of it: the preview the person approves.
    preview: Preview,
    /// The call's own timeout; without one, the front end's (`RunContext::command_timeout`),
    /// else `DEFAULT_TIMEOUT_SECS`.
    timeout: Option<Duration>,
}

impl Action for RunCommand {
    fn prepare(
        &mut self,
        _host: &SpearHost,
        _paths: &[crate::tools::host::gates::GatedPath],
    ) -> Result<Option<Preview>, ToolResult> {
        Ok(Some(self.preview.clone()))
    }

    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        let mut sink = match host.results().create() {
            Ok(w) => w,
            Err(e) => return ToolResult::failed(format!("cannot keep the output: {e}")).into(),
        };
        let timeout = self
            .timeout
            .or(ctx.command_timeout)
            .unwrap_or(Duration::from_secs(DEFAULT_TIMEOUT_SECS));
        let outcome = match ctx.tap {
            Some(tap) => {
                let mut tee = Tee {
                    sink: &mut sink,
                    tap,
                    call_id: ctx.call_id,
                };
                host.run_command(&self.command, ctx.profile, timeout, &mut tee, ctx.cancel)
            }
            None => host.run_command(&self.command, ctx.profile, timeout, &mut sink, ctx.cancel),
        };
        // Grounded mutations: what the command really changed goes into WorkingState.
        if let Some(changes) = &outcome.result.changes {
            host.record_command_changes(changes);
        }
        let id = sink.id().to_string();
        let stored = match sink.finish() {
            Ok(s) => s,
            Err(e) => {
                let mut r = outcome.result;
                let note = format!("the output could not be kept: {e}");
                r.reason = Some(match r.reason {
                    Some(why) => format!("{why}; {note}"),
                    None => note,
                });
                return ActionOutcome {
                    sandbox_unavailable: outcome.sandbox_unavailable,
                    ..r.into()
                };
            }
        };
        // Output shown whole needs no stored copy; only what was cut stays addressable. What
        // the store's limits did is still said (older results may have been evicted for it).
        if !stored.truncated {
            let _ = host.results().discard(&id);
        }
        let stored = (stored.truncated || stored.report.hit()).then_some(stored);
        let mut result = outcome.result;
        if let Some(s) = stored.as_ref().filter(|s| s.truncated) {
            // The executor's own head/tail are superseded by the stored preview and its marker.
            result.stdout = s.preview.clone();
            result.stderr.clear();
        }
        ActionOutcome {
            result,
            class: None,
            stored,
            sandbox_unavailable: outcome.sandbox_unavailable,
            bytes_written: None,
        }
    }
}

/// Keeps the output in the store and shows it to the tap as it arrives.
struct Tee<'a> {
    sink: &'a mut dyn OutputSink,
    tap: &'a dyn OutputTap,
    call_id: &'a str,
}

impl OutputSink for Tee<'_> {
    fn write(&mut self, stream: OutputStream, chunk: &[u8]) -> std::io::Result<()> {
        self.tap.chunk(self.call_id, stream, chunk);
        self.sink.write(stream, chunk)
    }
}
