//! `ToolRouter`: the one path every call takes, whoever made it (the model, the person in the
//! TUI, `spear tool`), in the order of the spec's "life of a tool call": schema validation, the
//! hard gates (request scope, workspace and target policy, what a command writes, the sandbox-down
//! guard), the tool's execution modes, the handler with its observer hooks, classification and
//! authorization (ASK asks), the action, and normalisation into a `ToolResultEnvelope`. A refusal
//! is a value on that path; `Err` only means an observer (the audit log) broke.

pub mod schema;
pub mod turn;

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use thiserror::Error;

use crate::harness::audit::{CheckpointRef, DecidedBy, Decision, GrantRef, HookRun, McpToolRef};
use crate::harness::command_policy::{
    ApprovalDecision, ApprovalRequest, Approver, AuthorizationResult, CommandAssessment,
    CommandClass, ExecutionProfile, capabilities_for,
};
use crate::harness::primitives::{ExecutionMode, ToolResult, ToolStatus};
use crate::harness::rules::{Asked, RuleRef, Verdict};
use crate::tools::approval::{Answer, ApprovalId, CallAsk, Rules, SessionGrants};
use crate::tools::checkpoints::SessionCheckpoints;
use crate::tools::envelope::ToolResultEnvelope;
use crate::tools::handler::{ActionOutcome, RunContext};
use crate::tools::hooks::{PreAnswer, PreTool};
use crate::tools::host::SpearHost;
use crate::tools::host::gates::TargetAccess;
use crate::tools::host::gates::{gate_command_writes, gate_target};
use crate::tools::observer::{CallEnd, CallStart, ObserverError, ToolObserver};
use crate::tools::pipeline::{SPEC_ORDER, Step};
use crate::tools::preview::Preview;
use crate::tools::refusal::{Gate, Refusal};
use crate::tools::registry::{RegisteredTool, ToolRegistry};
use crate::tools::results::PREVIEW_CHARS;
use crate::tools::router::turn::{DEFAULT_REFUSAL_REPEATS, RefusalKey, Turn, normalize_target};

/// One call as the model (or a person) makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// The machinery broke: the turn must end.
#[derive(Debug, Error)]
pub enum RouterError {
    #[error(transparent)]
    Observer(#[from] ObserverError),
}

pub struct ToolRouter {
    registry: ToolRegistry,
    host: Arc<SpearHost>,
    observers: Vec<Arc<dyn ToolObserver>>,
    refusal_limit: u32,
    /// "Allow for session" answers, consulted before anyone is asked.
    grants: SessionGrants,
    /// The checkpoints taken around every call that may change the working tree.
    checkpoints: Option<Arc<SessionCheckpoints>>,
}

/// Facts gathered along the path, for the observers.
struct Trace<'a> {
    tool: &'a RegisteredTool,
    call: &'a ToolCall,
    /// When the call began, and again once it was authorized: the recorded duration is the
    /// action's, not the time a person took to answer a confirmation.
    started: Instant,
    target: Option<String>,
    is_command: bool,
    class: Option<CommandClass>,
    /// The steps passed so far, in the order they were passed.
    steps: Vec<Step>,
    /// Who decided, once someone did.
    decided_by: Option<DecidedBy>,
    grant: Option<GrantRef>,
    rule: Option<RuleRef>,
    /// The person's hooks that ran for the call.
    hooks: Vec<HookRun>,
    /// A `pre_tool` hook asked that the person be asked, saying why.
    ask_reason: Option<String>,
    /// The workspace-relative paths a file tool writes, as the gates resolved them.
    resolved_writes: Vec<String>,
    /// The checkpoint taken before the call, once it ran.
    checkpoint: Option<CheckpointRef>,
    /// The MCP tool the call reaches, as its action confirmed it.
    mcp_tool: Option<McpToolRef>,
}

impl Trace<'_> {
    /// The person must be asked, for this reason too.
    fn ask_also(&mut self, why: String) {
        self.ask_reason = Some(match self.ask_reason.take() {
            Some(other) => format!("{other}; {why}"),
            None => why,
        });
    }
}

impl ToolRouter {
    /// A router over `registry` whose tools reach the harness through `host`. The refusal limit
    /// is the default (5) until `with_refusal_limit` sets the configured one.
    pub fn new(registry: ToolRegistry, host: Arc<SpearHost>) -> Self {
        ToolRouter {
            registry,
            host,
            observers: Vec::new(),
            refusal_limit: DEFAULT_REFUSAL_REPEATS,
            grants: SessionGrants::default(),
            checkpoints: None,
        }
    }

    /// Take a checkpoint before and after every call that may change the working tree.
    #[must_use]
    pub fn with_checkpoints(mut self, checkpoints: Arc<SessionCheckpoints>) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// The session's checkpoints, when they are taken.
    pub fn checkpoints(&self) -> Option<&SessionCheckpoints> {
        self.checkpoints.as_deref()
    }

    /// Record that an answer named approval request `request`, which was not pending. `Err`
    /// only when the audit log broke.
    pub fn record_answer_refused(&self, request: ApprovalId) -> Result<(), RouterError> {
        let id = request.to_string();
        for o in &self.observers {
            o.answer_refused(&id)?;
        }
        Ok(())
    }

    /// Record an undo the person asked for. `Err` only when the audit log broke.
    pub fn record_undo(
        &self,
        event: &crate::harness::audit::AuditEvent,
    ) -> Result<(), RouterError> {
        for o in &self.observers {
            o.undone(event)?;
        }
        Ok(())
    }

    /// The session's "allow for session" grants.
    pub fn grants(&self) -> &SessionGrants {
        &self.grants
    }

    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn ToolObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    #[must_use]
    pub fn with_refusal_limit(mut self, limit: u32) -> Self {
        self.refusal_limit = limit.max(1);
        self
    }

    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    pub fn host(&self) -> &SpearHost {
        &self.host
    }

    /// Route one call.
    pub fn call(
        &self,
        turn: &mut Turn,
        call: &ToolCall,
    ) -> Result<ToolResultEnvelope, RouterError> {
        // Results this turn makes are never evicted to make room for later ones.
        self.host.results().begin_turn(turn.id());
        if let Some(answer) = turn.stopped() {
            let mut env = ToolResultEnvelope::build(
                &call.id,
                &call.name,
                ToolResult::denied(answer.to_string()),
                None,
            );
            env.gate = Some(Gate::TurnStopped);
            env.turn_stopped = true;
            return Ok(env);
        }
        let Some(tool) = self.registry.get(&call.name) else {
            let mut env = ToolResultEnvelope::build(
                &call.id,
                &call.name,
                ToolResult::refused(
                    ToolStatus::NotFound,
                    format!("no tool named `{}` is registered", call.name),
                ),
                None,
            );
            env.gate = Some(Gate::UnknownTool);
            return Ok(env);
        };
        let mut trace = Trace {
            tool,
            call,
            started: Instant::now(),
            target: ["path", "command"]
                .iter()
                .find_map(|k| call.arguments.get(*k).and_then(Value::as_str))
                .map(str::to_string),
            is_command: call.arguments.get("command").is_some(),
            class: None,
            steps: Vec::with_capacity(SPEC_ORDER.len()),
            decided_by: None,
            grant: None,
            rule: None,
            hooks: Vec::new(),
            ask_reason: None,
            resolved_writes: Vec::new(),
            checkpoint: None,
            mcp_tool: None,
        };
        match self.run_gated(turn, &mut trace) {
            Ok((outcome, decision)) => self.finish(turn, &mut trace, outcome, decision),
            Err(refusal) => self.refuse(turn, &mut trace, refusal),
        }
    }

    /// Everything up to and including the action. `Err` is a refusal by a gate.
    fn run_gated(
        &self,
        turn: &mut Turn,
        trace: &mut Trace<'_>,
    ) -> Result<(ActionOutcome, Decision), Refusal> {
        let (spec, call, host) = (&trace.tool.spec, trace.call, &*self.host);
        schema::validate(&spec.parameters, &call.arguments).map_err(|e| {
            Refusal::new(
                Gate::Schema,
                "invalid_arguments",
                ToolResult::failed(format!("invalid arguments: {e}")),
            )
        })?;
        trace.steps.push(Step::Schema);
        if !turn.view.offers(&spec.name) {
            return Err(Refusal::new(
                Gate::RequestScope,
                "not_offered",
                ToolResult::denied(format!(
                    "`{}` is not offered to this turn (its tools are: {})",
                    spec.name,
                    turn.view
                        .names
                        .iter()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            ));
        }
        let plan = trace.tool.handler.plan(&call.arguments, host)?;
        if !turn.view.working_tree && (!plan.targets.is_empty() || plan.command.is_some()) {
            let what = plan
                .targets
                .iter()
                .map(|t| t.path.clone())
                .chain(plan.command.iter().map(|a| a.command.clone()))
                .collect::<Vec<_>>()
                .join("`, `");
            return Err(Refusal::new(
                Gate::RequestScope,
                "normative_question",
                ToolResult::denied(format!(
                    "this request asks only what the standard requires, so nothing in it may \
                     touch the working tree, and `{}` would reach `{what}`. Answer from the \
                     standard; ask for the change as a request of its own.",
                    spec.name
                )),
            ));
        }
        trace.steps.push(Step::RequestScope);
        if plan.audit_target.is_some() {
            trace.target.clone_from(&plan.audit_target);
        }
        trace.is_command = plan.command.is_some();
        trace.class = plan.command.as_ref().map(|a| a.class);
        let paths = plan
            .targets
            .iter()
            .map(|t| gate_target(host, t))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(a) = &plan.command {
            gate_command_writes(host, a)?;
        }
        trace.steps.push(Step::TargetPolicy);
        trace.resolved_writes = plan
            .targets
            .iter()
            .zip(&paths)
            .filter(|(t, _)| matches!(t.access, TargetAccess::Write(_)))
            .map(|(_, p)| p.relative().display().to_string())
            .collect();
        let writes: Vec<&str> = plan
            .targets
            .iter()
            .filter(|t| matches!(t.access, TargetAccess::Write(_)))
            .map(|t| t.path.as_str())
            .collect();
        if let (Some(down), false) = (turn.sandbox_down(), writes.is_empty()) {
            return Err(Refusal::new(
                Gate::SandboxDown,
                "sandbox_down",
                ToolResult::denied(format!(
                    "the sandbox is down in this turn ({down}), so nothing written now could be \
                     read back, built or run: nothing could be verified, and `{}` of `{}` was \
                     declined. Fix the sandbox (`spear doctor` says how) and try again.",
                    spec.name,
                    writes.join("`, `")
                )),
            ));
        }
        trace.steps.push(Step::SandboxDown);
        if !spec.runs_in(turn.mode) {
            return Err(Refusal::new(
                Gate::ExecutionModes,
                format!("mode_{}", turn.mode.as_str().to_lowercase()),
                ToolResult::denied(format!(
                    "`{}` does not run in {} mode (it runs in: {})",
                    spec.name,
                    turn.mode,
                    spec.execution_modes
                        .iter()
                        .map(|m| m.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            ));
        }
        trace.steps.push(Step::ExecutionModes);
        let mut action = plan.action;
        let preview = match action.prepare(host, &paths) {
            Ok(p) => p,
            Err(result) => return Ok((result.into(), Decision::Allowed)),
        };
        let start = CallStart {
            call_id: &call.id,
            tool: &spec.name,
            mode: turn.mode,
            target: trace.target.as_deref(),
            arguments: &call.arguments,
            preview: preview.as_ref(),
        };
        for o in &self.observers {
            // A preview observer that fails must not stop the call; the audit observer has no
            // `before` work, so nothing that must be recorded is lost here.
            let _ = o.before(&start);
        }
        trace.steps.push(Step::Hooks);
        self.pre_tool_hooks(turn, trace)?;
        let network_now = turn.mode != ExecutionMode::Safe
            && turn
                .network
                .unwrap_or(host.command_policy().config().network_enabled);
        // A call granted the network carries no known secret out: the model's is refused, the
        // person's own command asked about. Before `confirm`, which may start a server.
        if let Some(a) = plan.command.as_ref().filter(|a| a.network) {
            let found = host.secrets_in(&a.command);
            if !found.is_empty() && !turn.by_person {
                return Err(host.secret_out_refusal(&found));
            }
            if !found.is_empty() {
                trace.ask_also(format!(
                    "this command would carry the value of {} over the network (the model is \
                     refused that; you may run it)",
                    found.join(", ")
                ));
            }
        }
        let confirmation = match action.confirm(host, network_now) {
            Ok(c) => c,
            Err(result) => return Ok((result.into(), Decision::Allowed)),
        };
        trace.mcp_tool = confirmation.mcp_tool;
        let leaves_workspace = confirmation.leaves_workspace;
        if let Some(why) = confirmation.ask {
            trace.ask_also(why);
        }
        // Fail closed: a tool whose spec says it mutates needs the mode's write grant even when
        // its plan forgot to name what it writes.
        let assessment = plan
            .command
            .clone()
            .or_else(|| {
                (!writes.is_empty() || spec.mutates).then(|| write_assessment(&spec.name, &writes))
            })
            // A read the mode would let pass unasked is asked when a pre_tool hook said so.
            .or_else(|| {
                trace
                    .ask_reason
                    .is_some()
                    .then(|| read_assessment(&spec.name, trace.target.as_deref()))
            });
        // What may change the working tree is checkpointed: a write, any command not READ_ONLY.
        let may_change = !leaves_workspace
            && assessment
                .as_ref()
                .is_some_and(|a| a.class != CommandClass::ReadOnly);
        // In ASK the person hears, before saying yes, which files could not be taken back.
        if may_change
            && turn.mode == ExecutionMode::Ask
            && let Some(cp) = &self.checkpoints
        {
            let uncovered = cp.checkpoints().uncovered();
            if !uncovered.is_empty() {
                let listed: Vec<String> = uncovered
                    .iter()
                    .take(10)
                    .map(|(p, why)| format!("{p} ({why})"))
                    .collect();
                let more = uncovered.len().saturating_sub(listed.len());
                let line = format!(
                    "the checkpoint cannot take back {}{}: if this call changes them, /undo cannot restore them",
                    listed.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                );
                trace.ask_also(line);
            }
        }
        let (profile, decision) = match assessment {
            None => {
                trace.decided_by = Some(DecidedBy::Mode);
                (ExecutionProfile::read_only(), Decision::Allowed)
            }
            Some(a) => {
                trace.steps.push(Step::Classify);
                let (profile, decision) = self.authorize(turn, &a, trace, preview.as_ref())?;
                (
                    self.with_egress(profile, turn, &call.id, &spec.name, a.class),
                    decision,
                )
            }
        };
        trace.started = Instant::now();
        let ctx = RunContext {
            call_id: &call.id,
            paths: &paths,
            profile: &profile,
            cancel: &turn.cancel,
            tap: turn.output_tap.as_deref(),
            command_timeout: turn.command_timeout,
            network_now,
        };
        // Taken once the call is allowed, just before it runs: a person's edits while the
        // question was open are theirs, not the call's.
        let taken = match (&self.checkpoints, may_change) {
            (Some(cp), true) => {
                match cp.before(turn.id(), &call.id, &spec.name, trace.target.as_deref()) {
                    Ok(t) => Some((cp, t)),
                    Err(why) => {
                        trace.checkpoint = Some(SessionCheckpoints::failed(why));
                        None
                    }
                }
            }
            _ => None,
        };
        let outcome = action.run(host, &ctx);
        if let Some((cp, t)) = taken {
            trace.checkpoint = Some(cp.after(t));
        }
        trace.steps.push(Step::Run);
        Ok((outcome, decision))
    }

    /// The person's `pre_tool` hooks, before authorization: a deny ends the call here; an ask
    /// makes authorization ask the person even where the mode would not.
    fn pre_tool_hooks(&self, turn: &Turn, trace: &mut Trace<'_>) -> Result<(), Refusal> {
        let hooks = self.host.hooks();
        if hooks.pre_tool.is_empty() {
            return Ok(());
        }
        let root = self.host.project_root().display().to_string();
        let input = PreTool {
            event: "pre_tool",
            call_id: &trace.call.id,
            tool: &trace.tool.spec.name,
            arguments: &trace.call.arguments,
            mode: turn.mode.as_str(),
            workspace: &root,
        };
        let (answer, runs) = hooks.pre_tool(self.host.project_root(), &input);
        trace.hooks.extend(runs);
        match answer {
            PreAnswer::Proceed => Ok(()),
            PreAnswer::Ask(why) => {
                trace.ask_reason = Some(format!("your pre_tool hook asks: {why}"));
                Ok(())
            }
            PreAnswer::Deny(message) => {
                trace.decided_by = Some(DecidedBy::Hook);
                Err(Refusal::new(
                    Gate::Authorization,
                    "hook_deny",
                    ToolResult::denied(message),
                ))
            }
        }
    }

    /// A profile granted the network reaches names as the configuration says, and asks the
    /// turn's approver (through the rules and the mode) about the rest.
    fn with_egress(
        &self,
        profile: ExecutionProfile,
        turn: &Turn,
        call_id: &str,
        tool: &str,
        class: CommandClass,
    ) -> ExecutionProfile {
        if !profile.network {
            return profile;
        }
        let decider = crate::tools::egress::NameAsk::new(
            turn.mode,
            self.host.rules().clone(),
            turn.approver.clone(),
            call_id.to_string(),
            tool.to_string(),
            class,
        );
        let egress = self.host.config().egress.clone().asking(Arc::new(decider));
        profile.with_egress(egress)
    }

    fn authorize(
        &self,
        turn: &Turn,
        a: &CommandAssessment,
        trace: &mut Trace<'_>,
        preview: Option<&Preview>,
    ) -> Result<(ExecutionProfile, Decision), Refusal> {
        let asked = if trace.is_command {
            Asked::Command(a)
        } else {
            Asked::Files {
                tool: &trace.tool.spec.name,
                written: &a.writes,
                resolved: &trace.resolved_writes,
            }
        };
        let explained = self.host.rule_explain(turn.mode, asked);
        let verdict = explained.verdict.clone();
        let rules = Rules {
            book: self.host.rules(),
            verdict: &verdict,
            always: explained.always_choices(),
            always_ceiling: explained.always_ceiling(),
            ask_reason: trace.ask_reason.clone(),
        };
        let recording = CallAsk::new(
            turn.approver.as_ref(),
            &self.grants,
            rules,
            &trace.call.id,
            &trace.tool.spec.name,
            preview,
        );
        let mut result = self.host.authorize(turn.mode, turn.network, a, &recording);
        // A hook that asked is heard where the mode would not ask: the person is asked now.
        if let (Some(_), AuthorizationResult::Granted { asked: false, .. }) =
            (&trace.ask_reason, &result)
            && !matches!(verdict, Verdict::Deny(_) | Verdict::Unclear(_))
        {
            let request = ApprovalRequest {
                mode: turn.mode,
                command: a.command.clone(),
                class: a.class,
                asking_for: capabilities_for(a.class, a.network),
                reasons: a.reasons.clone(),
                writes: a.writes.clone(),
                network: a.network,
            };
            result = match recording.approve(&request) {
                ApprovalDecision::Deny(words) => AuthorizationResult::Denied {
                    reason: match words {
                        Some(w) if !w.trim().is_empty() => {
                            format!("the user declined: {}", w.trim())
                        }
                        _ => "the user declined".into(),
                    },
                },
                ApprovalDecision::Cancel(reason) => AuthorizationResult::Cancelled { reason },
                _ => match result {
                    AuthorizationResult::Granted {
                        capabilities,
                        profile,
                        ..
                    } => AuthorizationResult::Granted {
                        capabilities,
                        profile,
                        asked: true,
                    },
                    other => other,
                },
            };
        }
        let answer = recording.into_answer();
        // Nobody decided a cancelled question; otherwise whoever answered, or else the mode.
        (trace.decided_by, trace.grant, trace.rule) = match &answer {
            Some(Answer {
                decision: ApprovalDecision::Cancel(_),
                ..
            }) => (None, None, None),
            Some(a) => (Some(a.by), a.grant, a.rule.clone()),
            None => (Some(DecidedBy::Mode), None, None),
        };
        let by_rule = matches!(&answer, Some(a) if a.by == DecidedBy::Rule);
        let steps = &mut trace.steps;
        match result {
            // A deny rule also holds where the mode grants without asking: rules only tighten
            // there.
            AuthorizationResult::Granted { asked: false, .. }
                if matches!(verdict, Verdict::Deny(_) | Verdict::Unclear(_)) =>
            {
                let (Verdict::Deny(rule) | Verdict::Unclear(rule)) = &verdict else {
                    unreachable!("matched above")
                };
                let why = match &verdict {
                    Verdict::Unclear(_) => format!(
                        "refused: the words of {rule} stand in this line, which is too complex for the rule to read exactly (write the command plainly, without a wrapper or options between its words, if the rule does not apply)"
                    ),
                    _ => format!("refused by {rule}"),
                };
                steps.push(Step::Authorize);
                trace.decided_by = Some(DecidedBy::Rule);
                trace.rule = Some(rule.clone());
                Err(Refusal::new(
                    Gate::Authorization,
                    "rule_deny",
                    ToolResult::denied(why),
                ))
            }
            AuthorizationResult::Granted { profile, asked, .. } => {
                steps.push(Step::Authorize);
                if asked {
                    steps.push(Step::Approve);
                }
                let d = if asked {
                    Decision::Approved
                } else {
                    Decision::Allowed
                };
                Ok((profile, d))
            }
            AuthorizationResult::Denied { .. } if by_rule => {
                steps.push(Step::Authorize);
                let rule = trace.rule.as_ref().map(ToString::to_string);
                Err(Refusal::new(
                    Gate::Authorization,
                    "rule_deny",
                    ToolResult::denied(format!(
                        "refused by {}",
                        rule.unwrap_or_else(|| "a rule".into())
                    )),
                ))
            }
            AuthorizationResult::Denied { reason } => {
                let by_person = matches!(
                    answer,
                    Some(Answer {
                        decision: ApprovalDecision::Deny(_),
                        ..
                    })
                );
                if by_person {
                    steps.push(Step::Authorize);
                }
                if !by_person && a.class == CommandClass::Dangerous {
                    trace.decided_by = Some(DecidedBy::Class);
                }
                let (gate, rule) = if by_person {
                    (Gate::Approval, "declined".to_string())
                } else {
                    (
                        Gate::Authorization,
                        format!("class_{}", a.class.as_str().to_lowercase()),
                    )
                };
                Err(Refusal::new(gate, rule, ToolResult::denied(reason)))
            }
            AuthorizationResult::Cancelled { reason } => {
                steps.push(Step::Authorize);
                Err(Refusal::new(
                    Gate::Approval,
                    "cancelled",
                    ToolResult::cancelled(reason),
                ))
            }
        }
    }

    /// Normalise an action's outcome and tell the observers.
    fn finish(
        &self,
        turn: &mut Turn,
        trace: &mut Trace<'_>,
        outcome: ActionOutcome,
        decision: Decision,
    ) -> Result<ToolResultEnvelope, RouterError> {
        if outcome.sandbox_unavailable {
            let why = outcome
                .result
                .reason
                .as_deref()
                .unwrap_or("the sandbox is missing");
            turn.mark_sandbox_down(why);
        }
        let class = outcome.class.or(trace.class);
        let stored = match outcome.stored {
            Some(s) => Some(s),
            // Output the tool built in memory but too long to show: keep it whole, show a part.
            None if outcome.result.stdout.chars().count() > PREVIEW_CHARS => {
                self.host.results().store_text(&outcome.result.stdout).ok()
            }
            None => None,
        };
        let mut env = ToolResultEnvelope::build(
            &trace.call.id,
            &trace.tool.spec.name,
            outcome.result,
            stored.as_ref(),
        );
        env.class = class;
        env.sandbox_unavailable = outcome.sandbox_unavailable;
        env.decided_by = trace.decided_by;
        env.checkpoint = trace.checkpoint.take();
        trace.steps.extend([Step::Envelope, Step::Record]);
        self.notify(turn, trace, &env, decision, outcome.bytes_written)?;
        Ok(env)
    }

    /// Turn a gate's refusal into an envelope; count it, and stop the turn at the limit.
    fn refuse(
        &self,
        turn: &mut Turn,
        trace: &mut Trace<'_>,
        refusal: Refusal,
    ) -> Result<ToolResultEnvelope, RouterError> {
        let spec = &trace.tool.spec;
        let mut env = ToolResultEnvelope::build(&trace.call.id, &spec.name, *refusal.result, None);
        env.gate = Some(refusal.gate);
        env.refusal_rule = Some(refusal.rule.clone());
        env.class = trace.class;
        let decision = match (refusal.gate, env.status) {
            (Gate::Approval, ToolStatus::Cancelled) => Decision::Cancelled,
            (Gate::Approval | Gate::Authorization, _) => Decision::Denied,
            _ => Decision::Refused,
        };
        if !matches!(refusal.gate, Gate::Approval | Gate::Authorization) {
            trace.decided_by = Some(DecidedBy::Policy);
        }
        env.decided_by = trace.decided_by;
        trace.steps.extend([Step::Envelope, Step::Record]);
        let mut stopped = false;
        if refusal.gate.is_deterministic() {
            let target = trace
                .target
                .clone()
                .unwrap_or_else(|| trace.call.arguments.to_string());
            let key = RefusalKey {
                tool: spec.name.clone(),
                target: normalize_target(&target),
                rule: refusal.rule.clone(),
            };
            let n = turn.note_refusal(key);
            if n >= self.refusal_limit {
                let answer = format!(
                    "Stopped: `{}` on `{}` was refused {n} times in this turn for the same \
                     reason ({}): {} A refusal is deterministic, so asking again cannot change \
                     it; the turn ends here.",
                    spec.name,
                    target.trim(),
                    refusal.rule,
                    env.reason.as_deref().unwrap_or("")
                );
                turn.stop(answer.clone());
                env.reason = Some(answer);
                env.turn_stopped = true;
                stopped = true;
            }
        }
        self.notify(turn, trace, &env, decision, None)?;
        if stopped {
            self.notify(turn, trace, &env, Decision::RepeatedRefusalStopped, None)?;
        }
        Ok(env)
    }

    fn notify(
        &self,
        turn: &Turn,
        trace: &Trace<'_>,
        env: &ToolResultEnvelope,
        decision: Decision,
        bytes_written: Option<u64>,
    ) -> Result<(), RouterError> {
        // The person's post_tool hooks observe the result (once per call), before it is
        // recorded, so the record says they ran.
        let mut hooks = trace.hooks.clone();
        let post = &self.host.hooks().post_tool;
        if !post.is_empty() && decision != Decision::RepeatedRefusalStopped {
            let input = serde_json::json!({
                "event": "post_tool",
                "call_id": trace.call.id,
                "tool": trace.tool.spec.name,
                "decision": decision,
                "envelope": env,
            });
            hooks.extend(self.host.hooks().post_tool(
                self.host.project_root(),
                &trace.tool.spec.name,
                &input,
            ));
        }
        let end = CallEnd {
            tool: &trace.tool.spec.name,
            mode: turn.mode,
            mutates: trace.tool.spec.mutates,
            target: trace.target.as_deref(),
            is_command: trace.is_command,
            class: env.class,
            decision,
            duration: trace.started.elapsed(),
            bytes_written,
            envelope: env,
            steps: &trace.steps,
            decided_by: trace.decided_by,
            grant: trace.grant,
            rule: trace.rule.clone(),
            hooks: &hooks,
            mcp_tool: trace.mcp_tool.as_ref(),
        };
        for o in &self.observers {
            o.after(&end)?;
        }
        Ok(())
    }
}

/// A file tool's write, as the command policy sees it: WORKSPACE_MUTATING, so the same
/// authorization applies (SAFE refuses, ASK asks, AUTO allows).
/// A call that writes nothing, as authorization sees it when a hook asked about it.
fn read_assessment(tool: &str, target: Option<&str>) -> CommandAssessment {
    CommandAssessment {
        command: format!("{tool} {}", target.unwrap_or_default())
            .trim_end()
            .to_string(),
        class: CommandClass::ReadOnly,
        executables: Vec::new(),
        writes: Vec::new(),
        network: false,
        reasons: vec![format!("{tool} only reads")],
        literal_argv: None,
    }
}

fn write_assessment(tool: &str, writes: &[&str]) -> CommandAssessment {
    let mut reasons: Vec<String> = writes
        .iter()
        .map(|w| format!("{tool} changes `{w}`"))
        .collect();
    if reasons.is_empty() {
        reasons.push(format!(
            "{tool} may change the workspace (its spec says it mutates), though its call named \
             no target"
        ));
    }
    CommandAssessment {
        command: format!("{tool} {}", writes.join(" "))
            .trim_end()
            .to_string(),
        class: CommandClass::WorkspaceMutating,
        executables: Vec::new(),
        writes: writes.iter().map(|w| w.to_string()).collect(),
        network: false,
        reasons,
        literal_argv: None,
    }
}
