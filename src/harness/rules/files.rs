//! Rules files: the person's (`$XDG_CONFIG_HOME/spear/rules.toml`, each rule scoped to one
//! workspace unless global) and the project's (`.spear/rules.toml`). Read strictly (an unknown
//! key or a rule that names nothing is an error naming the file and the rule), written whole
//! and atomically.
//!
//! ```toml
//! [[rule]]
//! action = "allow"                 # allow | ask | deny
//! command = "cargo test *"         # a command: exact words, `*` last for further arguments
//! class = "WORKSPACE_MUTATING"     # an allow's ceiling (default: its own command's class)
//! capabilities = ["workspace_read", "workspace_write"]
//! modes = ["ask"]                  # optional: only in these modes
//! comment = "the test suite"
//! workspace = "/home/me/project"   # user file: the workspace it is for (or global = true)
//!
//! [[rule]]
//! action = "allow"
//! tool = "write_file"              # a file tool …
//! path = "src/**/*.rs"             # … on workspace paths matching this glob
//!
//! [[rule]]
//! action = "deny"
//! subject = "net:example.com"      # reserved: mcp:SERVER.TOOL, net:HOST[:PORT]
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::rule::{Ceiling, CommandPattern, Origin, Rule, RuleAction, Subject};
use crate::harness::command_policy::CommandClass;
use crate::harness::primitives::{CapabilitySet, ExecutionMode};

/// What went wrong with a rules file.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a rules file: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}, rule {number}: {message}")]
    Rule {
        path: PathBuf,
        number: usize,
        message: String,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no config directory: neither XDG_CONFIG_HOME nor HOME is set")]
    NoConfigDir,
}

/// One rule as a file holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub action: Option<RuleAction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<CommandClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<CapabilitySet>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<ExecutionMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub global: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShape {
    #[serde(default, rename = "rule")]
    rules: Vec<RawRule>,
}

impl RawRule {
    /// The rule's id: the one written, else one derived from what it says, so it stays the
    /// same when other rules are added or removed.
    pub fn id(&self) -> String {
        if let Some(id) = &self.id {
            return id.clone();
        }
        let mut h = Sha256::new();
        let shape = toml::to_string(&RawRule {
            id: None,
            comment: None,
            ..self.clone()
        })
        .unwrap_or_default();
        h.update(shape.as_bytes());
        h.finalize()
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The rule this entry says, read as coming from `origin` in `file`.
    pub fn to_rule(&self, origin: Origin, file: Option<&Path>) -> Result<Rule, String> {
        let action = self
            .action
            .ok_or("it has no `action` (allow, ask or deny)")?;
        let subject = match (&self.command, &self.tool, &self.path, &self.subject) {
            (Some(c), None, None, None) => Subject::Command(CommandPattern::parse(c)?),
            (None, Some(t), Some(p), None) => Subject::files(t, p)?,
            (None, Some(_), None, None) => {
                return Err("a file-tool rule needs `path` (a glob of workspace paths)".into());
            }
            (None, None, None, Some(s)) => Subject::reserved(s)?,
            (None, None, None, None) => {
                return Err(
                    "it names nothing: give `command`, or `tool` and `path`, or `subject`".into(),
                );
            }
            _ => {
                return Err(
                    "it names more than one thing: give only one of `command`, `tool` with \
                     `path`, or `subject`"
                        .into(),
                );
            }
        };
        if self.capabilities.is_some() != self.class.is_some() {
            return Err("give `class` and `capabilities` together, or neither".into());
        }
        let ceiling = match (self.class, self.capabilities) {
            (Some(class), Some(capabilities)) => Some(Ceiling {
                class,
                capabilities,
            }),
            _ => None,
        };
        if action == RuleAction::Allow
            && ceiling.is_some_and(|c| c.class == CommandClass::Dangerous)
        {
            return Err("DANGEROUS is refused in every mode; no rule can allow it".into());
        }
        if origin != Origin::User && (self.workspace.is_some() || self.global) {
            return Err("`workspace` and `global` belong in your own rules file only".into());
        }
        if origin == Origin::User && self.workspace.is_none() && !self.global {
            return Err(
                "a rule of yours names its `workspace` (a directory) or says `global = true`"
                    .into(),
            );
        }
        Ok(Rule {
            id: self.id(),
            action,
            subject,
            ceiling,
            modes: self.modes.clone(),
            comment: self.comment.clone(),
            origin,
            file: file.map(Path::to_path_buf),
            workspace: if self.global {
                None
            } else {
                self.workspace.clone()
            },
        })
    }
}

/// The person's rules file: `$XDG_CONFIG_HOME/spear/rules.toml` (or `~/.config/…`).
pub fn user_rules_path() -> Result<PathBuf, RulesError> {
    let dirs = directories::BaseDirs::new().ok_or(RulesError::NoConfigDir)?;
    Ok(dirs.config_dir().join("spear").join("rules.toml"))
}

/// The project's rules file under a workspace root.
pub fn project_rules_path(root: &Path) -> PathBuf {
    root.join(".spear").join("rules.toml")
}

/// A rules file is small: a larger one is refused, not read.
const MAX_RULES_BYTES: u64 = 1 << 20;

/// The bytes of a rules file (empty when it does not exist). A project's (`follow_links`
/// false) must be a regular file reached through no link, its `.spear` directory included: a
/// repository's link to `/dev/zero` or to another file is refused, not followed.
fn read_bytes(path: &Path, follow_links: bool) -> Result<Vec<u8>, RulesError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = |message: &str| RulesError::Parse {
        path: path.to_path_buf(),
        message: message.to_string(),
    };
    let read_err = |source| RulesError::Read {
        path: path.to_path_buf(),
        source,
    };
    if !follow_links
        && let Some(dir) = path.parent()
        && std::fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir())
    {
        return Err(refuse(
            "its directory is a link or not a directory; a project's rules live in a real \
             `.spear` directory",
        ));
    }
    let meta = if follow_links {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    let meta = match meta {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(read_err(source)),
    };
    if meta.file_type().is_symlink() {
        return Err(refuse(
            "it is a link; a project's rules file must be a regular file",
        ));
    }
    if !meta.is_file() {
        return Err(refuse("it is not a regular file"));
    }
    if meta.len() > MAX_RULES_BYTES {
        return Err(refuse("it is larger than 1 MiB"));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    if !follow_links {
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut bytes = Vec::new();
    options
        .open(path)
        .and_then(|f| f.take(MAX_RULES_BYTES + 1).read_to_end(&mut bytes))
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_RULES_BYTES {
        return Err(refuse("it is larger than 1 MiB"));
    }
    Ok(bytes)
}

/// The entries of the person's rules file (none when it does not exist), with its bytes.
pub fn read_raw(path: &Path) -> Result<(Vec<RawRule>, Vec<u8>), RulesError> {
    read_raw_as(path, true)
}

fn read_raw_as(path: &Path, follow_links: bool) -> Result<(Vec<RawRule>, Vec<u8>), RulesError> {
    let bytes = read_bytes(path, follow_links)?;
    if bytes.is_empty() {
        return Ok((Vec::new(), bytes));
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| RulesError::Parse {
        path: path.to_path_buf(),
        message: "it is not UTF-8 text".into(),
    })?;
    let shape: FileShape = toml::from_str(text).map_err(|e| RulesError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok((shape.rules, bytes))
}

/// The rules of a file, each checked, read as coming from `origin` (a project's file only as a
/// regular file reached through no link), with the bytes they were read from.
pub fn read_rules(path: &Path, origin: Origin) -> Result<(Vec<Rule>, Vec<u8>), RulesError> {
    let (raw, bytes) = read_raw_as(path, origin != Origin::Project)?;
    let rules = raw
        .iter()
        .enumerate()
        .map(|(i, r)| {
            r.to_rule(origin, Some(path))
                .map_err(|message| RulesError::Rule {
                    path: path.to_path_buf(),
                    number: i + 1,
                    message,
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rules, bytes))
}

/// Write `rules` as the whole of the file at `path` (its directory made private when new).
pub fn write_raw(path: &Path, rules: &[RawRule]) -> Result<(), RulesError> {
    let err = |source| RulesError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = toml::to_string(&FileShape {
        rules: rules.to_vec(),
    })
    .map_err(|e| err(std::io::Error::other(e)))?;
    let header = "# Spear's permission rules (`spear rules --help`). Each [[rule]] allows, asks or \
                  denies\n# a command, a file tool's paths, an MCP tool (mcp:SERVER.TOOL) or a reserved subject.\n\n";
    crate::harness::atomic_file::write_private_in_new_dir(
        path,
        format!("{header}{text}").as_bytes(),
    )
    .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Result<Vec<Rule>, RulesError> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rules.toml");
        std::fs::write(&p, text).unwrap();
        read_rules(&p, Origin::Project).map(|(r, _)| r)
    }

    #[test]
    fn a_rules_file_round_trips_and_ids_stay_put() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub").join("rules.toml");
        let a = RawRule {
            action: Some(RuleAction::Allow),
            command: Some("cargo test *".into()),
            global: true,
            ..RawRule::default()
        };
        let b = RawRule {
            action: Some(RuleAction::Deny),
            command: Some("git push *".into()),
            workspace: Some("/w".into()),
            comment: Some("never from here".into()),
            ..RawRule::default()
        };
        write_raw(&p, &[a.clone(), b.clone()]).unwrap();
        let (read, _) = read_raw(&p).unwrap();
        assert_eq!(read, vec![a.clone(), b.clone()]);
        let (rules, _) = read_rules(&p, Origin::User).unwrap();
        assert_eq!(rules[1].id, b.id());
        write_raw(&p, &[b.clone()]).unwrap();
        let (rules, _) = read_rules(&p, Origin::User).unwrap();
        assert_eq!(
            rules[0].id,
            b.id(),
            "an id does not move with its neighbours"
        );
        // A comment is not part of what a rule says.
        let c = RawRule {
            comment: Some("other".into()),
            ..b.clone()
        };
        assert_eq!(c.id(), b.id());
    }

    #[test]
    fn a_bad_rule_is_named_with_what_to_write() {
        for (text, says) in [
            ("[[rule]]\naction = \"allow\"\n", "names nothing"),
            ("[[rule]]\ncommand = \"ls\"\n", "no `action`"),
            (
                "[[rule]]\naction = \"allow\"\ncommand = \"ls; rm x\"\n",
                "one rule per",
            ),
            (
                "[[rule]]\naction = \"allow\"\ncommand = \"ls\"\ntool = \"x\"\npath = \"a\"\n",
                "more than one",
            ),
            (
                "[[rule]]\naction = \"allow\"\ntool = \"write_file\"\n",
                "needs `path`",
            ),
            (
                "[[rule]]\naction = \"allow\"\ncommand = \"ls\"\nclass = \"DANGEROUS\"\ncapabilities = []\n",
                "DANGEROUS",
            ),
            (
                "[[rule]]\naction = \"allow\"\ncommand = \"ls\"\nglobal = true\n",
                "your own rules file",
            ),
        ] {
            let e = raw(text).unwrap_err().to_string();
            assert!(e.contains("rule 1") && e.contains(says), "{text:?}: {e}");
        }
        let e = raw("[[rule]]\naction = \"allow\"\ncommand = \"ls\"\ncolour = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour"), "{e}");
        let e = raw("[[rule]]\naction = \"permit\"\ncommand = \"ls\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("permit"), "{e}");
    }
}
