//! Who answers the egress proxy about a name neither `[network] allow` nor `deny` holds, for
//! one command: the person's `net:` rules first (deny over ask over allow), then the mode. AUTO
//! and SAFE never widen the list by themselves; ASK asks the turn's approver while the proxy
//! holds the connection ("the command `cargo build` wants `index.crates.io:443`"): allow once,
//! for the session (a session `net:` rule), always (a `net:` rule kept in the person's rules
//! file), or deny. This is the one question asked after a command started.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::harness::command_policy::{ApprovalDecision, CommandClass};
use crate::harness::egress::{EgressAnswer, EgressDecider, EgressQuestion, Host};
use crate::harness::primitives::{Capability, CapabilitySet, ExecutionMode};
use crate::harness::rules::{RuleAction, RuleBook};
use crate::tools::approval::{ApprovalId, CallApprovalRequest, CallApprover};

/// New names one command may ask about; past them an unlisted name is refused unasked, so a
/// command cannot bury the person in questions.
pub const MAX_QUESTIONS: usize = 5;

/// The decider for one command of one call. One answer per name and port for the whole
/// command: its later connections there (a build opens several) take the same answer, and
/// connections that arrive while the question is open wait for it.
pub struct NameAsk {
    pub mode: ExecutionMode,
    pub rules: RuleBook,
    pub approver: Arc<dyn CallApprover>,
    pub call_id: String,
    pub tool: String,
    pub class: CommandClass,
    asked: Arc<Mutex<HashMap<String, Arc<tokio::sync::OnceCell<EgressAnswer>>>>>,
    /// One question at a time: a front end shows one (and refuses a second while one is open).
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
}

impl NameAsk {
    pub fn new(
        mode: ExecutionMode,
        rules: RuleBook,
        approver: Arc<dyn CallApprover>,
        call_id: String,
        tool: String,
        class: CommandClass,
    ) -> NameAsk {
        NameAsk {
            mode,
            rules,
            approver,
            call_id,
            tool,
            class,
            asked: Arc::default(),
            one_at_a_time: Arc::default(),
        }
    }
}

impl EgressDecider for NameAsk {
    fn vetoes(&self, host: &Host, port: u16) -> Option<&'static str> {
        matches!(
            self.rules.name_verdict(self.mode, &host.to_string(), port),
            Some((RuleAction::Deny, _))
        )
        .then_some("refused by a net: rule of yours")
    }

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
        let cell = {
            let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
            match asked.get(&target) {
                Some(c) => c.clone(),
                None if asked.len() >= MAX_QUESTIONS => {
                    return Box::pin(async {
                        EgressAnswer::Deny(
                            "this command already asked about 5 new names; the rest are \
                             refused without asking",
                        )
                    });
                }
                None => asked.entry(target.clone()).or_default().clone(),
            }
        };
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
            // Nothing is written: the name is in the reason, and in the rule "always" keeps.
            targets: Vec::new(),
            network: true,
            preview: None,
            always: vec![format!("net:{target}")],
        };
        let approver = self.approver.clone();
        let rules = self.rules.clone();
        let turn = self.one_at_a_time.clone();
        Box::pin(async move {
            *cell
                .get_or_init(|| async move {
                    let _turn = turn.lock().await;
                    ask(approver, rules, request, name, port).await
                })
                .await
        })
    }
}

/// Ask the person about `name:port` through `approver`, and keep what the answer says to keep.
async fn ask(
    approver: Arc<dyn CallApprover>,
    rules: RuleBook,
    request: CallApprovalRequest,
    name: String,
    port: u16,
) -> EgressAnswer {
    // The approver blocks until the person answers; the proxy's other connections go on
    // meanwhile. Should the command end first (this future dropped), the question is taken
    // back.
    let guard = Withdraw {
        approver: approver.clone(),
        id: request.id,
        armed: true,
    };
    let asked = tokio::task::spawn_blocking(move || {
        let d = approver.approve(&request);
        (d, request)
    })
    .await;
    guard.disarm();
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
        ApprovalDecision::Cancel(_) => {
            EgressAnswer::Deny("no answer could be had (headless, or the question was dismissed)")
        }
    }
}

/// Takes a question back when dropped armed (its command ended before the answer came).
struct Withdraw {
    approver: Arc<dyn CallApprover>,
    id: crate::tools::approval::ApprovalId,
    armed: bool,
}

impl Withdraw {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if self.armed {
            self.approver.withdraw(
                self.id,
                "the command ended before its network question was answered",
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting {
        asked: AtomicUsize,
        answer: ApprovalDecision,
        open: AtomicUsize,
    }

    impl CallApprover for Counting {
        fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
            assert_eq!(request.always.len(), 1);
            assert!(request.reasons[0].contains("wants"));
            // A front end shows one question at a time.
            assert_eq!(
                self.open.fetch_add(1, Ordering::SeqCst),
                0,
                "two questions open"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
            self.open.fetch_sub(1, Ordering::SeqCst);
            self.asked.fetch_add(1, Ordering::SeqCst);
            self.answer.clone()
        }
    }

    fn asker(mode: ExecutionMode, answer: ApprovalDecision) -> (NameAsk, Arc<Counting>) {
        let approver = Arc::new(Counting {
            asked: AtomicUsize::new(0),
            answer,
            open: AtomicUsize::new(0),
        });
        let ask = NameAsk::new(
            mode,
            RuleBook::default(),
            approver.clone(),
            "call_1".into(),
            "terminal".into(),
            CommandClass::ShellComplex,
        );
        (ask, approver)
    }

    fn host(n: &str) -> Host {
        Host::parse(n).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_question_per_name_for_the_whole_command() {
        let (ask, approver) = asker(ExecutionMode::Ask, ApprovalDecision::Approve);
        let answers = futures_util::future::join_all(
            (0..4).map(|_| ask.decide("cargo build", &host("index.crates.io"), 443)),
        )
        .await;
        assert!(answers.iter().all(|a| *a == EgressAnswer::Allow));
        assert_eq!(approver.asked.load(Ordering::SeqCst), 1);
        // Another port is another question.
        ask.decide("cargo build", &host("index.crates.io"), 80)
            .await;
        assert_eq!(approver.asked.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn past_five_new_names_the_rest_are_refused_unasked() {
        let (ask, approver) = asker(ExecutionMode::Ask, ApprovalDecision::Deny(None));
        for i in 0..MAX_QUESTIONS {
            let a = ask.decide("x", &host(&format!("h{i}.example")), 443).await;
            assert_eq!(a, EgressAnswer::Deny("the person declined"));
        }
        let past = ask.decide("x", &host("one-more.example"), 443).await;
        assert!(matches!(past, EgressAnswer::Deny(w) if w.contains("already asked")));
        assert_eq!(approver.asked.load(Ordering::SeqCst), MAX_QUESTIONS);
        // A name already answered keeps its answer.
        let again = ask.decide("x", &host("h0.example"), 443).await;
        assert_eq!(again, EgressAnswer::Deny("the person declined"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn auto_and_safe_never_ask() {
        for mode in [ExecutionMode::Auto, ExecutionMode::Safe] {
            let (ask, approver) = asker(mode, ApprovalDecision::Approve);
            let a = ask.decide("x", &host("new.example"), 443).await;
            assert!(matches!(a, EgressAnswer::Deny(_)), "{mode:?}");
            assert_eq!(approver.asked.load(Ordering::SeqCst), 0);
        }
    }

    #[test]
    fn a_deny_rule_of_the_persons_vetoes_a_name_the_lists_allow() {
        use crate::harness::rules::{Origin, RawRule};
        let d = tempfile::tempdir().unwrap();
        let rule = RawRule {
            action: Some(RuleAction::Deny),
            subject: Some("net:github.com".into()),
            global: true,
            ..RawRule::default()
        }
        .to_rule(Origin::User, None)
        .unwrap();
        let book = RuleBook::new(d.path(), None, vec![rule], Vec::new(), false);
        let (mut ask, _) = asker(ExecutionMode::Auto, ApprovalDecision::Approve);
        ask.rules = book;
        assert!(ask.vetoes(&host("github.com"), 443).is_some());
        assert!(ask.vetoes(&host("gitlab.com"), 443).is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn questions_about_different_names_are_asked_one_after_the_other() {
        let (ask, approver) = asker(ExecutionMode::Ask, ApprovalDecision::Approve);
        let (a, b) = tokio::join!(
            ask.decide("x", &host("one.example"), 443),
            ask.decide("x", &host("two.example"), 443),
        );
        assert_eq!((a, b), (EgressAnswer::Allow, EgressAnswer::Allow));
        assert_eq!(approver.asked.load(Ordering::SeqCst), 2);
    }

    /// Blocks each question until it is withdrawn; remembers what was withdrawn.
    struct Waiting {
        wake: Mutex<Option<std::sync::mpsc::Sender<()>>>,
        withdrawn: Mutex<Vec<String>>,
    }

    impl CallApprover for Waiting {
        fn approve(&self, _request: &CallApprovalRequest) -> ApprovalDecision {
            let (tx, rx) = std::sync::mpsc::channel();
            *self.wake.lock().unwrap() = Some(tx);
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
            ApprovalDecision::Cancel("withdrawn".into())
        }

        fn withdraw(&self, _id: crate::tools::approval::ApprovalId, reason: &str) {
            self.withdrawn.lock().unwrap().push(reason.to_string());
            if let Some(tx) = self.wake.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_question_whose_command_ended_is_taken_back() {
        let approver = Arc::new(Waiting {
            wake: Mutex::new(None),
            withdrawn: Mutex::new(Vec::new()),
        });
        let ask = NameAsk::new(
            ExecutionMode::Ask,
            RuleBook::default(),
            approver.clone(),
            "call_1".into(),
            "terminal".into(),
            CommandClass::ShellComplex,
        );
        let waited = tokio::time::timeout(
            std::time::Duration::from_millis(200),
            ask.decide("x", &host("slow.example"), 443),
        )
        .await;
        assert!(waited.is_err(), "the question was answered");
        let withdrawn = approver.withdrawn.lock().unwrap().clone();
        assert_eq!(withdrawn.len(), 1, "{withdrawn:?}");
        assert!(withdrawn[0].contains("ended"));
    }
}
