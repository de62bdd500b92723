//! MCP tools as the model reaches them: `spear-capability call SERVER.TOOL 'JSON'` typed alone
//! in the terminal (the spec's host command: an external capability adds no tool), answered by
//! SpearHost through the router like every call. Its assessment decides the mode's answer: a
//! tool is WORKSPACE_MUTATING (asked in ASK, refused in SAFE) unless the person's config lists
//! it under `read_only_tools`; the server's own `readOnlyHint` is shown, never trusted; a
//! server granted the network makes every call of it need the network.

use serde_json::Value;

use crate::harness::audit::{McpToolRef, ToolSeen};
use crate::harness::command_policy::{CommandAssessment, CommandClass};
use crate::harness::primitives::ToolResult;
use crate::tools::handler::{Action, ActionOutcome, Confirmation, Plan, RunContext};
use crate::tools::host::SpearHost;
use crate::tools::host::command::HostCommand;
use crate::tools::host::mcp::client::CallEnd;
use crate::tools::host::mcp::pins::Seen;
use crate::tools::host::mcp::{USAGE, split_name};
use crate::tools::preview::Preview;
use crate::tools::refusal::{Gate, Refusal};

fn refused(rule: &str, why: impl Into<String>) -> Refusal {
    Refusal::new(Gate::Arguments, rule, ToolResult::denied(why.into()))
}

/// The plan for `cmd` when it is `spear-capability call ...`; `None` for every other host
/// command. `source` is what was typed.
pub fn plan(host: &SpearHost, cmd: &HostCommand, source: &str) -> Option<Result<Plan, Refusal>> {
    let (first, rest) = cmd.args.split_first()?;
    if cmd.name != "spear-capability" || first != "call" {
        return None;
    }
    Some(call_plan(host, rest, source))
}

fn call_plan(host: &SpearHost, args: &[String], source: &str) -> Result<Plan, Refusal> {
    let (name, json) = match args {
        [name] => (name, None),
        [name, json] => (name, Some(json)),
        _ => return Err(refused("host_command_syntax", USAGE)),
    };
    let Some((server, tool)) = split_name(name) else {
        return Err(refused("host_command_syntax", USAGE));
    };
    let Some(cfg) = host.mcp().and_then(|m| m.server(server)) else {
        return Err(refused(
            "capability_not_configured",
            format!(
                "no MCP server named `{server}` is configured (`spear-capability list` shows \
                 those that are; the person adds one under [mcp.servers.NAME] in the config)"
            ),
        ));
    };
    let arguments = match json.map(|j| serde_json::from_str::<Value>(j)) {
        None => serde_json::Map::new(),
        Some(Ok(Value::Object(m))) => m,
        Some(Ok(_)) => {
            return Err(refused(
                "arguments",
                format!("the arguments must be a JSON object; {USAGE}"),
            ));
        }
        Some(Err(e)) => {
            return Err(refused(
                "arguments",
                format!("the arguments are not JSON ({e}); {USAGE}"),
            ));
        }
    };
    let read_only = cfg.read_only_tools.contains(tool);
    let mut reasons = vec![format!(
        "an MCP tool of the person's server `{server}`, run in its own sandbox"
    )];
    reasons.push(if read_only {
        "the person's config lists it as read-only".to_string()
    } else {
        format!(
            "mutating: an MCP tool is, unless [mcp.servers.{server}] read_only_tools lists it \
             (the server's own hints are never trusted)"
        )
    });
    if cfg.network {
        reasons.push(format!("server `{server}` has the network"));
    }
    let assessment = CommandAssessment {
        command: source.to_string(),
        class: if read_only {
            CommandClass::ReadOnly
        } else {
            CommandClass::WorkspaceMutating
        },
        executables: vec!["spear-capability".into()],
        writes: Vec::new(),
        network: cfg.network,
        reasons,
        literal_argv: None,
    };
    Ok(Plan {
        targets: Vec::new(),
        command: Some(assessment),
        audit_target: Some(source.to_string()),
        action: Box::new(McpCall {
            server: server.to_string(),
            tool: tool.to_string(),
            arguments,
            confirmed: None,
        }),
    })
}

struct McpCall {
    server: String,
    tool: String,
    arguments: serde_json::Map<String, Value>,
    /// The version the call was decided on, and whether it is a change to keep once it runs.
    confirmed: Option<(String, bool)>,
}

impl Action for McpCall {
    fn prepare(
        &mut self,
        host: &SpearHost,
        _paths: &[crate::tools::host::gates::GatedPath],
    ) -> Result<Option<Preview>, ToolResult> {
        let args = Value::Object(self.arguments.clone()).to_string();
        let args = match host.mcp() {
            Some(m) => m.redact(&args),
            None => args,
        };
        Ok(Some(Preview::Note {
            text: format!(
                "MCP call: server `{}`, tool `{}`, arguments {}",
                self.server,
                self.tool,
                crate::harness::audit::display::escape_controls(&args)
            ),
        }))
    }

    /// Starts the server (one with the network only when the session grants it now: else the
    /// mode's refusal says why) and compares the tool with the version last let run: a changed
    /// tool is asked about whatever rule, grant or config would answer.
    fn confirm(&mut self, host: &SpearHost, network_now: bool) -> Result<Confirmation, ToolResult> {
        let Some(mcp) = host.mcp() else {
            return Err(ToolResult::failed("no MCP servers are configured"));
        };
        if mcp.server(&self.server).is_some_and(|c| c.network) && !network_now {
            // Not started: authorization refuses the call, saying why.
            return Ok(Confirmation {
                leaves_workspace: true,
                ..Confirmation::default()
            });
        }
        let (info, seen) = mcp
            .confirm(&self.server, &self.tool, network_now)
            .map_err(ToolResult::failed)?;
        let (ask, seen, previous) = match seen {
            Seen::Same => (None, None, None),
            Seen::First => (None, Some(ToolSeen::FirstSeen), None),
            Seen::New => (
                Some(format!(
                    "`{}.{}` is a tool its server did not list when Spear first saw it, so no \
                     rule, grant or config entry answers for it until you let it run; its \
                     description: {}",
                    self.server,
                    self.tool,
                    crate::tools::host::mcp::quoted(&info.description, 600)
                )),
                Some(ToolSeen::New),
                None,
            ),
            Seen::Changed { kept } => (
                Some(format!(
                    "`{}.{}` changed since it last ran: its description or arguments are not \
                     what they were (hash {} before, {} now), so no rule, grant or config \
                     entry answers for it until you let the new version run; its description \
                     now: {}",
                    self.server,
                    self.tool,
                    short(&kept),
                    short(&info.hash),
                    crate::tools::host::mcp::quoted(&info.description, 600)
                )),
                Some(ToolSeen::Changed),
                Some(kept),
            ),
        };
        let keep = matches!(seen, Some(ToolSeen::Changed | ToolSeen::New));
        self.confirmed = Some((info.hash.clone(), keep));
        Ok(Confirmation {
            ask,
            // A server sees the workspace read-only or not at all, or runs elsewhere.
            leaves_workspace: true,
            mcp_tool: Some(McpToolRef {
                server: self.server.clone(),
                tool: self.tool.clone(),
                hash: info.hash,
                seen,
                previous,
            }),
        })
    }

    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        let Some(mcp) = host.mcp() else {
            return ToolResult::failed("no MCP servers are configured").into();
        };
        let Some((hash, changed)) = &self.confirmed else {
            return ToolResult::failed(format!(
                "server `{}` was not started for this call",
                self.server
            ))
            .into();
        };
        // Let run: the person (or the rule or grant that answered an unchanged tool) approved
        // this version.
        if *changed && let Err(why) = mcp.pins().keep(&self.server, &self.tool, hash) {
            return ToolResult::failed(format!(
                "the new version of `{}.{}` could not be recorded, so it did not run: {why}",
                self.server, self.tool
            ))
            .into();
        }
        let mut result = match mcp.call(&self.server, &self.tool, hash, self.arguments, ctx.cancel)
        {
            Ok(result) => {
                // The values the person handed a server never reach the model, the screen or
                // the ResultStore, whatever a server answers.
                let (text, is_error) = mcp.result_text(&result);
                if is_error {
                    let mut r = ToolResult::failed(format!(
                        "`{}.{}` answered with an error",
                        self.server, self.tool
                    ));
                    r.stdout = text;
                    r
                } else {
                    ToolResult::ok(text)
                }
            }
            Err(CallEnd::Failed(why)) => ToolResult::failed(why),
            Err(CallEnd::Cancelled) => ToolResult::cancelled(format!(
                "the call to `{}.{}` was cancelled; the server may still finish it, and its \
                 answer is dropped",
                self.server, self.tool
            )),
        };
        // Where the server went meanwhile, through the egress proxy: in this call's record.
        let connections = mcp.take_connections(&self.server);
        if !connections.is_empty() {
            result.connections = Some(Box::new(connections));
        }
        result.into()
    }
}

/// The first 12 hex digits of a hash, as shown to the person.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
