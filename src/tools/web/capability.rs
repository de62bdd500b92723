//! The web pair as the coding core reaches it: `spear-capability run fetch_url URL [--pages
//! A-B] [--save-as PATH]` and `spear-capability run search_internet QUERY... [--max-results N]`
//! typed alone in the terminal. SpearHost answers them through the same plans and actions as
//! the tools (no shell is involved), and a save is gated and authorized as a write.

use crate::harness::command_policy::CommandAssessment;
use crate::harness::primitives::ToolResult;
use crate::tools::handler::Plan;
use crate::tools::host::SpearHost;
use crate::tools::host::command::HostCommand;
use crate::tools::refusal::{Gate, Refusal};

use super::fetch_url::FetchRequest;
use super::pages::PageRange;
use super::search::{DEFAULT_RESULTS, MAX_RESULTS, search_plan};

pub const USAGE: &str = "usage: spear-capability run fetch_url URL [--pages A-B] [--save-as PATH] \
    | spear-capability run search_internet QUERY... [--max-results N]";

fn refused(rule: &str, why: impl Into<String>) -> Refusal {
    Refusal::new(Gate::Arguments, rule, ToolResult::denied(why.into()))
}

/// The plan for `cmd` when it is `spear-capability run ...`; `None` for every other host
/// command. `source` is what was typed, `read_only` SpearHost's assessment of it.
pub fn plan(
    host: &SpearHost,
    cmd: &HostCommand,
    source: &str,
    read_only: CommandAssessment,
) -> Option<Result<Plan, Refusal>> {
    let (first, rest) = cmd.args.split_first()?;
    if cmd.name != "spear-capability" || first != "run" {
        return None;
    }
    Some(run_plan(host, rest, source, read_only))
}

fn run_plan(
    host: &SpearHost,
    args: &[String],
    source: &str,
    read_only: CommandAssessment,
) -> Result<Plan, Refusal> {
    let Some((name, rest)) = args.split_first() else {
        return Err(refused("host_command_syntax", USAGE));
    };
    if !host.capabilities().iter().any(|c| c.name == name) {
        return Err(refused(
            "capability_not_configured",
            format!(
                "no external capability named `{name}` is configured for this session \
                 (`spear-capability list` shows those that are; the web pair needs the web \
                 enabled: `enabled = true` under [web] in the config, or SPEAR_WEB=1)"
            ),
        ));
    }
    // What the web pair would send out: no known secret goes with it.
    if let Some(refusal) = host.secret_out(source) {
        return Err(refusal);
    }
    let (positional, options) = split_options(rest)?;
    match name.as_str() {
        "fetch_url" => {
            let [url] = positional.as_slice() else {
                return Err(refused("host_command_syntax", USAGE));
            };
            let mut req = FetchRequest {
                url: url.clone(),
                pages: None,
                save_as: None,
            };
            for (k, v) in options {
                match k.as_str() {
                    "pages" => {
                        req.pages = Some(PageRange::parse(&v).map_err(|e| refused("pages", e))?)
                    }
                    "save-as" => req.save_as = Some(v),
                    _ => return Err(refused("host_command_syntax", format!("--{k}? {USAGE}"))),
                }
            }
            let mut plan = req.plan();
            // A save keeps the plan's write assessment; a read is SpearHost's read-only answer.
            if plan.command.is_none() {
                plan.command = Some(read_only);
            }
            plan.audit_target = Some(source.to_string());
            Ok(plan)
        }
        _ => {
            if positional.is_empty() {
                return Err(refused("host_command_syntax", USAGE));
            }
            let mut max = DEFAULT_RESULTS;
            for (k, v) in options {
                match (k.as_str(), v.parse::<u64>()) {
                    ("max-results", Ok(n)) if (1..=MAX_RESULTS).contains(&n) => max = n,
                    ("max-results", _) => {
                        return Err(refused(
                            "host_command_syntax",
                            format!("--max-results takes a number from 1 to {MAX_RESULTS}"),
                        ));
                    }
                    _ => return Err(refused("host_command_syntax", format!("--{k}? {USAGE}"))),
                }
            }
            let mut plan = search_plan(positional.join(" "), max);
            plan.command = Some(read_only);
            plan.audit_target = Some(source.to_string());
            Ok(plan)
        }
    }
}

/// Words and `--key value` / `--key=value` options.
#[allow(clippy::type_complexity)]
fn split_options(args: &[String]) -> Result<(Vec<String>, Vec<(String, String)>), Refusal> {
    let mut positional = Vec::new();
    let mut options = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.strip_prefix("--") {
            Some(opt) => {
                let (k, v) = match opt.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => {
                        let v = it.next().ok_or_else(|| {
                            refused("host_command_syntax", format!("--{opt} needs a value"))
                        })?;
                        (opt.to_string(), v.clone())
                    }
                };
                options.push((k, v));
            }
            None => positional.push(a.clone()),
        }
    }
    Ok((positional, options))
}
