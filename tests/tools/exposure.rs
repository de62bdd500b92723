//! Exposure: a turn sees exactly one surface, and neither surface lists the other's tools, for
//! every combination of settings.

use std::sync::Arc;

use serde_json::{Value, json};
use spear::tools::coding::{self, CODING_TOOLS};
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::handler::{Plan, Refusal, ToolHandler};
use spear::tools::host::SpearHost;
use spear::tools::registry::{RegistryError, ToolRegistry};
use spear::tools::spec::{Surface, ToolSpec};

struct Unused;

impl ToolHandler for Unused {
    fn plan(&self, _: &Value, _: &SpearHost) -> Result<Plan, Refusal> {
        unreachable!("exposure tests never call a tool")
    }
}

/// The coding tools plus stand-ins for the normative runtime's vocabulary.
fn registry() -> ToolRegistry {
    let mut r = ToolRegistry::new();
    coding::register(&mut r).unwrap();
    let n = |name: &str| {
        ToolSpec::new(
            name,
            "normative",
            json!({"type": "object"}),
            Surface::Normative,
        )
    };
    for spec in [
        n("standard.lookup").read_only().off_the_working_tree(),
        n("search_corpus").read_only().off_the_working_tree(),
        n("normative.read_file").read_only(),
        n("normative.command"),
        n("search_internet")
            .read_only()
            .off_the_working_tree()
            .needs_web(),
        n("fetch_url").off_the_working_tree().needs_web(),
    ] {
        r.register(spec, Arc::new(Unused)).unwrap();
    }
    r
}

#[test]
fn neither_surface_lists_the_others_tools_in_any_combination() {
    let r = registry();
    let mut seen = 0;
    for s in ExposureSettings::all() {
        seen += 1;
        let view = ToolExposurePolicy::view(&r, &s);
        let names: Vec<&str> = view.names.iter().map(String::as_str).collect();
        assert!(!names.is_empty(), "{s:?} offers nothing");
        for spec in r.specs() {
            if view.offers(&spec.name) {
                assert_eq!(
                    spec.surface, view.surface,
                    "{s:?} lists {} from the other surface",
                    spec.name
                );
            }
        }
        if s.standard_engaged {
            assert!(
                CODING_TOOLS.iter().all(|c| !view.offers(c)),
                "{s:?}: {names:?}"
            );
            assert_eq!(view.offers("search_internet"), s.web_enabled, "{s:?}");
            assert_eq!(
                view.offers("normative.command"),
                !s.purely_normative,
                "{s:?}"
            );
            assert!(view.offers("standard.lookup"));
        } else {
            assert_eq!(
                names,
                {
                    let mut c = CODING_TOOLS.to_vec();
                    c.sort();
                    c
                },
                "{s:?}"
            );
        }
    }
    assert_eq!(seen, 8);
}

#[test]
fn names_are_unique_in_the_registry() {
    let mut r = registry();
    let again = ToolSpec::new("terminal", "dup", json!({}), Surface::Normative);
    assert_eq!(
        r.register(again, Arc::new(Unused)).unwrap_err(),
        RegistryError::Duplicate("terminal".into())
    );
}
