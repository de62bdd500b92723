//! Issue 22, item 1: permission rules through the router. A table of rules × commands with the
//! decision each must get (the traps included: a list that adds a command, a substitution, a
//! redirection, an assignment, a wrapper, an alias, a variant that needs the network), project
//! allows that count only while trusted, the audit naming the rule, and a property: whatever the
//! rules, nothing runs that the class and mode would not let run.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use serde_json::json;
use spear::harness::audit::DecidedBy;
use spear::harness::command_policy::{ApprovalDecision, CommandClass, CommandPolicy, PolicyConfig};
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::harness::rules::{self, RuleBook, TrustStore};
use spear::tools::approval::{CallApprovalRequest, CallApprover};
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::host::HostConfig;
use spear::tools::results::StoreLimits;
use spear::tools::router::ToolRouter;
use spear::tools::router::turn::Turn;

use crate::support::{Fixture, Recorder, call};

/// Counts the questions and answers each with no.
#[derive(Default)]
struct Asks(Mutex<Vec<String>>);

impl CallApprover for Asks {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        self.0.lock().unwrap().push(request.command.clone());
        ApprovalDecision::Deny(None)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Ran, and nobody was asked.
    Ran,
    /// The person was asked (and said no).
    Asked,
    /// A rule refused it.
    DeniedByRule,
    /// The class, the mode or a gate refused it.
    Refused,
}

struct Ruled {
    fx: Fixture,
    router: ToolRouter,
    ran: Recorder,
}

const USER: &str = r#"
[[rule]]
action = "allow"
command = "cargo test *"
class = "WORKSPACE_MUTATING"
capabilities = ["workspace_read", "workspace_write"]
workspace = "{ws}"

[[rule]]
action = "allow"
command = "make check"
global = true

[[rule]]
action = "deny"
command = "git push *"
global = true

[[rule]]
action = "ask"
command = "cargo clean *"
global = true

[[rule]]
action = "allow"
command = "cargo clean"
workspace = "{ws}"

[[rule]]
action = "allow"
tool = "write_file"
path = "src/**"
workspace = "{ws}"

[[rule]]
action = "allow"
command = "cargo bench *"
workspace = "/somewhere/else"
"#;

fn book(fx: &Fixture, user: &str) -> RuleBook {
    let file = fx.base.join("rules.toml");
    std::fs::write(
        &file,
        user.replace("{ws}", &fx.project.display().to_string()),
    )
    .unwrap();
    rules::load(&fx.project, Some(&file), &fx.state).unwrap()
}

fn ruled(user: &str) -> Ruled {
    let fx = Fixture::new();
    let b = book(&fx, user);
    with_book(fx, b)
}

fn with_book(fx: Fixture, b: RuleBook) -> Ruled {
    let ran = Recorder::default();
    let host = fx.host_ruled(
        Box::new(ran.clone()),
        HostConfig::default(),
        StoreLimits::default(),
        b,
    );
    let router = fx.router_for(host);
    Ruled { fx, router, ran }
}

fn decide(
    r: &Ruled,
    mode: ExecutionMode,
    network: bool,
    tool: &str,
    args: serde_json::Value,
) -> (Outcome, ToolResultEnvelope) {
    let asks = Arc::new(Asks::default());
    let view = ToolExposurePolicy::view(r.router.registry(), &ExposureSettings::default());
    let mut t = Turn::new(mode, view, asks.clone());
    t.network = Some(network);
    let env = call(&r.router, &mut t, tool, args);
    let asked = !asks.0.lock().unwrap().is_empty();
    let outcome = if asked {
        Outcome::Asked
    } else if env.status == ToolStatus::Ok {
        Outcome::Ran
    } else if env.decided_by == Some(DecidedBy::Rule) {
        Outcome::DeniedByRule
    } else {
        Outcome::Refused
    };
    (outcome, env)
}

/// A command, with the session's network on (so rules, not the switch, decide `git push`).
fn command(r: &Ruled, mode: ExecutionMode, line: &str) -> Outcome {
    decide(r, mode, true, "terminal", json!({ "command": line })).0
}

#[test]
fn the_table_of_rules_and_commands() {
    use ExecutionMode::{Ask, Auto, Safe};
    use Outcome::*;
    let r = ruled(USER);
    for (mode, line, want) in [
        // The rule's own command and its further arguments.
        (Ask, "cargo test", Ran),
        (Ask, "cargo test -p spear --lib", Ran),
        (Ask, "cargo test 2>&1 | tail -n 20", Ran),
        (Ask, "cargo test && git status", Ran),
        (Ask, "make check", Ran),
        // The traps: every one is asked or refused, never run unasked.
        (Ask, "cargo test; rm -rf target", Asked),
        (Ask, "cargo test $(curl -s http://127.0.0.1:1/x)", Asked),
        (Ask, "cargo test `id`", Asked),
        (Ask, "cargo test > out.txt", Asked),
        (Ask, "cargo test > ~/.bashrc", Asked),
        (Ask, "FOO=1 cargo test", Asked),
        (Ask, "env cargo test", Asked),
        (Ask, "command cargo test", Asked),
        (Ask, "alias cargo='rm -rf src'; cargo test", Asked),
        (Ask, "cargo() { rm -rf src; }; cargo test", Asked),
        (Ask, "(cargo test)", Asked),
        (Ask, "cargo test &", Asked),
        (Ask, "/usr/bin/cargo test", Asked),
        (Ask, "make check -j8", Asked),
        (Ask, "cargo build", Asked),
        // A rule for another workspace does not count here.
        (Ask, "cargo bench", Asked),
        // deny wins, in every mode the class and mode let run.
        (Ask, "git push origin main", DeniedByRule),
        (Auto, "git push origin main", DeniedByRule),
        // A deny's words behind a wrapper or an option: asked where the mode asks, refused
        // where it would not.
        (Ask, "git -C . push", Asked),
        (Auto, "env git push", DeniedByRule),
        (Auto, "git -c x=y push origin", DeniedByRule),
        // ask wins over allow: `cargo clean` is allowed, but an ask rule covers it too.
        (Ask, "cargo clean", Asked),
        // Refusals by class and mode are final.
        (Ask, "cargo test; rm -rf /", Refused),
        (Auto, "cargo test; rm -rf /", Refused),
        (Safe, "cargo test", Refused),
        // Without rules in the way, the mode decides as before.
        (Ask, "git status", Ran),
        (Auto, "cargo build", Ran),
    ] {
        assert_eq!(command(&r, mode, line), want, "{mode} `{line}`");
    }
    // Nothing ran but what was allowed.
    let ran: Vec<String> = r
        .ran
        .ran
        .lock()
        .unwrap()
        .iter()
        .map(|x| x.0.clone())
        .collect();
    assert!(
        ran.iter()
            .all(|c| !c.contains("rm ") && !c.contains("push")),
        "{ran:?}"
    );
}

#[test]
fn a_variant_that_needs_the_network_is_wider_than_the_rule() {
    let r = ruled(USER);
    let (o, _) = decide(
        &r,
        ExecutionMode::Ask,
        true,
        "terminal",
        json!({"command": "cargo test && curl -s http://127.0.0.1:9/x"}),
    );
    assert_eq!(o, Outcome::Asked);
    // The same allow, saved from a command that needed the network, covers it.
    let wide = r#"
[[rule]]
action = "allow"
command = "cargo test *"
class = "WORKSPACE_MUTATING"
capabilities = ["workspace_read", "workspace_write", "network"]
global = true

[[rule]]
action = "allow"
command = "curl -s http://127.0.0.1:9/x"
class = "READ_ONLY"
capabilities = ["workspace_read", "network"]
global = true
"#;
    let r = ruled(wide);
    let (o, env) = decide(
        &r,
        ExecutionMode::Ask,
        true,
        "terminal",
        json!({"command": "cargo test && curl -s http://127.0.0.1:9/x"}),
    );
    assert_eq!(o, Outcome::Ran, "{env:?}");
    // And with the session's network off, the mode refuses whatever the rules say.
    let (o, _) = decide(
        &r,
        ExecutionMode::Ask,
        false,
        "terminal",
        json!({"command": "cargo test && curl -s http://127.0.0.1:9/x"}),
    );
    assert_eq!(o, Outcome::Refused);
}

#[test]
fn a_file_tool_rule_covers_its_paths_only() {
    let r = ruled(USER);
    r.fx.write("src/a.rs", "a\n");
    let w = |path: &str| {
        decide(
            &r,
            ExecutionMode::Ask,
            false,
            "write_file",
            json!({"path": path, "content": "x\n"}),
        )
        .0
    };
    assert_eq!(w("src/a.rs"), Outcome::Ran);
    assert_eq!(w("src/deep/b.rs"), Outcome::Ran);
    assert_eq!(w("README.md"), Outcome::Asked);
    assert_eq!(w("srcx/a.rs"), Outcome::Asked);
}

#[test]
fn the_audit_and_the_envelope_name_the_rule_that_decided() {
    let r = ruled(USER);
    let (_, env) = decide(
        &r,
        ExecutionMode::Ask,
        false,
        "terminal",
        json!({"command": "cargo test"}),
    );
    assert_eq!(env.decided_by, Some(DecidedBy::Rule));
    let (_, denied) = decide(
        &r,
        ExecutionMode::Auto,
        true,
        "terminal",
        json!({"command": "git push"}),
    );
    assert!(
        denied.model_text().contains("refused by user rule"),
        "{denied:?}"
    );
    let records = r.fx.audit();
    let allowed = &records[records.len() - 2];
    assert_eq!(allowed.decided_by, Some(DecidedBy::Rule));
    let rule = allowed.rule.as_ref().expect("the rule is named");
    assert_eq!(rule.origin, rules::Origin::User);
    assert!(
        rule.file
            .as_deref()
            .is_some_and(|f| f.ends_with("rules.toml"))
    );
    let line = serde_json::to_string(allowed).unwrap();
    assert!(line.contains("\"decided_by\":\"rule\""), "{line}");
    let last = records.last().unwrap();
    assert_eq!(last.decided_by, Some(DecidedBy::Rule));
    assert_eq!(last.refusal_rule.as_deref(), Some("rule_deny"));
    // A refusal by class says so.
    let (_, env) = decide(
        &r,
        ExecutionMode::Auto,
        true,
        "terminal",
        json!({"command": "cargo test; rm -rf /"}),
    );
    assert_eq!(env.decided_by, Some(DecidedBy::Class));
    assert_eq!(
        r.fx.audit().last().unwrap().decided_by,
        Some(DecidedBy::Class)
    );
    // A call the mode decided says so, and names no rule.
    let (_, env) = decide(
        &r,
        ExecutionMode::Ask,
        false,
        "terminal",
        json!({"command": "git status"}),
    );
    assert_eq!(env.decided_by, Some(DecidedBy::Mode));
    assert!(r.fx.audit().last().unwrap().rule.is_none());
}

const PROJECT: &str = r#"
[[rule]]
action = "allow"
command = "cargo test *"

[[rule]]
action = "deny"
command = "cargo fmt *"
"#;

fn project_book(fx: &Fixture) -> RuleBook {
    rules::load(&fx.project, None, &fx.state).unwrap()
}

#[test]
fn a_project_allow_counts_only_while_its_file_is_trusted_as_it_is() {
    let fx = Fixture::new();
    let file = fx.write(".spear/rules.toml", PROJECT);
    // Untrusted: the deny counts, the allow is ignored (and said to be).
    let b = project_book(&fx);
    assert_eq!(b.ignored().len(), 1);
    let r = with_book(fx, b);
    assert_eq!(
        command(&r, ExecutionMode::Ask, "cargo test"),
        Outcome::Asked
    );
    assert_eq!(
        command(&r, ExecutionMode::Ask, "cargo fmt"),
        Outcome::DeniedByRule
    );
    let fx = r.fx;
    // Trusted as it is: the allow counts.
    let store = TrustStore::open_in(&fx.state);
    store
        .trust(&fx.project, &file, &std::fs::read(&file).unwrap())
        .unwrap();
    let b = project_book(&fx);
    assert!(b.ignored().is_empty());
    let r = with_book(fx, b);
    assert_eq!(command(&r, ExecutionMode::Ask, "cargo test"), Outcome::Ran);
    let fx = r.fx;
    // Edited (one byte): untrusted again.
    std::fs::write(&file, format!("{PROJECT}\n")).unwrap();
    assert_eq!(project_book(&fx).ignored().len(), 1);
    // Trusting the edit and then moving the project: untrusted at the new place, and the same
    // bytes in another repository are not trusted either.
    store
        .trust(&fx.project, &file, &std::fs::read(&file).unwrap())
        .unwrap();
    assert!(project_book(&fx).ignored().is_empty());
    let moved = fx.base.join("moved");
    std::fs::rename(&fx.project, &moved).unwrap();
    let b = rules::load(&moved, None, &fx.state).unwrap();
    assert_eq!(b.ignored().len(), 1, "a moved file is untrusted");
    let other = fx.base.join("other-repo");
    std::fs::create_dir_all(other.join(".spear")).unwrap();
    std::fs::copy(
        moved.join(".spear/rules.toml"),
        other.join(".spear/rules.toml"),
    )
    .unwrap();
    let b = rules::load(&other, None, &fx.state).unwrap();
    assert_eq!(
        b.ignored().len(),
        1,
        "the same bytes elsewhere are untrusted"
    );
}

#[test]
fn a_broken_rules_file_says_which_rule_and_what_to_write() {
    let fx = Fixture::new();
    let file = fx.base.join("rules.toml");
    std::fs::write(
        &file,
        "[[rule]]\naction = \"allow\"\ncommand = \"cargo test $(id)\"\nglobal = true\n",
    )
    .unwrap();
    let e = rules::load(&fx.project, Some(&file), &fx.state)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rule 1") && e.contains("not a command a rule can name"),
        "{e}"
    );
    fx.write(
        ".spear/rules.toml",
        "[[rule]]\naction = \"allow\"\ncommand = \"ls\"\nworkspace = \"/\"\n",
    );
    let e = rules::load(&fx.project, None, &fx.state)
        .unwrap_err()
        .to_string();
    assert!(e.contains("your own rules file"), "{e}");
}

// The property: for any command and any rule set, the decision never exceeds what the class
// and mode permit. DANGEROUS never runs; SAFE runs only READ_ONLY; what runs unasked in ASK is
// READ_ONLY or was allowed by a rule whose ceiling covers it.

const PIECES: &[&str] = &[
    "cargo test",
    "cargo test -p x",
    "cargo build",
    "git push",
    "git status",
    "rm -rf x",
    "rm -rf /",
    "curl -s http://127.0.0.1:9/",
    "ls",
    "cat a.txt",
    "make check",
    "echo hi > out.txt",
    "FOO=1 cargo test",
    "env cargo test",
    "sh -c 'cargo test'",
    "(cargo test)",
    "cargo test $(id)",
    "sudo cargo test",
    "tee out.txt",
    "cargo test > out.txt",
];
const JOINS: &[&str] = &["; ", " && ", " || ", " | ", "\n"];
const RULES: &[&str] = &[
    "cargo test *",
    "cargo build",
    "git push *",
    "rm *",
    "rm -rf x",
    "rm -rf /",
    "make check",
    "echo hi > out.txt",
    "sh *",
    "sudo *",
    "curl *",
    "ls",
    "cat *",
    "tee *",
    "env *",
];

fn rule_text(action: usize, command: usize, ceiling: usize) -> String {
    let action = ["allow", "ask", "deny"][action % 3];
    let ceilings = [
        "",
        "class = \"WORKSPACE_MUTATING\"\ncapabilities = [\"workspace_read\", \"workspace_write\"]\n",
        "class = \"SHELL_COMPLEX\"\ncapabilities = [\"workspace_read\", \"workspace_write\", \"shell_complex\", \"network\"]\n",
    ];
    format!(
        "[[rule]]\naction = \"{action}\"\ncommand = \"{}\"\n{}global = true\n",
        RULES[command % RULES.len()],
        if action == "allow" {
            ceilings[ceiling % 3]
        } else {
            ""
        }
    )
}

/// The widest class any allow of `book` covers: its saved ceiling, else its own command's.
fn widest_allow(book: &RuleBook, policy: &CommandPolicy) -> Option<CommandClass> {
    book.rules()
        .iter()
        .filter(|r| r.action == rules::RuleAction::Allow)
        .map(|r| match (&r.ceiling, &r.subject) {
            (Some(c), _) => c.class,
            (None, rules::Subject::Command(p)) => policy.classify(&p.base_command()).class,
            (None, _) => CommandClass::WorkspaceMutating,
        })
        .max()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]
    #[test]
    fn no_rule_set_lets_run_what_the_class_and_mode_forbid(
        parts in proptest::collection::vec((0..PIECES.len(), 0..JOINS.len()), 1..4),
        rules in proptest::collection::vec((0..3usize, 0..RULES.len(), 0..3usize), 0..6),
        mode in 0..3usize,
        network in any::<bool>(),
    ) {
        let mut line = String::new();
        for (i, (p, j)) in parts.iter().enumerate() {
            if i > 0 {
                line.push_str(JOINS[*j]);
            }
            line.push_str(PIECES[*p]);
        }
        let text: String = rules.iter().map(|(a, c, k)| rule_text(*a, *c, *k)).collect();
        let fx = Fixture::new();
        let file: PathBuf = fx.base.join("rules.toml");
        std::fs::write(&file, &text).unwrap();
        let b = rules::load(&fx.project, Some(&file), &fx.state).unwrap();
        let policy = CommandPolicy::new(PolicyConfig {
            workspace_root: Some(fx.project.clone()),
            ..PolicyConfig::default()
        });
        let widest = widest_allow(&b, &policy);
        let class = policy.classify(&line).class;
        let r = with_book(fx, b);
        let mode = [ExecutionMode::Safe, ExecutionMode::Ask, ExecutionMode::Auto][mode];
        let (o, env) = decide(&r, mode, network, "terminal", json!({ "command": line }));
        if o == Outcome::Ran {
            prop_assert!(class != CommandClass::Dangerous, "{line:?} ran: {env:?}");
            if mode == ExecutionMode::Safe {
                prop_assert_eq!(class, CommandClass::ReadOnly, "{:?} ran in SAFE", line);
            }
            if mode == ExecutionMode::Ask && class > CommandClass::ReadOnly {
                prop_assert_eq!(env.decided_by, Some(DecidedBy::Rule), "{:?}", line);
                prop_assert!(widest.is_some_and(|w| class <= w), "{:?} is wider than every allow", line);
            }
        }
    }
}

/// `spear rules …` in the fixture's project, with its own config and state directories.
fn spear_rules(fx: &Fixture, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("spear"))
        .current_dir(&fx.project)
        .env("XDG_STATE_HOME", &fx.state)
        .env("XDG_CONFIG_HOME", fx.base.join("config"))
        .env("HOME", &fx.base)
        .args(["--workspace", fx.project.to_str().unwrap(), "rules"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn spear_rules_adds_lists_explains_trusts_and_removes() {
    let fx = Fixture::new();
    let (code, out, err) = spear_rules(&fx, &["add", "allow", "cargo test -p spear *"]);
    assert_eq!(code, 0, "{out}{err}");
    let id = out
        .split_whitespace()
        .nth(2)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    let file = std::fs::read_to_string(fx.base.join("config/spear/rules.toml")).unwrap();
    // Saved for this workspace, with the class and capabilities of the command it was for.
    assert!(
        file.contains(&format!("workspace = \"{}\"", fx.project.display())),
        "{file}"
    );
    assert!(file.contains("class = \"WORKSPACE_MUTATING\""), "{file}");
    let (_, out, _) = spear_rules(&fx, &["list"]);
    assert!(out.contains(&id) && out.contains("this workspace"), "{out}");
    // explain: each segment and what decided it.
    let (code, out, _) = spear_rules(&fx, &["explain", "cargo test -p spear --lib; rm -rf x"]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("allow by user rule {id}")), "{out}");
    assert!(out.contains("no rule; the mode would ask"), "{out}");
    assert!(out.contains("verdict: no rule decides"), "{out}");
    // Refused: DANGEROUS, a line of two commands, a rule that names nothing.
    for bad in [
        vec!["add", "allow", "rm -rf /"],
        vec!["add", "allow", "cargo test; rm x"],
        vec!["add", "allow"],
        vec!["add", "permit", "ls"],
    ] {
        let (code, out, err) = spear_rules(&fx, &bad);
        assert_ne!(code, 0, "{bad:?}: {out}");
        assert!(!err.trim().is_empty(), "{bad:?} says why");
    }
    // A project rules file: its allow is listed as ignored until trusted.
    fx.write(".spear/rules.toml", PROJECT);
    let (_, out, _) = spear_rules(&fx, &["list"]);
    assert!(
        out.contains("Ignored") && out.contains("allow cargo test *"),
        "{out}"
    );
    let (code, out, _) = spear_rules(&fx, &["trust"]);
    assert_eq!(code, 0, "{out}");
    let (_, out, _) = spear_rules(&fx, &["list"]);
    assert!(!out.contains("Ignored"), "{out}");
    let (_, out, _) = spear_rules(&fx, &["untrust"]);
    assert!(out.contains("no longer trusted"), "{out}");
    // Remove by id; an unknown id is an error.
    let (code, _, _) = spear_rules(&fx, &["remove", &id]);
    assert_eq!(code, 0);
    let (code, _, err) = spear_rules(&fx, &["remove", &id]);
    assert_ne!(code, 0);
    assert!(err.contains("no rule"), "{err}");
}

#[test]
fn spear_classify_explain_shows_segments_and_rules() {
    let fx = Fixture::new();
    spear_rules(&fx, &["add", "allow", "cargo test *"]);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("spear"))
        .current_dir(&fx.project)
        .env("XDG_STATE_HOME", &fx.state)
        .env("XDG_CONFIG_HOME", fx.base.join("config"))
        .env("HOME", &fx.base)
        .args(["classify", "--explain", "cargo test | tail -n 3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("READ_ONLY") && text.contains("tail -n 3"),
        "{text}"
    );
    assert!(text.contains("verdict: allowed by user rule"), "{text}");
}

#[test]
fn the_start_says_which_project_allows_were_ignored() {
    use spear::agent::builder::{Place, SessionBuilder};
    let fx = Fixture::new();
    let place = |fx: &Fixture| {
        Place::of(
            spear::harness::workspace::Workspace::new(&fx.project).unwrap(),
            fx.project.clone(),
            fx.state.clone(),
        )
    };
    let build = SessionBuilder::new(place(&fx), Default::default(), "t");
    assert!(
        build.rule_notes().is_empty(),
        "no project file, nothing to say"
    );
    let file = fx.write(".spear/rules.toml", PROJECT);
    let build = SessionBuilder::new(place(&fx), Default::default(), "t");
    let notes = build.rule_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("`allow cargo test *`") && notes[0].contains("spear rules trust"));
    assert!(
        !notes[0].contains("cargo fmt"),
        "a deny is not ignored: {notes:?}"
    );
    TrustStore::open_in(&fx.state)
        .trust(&fx.project, &file, &std::fs::read(&file).unwrap())
        .unwrap();
    let build = SessionBuilder::new(place(&fx), Default::default(), "t");
    assert!(build.rule_notes().is_empty());
}

/// Answers "always" with the offered rule at `pick` (or a rule of its own), keeping what it
/// was offered.
struct Always {
    pick: Option<usize>,
    forged: Option<&'static str>,
    scope: spear::harness::command_policy::SaveScope,
    offered: Mutex<Vec<Vec<String>>>,
}

impl CallApprover for Always {
    fn approve(&self, request: &CallApprovalRequest) -> ApprovalDecision {
        self.offered.lock().unwrap().push(request.always.clone());
        let rule = match (self.pick, self.forged) {
            (_, Some(f)) => f.to_string(),
            (Some(i), None) => request.always[i].clone(),
            (None, None) => return ApprovalDecision::Approve,
        };
        ApprovalDecision::Always {
            rule,
            scope: self.scope,
        }
    }
}

fn always(
    pick: Option<usize>,
    forged: Option<&'static str>,
    scope: spear::harness::command_policy::SaveScope,
) -> Arc<Always> {
    Arc::new(Always {
        pick,
        forged,
        scope,
        offered: Mutex::new(Vec::new()),
    })
}

/// A router whose person has a rules file (still empty) for "always" to keep rules in.
fn with_own_rules_file() -> (Ruled, PathBuf) {
    let fx = Fixture::new();
    let user = fx.base.join("rules.toml");
    let b = rules::load(&fx.project, Some(&user), &fx.state).unwrap();
    (with_book(fx, b), user)
}

fn answering(r: &Ruled, approver: Arc<Always>, line: &str) -> ToolResultEnvelope {
    let view = ToolExposurePolicy::view(r.router.registry(), &ExposureSettings::default());
    let mut t = Turn::new(ExecutionMode::Ask, view, approver);
    call(&r.router, &mut t, "terminal", json!({ "command": line }))
}

#[test]
fn always_keeps_the_narrowest_rule_offered_where_the_person_said() {
    use spear::harness::command_policy::SaveScope;
    let (r, user) = with_own_rules_file();
    // Offered: exactly this, then one word fewer at a time; the other parts of the line are
    // the mode's (READ_ONLY), so the rule is for the one part that needs it.
    let a = always(Some(1), None, SaveScope::Workspace);
    let env = answering(&r, a.clone(), "cargo test -p spear --lib 2>&1 | tail -n 5");
    assert_eq!(env.status, ToolStatus::Ok);
    assert_eq!(
        a.offered.lock().unwrap()[0],
        vec![
            "cargo test -p spear --lib",
            "cargo test -p spear *",
            "cargo test -p *",
            "cargo test *"
        ]
    );
    // Saved to the person's file, for this workspace, with the command's class as ceiling.
    let text = std::fs::read_to_string(&user).unwrap();
    assert!(
        text.contains("command = \"cargo test -p spear *\""),
        "{text}"
    );
    assert!(text.contains("class = \"WORKSPACE_MUTATING\""), "{text}");
    assert!(
        text.contains(&format!("workspace = \"{}\"", r.fx.project.display())),
        "{text}"
    );
    // From the next call on, a covered command is not asked; a wider one is.
    assert_eq!(
        command(&r, ExecutionMode::Ask, "cargo test -p spear --doc"),
        Outcome::Ran
    );
    assert_eq!(
        command(&r, ExecutionMode::Ask, "cargo test -p other"),
        Outcome::Asked
    );
    // A session rule: `s` in the dialog.
    let s = always(Some(0), None, SaveScope::Session);
    answering(&r, s, "cargo build --release");
    assert_eq!(
        command(&r, ExecutionMode::Ask, "cargo build --release"),
        Outcome::Ran
    );
    assert_eq!(
        command(&r, ExecutionMode::Ask, "cargo build"),
        Outcome::Asked
    );
    assert!(
        !std::fs::read_to_string(&user)
            .unwrap()
            .contains("cargo build")
    );
    // An answer naming a rule the question did not offer keeps nothing and runs nothing.
    let f = always(None, Some("rm *"), SaveScope::Global);
    let env = answering(&r, f, "rm -rf target");
    assert_eq!(env.status, ToolStatus::Cancelled, "{env:?}");
    assert!(!std::fs::read_to_string(&user).unwrap().contains("\"rm"));
    assert_eq!(
        command(&r, ExecutionMode::Ask, "rm -rf target"),
        Outcome::Asked
    );
    // A line no single rule can name offers none.
    let n = always(None, None, SaveScope::Session);
    answering(&r, n.clone(), "cargo fmt; cargo clippy");
    assert!(n.offered.lock().unwrap()[0].is_empty());
}

// Review findings (issue 22): each was a way around a rule.

#[test]
fn a_file_rule_is_judged_on_the_path_the_write_reaches() {
    let deny_env = r#"
[[rule]]
action = "deny"
tool = "write_file"
path = ".env"
global = true
"#;
    let r = ruled(&format!("{USER}{deny_env}"));
    r.fx.write("src/a.rs", "a\n");
    let w = |mode, path: &str| {
        decide(
            &r,
            mode,
            false,
            "write_file",
            json!({"path": path, "content": "x\n"}),
        )
        .0
    };
    // `allow write_file src/**` does not reach out of src/ through `..`.
    assert_eq!(w(ExecutionMode::Ask, "src/../Makefile"), Outcome::Asked);
    assert_eq!(w(ExecutionMode::Ask, "src/./a.rs"), Outcome::Ran);
    // A deny holds however the path is spelled.
    let abs = r.fx.project.join(".env").display().to_string();
    for spelled in [".env", "src/../.env", ".//.env", abs.as_str()] {
        assert_eq!(
            w(ExecutionMode::Auto, spelled),
            Outcome::DeniedByRule,
            "{spelled}"
        );
    }
    assert!(!r.fx.project.join(".env").exists());
}

#[test]
fn a_deny_holds_through_escapes_aliases_and_unknown_names() {
    let r = ruled(USER);
    for line in [
        "g\\it push origin",
        "git pu\\sh origin",
        "git -c alias.p=push p origin",
        "$GIT push origin",
        "/usr/bin/git push origin",
    ] {
        assert_eq!(
            command(&r, ExecutionMode::Auto, line),
            Outcome::DeniedByRule,
            "{line}"
        );
    }
}

#[test]
fn no_allow_speaks_for_a_command_that_runs_what_a_pipe_feeds_it() {
    let allow_sh = r#"
[[rule]]
action = "allow"
command = "sh"
class = "SHELL_COMPLEX"
capabilities = ["workspace_read", "workspace_write", "shell_complex"]
global = true
"#;
    let r = ruled(allow_sh);
    assert_eq!(
        command(&r, ExecutionMode::Ask, "cat a.txt | sh"),
        Outcome::Asked
    );
    assert_eq!(
        command(&r, ExecutionMode::Ask, "base64 -d blob | sh"),
        Outcome::Asked
    );
    // Offered nothing to keep for it either.
    let a = always(
        None,
        None,
        spear::harness::command_policy::SaveScope::Session,
    );
    answering(&r, a.clone(), "echo ok | sh");
    assert!(a.offered.lock().unwrap()[0].is_empty());
}

#[test]
fn a_kept_rule_records_its_own_parts_class_not_the_whole_lines() {
    use spear::harness::command_policy::SaveScope;
    let (r, user) = with_own_rules_file();
    let a = always(Some(0), None, SaveScope::Workspace);
    // The line is SHELL_COMPLEX (a `cd` out of the workspace); the part that needs the rule is
    // WORKSPACE_MUTATING on its own.
    answering(&r, a.clone(), "cd .. && touch made.txt");
    assert_eq!(a.offered.lock().unwrap()[0], vec!["touch made.txt"]);
    let text = std::fs::read_to_string(&user).unwrap();
    assert!(text.contains("class = \"WORKSPACE_MUTATING\""), "{text}");
    // So the same line is asked again: its whole is wider than the rule.
    assert_eq!(
        command(&r, ExecutionMode::Ask, "cd .. && touch made.txt"),
        Outcome::Asked
    );
    assert_eq!(
        command(&r, ExecutionMode::Ask, "touch made.txt"),
        Outcome::Ran
    );
}

#[test]
fn a_project_rules_file_that_is_a_link_or_not_a_file_is_refused_not_followed() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.project.join(".spear")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", fx.project.join(".spear/rules.toml")).unwrap();
    let e = rules::load(&fx.project, None, &fx.state)
        .unwrap_err()
        .to_string();
    assert!(e.contains("link"), "{e}");
    std::fs::remove_file(fx.project.join(".spear/rules.toml")).unwrap();
    let elsewhere = fx.base.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("rules.toml"), PROJECT).unwrap();
    std::fs::remove_dir(fx.project.join(".spear")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, fx.project.join(".spear")).unwrap();
    let e = rules::load(&fx.project, None, &fx.state)
        .unwrap_err()
        .to_string();
    assert!(e.contains("real `.spear` directory"), "{e}");
    // The person's own file may be a link (dotfile managers make them).
    let fx = Fixture::new();
    let real = fx.base.join("real-rules.toml");
    std::fs::write(
        &real,
        "[[rule]]\naction = \"deny\"\ncommand = \"git push *\"\nglobal = true\n",
    )
    .unwrap();
    let link = fx.base.join("rules.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(
        rules::load(&fx.project, Some(&link), &fx.state)
            .unwrap()
            .rules()
            .len(),
        1
    );
}
