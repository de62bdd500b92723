//! `spear rules list|add|remove|explain|trust|untrust`: the permission rules for this
//! workspace. The person's rules live in `rules.toml` beside the config file, each for one
//! workspace unless `--global`; the project's in `.spear/rules.toml`, whose allows count only
//! once `spear rules trust` has recorded the file as it is.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Subcommand};
use spear::agent::builder::Place;
use spear::harness::audit::display::escape_controls;
use spear::harness::command_policy::{
    CommandAssessment, CommandPolicy, PolicyConfig, required_capabilities,
};
use spear::harness::primitives::ExecutionMode;
use spear::harness::rules::{
    self, Asked, Explanation, Origin, PartDecision, RawRule, RuleAction, RuleBook, TrustStore,
    Verdict, files, project_rules_path,
};

#[derive(Args)]
pub struct RulesArgs {
    #[command(subcommand)]
    pub command: RulesCommand,
}

#[derive(Subcommand)]
pub enum RulesCommand {
    /// Every rule in force here, where it comes from, and the project allows left out.
    List,
    /// Add a rule: `spear rules add allow cargo test '*'` (a trailing `*` for further
    /// arguments), or `--tool write_file --path 'src/**'`.
    Add(AddArgs),
    /// Remove a rule by its id (as `spear rules list` shows it).
    Remove {
        id: String,
        /// From the project's `.spear/rules.toml` instead of your own file.
        #[arg(long)]
        project: bool,
    },
    /// How the rules decide a command, segment by segment.
    Explain {
        /// The mode to decide in.
        #[arg(long, default_value = "ask")]
        mode: ExecutionMode,
        /// The command line (quote it, or give its words).
        #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Trust the project's `.spear/rules.toml` as it is now, so its allows count.
    Trust,
    /// Stop trusting the project's rules file.
    Untrust,
}

#[derive(Args)]
pub struct AddArgs {
    /// allow, ask or deny.
    pub action: RuleAction,
    /// The command the rule names: its words, `*` last for further arguments. Quote it as
    /// one argument when it has options of its own: `'cargo test -p spear *'`.
    #[arg(num_args = 0..)]
    pub command: Vec<String>,
    /// A file tool (write_file, patch, delete_file) instead of a command …
    #[arg(long, requires = "path")]
    pub tool: Option<String>,
    /// … on workspace paths matching this glob (`*` within a directory, `**` across).
    #[arg(long)]
    pub path: Option<String>,
    /// An MCP tool, `mcp:SERVER.TOOL`, or (reserved for the egress proxy) `net:HOST[:PORT]`.
    #[arg(long)]
    pub subject: Option<String>,
    /// For every workspace, not only this one.
    #[arg(long, conflicts_with = "project")]
    pub global: bool,
    /// Into the project's `.spear/rules.toml` (shared with everyone who clones it).
    #[arg(long)]
    pub project: bool,
    /// Only in these modes (repeat for more).
    #[arg(long = "mode")]
    pub modes: Vec<ExecutionMode>,
    /// Why the rule exists.
    #[arg(long)]
    pub comment: Option<String>,
}

struct Files {
    place: Place,
    user: PathBuf,
    project: PathBuf,
}

impl Files {
    fn find(workspace: Option<PathBuf>) -> anyhow::Result<Files> {
        let place = Place::find(workspace)?;
        let user = spear::config::default_path()?.with_file_name("rules.toml");
        let project = project_rules_path(&place.root);
        Ok(Files {
            place,
            user,
            project,
        })
    }

    fn book(&self) -> anyhow::Result<RuleBook> {
        Ok(rules::load(
            &self.place.root,
            Some(&self.user),
            &self.place.state,
        )?)
    }

    fn policy(&self) -> CommandPolicy {
        CommandPolicy::new(PolicyConfig {
            workspace_root: Some(self.place.root.clone()),
            ..PolicyConfig::default()
        })
    }
}

pub fn run(args: RulesArgs, workspace: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let files = Files::find(workspace)?;
    let mut out = std::io::stdout().lock();
    match args.command {
        RulesCommand::List => list(&files, &mut out)?,
        RulesCommand::Add(a) => add(&files, a, &mut out)?,
        RulesCommand::Remove { id, project } => {
            let path = if project { &files.project } else { &files.user };
            let (mut raw, _) = files::read_raw(path)?;
            let before = raw.len();
            raw.retain(|r| r.id() != id);
            if raw.len() == before {
                bail!(
                    "no rule {id} in {}; `spear rules list` shows the ids",
                    path.display()
                );
            }
            files::write_raw(path, &raw)?;
            writeln!(out, "removed rule {id} from {}", path.display())?;
        }
        RulesCommand::Explain { mode, command } => {
            let line = command.join(" ");
            let policy = files.policy();
            let a = policy.classify(&line);
            let e = files
                .book()?
                .explain(mode, Asked::Command(&a), &|t: &str| policy.classify(t));
            print_explanation(&mut out, &a, mode, &e)?;
        }
        RulesCommand::Trust => {
            // What is shown is what is trusted: the same bytes, read once.
            let (rules, bytes) = files::read_rules(&files.project, Origin::Project)?;
            if bytes.is_empty() {
                bail!(
                    "{} does not exist: there is nothing to trust",
                    files.project.display()
                );
            }
            let rec = TrustStore::open_in(&files.place.state).trust(
                &files.place.root,
                &files.project,
                &bytes,
            )?;
            writeln!(
                out,
                "trusted {} (sha256 {}): its allows count until the file changes or moves",
                rec.path.display(),
                &rec.sha256[..16]
            )?;
            for r in rules.iter().filter(|r| r.action == RuleAction::Allow) {
                writeln!(out, "  {}  {}", r.id, escape_controls(&r.describe()))?;
            }
        }
        RulesCommand::Untrust => {
            let removed = TrustStore::open_in(&files.place.state)
                .untrust(&files.place.root, &files.project)?;
            writeln!(
                out,
                "{}",
                if removed {
                    "the project's rules file is no longer trusted"
                } else {
                    "the project's rules file was not trusted"
                }
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn list(files: &Files, out: &mut impl Write) -> anyhow::Result<()> {
    let book = files.book()?;
    writeln!(out, "workspace: {}", files.place.root.display())?;
    writeln!(out, "your rules: {}", files.user.display())?;
    writeln!(out, "project rules: {}", files.project.display())?;
    let rules = book.rules();
    if rules.is_empty() {
        writeln!(
            out,
            "\nNo rules. Add one with `spear rules add allow cargo test '*'`."
        )?;
    } else {
        writeln!(out)?;
        for r in &rules {
            let scope = match (r.origin, &r.workspace) {
                (Origin::User, None) => "global".to_string(),
                (Origin::User, Some(_)) => "this workspace".into(),
                (o, _) => o.as_str().to_string(),
            };
            let mut line = format!(
                "{:<8}  {:<14}  {}",
                r.id,
                scope,
                escape_controls(&r.describe())
            );
            if let Some(c) = r.ceiling {
                line.push_str(&format!("  [up to {}]", c.class));
            }
            if !r.modes.is_empty() {
                let m: Vec<&str> = r.modes.iter().map(|m| m.as_str()).collect();
                line.push_str(&format!("  (in {})", m.join(", ")));
            }
            if let Some(c) = &r.comment {
                line.push_str(&format!("  # {}", escape_controls(c)));
            }
            writeln!(out, "{line}")?;
        }
    }
    if !book.ignored().is_empty() {
        writeln!(
            out,
            "\nIgnored: the project's rules file is not trusted as it is, so these allows do not \
             count (read them, then `spear rules trust`):"
        )?;
        for r in book.ignored() {
            writeln!(out, "  {:<8}  {}", r.id, escape_controls(&r.describe()))?;
        }
    }
    Ok(())
}

fn add(files: &Files, a: AddArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let mut raw = RawRule {
        action: Some(a.action),
        tool: a.tool,
        path: a.path,
        subject: a.subject,
        modes: a.modes,
        comment: a.comment,
        ..RawRule::default()
    };
    if !a.command.is_empty() {
        raw.command = Some(a.command.join(" "));
    }
    let target = if a.project {
        &files.project
    } else {
        if a.global {
            raw.global = true;
        } else {
            raw.workspace = Some(files.place.root.clone());
        }
        &files.user
    };
    let origin = if a.project {
        Origin::Project
    } else {
        Origin::User
    };
    // Checked before anything is written: a rule that does not read is refused whole.
    let rule = raw
        .to_rule(origin, Some(target))
        .map_err(|why| anyhow::anyhow!("the rule was not added: {why}"))?;
    if let (RuleAction::Allow, spear::harness::rules::Subject::Command(p)) =
        (rule.action, &rule.subject)
    {
        let policy = files.policy();
        let assessed: CommandAssessment = policy.classify(&p.base_command());
        if assessed.class == spear::harness::command_policy::CommandClass::Dangerous {
            bail!(
                "the rule was not added: `{}` is DANGEROUS, which is refused in every mode ({})",
                p.base_command(),
                assessed.reasons.first().cloned().unwrap_or_default()
            );
        }
        // An allow covers nothing wider than the command it was written for.
        raw.class = Some(assessed.class);
        raw.capabilities = Some(required_capabilities(&assessed));
    }
    let (mut all, _) = files::read_raw(target)?;
    if all.iter().any(|r| r.id() == raw.id()) {
        writeln!(out, "already there: rule {}", raw.id())?;
        return Ok(());
    }
    all.push(raw.clone());
    files::write_raw(target, &all)?;
    writeln!(
        out,
        "added rule {} to {}: {}",
        raw.id(),
        target.display(),
        escape_controls(&rule.describe())
    )?;
    if a.project && a.action == RuleAction::Allow {
        writeln!(
            out,
            "note: a project allow counts only once the file is trusted (`spear rules trust`)"
        )?;
    }
    Ok(())
}

/// `spear rules explain` and `spear classify --explain`: the class, then each segment with
/// its own class and what decided it, then the verdict.
pub fn print_explanation(
    out: &mut impl Write,
    a: &CommandAssessment,
    mode: ExecutionMode,
    e: &Explanation,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{}  {}  (in {} mode)",
        a.class,
        escape_controls(&a.command),
        mode.as_str()
    )?;
    if let Some(why) = &e.unsplit {
        writeln!(
            out,
            "  no segments a rule can speak for: {}",
            escape_controls(why)
        )?;
    }
    for p in &e.parts {
        let how = match &p.decision {
            PartDecision::Rule { action, rule, text } => {
                format!("{action} by {rule}: {}", escape_controls(text))
            }
            PartDecision::Wider { rule, text, why } => {
                format!("not covered by {rule} ({}): {why}", escape_controls(text))
            }
            PartDecision::Mode => format!("{} mode runs it without asking", mode.as_str()),
            PartDecision::NoRule => "no rule; the mode would ask".into(),
        };
        writeln!(
            out,
            "  {:<18}  {}\n  {:<18}  -> {how}",
            p.class.as_str(),
            escape_controls(&p.text),
            ""
        )?;
    }
    if let Some(r) = &e.maybe {
        writeln!(
            out,
            "  {r} names words that stand in this line but match no segment exactly: asked"
        )?;
    }
    if let Some(why) = &e.whole {
        writeln!(out, "  {}", escape_controls(why))?;
    }
    let verdict = match &e.verdict {
        Verdict::Silent => "no rule decides: the mode decides (asking where it asks)".to_string(),
        Verdict::Allow(rules) => format!(
            "allowed by {} where the mode would ask",
            rules
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Verdict::Ask(r) => format!("asked, because of {r}"),
        Verdict::Unclear(r) => {
            format!("asked where the mode asks, refused where it would not: {r} may apply")
        }
        Verdict::Deny(r) => format!("refused by {r}"),
    };
    writeln!(out, "  verdict: {verdict}")?;
    if a.class == spear::harness::command_policy::CommandClass::Dangerous {
        writeln!(
            out,
            "  (DANGEROUS is refused in every mode, whatever a rule says)"
        )?;
    }
    Ok(())
}

/// For `spear classify --explain`: the rules for the current directory's workspace.
pub fn explain_for_classify(
    out: &mut impl Write,
    policy: &CommandPolicy,
    assessments: &[CommandAssessment],
) -> anyhow::Result<()> {
    let files = Files::find(None)?;
    let book = files.book()?;
    for a in assessments {
        let e = book.explain(ExecutionMode::Ask, Asked::Command(a), &|t: &str| {
            policy.classify(t)
        });
        print_explanation(out, a, ExecutionMode::Ask, &e)?;
    }
    Ok(())
}
