//! Approvals at the tool seam: the request the router builds for a call that needs a yes (its
//! own id, the call's id, the tool, the typed class, the reasons, the capabilities asked for,
//! the targets and the tool's typed preview), the `CallApprover` a front end answers it through,
//! the session grants "allow for session" leaves behind, and `CallAsk`, through which the
//! harness's authorization asks for one call. Invariant: a request is built only from the call
//! the router is routing (the router alone makes a `CallAsk`, so no front end has to guess a
//! call id), and a grant answers a later question only for exactly the command text and class
//! it was given for.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::harness::audit::{DecidedBy, GrantRef};
use crate::harness::command_policy::{
    ApprovalDecision, ApprovalRequest, Approver, CommandClass, capabilities_for,
};
use crate::harness::primitives::{CapabilitySet, ExecutionMode};
use crate::harness::rules::{Ceiling, RuleBook, RuleRef, Verdict};
use crate::tools::preview::Preview;

/// Names one approval request, unique within the process: an answer names the request it
/// answers, so a late answer cannot be taken for one to a later question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ApprovalId(pub u64);

static REQUESTS: AtomicU64 = AtomicU64::new(1);

impl ApprovalId {
    /// A fresh id.
    pub fn next() -> Self {
        ApprovalId(REQUESTS.fetch_add(1, Ordering::Relaxed))
    }
}

impl std::fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a person is asked about one call. On the wire (`approval_requested`) its fields keep
/// the names the event always had (`command`, `class`, `asking_for`, `reasons`, `writes`,
/// `network`) and add `request_id`, `call_id`, `tool` and the preview's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallApprovalRequest {
    #[serde(rename = "request_id")]
    pub id: ApprovalId,
    pub call_id: String,
    pub tool: String,
    pub mode: ExecutionMode,
    /// The command as it was classified (a file tool's write reads `write_file PATH`).
    pub command: String,
    pub class: CommandClass,
    /// The capabilities that need a yes.
    pub asking_for: CapabilitySet,
    pub reasons: Vec<String>,
    /// The paths the call writes.
    #[serde(rename = "writes")]
    pub targets: Vec<String>,
    pub network: bool,
    /// What the tool will do, as it computed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
    /// The allow rules "always" may keep, narrowest first (empty: the line has no single part
    /// a rule could name; "for this session" then keeps this exact command).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub always: Vec<String>,
}

impl CallApprovalRequest {
    /// The harness's view of the question (for approvers that need no more).
    pub fn harness_request(&self) -> ApprovalRequest {
        ApprovalRequest {
            mode: self.mode,
            command: self.command.clone(),
            class: self.class,
            asking_for: self.asking_for,
            reasons: self.reasons.clone(),
            writes: self.targets.clone(),
            network: self.network,
        }
    }
}

/// Answers the router's approval requests (the screen's dialog through the task, the terminal
/// prompt, a test double). `ApproveForSession` asks the router to keep a session grant.
pub trait CallApprover: Send + Sync {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision;

    /// Who answers, for the audit record's `decided_by`: a person, unless the approver knows
    /// it may be something else (an MCP client).
    fn answerer(&self) -> DecidedBy {
        DecidedBy::Person
    }

    /// The question `request_id`, if still open, no longer needs an answer: it is answered
    /// `Cancel(reason)` and the person's view of it closed. (Most approvers cannot take a
    /// question back; theirs then stays until answered, and the answer decides nothing.)
    fn withdraw(&self, _request_id: ApprovalId, _reason: &str) {}
}

/// Any harness `Approver` answers a call's request from its harness view.
impl<T: Approver + Send + Sync + ?Sized> CallApprover for T {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        Approver::approve(self, &request.harness_request())
    }
}

/// A shared approver answers as the one it shares.
impl<T: CallApprover + ?Sized> CallApprover for Arc<T> {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        (**self).approve(request)
    }

    fn answerer(&self) -> DecidedBy {
        (**self).answerer()
    }

    fn withdraw(&self, request_id: ApprovalId, reason: &str) {
        (**self).withdraw(request_id, reason);
    }
}

/// `spear run --approver CMD`: each request goes to the person's program as JSON on stdin, and
/// its JSON answer naming the request id decides: `{"request_id": N, "decision": "allow"}`, or
/// `{"request_id": N, "decision": "deny", "message": "…"}` (the message reaches the model).
/// Invariant: nothing but an exact allow for this very request allows: an answer for another
/// id, no answer, a crash, a timeout or anything unreadable is a deny, and a DANGEROUS request
/// (which authorization refuses before asking) is denied without being sent.
pub struct ExternalApprover {
    pub program: crate::tools::external::Program,
    /// The workspace the requests are about (the program runs in `/`, and this is kept out
    /// of its `PATH`).
    pub workspace: std::path::PathBuf,
}

impl CallApprover for ExternalApprover {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        if request.class == CommandClass::Dangerous {
            return ApprovalDecision::Deny(Some("DANGEROUS is refused in every mode".into()));
        }
        let deny = |why: String| ApprovalDecision::Deny(Some(format!("the approver {why}")));
        let input = match serde_json::to_vec(request) {
            Ok(i) => i,
            Err(e) => return deny(format!("could not be asked: {e}")),
        };
        let out = match crate::tools::external::run(&self.program, &self.workspace, &input) {
            Ok(out) => out,
            Err(e) => return deny(e.to_string()),
        };
        let Ok(answer) = serde_json::from_slice::<serde_json::Value>(&out) else {
            return deny("printed something that is not JSON".into());
        };
        if answer.get("request_id").and_then(serde_json::Value::as_u64) != Some(request.id.0) {
            return deny(format!(
                "answered for another request (expected request_id {})",
                request.id
            ));
        }
        match answer.get("decision").and_then(serde_json::Value::as_str) {
            Some("allow") => ApprovalDecision::Approve,
            Some("deny") => ApprovalDecision::Deny(
                answer
                    .get("message")
                    .and_then(serde_json::Value::as_str)
                    .map(|m| m.chars().filter(|c| !c.is_control()).take(1000).collect()),
            ),
            _ => deny("answered without a decision of allow or deny".into()),
        }
    }
}

/// "Allow for session": the exact command text and class a person allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionGrant {
    pub id: u64,
    pub command: String,
    pub class: CommandClass,
}

/// The grants of one session, held by its router. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct SessionGrants {
    grants: Arc<Mutex<Vec<SessionGrant>>>,
}

impl SessionGrants {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SessionGrant>> {
        self.grants.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The grant for exactly `command` and `class`, if the person gave one.
    pub fn find(&self, command: &str, class: CommandClass) -> Option<SessionGrant> {
        self.lock()
            .iter()
            .find(|g| g.command == command && g.class == class)
            .cloned()
    }

    /// Keep a grant for `command` and `class` (the one already kept, if any).
    pub fn grant(&self, command: &str, class: CommandClass) -> SessionGrant {
        let mut grants = self.lock();
        if let Some(g) = grants
            .iter()
            .find(|g| g.command == command && g.class == class)
        {
            return g.clone();
        }
        let g = SessionGrant {
            id: grants.len() as u64 + 1,
            command: command.to_string(),
            class,
        };
        grants.push(g.clone());
        g
    }

    /// Every grant, oldest first.
    pub fn list(&self) -> Vec<SessionGrant> {
        self.lock().clone()
    }

    /// Forget every grant: a new or reopened session starts with none (a grant is the person's
    /// word for the session they gave it in).
    pub fn clear(&self) {
        self.lock().clear();
    }
}

/// How a question was answered, and by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub decision: ApprovalDecision,
    pub by: DecidedBy,
    pub grant: Option<GrantRef>,
    pub rule: Option<RuleRef>,
}

/// The harness asks through this for one call, only where the mode would ask: the permission
/// rules' verdict first (a deny refuses, an allow answers, an ask goes to the person even past
/// a session grant), then a session grant for exactly this command and class, then the turn's
/// approver with the call's typed request (its id, the call, the tool, the preview). It
/// remembers who answered and how, so a person's "no" is told apart from what the mode
/// refuses, and a rule or a session grant is recorded as one.
/// What the rules bring to one question: the book an "always" is kept in, their verdict on
/// the call, and the allows "always" may keep.
pub(crate) struct Rules<'a> {
    pub book: &'a RuleBook,
    pub verdict: &'a Verdict,
    pub always: Vec<String>,
    /// The class and capabilities of the part `always` names: what a kept rule covers.
    pub always_ceiling: Option<Ceiling>,
    /// Why the person must be asked whatever else would answer (a `pre_tool` hook asked; a
    /// checkpoint could not take some files): no allow rule or session grant answers then.
    pub ask_reason: Option<String>,
}

pub(crate) struct CallAsk<'a> {
    inner: &'a dyn CallApprover,
    grants: &'a SessionGrants,
    rules: Rules<'a>,
    call_id: &'a str,
    tool: &'a str,
    preview: Option<&'a Preview>,
    answer: RefCell<Option<Answer>>,
}

impl<'a> CallAsk<'a> {
    pub(crate) fn new(
        inner: &'a dyn CallApprover,
        grants: &'a SessionGrants,
        rules: Rules<'a>,
        call_id: &'a str,
        tool: &'a str,
        preview: Option<&'a Preview>,
    ) -> Self {
        CallAsk {
            inner,
            grants,
            rules,
            call_id,
            tool,
            preview,
            answer: RefCell::new(None),
        }
    }

    /// How the question was answered, and by whom (`None`: nobody was asked).
    pub(crate) fn into_answer(self) -> Option<Answer> {
        self.answer.into_inner()
    }

    fn answered(&self, decision: ApprovalDecision, by: DecidedBy) -> ApprovalDecision {
        *self.answer.borrow_mut() = Some(Answer {
            decision: decision.clone(),
            by,
            grant: None,
            rule: None,
        });
        decision
    }
}

impl Approver for CallAsk<'_> {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        let by_rule = |decision: ApprovalDecision, rule: &RuleRef| {
            *self.answer.borrow_mut() = Some(Answer {
                decision: decision.clone(),
                by: DecidedBy::Rule,
                grant: None,
                rule: Some(rule.clone()),
            });
            decision
        };
        match self.rules.verdict {
            Verdict::Deny(rule) => {
                return by_rule(
                    ApprovalDecision::Deny(Some(format!("refused by {rule}"))),
                    rule,
                );
            }
            Verdict::Allow(rules) if !rules.is_empty() && self.rules.ask_reason.is_none() => {
                return by_rule(ApprovalDecision::Approve, &rules[0]);
            }
            Verdict::Ask(_) | Verdict::Unclear(_) | Verdict::Allow(_) | Verdict::Silent => {}
        }
        let grant = match self.rules.verdict {
            // An ask rule, or a deny that may apply, or a hook that asked, outranks an earlier
            // "allow for session".
            _ if self.rules.ask_reason.is_some() => None,
            Verdict::Ask(_) | Verdict::Unclear(_) => None,
            _ => self.grants.find(&request.command, request.class),
        };
        if let Some(g) = grant {
            *self.answer.borrow_mut() = Some(Answer {
                decision: ApprovalDecision::Approve,
                by: DecidedBy::SessionGrant,
                grant: Some(GrantRef {
                    id: g.id,
                    class: g.class,
                }),
                rule: None,
            });
            return ApprovalDecision::Approve;
        }
        let asked = CallApprovalRequest {
            id: ApprovalId::next(),
            call_id: self.call_id.to_string(),
            tool: self.tool.to_string(),
            mode: request.mode,
            command: request.command.clone(),
            class: request.class,
            asking_for: request.asking_for,
            reasons: request
                .reasons
                .iter()
                .cloned()
                .chain(self.rules.ask_reason.iter().cloned())
                .collect(),
            targets: request.writes.clone(),
            network: request.network,
            preview: self.preview.cloned(),
            always: self.rules.always.clone(),
        };
        let d = self.inner.approve(&asked);
        let by = self.inner.answerer();
        match &d {
            ApprovalDecision::ApproveForSession => {
                self.grants.grant(&request.command, request.class);
            }
            // Only a rule the request offered is kept: an answer cannot name a wider one.
            ApprovalDecision::Always { rule, scope } if asked.always.contains(rule) => {
                let ceiling = self.rules.always_ceiling.unwrap_or(Ceiling {
                    class: request.class,
                    capabilities: capabilities_for(request.class, request.network),
                });
                if let Err(why) = self.rules.book.keep(rule, ceiling, *scope) {
                    return self.answered(
                        ApprovalDecision::Cancel(format!(
                            "the rule `allow {rule}` could not be kept, so nothing ran: {why}"
                        )),
                        by,
                    );
                }
            }
            ApprovalDecision::Always { rule, .. } => {
                return self.answered(
                    ApprovalDecision::Cancel(format!(
                        "the answer named a rule the question did not offer (`{rule}`)"
                    )),
                    by,
                );
            }
            _ => {}
        }
        self.answered(d, by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_matches_exactly_its_command_and_class() {
        let grants = SessionGrants::default();
        let g = grants.grant("touch a", CommandClass::WorkspaceMutating);
        assert_eq!(
            grants.find("touch a", CommandClass::WorkspaceMutating),
            Some(g.clone())
        );
        assert_eq!(
            grants.find("touch a ", CommandClass::WorkspaceMutating),
            None
        );
        assert_eq!(grants.find("touch a", CommandClass::ShellComplex), None);
        assert_eq!(grants.grant("touch a", CommandClass::WorkspaceMutating), g);
        assert_eq!(grants.list().len(), 1);
        let next = grants.grant("make", CommandClass::ShellComplex);
        assert_eq!(next.id, 2);
        // A new session starts with none.
        grants.clear();
        assert_eq!(
            grants.find("touch a", CommandClass::WorkspaceMutating),
            None
        );
        assert!(grants.list().is_empty());
    }
}
