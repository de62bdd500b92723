//! Who answers the egress proxy about a name neither `[network] allow` nor `deny` holds, for
//! one command: the person's `net:` rules first (deny over ask over allow), then the mode. AUTO
//! and SAFE never widen the list by themselves; ASK asks the turn's approver while the proxy
//! holds the connection ("the command `cargo build` wants `index.crates.io:443`"): allow once,
//! for the session (a session `net:` rule), always (a `net:` rule kept in the person's rules
//! file), or deny. This is the one question asked after a command started.

use std::sync::Arc;

use crate::harness::command_policy::{ApprovalDecision, CommandClass};
use crate::harness::egress::{EgressAnswer, EgressDecider, EgressQuestion, Host};
use crate::harness::primitives::{Capability, CapabilitySet, ExecutionMode};
use crate::harness::rules::{RuleAction, RuleBook};
use crate::tools::approval::{ApprovalId, CallApprovalRequest, CallApprover};

/// The decider for one command of one call.
pub struct NameAsk {
    pub mode: ExecutionMode,
    pub rules: RuleBook,
    pub approver: Arc<dyn CallApprover>,
    pub call_id: String,
    pub tool: String,
    pub class: CommandClass,
}

impl EgressDecider for NameAsk {
    fn decide(&self, command: &str, host: &Host, port: u16) -> EgressQuestion {
        let name = host.to_string();
        match self.rules.name_verdict(self.mode, &name, port) {
            Some((RuleAction::Deny, _)) => {
                return Box::pin(async { EgressAnswer::Deny("refused by a net: rule of yours") });
            }
            Some((RuleAction::Allow, _)) => return Box::pin(async { EgressAnswer::Allow }),
            Some((RuleAction::Ask, _)) | None => {}
        }
        if self.mode != ExecutionMode::Ask {
            return Box::pin(async {
                EgressAnswer::Deny(
                    "not in [network] allow; only ASK mode asks about a new name (add it to \
                     [network] allow, or save a net: rule)",
                )
            });
        }
        let target = format!("{name}:{port}");
        let request = CallApprovalRequest {
            id: ApprovalId::next(),
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            mode: self.mode,
            command: command.to_string(),
            class: self.class,
            asking_for: CapabilitySet::of(&[Capability::Network]),
            reasons: vec![format!(
                "the command `{}` wants `{target}`, which is not in [network] allow; the \
                 connection waits for your answer",
                cut(command)
            )],
            targets: vec![target.clone()],
            network: true,
            preview: None,
            always: vec![format!("net:{target}")],
        };
        let approver = self.approver.clone();
        let rules = self.rules.clone();
        Box::pin(async move {
            // The approver blocks until the person answers; the proxy's other connections
            // go on meanwhile.
            let asked = tokio::task::spawn_blocking(move || {
                let d = approver.approve(&request);
                (d, request)
            })
            .await;
            let Ok((decision, request)) = asked else {
                return EgressAnswer::Deny("the question could not be asked");
            };
            match decision {
                ApprovalDecision::Approve => EgressAnswer::Allow,
                ApprovalDecision::ApproveForSession => {
                    match rules.keep_name(
                        &name,
                        port,
                        crate::harness::command_policy::SaveScope::Session,
                    ) {
                        Ok(_) => EgressAnswer::Allow,
                        Err(_) => EgressAnswer::Deny("the session's answer could not be kept"),
                    }
                }
                ApprovalDecision::Always { rule, scope } if request.always.contains(&rule) => {
                    match rules.keep_name(&name, port, scope) {
                        Ok(_) => EgressAnswer::Allow,
                        Err(_) => EgressAnswer::Deny(
                            "the net: rule could not be saved, so the connection was refused",
                        ),
                    }
                }
                ApprovalDecision::Always { .. } => {
                    EgressAnswer::Deny("the answer named a rule the question did not offer")
                }
                ApprovalDecision::Deny(_) => EgressAnswer::Deny("the person declined"),
                ApprovalDecision::Cancel(_) => EgressAnswer::Deny(
                    "no answer could be had (headless, or the question was dismissed)",
                ),
            }
        })
    }
}

/// At most 200 characters of a command, for a question.
fn cut(command: &str) -> String {
    let mut s: String = command.chars().take(200).collect();
    if s.len() < command.len() {
        s.push('…');
    }
    s
}
