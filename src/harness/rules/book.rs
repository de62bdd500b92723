//! The rules in force for one session, and how they decide a call: each segment of a parsed
//! command on its own, deny over ask over allow, an allow only within the ceiling it was saved
//! under.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::files::{self, RawRule};
use super::rule::{Ceiling, CommandPattern, Origin, Rule, RuleAction, RuleRef, Subject};
use crate::harness::command_policy::SaveScope;
use crate::harness::command_policy::{CommandAssessment, CommandClass, required_capabilities};
use crate::harness::primitives::{
    Capability, CapabilityPolicy, CapabilitySet, ExecutionMode, Grant,
};
use crate::harness::shell::segments::segments;

/// What a rule is asked about.
#[derive(Debug, Clone, Copy)]
pub enum Asked<'a> {
    /// A shell command, as the classifier assessed it.
    Command(&'a CommandAssessment),
    /// A file tool's call and the paths it writes: as the model wrote them, and
    /// workspace-relative as the gates resolved them (links, `.` and `..` followed). An allow
    /// is judged on the resolved paths only; a deny or ask on either.
    Files {
        tool: &'a str,
        written: &'a [String],
        resolved: &'a [String],
    },
}

/// What the rules say about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No rule speaks for the whole call: the mode decides, asking as it would.
    Silent,
    /// Every part is allowed, by these rules (and the mode for parts it grants alone).
    Allow(Vec<RuleRef>),
    /// A rule says to ask the person.
    Ask(RuleRef),
    /// A deny's words stand in a line it cannot read exactly (behind a wrapper, an option
    /// between them, in a subshell): asked where the mode asks, refused where it would not.
    Unclear(RuleRef),
    /// A rule refuses the call.
    Deny(RuleRef),
}

/// How one part of a call was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartDecision {
    /// A rule matched it and decided.
    Rule {
        action: RuleAction,
        rule: RuleRef,
        text: String,
    },
    /// An allow matched it, but the call is wider than the command the rule was saved from.
    Wider {
        rule: RuleRef,
        text: String,
        why: String,
    },
    /// No rule matched; the mode grants this part on its own without asking.
    Mode,
    /// No rule matched, and the mode would ask for it.
    NoRule,
}

/// One part of a call (a segment, or a file tool's call) and how it was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub text: String,
    pub class: CommandClass,
    pub decision: PartDecision,
    /// What the part may be when allowed: its rule's ceiling, or its own class where the mode
    /// grants it alone.
    pub allowance: Option<Ceiling>,
    /// The narrowest rule that would name this part: its words exactly, and the files its
    /// redirections open. None where no allow may name it (a command that runs what a pipe
    /// feeds it).
    pub exact: Option<CommandPattern>,
    /// The part's own class and capabilities: the ceiling a rule kept for it records.
    pub own: Ceiling,
}

/// Everything `spear rules explain` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub parts: Vec<Part>,
    /// Why the command has no parts a rule can speak for, when it has none.
    pub unsplit: Option<String>,
    /// A deny or ask rule whose words appear in a line too complex to match exactly.
    pub maybe: Option<RuleRef>,
    /// Why a line whose every part is allowed is still not: the whole is wider.
    pub whole: Option<String>,
    pub verdict: Verdict,
}

#[derive(Debug, Default)]
struct Inner {
    /// The workspace root, and the person's rules file an "always" is saved to.
    root: PathBuf,
    user_file: Option<PathBuf>,
    /// The person's rules for this workspace and the global ones, then the project's counted
    /// ones, in file order.
    rules: Vec<Rule>,
    /// The project's allows that do not count (the file is not trusted as it is).
    ignored: Vec<Rule>,
    /// Rules granted in this session's dialog, and those it saved to the person's file.
    session: Mutex<Vec<Rule>>,
}

/// The rules in force. Cheap to clone; session rules are shared by every clone.
#[derive(Debug, Clone, Default)]
pub struct RuleBook {
    inner: Arc<Inner>,
}

impl RuleBook {
    /// A book of the person's rules (`user`, those for `root` or global), the project's
    /// (`project`; its allows count only when `project_trusted`).
    pub fn new(
        root: &Path,
        user_file: Option<&Path>,
        user: Vec<Rule>,
        project: Vec<Rule>,
        project_trusted: bool,
    ) -> Self {
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let root = canon(root);
        let mut rules: Vec<Rule> = user
            .into_iter()
            .filter(|r| r.workspace.as_deref().is_none_or(|w| canon(w) == root))
            .collect();
        let mut ignored = Vec::new();
        for r in project {
            if r.action == RuleAction::Allow && !project_trusted {
                ignored.push(r);
            } else {
                rules.push(r);
            }
        }
        RuleBook {
            inner: Arc::new(Inner {
                root,
                user_file: user_file.map(Path::to_path_buf),
                rules,
                ignored,
                session: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The rules that count, session rules last.
    pub fn rules(&self) -> Vec<Rule> {
        let mut all = self.inner.rules.clone();
        all.extend(self.session().iter().cloned());
        all
    }

    /// The project's allows that were left out because the file is not trusted as it is.
    pub fn ignored(&self) -> &[Rule] {
        &self.inner.ignored
    }

    fn session(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        self.inner.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Add a rule for the rest of the session (the dialog's "for this session").
    pub fn add_session(&self, mut rule: Rule) -> RuleRef {
        rule.origin = Origin::Session;
        rule.file = None;
        let mut s = self.session();
        if let Some(same) = s
            .iter()
            .find(|r| r.origin == Origin::Session && r.describe() == rule.describe())
        {
            return same.reference();
        }
        let n = s.iter().filter(|r| r.origin == Origin::Session).count();
        rule.id = format!("s{}", n + 1);
        let r = rule.reference();
        s.push(rule);
        r
    }

    /// Forget the session's rules (a new or reopened session starts with none); what was saved
    /// to the person's file stays there.
    pub fn clear_session(&self) {
        self.session().retain(|r| r.origin != Origin::Session);
    }

    /// Keep the allow a person chose in the dialog: `pattern` (a command as a rules file spells
    /// it) with `ceiling`, for the session or saved to the person's rules file for this
    /// workspace or every one. It counts from the next call on.
    pub fn keep(
        &self,
        pattern: &str,
        ceiling: Ceiling,
        scope: SaveScope,
    ) -> Result<RuleRef, String> {
        self.keep_raw(
            RawRule {
                action: Some(RuleAction::Allow),
                command: Some(pattern.to_string()),
                class: Some(ceiling.class),
                capabilities: Some(ceiling.capabilities),
                ..RawRule::default()
            },
            scope,
        )
    }

    /// Keep an allow of the name `net:HOST:PORT` the egress proxy asked about, as `keep` keeps
    /// a command's.
    pub fn keep_name(&self, host: &str, port: u16, scope: SaveScope) -> Result<RuleRef, String> {
        self.keep_raw(
            RawRule {
                action: Some(RuleAction::Allow),
                subject: Some(format!("net:{host}:{port}")),
                ..RawRule::default()
            },
            scope,
        )
    }

    /// What the `net:` rules say about `host:port` in `mode`: the strongest action among the
    /// rules naming it (deny over ask over allow), and the rule. A rule without a port names
    /// every port; `net:*.example.com` names the names below example.com.
    pub fn name_verdict(
        &self,
        mode: ExecutionMode,
        host: &str,
        port: u16,
    ) -> Option<(RuleAction, RuleRef)> {
        self.rules()
            .into_iter()
            .filter(|r| r.applies_in(mode))
            .filter(|r| match &r.subject {
                Subject::Net { host: h, port: p } => {
                    p.is_none_or(|p| p == port)
                        && match h.strip_prefix("*.") {
                            Some(suffix) => crate::harness::egress::is_below(host, suffix),
                            None => h == host,
                        }
                }
                _ => false,
            })
            .max_by_key(|r| r.action)
            .map(|r| (r.action, r.reference()))
    }

    fn keep_raw(&self, raw: RawRule, scope: SaveScope) -> Result<RuleRef, String> {
        let raw = RawRule {
            workspace: (scope == SaveScope::Workspace).then(|| self.inner.root.clone()),
            global: scope == SaveScope::Global,
            ..raw
        };
        if scope == SaveScope::Session {
            let rule = RawRule {
                workspace: None,
                global: true,
                ..raw
            }
            .to_rule(Origin::User, None)?;
            return Ok(self.add_session(rule));
        }
        let file = self
            .inner
            .user_file
            .as_deref()
            .ok_or("there is no rules file of yours to save to")?;
        let rule = raw.to_rule(Origin::User, Some(file))?;
        let (mut all, _) = files::read_raw(file).map_err(|e| e.to_string())?;
        if !all.iter().any(|r| r.id() == raw.id()) {
            all.push(raw);
            files::write_raw(file, &all).map_err(|e| e.to_string())?;
        }
        let r = rule.reference();
        let mut s = self.session();
        if !s.iter().any(|x| x.reference() == r) {
            s.push(rule);
        }
        Ok(r)
    }

    /// How every part of `asked` is decided in `mode`, and the verdict. `classify` assesses a
    /// part on its own (a segment, or a rule's own command for its default ceiling).
    pub fn explain(
        &self,
        mode: ExecutionMode,
        asked: Asked<'_>,
        classify: &dyn Fn(&str) -> CommandAssessment,
    ) -> Explanation {
        let rules: Vec<Rule> = self
            .rules()
            .into_iter()
            .filter(|r| r.applies_in(mode))
            .collect();
        match asked {
            Asked::Command(a) => explain_command(&rules, mode, a, classify),
            Asked::Files {
                tool,
                written,
                resolved,
            } => explain_files(&rules, tool, written, resolved),
        }
    }
}

/// The ceiling of an allow: as saved, else its own command's (a file tool's write is
/// WORKSPACE_MUTATING).
fn ceiling_of(rule: &Rule, classify: &dyn Fn(&str) -> CommandAssessment) -> Ceiling {
    if let Some(c) = rule.ceiling {
        return c;
    }
    match &rule.subject {
        Subject::Command(p) => {
            let a = classify(&p.base_command());
            Ceiling {
                class: a.class,
                capabilities: required_capabilities(&a),
            }
        }
        // An MCP tool's call: mutating, with the server's own grant (the person's config
        // decides whether the server has the network).
        Subject::Mcp { .. } => MCP_CALL,
        _ => FILE_WRITE,
    }
}

/// A call of an MCP tool, as `spear-capability call` is assessed at its widest.
const MCP_CALL: Ceiling = Ceiling {
    class: CommandClass::WorkspaceMutating,
    capabilities: CapabilitySet::of_const(&[
        Capability::WorkspaceRead,
        Capability::WorkspaceWrite,
        Capability::Network,
    ]),
};

/// A file tool's write, as the router assesses it: WORKSPACE_MUTATING, reading and writing.
const FILE_WRITE: Ceiling = Ceiling {
    class: CommandClass::WorkspaceMutating,
    capabilities: CapabilitySet::of_const(&[Capability::WorkspaceRead, Capability::WorkspaceWrite]),
};

fn granted_alone(mode: ExecutionMode, a: &CommandAssessment) -> bool {
    let policy = CapabilityPolicy::for_mode(mode);
    a.class != CommandClass::Dangerous
        && required_capabilities(a)
            .iter()
            .all(|c| policy.grant(c) == Grant::Granted)
}

/// The word lists a deny or ask rule is looked for in: the line as a crude list (quotes and
/// backslashes dropped; blanks, shell punctuation and `=` a break, so `git -c alias.p=push p`
/// holds `push`), and every simple command the parse found, nested ones included, its name as
/// its last path part and its words as bash reads them (`g\it` is `git`). Only ever used to
/// find where a deny or ask might apply, so a crude reading can only add a question.
fn candidate_words(line: &str) -> Vec<Vec<String>> {
    let crude: Vec<String> = line
        .split(|c: char| c.is_whitespace() || ";|&()<>`$\"'{}=".contains(c))
        .map(|w| w.replace('\\', ""))
        .filter(|w| !w.is_empty())
        .collect();
    let facts = crate::harness::shell::parse(line);
    let mut lists = vec![crude];
    for c in &facts.commands {
        let name = c.name.value.rsplit('/').next().unwrap_or("").to_string();
        lists.push(
            std::iter::once(name)
                .chain(c.args.iter().map(|w| w.value.clone()))
                .collect(),
        );
    }
    lists
}

/// A command whose name is known only at run time (`$x push`): what it runs is unknown.
fn names_unknown(line: &str) -> bool {
    crate::harness::shell::parse(line)
        .commands
        .iter()
        .any(|c| !c.name.is_static() || c.name.expands)
}

/// Whether `needle` stands in `hay` in order, with anything between (`git -C . push` holds
/// `git push`); a word also stands as the last part of a path (`/usr/bin/git`).
fn stands_in(hay: &[String], needle: &[String]) -> bool {
    let mut rest = hay.iter();
    !needle.is_empty()
        && needle
            .iter()
            .all(|n| rest.any(|h| h == n || h.rsplit_once('/').is_some_and(|(_, last)| last == n)))
}

fn explain_command(
    rules: &[Rule],
    mode: ExecutionMode,
    a: &CommandAssessment,
    classify: &dyn Fn(&str) -> CommandAssessment,
) -> Explanation {
    let needed = required_capabilities(a);
    let mut parts = Vec::new();
    let mut unsplit = None;
    match segments(&a.command) {
        Err(why) => unsplit = Some(why),
        Ok(segs) => {
            let single = segs.len() == 1;
            for seg in segs {
                let matching: Vec<&Rule> = rules
                    .iter()
                    .filter(|r| r.subject.matches_segment(&seg))
                    .collect();
                // A line of one command is judged as the caller assessed it: the same as the
                // policy's reading for a command, SpearHost's for a host command (an MCP call).
                let own = if single && seg.text.trim() == a.command.trim() {
                    a.clone()
                } else {
                    classify(&seg.text)
                };
                // A command that runs what a pipe feeds it (`… | sh`, `… | xargs rm`) runs code
                // the rule never saw: no allow speaks for it.
                let feeds_code = seg.piped_in && own.class >= CommandClass::ShellComplex;
                let matching: Vec<&Rule> = matching
                    .into_iter()
                    .filter(|r| !(feeds_code && r.action == RuleAction::Allow))
                    .collect();
                let strongest = matching.iter().map(|r| r.action).max();
                let decision = match strongest {
                    Some(action @ (RuleAction::Deny | RuleAction::Ask)) => {
                        let r = matching.iter().find(|r| r.action == action).copied();
                        r.map(|r| PartDecision::Rule {
                            action,
                            rule: r.reference(),
                            text: r.describe(),
                        })
                        .unwrap_or(PartDecision::NoRule)
                    }
                    Some(RuleAction::Allow) => {
                        // The segment is judged as it stands alone here; the whole line is
                        // judged against all its parts' allowances below.
                        let own_needs = required_capabilities(&own);
                        let fits = matching
                            .iter()
                            .find(|r| ceiling_of(r, classify).covers(own.class, own_needs));
                        match (fits, matching.first()) {
                            (Some(r), _) => PartDecision::Rule {
                                action: RuleAction::Allow,
                                rule: r.reference(),
                                text: r.describe(),
                            },
                            (None, Some(r)) => {
                                let c = ceiling_of(r, classify);
                                PartDecision::Wider {
                                    rule: r.reference(),
                                    text: r.describe(),
                                    why: format!(
                                        "the rule covers {} needing {}; this command is {} \
                                         needing {}",
                                        c.class,
                                        caps(c.capabilities),
                                        own.class,
                                        caps(own_needs)
                                    ),
                                }
                            }
                            (None, None) => PartDecision::NoRule,
                        }
                    }
                    None if granted_alone(mode, &own) => PartDecision::Mode,
                    None => PartDecision::NoRule,
                };
                let exact = CommandPattern {
                    words: seg.words.clone(),
                    rest: false,
                    redirects: seg
                        .redirects
                        .iter()
                        .filter(|r| !r.duplicates() && r.target != "/dev/null")
                        .cloned()
                        .collect(),
                };
                let allowance = match &decision {
                    PartDecision::Rule {
                        action: RuleAction::Allow,
                        rule,
                        ..
                    } => matching
                        .iter()
                        .find(|r| r.reference() == *rule)
                        .map(|r| ceiling_of(r, classify)),
                    PartDecision::Mode => Some(Ceiling {
                        class: own.class,
                        capabilities: required_capabilities(&own),
                    }),
                    _ => None,
                };
                parts.push(Part {
                    text: seg.text,
                    class: own.class,
                    decision,
                    allowance,
                    exact: (!feeds_code).then_some(exact),
                    own: Ceiling {
                        class: own.class,
                        capabilities: required_capabilities(&own),
                    },
                });
            }
        }
    }
    // A deny or ask rule whose words stand in the line but matched no segment exactly (behind
    // a wrapper, in a subshell, with an assignment): the line is asked about, never allowed.
    let lists = candidate_words(&a.command);
    let unknown_names = names_unknown(&a.command);
    let unmatched = |r: &&Rule| {
        matches!(&r.subject, Subject::Command(p)
            if unknown_names || lists.iter().any(|words| stands_in(words, &p.words)))
            && !parts.iter().any(
                |p| matches!(&p.decision, PartDecision::Rule { rule, .. } if *rule == r.reference()),
            )
    };
    let maybe = rules
        .iter()
        .filter(|r| r.action == RuleAction::Deny)
        .find(unmatched)
        .or_else(|| {
            rules
                .iter()
                .filter(|r| r.action == RuleAction::Ask)
                .find(unmatched)
        });
    let mut verdict = verdict_of(&parts, maybe);
    // The line as a whole may be more than its parts alone (a `cd` before them, a pipe into
    // a shell): it is allowed only within what its parts' allowances add up to.
    let mut whole = None;
    if matches!(verdict, Verdict::Allow(_)) {
        let sum = parts
            .iter()
            .filter_map(|p| p.allowance)
            .fold(None::<Ceiling>, |acc, c| {
                Some(match acc {
                    None => c,
                    Some(a) => Ceiling {
                        class: a.class.max(c.class),
                        capabilities: a.capabilities.union(c.capabilities),
                    },
                })
            });
        if !sum.is_some_and(|s| s.covers(a.class, needed)) {
            whole = Some(format!(
                "the whole line is {} needing {}, more than its parts' rules allow",
                a.class,
                caps(needed)
            ));
            verdict = Verdict::Silent;
        }
    }
    Explanation {
        parts,
        unsplit,
        maybe: maybe.map(Rule::reference),
        whole,
        verdict,
    }
}

fn verdict_of(parts: &[Part], maybe: Option<&Rule>) -> Verdict {
    let by = |want: RuleAction| {
        parts.iter().find_map(|p| match &p.decision {
            PartDecision::Rule { action, rule, .. } if *action == want => Some(rule.clone()),
            _ => None,
        })
    };
    if let Some(r) = by(RuleAction::Deny) {
        return Verdict::Deny(r);
    }
    if let Some(r) = maybe.filter(|r| r.action == RuleAction::Deny) {
        return Verdict::Unclear(r.reference());
    }
    if let Some(r) = by(RuleAction::Ask).or_else(|| maybe.map(Rule::reference)) {
        return Verdict::Ask(r);
    }
    let all_allowed = !parts.is_empty()
        && parts.iter().all(|p| {
            matches!(
                p.decision,
                PartDecision::Mode
                    | PartDecision::Rule {
                        action: RuleAction::Allow,
                        ..
                    }
            )
        });
    let allows: Vec<RuleRef> = parts
        .iter()
        .filter_map(|p| match &p.decision {
            PartDecision::Rule { rule, .. } => Some(rule.clone()),
            _ => None,
        })
        .collect();
    if all_allowed && !allows.is_empty() {
        Verdict::Allow(allows)
    } else {
        Verdict::Silent
    }
}

fn explain_files(
    rules: &[Rule],
    tool: &str,
    written: &[String],
    resolved: &[String],
) -> Explanation {
    let text = format!("{tool} {}", written.join(" "))
        .trim_end()
        .to_string();
    // An allow: every resolved path matches (and the gates resolved each one). A deny or ask:
    // any path matches, as written or as resolved.
    let on = |r: &Rule, all: bool| match &r.subject {
        Subject::Files {
            tool: t, matcher, ..
        } if t == tool && !resolved.is_empty() => {
            let hit = |p: &String| matcher.is_match(relative(p));
            if all {
                resolved.len() == written.len() && resolved.iter().all(hit)
            } else {
                resolved.iter().chain(written).any(hit)
            }
        }
        _ => false,
    };
    // A deny or ask speaks when any path matches; an allow only when every path does.
    let decided = rules
        .iter()
        .filter(|r| r.action == RuleAction::Deny && on(r, false))
        .chain(
            rules
                .iter()
                .filter(|r| r.action == RuleAction::Ask && on(r, false)),
        )
        .chain(rules.iter().filter(|r| {
            r.action == RuleAction::Allow
                && on(r, true)
                && r.ceiling
                    .unwrap_or(FILE_WRITE)
                    .covers(FILE_WRITE.class, FILE_WRITE.capabilities)
        }))
        .next();
    let decision = match decided {
        Some(r) => PartDecision::Rule {
            action: r.action,
            rule: r.reference(),
            text: r.describe(),
        },
        None => PartDecision::NoRule,
    };
    let parts = vec![Part {
        text,
        class: CommandClass::WorkspaceMutating,
        decision,
        allowance: Some(FILE_WRITE),
        exact: None,
        own: FILE_WRITE,
    }];
    let verdict = verdict_of(&parts, None);
    Explanation {
        parts,
        unsplit: None,
        maybe: None,
        whole: None,
        verdict,
    }
}

/// A path as rules' globs read it: workspace-relative, without a leading `./`.
fn relative(p: &str) -> &str {
    p.trim_start_matches("./")
}

fn caps(set: CapabilitySet) -> String {
    set.iter()
        .map(Capability::as_str)
        .collect::<Vec<_>>()
        .join("+")
}

impl Explanation {
    /// The one part of the line that needs a rule, when exactly one does.
    fn needing_one(&self) -> Option<&Part> {
        let needing: Vec<&Part> = self
            .parts
            .iter()
            .filter(|p| {
                matches!(
                    p.decision,
                    PartDecision::NoRule | PartDecision::Wider { .. }
                )
            })
            .collect();
        match needing.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The ceiling a rule kept from `always_choices` records: that part's own class and
    /// capabilities, not the whole line's.
    pub fn always_ceiling(&self) -> Option<Ceiling> {
        self.needing_one().map(|p| p.own)
    }

    /// The allows the dialog offers as "always", narrowest first: when exactly one part of the
    /// line needs a rule, its exact words, then one word fewer at a time with `*` for further
    /// arguments, down to the program and one word (`cargo test -p spear`, `cargo test -p *`,
    /// `cargo test *`). None when the line has no parts, or more than one needs a rule.
    pub fn always_choices(&self) -> Vec<String> {
        let Some(part) = self.needing_one() else {
            return Vec::new();
        };
        let Some(exact) = &part.exact else {
            return Vec::new();
        };
        let mut out = vec![exact.text()];
        for keep in (2..exact.words.len()).rev() {
            let wider = CommandPattern {
                words: exact.words[..keep].to_vec(),
                rest: true,
                redirects: exact.redirects.clone(),
            };
            out.push(wider.text());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::primitives::Capability::{WorkspaceRead, WorkspaceWrite};

    const CEILING: Ceiling = Ceiling {
        class: CommandClass::WorkspaceMutating,
        capabilities: CapabilitySet::of_const(&[WorkspaceRead, WorkspaceWrite]),
    };

    #[test]
    fn a_new_session_forgets_session_rules_but_not_saved_ones() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("rules.toml");
        let book = RuleBook::new(d.path(), Some(&file), Vec::new(), Vec::new(), false);
        let s = book
            .keep("cargo test *", CEILING, SaveScope::Session)
            .unwrap();
        assert_eq!((s.origin, s.id.as_str()), (Origin::Session, "s1"));
        // The same rule again is the same rule.
        assert_eq!(
            book.keep("cargo test *", CEILING, SaveScope::Session)
                .unwrap(),
            s
        );
        let w = book
            .keep("make check", CEILING, SaveScope::Workspace)
            .unwrap();
        assert_eq!(w.origin, Origin::User);
        assert!(
            std::fs::read_to_string(&file)
                .unwrap()
                .contains("make check")
        );
        assert_eq!(book.rules().len(), 2);
        book.clear_session();
        let left: Vec<String> = book.rules().iter().map(Rule::describe).collect();
        assert_eq!(left, vec!["allow make check"]);
        // A pattern that does not read is refused, and nothing is kept.
        assert!(book.keep("make; rm x", CEILING, SaveScope::Global).is_err());
        assert_eq!(book.rules().len(), 1);
    }

    #[test]
    fn without_a_file_of_the_persons_only_the_session_can_keep_a_rule() {
        let d = tempfile::tempdir().unwrap();
        let book = RuleBook::new(d.path(), None, Vec::new(), Vec::new(), false);
        assert!(book.keep("ls", CEILING, SaveScope::Global).is_err());
        assert!(book.keep("ls", CEILING, SaveScope::Session).is_ok());
    }

    #[test]
    fn net_rules_decide_names_deny_first_and_keep_as_asked() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("rules.toml");
        let raw = |action: RuleAction, subject: &str| RawRule {
            action: Some(action),
            subject: Some(subject.into()),
            global: true,
            ..RawRule::default()
        };
        let user = [
            raw(RuleAction::Allow, "net:*.example.com"),
            raw(RuleAction::Deny, "net:secret.example.com"),
            raw(RuleAction::Ask, "net:ask.example.org:8443"),
        ]
        .iter()
        .map(|r| r.to_rule(Origin::User, Some(&file)).unwrap())
        .collect();
        let book = RuleBook::new(d.path(), Some(&file), user, Vec::new(), false);
        let v = |h: &str, p: u16| book.name_verdict(ExecutionMode::Ask, h, p).map(|(a, _)| a);
        assert_eq!(v("www.example.com", 443), Some(RuleAction::Allow));
        assert_eq!(v("www.example.com", 22), Some(RuleAction::Allow));
        assert_eq!(v("secret.example.com", 443), Some(RuleAction::Deny));
        assert_eq!(v("example.com", 443), None, "a wildcard is not its apex");
        assert_eq!(v("evilexample.com", 443), None);
        assert_eq!(v("ask.example.org", 8443), Some(RuleAction::Ask));
        assert_eq!(v("ask.example.org", 443), None);
        // Kept for the session: it answers until the session ends.
        book.keep_name("new.example.net", 443, SaveScope::Session)
            .unwrap();
        assert_eq!(v("new.example.net", 443), Some(RuleAction::Allow));
        book.clear_session();
        assert_eq!(v("new.example.net", 443), None);
        // Kept always: in the person's file.
        book.keep_name("new.example.net", 443, SaveScope::Global)
            .unwrap();
        assert!(
            std::fs::read_to_string(&file)
                .unwrap()
                .contains("net:new.example.net:443")
        );
    }
}
