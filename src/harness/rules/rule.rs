//! One rule: what it does (allow, ask, deny), what it speaks for (a command pattern, a file
//! tool's paths, or, reserved, an MCP tool or a network name), the ceiling an allow was saved
//! under, the modes it applies in, and where it came from.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::harness::command_policy::CommandClass;
use crate::harness::primitives::{CapabilitySet, ExecutionMode};
use crate::harness::shell::segments::{Segment, SegmentRedirect, pattern_segments};

/// What a rule says. Ordered: when rules disagree, the greater wins (deny over ask over allow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    Allow,
    Ask,
    Deny,
}

impl RuleAction {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Allow => "allow",
            RuleAction::Ask => "ask",
            RuleAction::Deny => "deny",
        }
    }
}

impl std::str::FromStr for RuleAction {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "allow" => Ok(RuleAction::Allow),
            "ask" => Ok(RuleAction::Ask),
            "deny" => Ok(RuleAction::Deny),
            _ => Err(format!(
                "`{s}` is not a rule action: write allow, ask or deny"
            )),
        }
    }
}

impl fmt::Display for RuleAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a rule was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The person's own file (`$XDG_CONFIG_HOME/spear/rules.toml`).
    User,
    /// The workspace's `.spear/rules.toml`: its allows count only once trusted.
    Project,
    /// Granted in this session's dialog; gone with the session.
    Session,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Project => "project",
            Origin::Session => "session",
        }
    }
}

/// Names the rule that decided a call, for the audit log and `spear rules explain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleRef {
    pub origin: Origin,
    /// The file it was read from (none for a session rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub id: String,
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{} rule {} ({file})", self.origin.as_str(), self.id),
            None => write!(f, "{} rule {}", self.origin.as_str(), self.id),
        }
    }
}

/// The widest command an allow covers: the class and capabilities of the command it was saved
/// from. A command wider in either is not covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ceiling {
    pub class: CommandClass,
    pub capabilities: CapabilitySet,
}

impl Ceiling {
    pub fn covers(&self, class: CommandClass, needed: CapabilitySet) -> bool {
        class <= self.class && needed.within(self.capabilities)
    }
}

/// What a command rule matches: the program and exact words, then optionally any further
/// literal words (a trailing `*`), and the files its redirections may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPattern {
    pub words: Vec<String>,
    pub rest: bool,
    /// Redirections to files the rule allows (`cargo test > out.txt`).
    pub redirects: Vec<SegmentRedirect>,
}

impl CommandPattern {
    /// Read a pattern: one simple command of literal words, a bare `*` last for "any further
    /// arguments", and redirections to literal files.
    pub fn parse(text: &str) -> Result<CommandPattern, String> {
        let mut segs = pattern_segments(text)
            .map_err(|why| format!("`{text}` is not a command a rule can name: {why}"))?;
        if segs.len() != 1 {
            return Err(format!(
                "`{text}` holds {} commands; a rule names one (write one rule per command)",
                segs.len()
            ));
        }
        let seg = segs.remove(0);
        let rest = seg.raw.last().is_some_and(|w| w == "*");
        let mut words = seg.words;
        if rest {
            words.pop();
        }
        if words.is_empty() {
            return Err(format!("`{text}` names no program"));
        }
        Ok(CommandPattern {
            words,
            rest,
            redirects: seg.redirects,
        })
    }

    /// Whether `seg` is this command: the same program and words (any further literal words
    /// with `*`), and every file its redirections open named by the pattern. Duplications
    /// (`2>&1`) and `/dev/null` open no file of the person's.
    pub fn matches(&self, seg: &Segment) -> bool {
        let words_match = if self.rest {
            seg.words.len() >= self.words.len() && seg.words[..self.words.len()] == self.words[..]
        } else {
            seg.words == self.words
        };
        words_match
            && seg.redirects.iter().all(|r| {
                r.duplicates()
                    || r.target == "/dev/null"
                    || self
                        .redirects
                        .iter()
                        .any(|p| p.target == r.target && same_direction(&p.operator, &r.operator))
            })
    }

    /// The pattern as a rule file spells it.
    pub fn text(&self) -> String {
        let mut parts: Vec<String> = self.words.iter().map(|w| shell_word(w)).collect();
        if self.rest {
            parts.push("*".into());
        }
        for r in &self.redirects {
            parts.push(format!(
                "{}{} {}",
                r.fd.as_deref().unwrap_or(""),
                r.operator,
                shell_word(&r.target)
            ));
        }
        parts.join(" ")
    }

    /// The command the pattern was saved from, without its star (what its default ceiling is
    /// classified on).
    pub fn base_command(&self) -> String {
        let mut p = self.clone();
        p.rest = false;
        p.text()
    }
}

/// Reading, writing or both: a rule naming `> out` allows `>> out` too, never `< out`.
fn same_direction(a: &str, b: &str) -> bool {
    let reads = |op: &str| op == "<";
    reads(a) == reads(b)
}

/// A word as bash reads it back to the same value: bare when plain, else single-quoted.
pub fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// What a rule speaks for.
#[derive(Debug, Clone)]
pub enum Subject {
    Command(CommandPattern),
    /// A file tool (`write_file`, `patch`, `delete_file`) on workspace paths matching a glob.
    Files {
        tool: String,
        glob: String,
        matcher: globset::GlobMatcher,
    },
    /// An MCP tool, `mcp:SERVER.TOOL`: matches the host command that calls it
    /// (`spear-capability call SERVER.TOOL …`).
    Mcp {
        server: String,
        tool: String,
    },
    /// Reserved for the egress proxy: `net:HOST[:PORT]` narrows or widens the names inside a
    /// network grant and never makes one. Matches no command.
    Net {
        host: String,
        port: Option<u16>,
    },
}

impl Subject {
    /// Whether this subject speaks for the command segment `seg`: a command pattern by its
    /// words, an MCP tool by the host command that calls it; files and names never.
    pub fn matches_segment(&self, seg: &Segment) -> bool {
        match self {
            Subject::Command(p) => p.matches(seg),
            Subject::Mcp { server, tool } => {
                seg.redirects.is_empty()
                    && matches!(seg.words.as_slice(),
                        [program, call, name, ..]
                            if program.rsplit('/').next() == Some("spear-capability")
                                && call == "call"
                                && *name == format!("{server}.{tool}"))
            }
            Subject::Files { .. } | Subject::Net { .. } => false,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Subject::Command(p) => p.text(),
            Subject::Files { tool, glob, .. } => format!("{tool} {glob}"),
            Subject::Mcp { server, tool } => format!("mcp:{server}.{tool}"),
            Subject::Net {
                host,
                port: Some(p),
            } => format!("net:{host}:{p}"),
            Subject::Net { host, port: None } => format!("net:{host}"),
        }
    }

    /// A file-tool subject: paths are workspace-relative, `*` stays within one directory and
    /// `**` crosses any number.
    pub fn files(tool: &str, glob: &str) -> Result<Subject, String> {
        if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{tool}` is not a tool name"));
        }
        let matcher = globset::GlobBuilder::new(glob.trim_start_matches("./"))
            .literal_separator(true)
            .build()
            .map_err(|e| format!("`{glob}` is not a path glob: {e}"))?
            .compile_matcher();
        Ok(Subject::Files {
            tool: tool.to_string(),
            glob: glob.to_string(),
            matcher,
        })
    }

    /// A reserved subject (`mcp:…`, `net:…`).
    pub fn reserved(text: &str) -> Result<Subject, String> {
        if let Some(rest) = text.strip_prefix("mcp:") {
            let (server, tool) = rest
                .split_once('.')
                .filter(|(s, t)| !s.is_empty() && !t.is_empty())
                .ok_or_else(|| format!("`{text}`: write mcp:SERVER.TOOL"))?;
            return Ok(Subject::Mcp {
                server: server.into(),
                tool: tool.into(),
            });
        }
        if let Some(rest) = text.strip_prefix("net:") {
            // An IPv6 address, bracketed: `net:[2001:db8::1]:443`.
            if let Some(inner) = rest.strip_prefix('[') {
                let (addr, tail) = inner
                    .split_once(']')
                    .ok_or_else(|| format!("`{text}`: write net:[IPV6] or net:[IPV6]:PORT"))?;
                let addr = addr
                    .parse::<std::net::Ipv6Addr>()
                    .map_err(|_| format!("`{text}`: `{addr}` is not an IPv6 address"))?;
                let port = match tail.strip_prefix(':') {
                    Some(p) => Some(
                        p.parse::<u16>()
                            .map_err(|_| format!("`{text}`: the port must be a number"))?,
                    ),
                    None if tail.is_empty() => None,
                    None => return Err(format!("`{text}`: write net:[IPV6]:PORT")),
                };
                return Ok(Subject::Net {
                    // As the proxy writes the address it was asked for.
                    host: format!("[{addr}]"),
                    port,
                });
            }
            let (host, port) = match rest.rsplit_once(':') {
                Some((h, p)) => (
                    h,
                    Some(
                        p.parse::<u16>()
                            .map_err(|_| format!("`{text}`: the port must be a number"))?,
                    ),
                ),
                None => (rest, None),
            };
            let host_ok = !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-*".contains(c));
            if !host_ok {
                return Err(format!("`{text}`: write net:HOST or net:HOST:PORT"));
            }
            return Ok(Subject::Net {
                host: host.trim_end_matches('.').to_ascii_lowercase(),
                port,
            });
        }
        Err(format!(
            "`{text}`: a subject is `mcp:SERVER.TOOL` or `net:HOST[:PORT]` (commands go in \
             `command`, file tools in `tool` and `path`)"
        ))
    }
}

/// One rule, as read.
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub action: RuleAction,
    pub subject: Subject,
    /// For an allow: the widest command it covers. `None` until known (a hand-written rule's
    /// ceiling is its own command's, classified when first needed).
    pub ceiling: Option<Ceiling>,
    /// The modes it applies in; empty for all.
    pub modes: Vec<ExecutionMode>,
    pub comment: Option<String>,
    pub origin: Origin,
    pub file: Option<PathBuf>,
    /// A user rule's workspace (canonical root); `None` when global or not a user rule.
    pub workspace: Option<PathBuf>,
}

impl Rule {
    pub fn reference(&self) -> RuleRef {
        RuleRef {
            origin: self.origin,
            file: self.file.as_ref().map(|f| f.display().to_string()),
            id: self.id.clone(),
        }
    }

    pub fn applies_in(&self, mode: ExecutionMode) -> bool {
        self.modes.is_empty() || self.modes.contains(&mode)
    }

    /// The rule as one line: `allow cargo test *`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.action, self.subject.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::shell::segments::segments;

    fn matches(pattern: &str, command: &str) -> bool {
        let p = CommandPattern::parse(pattern).unwrap();
        let segs = segments(command).unwrap();
        segs.len() == 1 && p.matches(&segs[0])
    }

    #[test]
    fn exact_words_or_a_trailing_star() {
        assert!(matches("cargo test", "cargo test"));
        assert!(!matches("cargo test", "cargo test -p spear"));
        assert!(matches("cargo test *", "cargo test -p spear"));
        assert!(matches("cargo test *", "cargo test"));
        assert!(matches("cargo test *", "'cargo' \"test\" --all"));
        assert!(!matches("cargo test *", "cargo testx"));
        assert!(!matches("cargo test *", "cargo build"));
        assert!(!matches("cat", "cat /etc/hosts"));
        assert!(!matches("cargo test *", "/usr/bin/cargo test"));
    }

    #[test]
    fn a_redirection_to_a_file_needs_a_rule_that_names_it() {
        assert!(!matches("cargo test *", "cargo test > out.txt"));
        // `~` expands: no segment, so no rule speaks for it (the mode asks).
        assert!(segments("cargo test > ~/.bashrc").is_err());
        assert!(matches("cargo test *", "cargo test 2>&1"));
        assert!(matches("cargo test *", "cargo test 2>/dev/null"));
        assert!(matches(
            "cargo test * > out.txt",
            "cargo test -q >> out.txt"
        ));
        assert!(!matches("cargo test * > out.txt", "cargo test < out.txt"));
        assert!(!matches("cargo test * > out.txt", "cargo test > other.txt"));
    }

    #[test]
    fn patterns_read_back_as_written() {
        for text in [
            "cargo test *",
            "git log --oneline",
            "echo 'a b' > out.txt",
            "cargo test * 2> out.txt",
        ] {
            assert_eq!(CommandPattern::parse(text).unwrap().text(), text);
        }
        assert!(CommandPattern::parse("cargo test; rm x").is_err());
        assert!(CommandPattern::parse("cargo $X").is_err());
        assert!(CommandPattern::parse("*").is_err());
    }

    #[test]
    fn a_ceiling_covers_nothing_wider() {
        use crate::harness::primitives::Capability::*;
        let c = Ceiling {
            class: CommandClass::WorkspaceMutating,
            capabilities: CapabilitySet::of(&[WorkspaceRead, WorkspaceWrite]),
        };
        assert!(c.covers(
            CommandClass::WorkspaceMutating,
            CapabilitySet::of(&[WorkspaceRead, WorkspaceWrite])
        ));
        assert!(c.covers(CommandClass::ReadOnly, CapabilitySet::of(&[WorkspaceRead])));
        assert!(!c.covers(
            CommandClass::WorkspaceMutating,
            CapabilitySet::of(&[WorkspaceRead, WorkspaceWrite, Network])
        ));
        assert!(!c.covers(
            CommandClass::ShellComplex,
            CapabilitySet::of(&[WorkspaceRead, WorkspaceWrite])
        ));
    }

    #[test]
    fn reserved_subjects_parse_strictly() {
        assert!(matches!(
            Subject::reserved("mcp:github.create_issue"),
            Ok(Subject::Mcp { .. })
        ));
        assert!(matches!(
            Subject::reserved("net:crates.io:443"),
            Ok(Subject::Net {
                port: Some(443),
                ..
            })
        ));
        assert!(Subject::reserved("net:").is_err());
        let net = |t: &str| match Subject::reserved(t) {
            Ok(Subject::Net { host, port }) => (host, port),
            other => panic!("{t}: {other:?}"),
        };
        assert_eq!(
            net("net:[2001:DB8::1]:443"),
            ("[2001:db8::1]".into(), Some(443))
        );
        assert_eq!(net("net:[::1]"), ("[::1]".into(), None));
        assert_eq!(net("net:Example.COM."), ("example.com".into(), None));
        assert!(Subject::reserved("net:[nope]:443").is_err());
        assert!(Subject::reserved("net:[::1]x").is_err());
        assert!(Subject::reserved("mcp:x").is_err());
        assert!(Subject::reserved("cargo").is_err());
    }
}
