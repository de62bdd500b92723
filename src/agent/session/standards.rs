//! `/standard`: list the standards library, engage one, or none. Each answers with the one
//! event the person reads. Invariant: the engaged standard changes only when the library could
//! load the one named (a name it cannot load leaves the engaged one as it was).

use std::sync::Arc;

use crate::agent::session::ops::SessionEvent;
use crate::tools::normative::{EngagedStandard, StandardsLibrary};

/// The standards library and the engaged standard the router's normative tools share.
pub struct Standards {
    pub library: Arc<StandardsLibrary>,
    pub engaged: EngagedStandard,
}

/// The library's standards, the engaged one marked.
pub(super) fn list(standards: &Standards) -> SessionEvent {
    match standards.library.list() {
        Ok(list) if list.is_empty() => SessionEvent::Note(
            "the standards library is empty: `spear standard add FILE|URL` adds one".into(),
        ),
        Ok(list) => {
            let current = standards.engaged.get();
            let names: Vec<String> = list
                .iter()
                .map(|m| {
                    let mark = if current.as_deref() == Some(m.name.as_str()) {
                        " (engaged)"
                    } else {
                        ""
                    };
                    format!("{}{mark}", m.name)
                })
                .collect();
            SessionEvent::Note(format!(
                "standards: {}; /standard NAME engages one",
                names.join(", ")
            ))
        }
        Err(e) => SessionEvent::Failed(format!("/standard: {e}")),
    }
}

/// `/standard NAME` or `/standard off`.
pub(super) fn engage(standards: &Standards, arg: &str) -> SessionEvent {
    if arg == "off" {
        standards.engaged.set(None);
        return SessionEvent::StandardChanged {
            name: None,
            note: "no standard engaged: the coding tools answer the next requests".into(),
        };
    }
    match standards.library.load(arg) {
        Ok(s) => {
            standards.engaged.set(Some(arg.to_string()));
            SessionEvent::StandardChanged {
                name: Some(arg.to_string()),
                note: format!(
                    "{arg} engaged ({} units): each request is classified NORMATIVE, \
                     IMPLEMENTATION or MIXED and answered with the normative tools",
                    s.meta.units
                ),
            }
        }
        Err(e) => SessionEvent::Failed(format!("/standard {arg}: {e}")),
    }
}
