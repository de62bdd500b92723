//! `ToolExposurePolicy`: the model-visible view of the registry for one turn. A turn sees exactly
//! one surface: the coding core's tools when no standard is engaged, the normative runtime's when
//! one is (without the web pair unless the web is enabled, and without working-tree tools for a
//! purely normative question). Neither surface ever lists the other's tools.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::tools::registry::ToolRegistry;
use crate::tools::spec::{Surface, ToolSpec};

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
    /// Whether a call of this turn may write the working tree at all. False for a purely
    /// normative question, so an offered tool's optional write (fetch_url's `save_as`) is
    /// refused there as the working-tree tools are withheld.
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
            surface: settings.surface(),
            working_tree: !(settings.standard_engaged && settings.purely_normative),
            names: Self::visible(registry, settings)
                .into_iter()
                .map(|s| s.name.clone())
                .collect(),
        }
    }
}
