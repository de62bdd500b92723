//! `/mcp`: what the person reads of their MCP servers: each server's grant, where it stands
//! (not started, running with its tools, failed and why) and what to type next.

use crate::tools::host::mcp::client::ServerState;
use crate::tools::host::mcp::{McpClients, grant_words};

/// The `/mcp` report. `network_now`: whether the session grants the network now.
pub fn report(mcp: Option<&McpClients>, network_now: bool) -> String {
    let Some(mcp) = mcp else {
        return "No MCP servers are configured. Add one under [mcp.servers.NAME] in your \
                config (README, \"MCP servers of yours\")."
            .into();
    };
    let mut out = String::from("MCP servers (your config's [mcp.servers]):");
    for s in mcp.status() {
        let c = s.config;
        let mut grant = vec![grant_words(c)];
        if !c.read_paths.is_empty() {
            grant.push(format!(
                "reads {}",
                c.read_paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let held = c.handed_variables();
        if !held.is_empty() {
            let names = held.join(", ");
            grant.push(if c.network {
                format!("holds {names} and the network: it can send them anywhere it can reach")
            } else {
                format!("holds {names}")
            });
        }
        let state = match &s.state {
            ServerState::Idle if c.network && !network_now => {
                "not started: it has the network, which the session does not grant now \
                 (/network on; not in SAFE)"
                    .to_string()
            }
            ServerState::Idle => "not started (it starts when its tools are first needed)".into(),
            ServerState::Running { tools } => {
                let read_only = |t: &String| c.read_only_tools.contains(t);
                format!(
                    "running, {} tool{}: {}",
                    tools.len(),
                    if tools.len() == 1 { "" } else { "s" },
                    tools
                        .iter()
                        .map(|t| if read_only(t) {
                            format!("{t} (read-only)")
                        } else {
                            t.clone()
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
            ServerState::Failed(why) => format!(
                "failed: {}; /mcp restart {} tries again",
                crate::tools::host::mcp::client::one_line(why),
                c.name
            ),
        };
        out.push_str(&format!("\n  {}: {}; {}", c.name, grant.join(", "), state));
    }
    out.push_str(
        "\nTools not marked read-only are mutating (asked in ASK, refused in SAFE); a tool \
         whose description or arguments changed since it last ran is asked about again.",
    );
    out
}
