//! The decision layer's vocabulary: execution modes, capabilities, what each mode grants, and the
//! single result type every tool returns. A mode's grants are fixed data: `CapabilityPolicy::for_mode`
//! is the only way to learn them, and nothing can change them after the fact.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// How much Spear may do without asking the person at the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ExecutionMode {
    /// Reads only. Nothing that mutates, runs complex shell or reaches the network.
    Safe,
    /// Reads freely; asks before mutating, complex shell or network work.
    Ask,
    /// Does what the session allows without asking. DANGEROUS is still refused.
    Auto,
}

impl ExecutionMode {
    pub const ALL: [ExecutionMode; 3] =
        [ExecutionMode::Safe, ExecutionMode::Ask, ExecutionMode::Auto];

    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::Safe => "SAFE",
            ExecutionMode::Ask => "ASK",
            ExecutionMode::Auto => "AUTO",
        }
    }

    /// How little the mode lets run without a person: SAFE is the strictest. A change toward a
    /// stricter mode narrows what calls may do; one toward a laxer mode widens it.
    pub fn strictness(self) -> u8 {
        match self {
            ExecutionMode::Auto => 0,
            ExecutionMode::Ask => 1,
            ExecutionMode::Safe => 2,
        }
    }
}

impl fmt::Display for ExecutionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is none of SAFE, ASK or AUTO.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown execution mode {given:?}: expected one of safe, ask, auto (any case)")]
pub struct ModeParseError {
    pub given: String,
}

impl FromStr for ExecutionMode {
    type Err = ModeParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "safe" => Ok(ExecutionMode::Safe),
            "ask" => Ok(ExecutionMode::Ask),
            "auto" => Ok(ExecutionMode::Auto),
            _ => Err(ModeParseError {
                given: s.to_string(),
            }),
        }
    }
}

/// Config files name modes in any case, like the command line does, with the same error.
impl<'de> Deserialize<'de> for ExecutionMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Something a tool call may need. DANGEROUS work is not a capability: no mode grants it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    WorkspaceRead,
    WorkspaceWrite,
    ShellComplex,
    Network,
}

impl Capability {
    pub const ALL: [Capability; 4] = [
        Capability::WorkspaceRead,
        Capability::WorkspaceWrite,
        Capability::ShellComplex,
        Capability::Network,
    ];

    const fn bit(self) -> u8 {
        match self {
            Capability::WorkspaceRead => 1,
            Capability::WorkspaceWrite => 2,
            Capability::ShellComplex => 4,
            Capability::Network => 8,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Capability::WorkspaceRead => "workspace_read",
            Capability::WorkspaceWrite => "workspace_write",
            Capability::ShellComplex => "shell_complex",
            Capability::Network => "network",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of capabilities (a bit set, so it is `Copy` and cannot hold duplicates).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CapabilitySet(u8);

impl CapabilitySet {
    pub const EMPTY: CapabilitySet = CapabilitySet(0);

    pub fn of(caps: &[Capability]) -> Self {
        Self::of_const(caps)
    }

    /// As [`CapabilitySet::of`], usable in a constant.
    pub const fn of_const(caps: &[Capability]) -> Self {
        let mut bits = 0;
        let mut i = 0;
        while i < caps.len() {
            bits |= caps[i].bit();
            i += 1;
        }
        CapabilitySet(bits)
    }

    #[must_use]
    pub fn with(self, cap: Capability) -> Self {
        CapabilitySet(self.0 | cap.bit())
    }

    pub fn contains(self, cap: Capability) -> bool {
        self.0 & cap.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Every capability of either.
    #[must_use]
    pub fn union(self, other: CapabilitySet) -> CapabilitySet {
        CapabilitySet(self.0 | other.0)
    }

    /// Every capability of `self` is in `other`.
    pub fn within(self, other: CapabilitySet) -> bool {
        self.0 & !other.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL
            .into_iter()
            .filter(move |c| self.contains(*c))
    }
}

impl fmt::Debug for CapabilitySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for CapabilitySet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for CapabilitySet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let caps = Vec::<Capability>::deserialize(d)?;
        Ok(CapabilitySet::of(&caps))
    }
}

/// What a mode does with a capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    Granted,
    /// Granted only after the person confirms.
    Ask,
    Refused,
}

/// The immutable table of what one mode grants. Built only by [`CapabilityPolicy::for_mode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapabilityPolicy {
    mode: ExecutionMode,
}

impl CapabilityPolicy {
    /// The only way to ask what a mode grants (DESIGN.md, "Modes and capabilities").
    pub fn for_mode(mode: ExecutionMode) -> Self {
        CapabilityPolicy { mode }
    }

    pub fn mode(&self) -> ExecutionMode {
        self.mode
    }

    /// The grant for one capability. Network is further limited by the session setting, which
    /// the caller applies: a mode never grants network to a session that has it switched off.
    pub fn grant(&self, cap: Capability) -> Grant {
        use Capability::*;
        match (self.mode, cap) {
            (_, WorkspaceRead) => Grant::Granted,
            (ExecutionMode::Safe, _) => Grant::Refused,
            (ExecutionMode::Ask, _) => Grant::Ask,
            (ExecutionMode::Auto, WorkspaceWrite | ShellComplex | Network) => Grant::Granted,
        }
    }
}

/// The outcome of a tool call, as a status word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Denied,
    Cancelled,
    InvalidPath,
    NotFound,
    Timeout,
    Failed,
}

impl ToolStatus {
    /// Every status, `Ok` first.
    pub const ALL: [ToolStatus; 7] = [
        ToolStatus::Ok,
        ToolStatus::Denied,
        ToolStatus::Cancelled,
        ToolStatus::InvalidPath,
        ToolStatus::NotFound,
        ToolStatus::Timeout,
        ToolStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Ok => "ok",
            ToolStatus::Denied => "denied",
            ToolStatus::Cancelled => "cancelled",
            ToolStatus::InvalidPath => "invalid_path",
            ToolStatus::NotFound => "not_found",
            ToolStatus::Timeout => "timeout",
            ToolStatus::Failed => "failed",
        }
    }
}

impl fmt::Display for ToolStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a command changed in the workspace, by kind: workspace-relative paths, each list
/// sorted. `incomplete` says why changes may be missing (the snapshot's bound was reached, a
/// directory could not be listed); absent, the lists are the whole change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceChanges {
    #[serde(default)]
    pub created: Vec<String>,
    #[serde(default)]
    pub modified: Vec<String>,
    #[serde(default)]
    pub deleted: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

impl WorkspaceChanges {
    /// Every changed path, sorted (what `ToolResult::changed_paths` lists).
    pub fn all(&self) -> Vec<String> {
        let mut all: Vec<String> = [&self.created, &self.modified, &self.deleted]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        all.sort();
        all
    }
}

/// The single result type of the harness. Every status but `ok` carries a human `reason`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub status: ToolStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub changed_paths: Vec<String>,
    /// For a command that ran with workspace write: the same paths by kind, and whether the
    /// comparison could see everything. `None` when nothing was compared (a read-only run).
    /// Boxed: results travel in `Err` through the tool layer and should stay small there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Box<WorkspaceChanges>>,
    /// For a command that ran on the proxied network path: every connection it asked for.
    /// Boxed, as `changes` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<Box<Vec<crate::harness::egress::NetConnection>>>,
}

impl ToolResult {
    pub fn ok(stdout: impl Into<String>) -> Self {
        ToolResult {
            status: ToolStatus::Ok,
            reason: None,
            stdout: stdout.into(),
            stderr: String::new(),
            exit_code: None,
            changed_paths: Vec::new(),
            changes: None,
            connections: None,
        }
    }

    /// A non-ok result. `status` should not be `Ok`; a reason is what makes a refusal readable.
    pub fn refused(status: ToolStatus, reason: impl Into<String>) -> Self {
        ToolResult {
            status,
            reason: Some(reason.into()),
            stdout: String::new(),
            stderr: String::new(),
            exit_code: None,
            changed_paths: Vec::new(),
            changes: None,
            connections: None,
        }
    }

    pub fn denied(reason: impl Into<String>) -> Self {
        Self::refused(ToolStatus::Denied, reason)
    }

    pub fn cancelled(reason: impl Into<String>) -> Self {
        Self::refused(ToolStatus::Cancelled, reason)
    }

    pub fn failed(reason: impl Into<String>) -> Self {
        Self::refused(ToolStatus::Failed, reason)
    }

    pub fn is_ok(&self) -> bool {
        self.status == ToolStatus::Ok
    }

    /// The connections a command asked the egress proxy for (none off that path).
    pub fn connections(&self) -> &[crate::harness::egress::NetConnection] {
        self.connections.as_deref().map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_in_any_case_and_reject_the_rest() {
        assert_eq!("safe".parse::<ExecutionMode>(), Ok(ExecutionMode::Safe));
        assert_eq!("ASK".parse::<ExecutionMode>(), Ok(ExecutionMode::Ask));
        assert_eq!(" Auto ".parse::<ExecutionMode>(), Ok(ExecutionMode::Auto));
        let err = "yolo".parse::<ExecutionMode>().unwrap_err();
        assert!(err.to_string().contains("\"yolo\""));
        assert!(err.to_string().contains("safe, ask, auto"));
        assert!("".parse::<ExecutionMode>().is_err());
    }

    #[test]
    fn modes_deserialise_from_config_in_any_case() {
        #[derive(Deserialize)]
        struct Config {
            mode: ExecutionMode,
        }
        let c: Config = toml::from_str("mode = \"Ask\"").unwrap();
        assert_eq!(c.mode, ExecutionMode::Ask);
        let err = toml::from_str::<Config>("mode = \"yolo\"")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("expected one of safe, ask, auto"), "{err}");
        assert_eq!(
            serde_json::to_string(&ExecutionMode::Auto).unwrap(),
            "\"AUTO\""
        );
    }

    #[test]
    fn the_mode_table_matches_the_design() {
        use Capability::*;
        use Grant::*;
        let table = [
            (ExecutionMode::Safe, [Granted, Refused, Refused, Refused]),
            (ExecutionMode::Ask, [Granted, Ask, Ask, Ask]),
            (ExecutionMode::Auto, [Granted, Granted, Granted, Granted]),
        ];
        for (mode, grants) in table {
            let policy = CapabilityPolicy::for_mode(mode);
            for (cap, grant) in [WorkspaceRead, WorkspaceWrite, ShellComplex, Network]
                .iter()
                .zip(grants)
            {
                assert_eq!(policy.grant(*cap), grant, "{mode} {cap}");
            }
        }
    }

    #[test]
    fn capability_sets_hold_each_capability_once() {
        let set = CapabilitySet::of(&[
            Capability::Network,
            Capability::Network,
            Capability::WorkspaceRead,
        ]);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![Capability::WorkspaceRead, Capability::Network]
        );
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(json, r#"["workspace_read","network"]"#);
        assert_eq!(serde_json::from_str::<CapabilitySet>(&json).unwrap(), set);
    }

    #[test]
    fn tool_results_serialise_with_wire_names() {
        let r = ToolResult::refused(ToolStatus::InvalidPath, "outside");
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(v["status"], "invalid_path");
        assert_eq!(v["reason"], "outside");
        let back: ToolResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
        for s in ToolStatus::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
