//! Hooks that can only tighten: `[[hooks.pre_tool]]` programs from the person's own config get
//! each call as JSON before authorization and may answer `deny` (with a message for the model)
//! or `ask`; `[[hooks.post_tool]]` programs observe the result. Invariant: no answer of a hook
//! lets anything run that would not have run without it. A hook that fails, times out, prints
//! something unreadable, or answers anything but `deny`, `ask` or nothing (`allow` included)
//! denies the call. Hooks run outside the sandbox (see `external`), never from a project's
//! files; what they print never reaches the model, only a deny's message does.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::harness::audit::HookRun;
use crate::tools::external::{self, Program};

/// One configured hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    pub program: Program,
    /// The tools it is run for (empty: every tool).
    pub tools: Vec<String>,
}

impl Hook {
    fn covers(&self, tool: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|t| t == tool)
    }
}

/// The person's hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    pub pre_tool: Vec<Hook>,
    pub post_tool: Vec<Hook>,
}

/// What the `pre_tool` hooks said about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreAnswer {
    /// No hook objected.
    Proceed,
    /// A hook asked that the person be asked, saying why.
    Ask(String),
    /// A hook refused the call; the message is for the model.
    Deny(String),
}

/// What a `pre_tool` hook reads on stdin.
#[derive(Debug, Serialize)]
pub struct PreTool<'a> {
    pub event: &'static str,
    pub call_id: &'a str,
    pub tool: &'a str,
    pub arguments: &'a Value,
    pub mode: &'a str,
    pub workspace: &'a str,
}

impl Hooks {
    pub fn is_empty(&self) -> bool {
        self.pre_tool.is_empty() && self.post_tool.is_empty()
    }

    /// Check every program again against the workspace it will serve.
    pub fn check_for(&self, workspace: &Path) -> Result<(), String> {
        for h in self.pre_tool.iter().chain(&self.post_tool) {
            external::check(&h.program.path.to_string_lossy(), Some(workspace))?;
            external::check_args(&h.program.args, workspace)?;
        }
        Ok(())
    }

    /// Run the `pre_tool` hooks for `call` in order; the first deny ends it.
    pub fn pre_tool(&self, workspace: &Path, call: &PreTool<'_>) -> (PreAnswer, Vec<HookRun>) {
        let mut answer = PreAnswer::Proceed;
        let mut runs = Vec::new();
        let input = serde_json::to_vec(call).unwrap_or_default();
        for h in self.pre_tool.iter().filter(|h| h.covers(call.tool)) {
            let said = read_answer(external::run(&h.program, workspace, &input));
            runs.push(HookRun {
                event: "pre_tool".into(),
                program: h.program.path.display().to_string(),
                answer: match &said {
                    PreAnswer::Proceed => "proceed".into(),
                    PreAnswer::Ask(_) => "ask".into(),
                    PreAnswer::Deny(why) => format!("deny: {why}"),
                },
            });
            match said {
                PreAnswer::Deny(why) => return (PreAnswer::Deny(why), runs),
                PreAnswer::Ask(why) => answer = PreAnswer::Ask(why),
                PreAnswer::Proceed => {}
            }
        }
        (answer, runs)
    }

    /// Run the `post_tool` hooks with the call's result; they observe, so only whether each
    /// ran is recorded.
    pub fn post_tool(&self, workspace: &Path, tool: &str, result: &Value) -> Vec<HookRun> {
        let input = serde_json::to_vec(result).unwrap_or_default();
        self.post_tool
            .iter()
            .filter(|h| h.covers(tool))
            .map(|h| HookRun {
                event: "post_tool".into(),
                program: h.program.path.display().to_string(),
                answer: match external::run(&h.program, workspace, &input) {
                    Ok(_) => "observed".into(),
                    Err(e) => format!("failed: {e}"),
                },
            })
            .collect()
    }
}

/// A hook's answer, read strictly: nothing (or `{}`) proceeds; `{"decision":"ask"}` asks;
/// `{"decision":"deny","message":…}` denies; everything else denies, saying why.
fn read_answer(ran: Result<Vec<u8>, external::ProgramError>) -> PreAnswer {
    let out = match ran {
        Ok(out) => out,
        Err(e) => return PreAnswer::Deny(format!("a pre_tool hook {e}, so the call was refused")),
    };
    let text = String::from_utf8_lossy(&out);
    if text.trim().is_empty() {
        return PreAnswer::Proceed;
    }
    let unreadable =
        |what: &str| PreAnswer::Deny(format!("a pre_tool hook {what}, so the call was refused"));
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text.trim()) else {
        return unreadable("printed something that is not a JSON object");
    };
    let message = |key: &str| {
        o.get(key).and_then(Value::as_str).map(|m| {
            m.chars()
                .filter(|c| !c.is_control())
                .take(500)
                .collect::<String>()
        })
    };
    match o.get("decision").and_then(Value::as_str) {
        None if o.is_empty() => PreAnswer::Proceed,
        Some("proceed") => PreAnswer::Proceed,
        Some("ask") => PreAnswer::Ask(message("reason").unwrap_or_else(|| "a hook asked".into())),
        Some("deny") => PreAnswer::Deny(
            message("message").unwrap_or_else(|| "a pre_tool hook refused the call".into()),
        ),
        Some("allow") => unreadable("answered `allow`, which a hook may not (only deny or ask)"),
        _ => unreadable("answered without a `decision` of deny, ask or proceed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(out: &str) -> PreAnswer {
        read_answer(Ok(out.as_bytes().to_vec()))
    }

    #[test]
    fn answers_are_read_strictly_and_only_tighten() {
        assert_eq!(said(""), PreAnswer::Proceed);
        assert_eq!(said("{}\n"), PreAnswer::Proceed);
        assert_eq!(said(r#"{"decision":"proceed"}"#), PreAnswer::Proceed);
        assert_eq!(
            said(r#"{"decision":"deny","message":"no pushes on Fridays"}"#),
            PreAnswer::Deny("no pushes on Fridays".into())
        );
        assert!(matches!(said(r#"{"decision":"ask"}"#), PreAnswer::Ask(_)));
        for bad in [
            r#"{"decision":"allow"}"#,
            r#"{"decision":"yes"}"#,
            r#"{"message":"x"}"#,
            "allow",
            "[1]",
            "{",
        ] {
            assert!(matches!(said(bad), PreAnswer::Deny(_)), "{bad}");
        }
        let failed = read_answer(Err(external::ProgramError::TimedOut(
            std::time::Duration::from_secs(1),
        )));
        assert!(matches!(failed, PreAnswer::Deny(m) if m.contains("no answer")));
    }
}
