//! What `classify` says about a command: its class (ordered by severity), the executables it runs,
//! the paths it writes as written, whether it needs the network, and why.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::profile::LiteralArgv;

/// The severity of a command. The order is the severity order: a command's class is the maximum
/// over its parts, so adding a part can only raise it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CommandClass {
    ReadOnly,
    WorkspaceMutating,
    ShellComplex,
    Dangerous,
}

impl CommandClass {
    pub fn as_str(self) -> &'static str {
        match self {
            CommandClass::ReadOnly => "READ_ONLY",
            CommandClass::WorkspaceMutating => "WORKSPACE_MUTATING",
            CommandClass::ShellComplex => "SHELL_COMPLEX",
            CommandClass::Dangerous => "DANGEROUS",
        }
    }
}

impl fmt::Display for CommandClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The classifier's verdict on one command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandAssessment {
    pub command: String,
    pub class: CommandClass,
    /// Every executable the command runs, wrappers and nested shells included, in order of first
    /// appearance.
    pub executables: Vec<String>,
    /// Write targets as written (redirections, writer operands, paths inline programs mention).
    pub writes: Vec<String>,
    /// The command needs the network, whatever its class.
    pub network: bool,
    /// One human sentence per finding.
    pub reasons: Vec<String>,
    /// The exact argv when the line is one program run with literal words (then no shell is
    /// needed to run it); never on the wire.
    #[serde(skip)]
    pub literal_argv: Option<LiteralArgv>,
}

impl CommandAssessment {
    pub(crate) fn new(command: &str) -> Self {
        CommandAssessment {
            command: command.to_string(),
            class: CommandClass::ReadOnly,
            executables: Vec::new(),
            writes: Vec::new(),
            network: false,
            reasons: Vec::new(),
            literal_argv: None,
        }
    }

    /// Raise the class to at least `class`, recording why. Never lowers it.
    pub(crate) fn raise(&mut self, class: CommandClass, reason: impl Into<String>) {
        if class > self.class {
            self.class = class;
        }
        let reason = reason.into();
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
    }

    pub(crate) fn add_executable(&mut self, name: &str) {
        if !self.executables.iter().any(|e| e == name) {
            self.executables.push(name.to_string());
        }
    }

    pub(crate) fn add_write(&mut self, target: &str) {
        if !self.writes.iter().any(|w| w == target) {
            self.writes.push(target.to_string());
        }
    }

    /// Fold a nested assessment (an inner script, a wrapped command) into this one.
    pub(crate) fn absorb(&mut self, inner: CommandAssessment) {
        if inner.class > self.class {
            self.class = inner.class;
        }
        for e in &inner.executables {
            self.add_executable(e);
        }
        for w in &inner.writes {
            self.add_write(w);
        }
        self.network |= inner.network;
        for r in inner.reasons {
            if !self.reasons.contains(&r) {
                self.reasons.push(r);
            }
        }
    }
}
