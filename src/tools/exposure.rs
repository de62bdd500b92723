//! `ToolExposurePolicy`: the model-visible view of the registry for one turn. A turn sees exactly
//! one surface: the coding core's tools when no standard is engaged, the normative runtime's when
//! one is (without the web pair unless the web is enabled, and without working-tree tools for a
//! purely normative question). Neither surface ever lists the other's tools.
//!
//! With a standard engaged, a request's class decides its passes (`ExposureSettings::passes`):
//! NORMATIVE is one normative pass with no working-tree tool; IMPLEMENTATION one pass on the
//! whole normative surface (its lookups and its own file and command tools); MIXED a normative
//! pass, then an implementation pass on the coding core's surface.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::tools::registry::ToolRegistry;
use crate::tools::spec::{Surface, ToolSpec};

/// What a request asks for, when a standard is engaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RequestClass {
    /// What the standard requires: answered from the standard alone.
    Normative,
    /// Change the code.
    Implementation,
    /// Both: what the standard requires, then the change.
    Mixed,
}

impl RequestClass {
    pub const ALL: [RequestClass; 3] = [
        RequestClass::Normative,
        RequestClass::Implementation,
        RequestClass::Mixed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RequestClass::Normative => "NORMATIVE",
            RequestClass::Implementation => "IMPLEMENTATION",
            RequestClass::Mixed => "MIXED",
        }
    }
}

/// One pass of a request over one surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pass {
    /// The normative runtime answers what the standard requires.
    Normative,
    /// The change is made (on the coding core's surface after a normative pass).
    Implementation,
}

/// What the exposure depends on, for one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ExposureSettings {
    /// A standard is engaged for this session (the normative runtime answers).
    pub standard_engaged: bool,
    /// The session has the web switched on.
    pub web_enabled: bool,
    /// The turn asks a purely normative question: nothing that reaches a working tree.
    pub purely_normative: bool,
}

impl ExposureSettings {
    /// Every combination, for tests and for `spear tool --list`-style audits of the policy.
    pub fn all() -> impl Iterator<Item = ExposureSettings> {
        (0u8..8).map(|bits| ExposureSettings {
            standard_engaged: bits & 1 != 0,
            web_enabled: bits & 2 != 0,
            purely_normative: bits & 4 != 0,
        })
    }

    /// The passes of one request and each pass's settings. No standard engaged: one coding
    /// pass, whatever the class.
    pub fn passes(
        standard_engaged: bool,
        web_enabled: bool,
        class: RequestClass,
    ) -> Vec<(Pass, ExposureSettings)> {
        let normative = |purely_normative| ExposureSettings {
            standard_engaged: true,
            web_enabled,
            purely_normative,
        };
        let coding = ExposureSettings {
            standard_engaged: false,
            web_enabled,
            purely_normative: false,
        };
        if !standard_engaged {
            return vec![(Pass::Implementation, coding)];
        }
        match class {
            RequestClass::Normative => vec![(Pass::Normative, normative(true))],
            RequestClass::Implementation => vec![(Pass::Implementation, normative(false))],
            RequestClass::Mixed => vec![
                (Pass::Normative, normative(true)),
                (Pass::Implementation, coding),
            ],
        }
    }

    pub fn surface(&self) -> Surface {
        if self.standard_engaged {
            Surface::Normative
        } else {
            Surface::Coding
        }
    }
}

/// The tools one turn may see and call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolView {
    pub surface: Surface,
    pub names: BTreeSet<String>,
    /// Calls may touch the working tree. False for a purely normative question: the router
    /// then refuses any call that names a workspace path or a command, whichever tool makes it
    /// (`fetch_url` with `save_as`, say), so the promise does not rest on the tool list alone.
    pub working_tree: bool,
}

impl ToolView {
    pub fn offers(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// Decides a turn's view. Stateless: the settings say everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolExposurePolicy;

impl ToolExposurePolicy {
    /// Whether `spec` is offered under `settings`.
    pub fn offers(spec: &ToolSpec, settings: &ExposureSettings) -> bool {
        let surface = settings.surface();
        if spec.surface != surface {
            return false;
        }
        match surface {
            // The coding core reaches capabilities through host commands, never extra tools.
            Surface::Coding => !spec.needs_web,
            Surface::Normative => {
                (settings.web_enabled || !spec.needs_web)
                    && !(settings.purely_normative && spec.reaches_working_tree)
            }
        }
    }

    /// The specs offered to a turn, in name order.
    pub fn visible<'r>(
        registry: &'r ToolRegistry,
        settings: &ExposureSettings,
    ) -> Vec<&'r ToolSpec> {
        registry
            .specs()
            .filter(|s| Self::offers(s, settings))
            .collect()
    }

    pub fn view(registry: &ToolRegistry, settings: &ExposureSettings) -> ToolView {
        ToolView {
            working_tree: !(settings.standard_engaged && settings.purely_normative),
            surface: settings.surface(),
            names: Self::visible(registry, settings)
                .into_iter()
                .map(|s| s.name.clone())
                .collect(),
        }
    }
}
