//! Exposure: a turn sees exactly one surface, and neither surface lists the other's tools, for
//! every combination of settings; and the whole table (standard engaged or not) x (request
//! NORMATIVE / IMPLEMENTATION / MIXED) x (web on or off) gives each pass exactly the tools of
//! spec section 5.1.1, over the real coding and normative registrations.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use spear::tools::coding::{self, CODING_TOOLS};
use spear::tools::exposure::{ExposureSettings, Pass, RequestClass, ToolExposurePolicy};
use spear::tools::handler::{Plan, ToolHandler};
use spear::tools::host::SpearHost;
use spear::tools::normative::{self, LOOKUP_TOOLS, StandardsLibrary, WORKSPACE_TOOLS};
use spear::tools::refusal::Refusal;
use spear::tools::registry::{RegistryError, ToolRegistry};
use spear::tools::spec::{Surface, ToolSpec};

/// A handler for specs registered only to be refused.
struct Unused;

impl ToolHandler for Unused {
    fn plan(&self, _: &Value, _: &SpearHost) -> Result<Plan, Refusal> {
        unreachable!("exposure tests never call a tool")
    }
}

const WEB_PAIR: [&str; 2] = ["fetch_url", "search_internet"];

/// The coding tools, the normative runtime's tools and the web pair, as Spear registers them.
fn registry() -> (ToolRegistry, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut r = ToolRegistry::new();
    coding::register(&mut r).unwrap();
    let lib = Arc::new(StandardsLibrary::open_in(dir.path()).unwrap());
    normative::register(&mut r, lib, Default::default()).unwrap();
    spear::tools::web::register(&mut r).unwrap();
    (r, dir)
}

fn set(names: &[&[&str]]) -> BTreeSet<String> {
    names
        .iter()
        .flat_map(|n| n.iter())
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn the_exposure_table_gives_each_pass_exactly_the_specs_tools() {
    let (r, _dir) = registry();
    let coding: &[&str] = &CODING_TOOLS;
    let none: &[&str] = &[];
    let mut rows = 0;
    for engaged in [false, true] {
        for class in RequestClass::ALL {
            for web in [false, true] {
                rows += 1;
                let web_pair: &[&str] = if web { &WEB_PAIR } else { none };
                let want: Vec<(Pass, Surface, BTreeSet<String>)> = match (engaged, class) {
                    (false, _) => vec![(Pass::Implementation, Surface::Coding, set(&[coding]))],
                    (true, RequestClass::Normative) => vec![(
                        Pass::Normative,
                        Surface::Normative,
                        set(&[&LOOKUP_TOOLS, web_pair]),
                    )],
                    (true, RequestClass::Implementation) => vec![(
                        Pass::Implementation,
                        Surface::Normative,
                        set(&[&LOOKUP_TOOLS, &WORKSPACE_TOOLS, web_pair]),
                    )],
                    (true, RequestClass::Mixed) => vec![
                        (
                            Pass::Normative,
                            Surface::Normative,
                            set(&[&LOOKUP_TOOLS, web_pair]),
                        ),
                        (Pass::Implementation, Surface::Coding, set(&[coding])),
                    ],
                };
                let got: Vec<(Pass, Surface, BTreeSet<String>)> =
                    ExposureSettings::passes(engaged, web, class)
                        .into_iter()
                        .map(|(pass, s)| {
                            let v = ToolExposurePolicy::view(&r, &s);
                            (pass, v.surface, v.names)
                        })
                        .collect();
                assert_eq!(got, want, "engaged {engaged}, {class:?}, web {web}");
                for (_, surface, names) in &got {
                    for name in names {
                        let spec = &r.get(name).unwrap().spec;
                        assert_eq!(spec.surface, *surface, "{name} on the wrong surface");
                        if *surface == Surface::Coding {
                            assert!(
                                coding.contains(&name.as_str()),
                                "{name} on the coding surface"
                            );
                        }
                    }
                }
            }
        }
    }
    assert_eq!(rows, 12);
}

#[test]
fn a_purely_normative_turn_is_offered_nothing_that_reaches_a_working_tree() {
    let (r, _dir) = registry();
    for web in [false, true] {
        let s = ExposureSettings {
            standard_engaged: true,
            web_enabled: web,
            purely_normative: true,
        };
        for spec in ToolExposurePolicy::visible(&r, &s) {
            assert!(!spec.reaches_working_tree, "{} reaches the tree", spec.name);
        }
    }
}

#[test]
fn neither_surface_lists_the_others_tools_in_any_combination() {
    let (r, _dir) = registry();
    let mut seen = 0;
    for s in ExposureSettings::all() {
        seen += 1;
        let view = ToolExposurePolicy::view(&r, &s);
        assert!(!view.names.is_empty(), "{s:?} offers nothing");
        for spec in r.specs() {
            if view.offers(&spec.name) {
                assert_eq!(spec.surface, view.surface, "{s:?} lists {}", spec.name);
            }
        }
        if s.standard_engaged {
            assert!(CODING_TOOLS.iter().all(|c| !view.offers(c)), "{s:?}");
            assert_eq!(view.offers("search_internet"), s.web_enabled, "{s:?}");
            assert_eq!(
                view.offers("workspace.terminal"),
                !s.purely_normative,
                "{s:?}"
            );
            assert!(view.offers("standard.search"));
        } else {
            let mut c = CODING_TOOLS.to_vec();
            c.sort();
            assert_eq!(view.names.iter().map(String::as_str).collect::<Vec<_>>(), c);
        }
    }
    assert_eq!(seen, 8);
}

#[test]
fn every_wire_name_is_in_the_openai_alphabet_and_names_one_tool() {
    let (r, _dir) = registry();
    let re = regex::Regex::new(r"^[a-zA-Z0-9_-]{1,64}$").unwrap();
    let mut wires = BTreeSet::new();
    for spec in r.specs() {
        let wire = spec.wire_name();
        assert!(re.is_match(&wire), "{wire}");
        assert!(wires.insert(wire.clone()), "{wire} twice");
        assert_eq!(r.get(&wire).unwrap().spec.name, spec.name);
        assert_eq!(spec.to_function()["function"]["name"], wire.as_str());
    }
    assert_eq!(r.get("standard_read").unwrap().spec.name, "standard.read");
}

#[test]
fn names_are_unique_in_the_registry_even_on_the_wire() {
    let (mut r, _dir) = registry();
    let again = ToolSpec::new("terminal", "dup", json!({}), Surface::Normative);
    assert_eq!(
        r.register(again, Arc::new(Unused)).unwrap_err(),
        RegistryError::Duplicate("terminal".into())
    );
    // `standard_list` would be the same function on the wire as `standard.list`.
    let clash = ToolSpec::new("standard_list", "dup", json!({}), Surface::Normative);
    assert_eq!(
        r.register(clash, Arc::new(Unused)).unwrap_err(),
        RegistryError::Duplicate("standard_list".into())
    );
}
