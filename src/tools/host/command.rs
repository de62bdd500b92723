//! Recognising the host commands (`spear-capability`, `spear-knowledge`) in what the model typed
//! as a terminal command, on the real bash parse. A host command typed alone is answered by
//! SpearHost and never reaches a shell; one inside a pipeline, list, substitution, redirection or
//! any other shell syntax (or named by a nested shell) is refused with an explanation.

use crate::harness::command_policy::CommandAssessment;
use crate::harness::shell;

/// The host commands SpearHost answers itself.
pub const HOST_COMMANDS: [&str; 2] = ["spear-capability", "spear-knowledge"];

/// A host command typed alone: its name and static arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCommand {
    pub name: &'static str,
    pub args: Vec<String>,
}

/// What a terminal command is, as far as host commands go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostCommandUse {
    /// No host command is named: an ordinary command for the sandbox.
    None,
    /// A host command alone: SpearHost answers it.
    Alone(HostCommand),
    /// A host command with shell syntax around it: refused, with the explanation.
    Embedded(String),
}

fn host_name(word: &str) -> Option<&'static str> {
    let base = word.rsplit('/').next().unwrap_or(word);
    HOST_COMMANDS.into_iter().find(|h| *h == base)
}

/// Decide how `source` uses host commands. `assessment` is the classifier's verdict on it, which
/// sees through nested shells (`bash -c 'spear-knowledge …'`).
pub fn detect(source: &str, assessment: &CommandAssessment) -> HostCommandUse {
    let facts = shell::parse(source);
    let named = facts
        .commands
        .iter()
        .find_map(|c| host_name(&c.name.value))
        .or_else(|| assessment.executables.iter().find_map(|e| host_name(e)));
    let Some(name) = named else {
        return HostCommandUse::None;
    };
    let alone = facts.sole_command().is_some_and(|only| {
        let words_static = std::iter::once(&only.name)
            .chain(&only.args)
            .all(|w| !(w.dynamic || w.expands || w.glob || w.brace || w.tilde));
        source.get(only.span.clone()).map(str::trim) == Some(source.trim())
            && host_name(&only.name.value).is_some()
            && words_static
    });
    if alone && let [only] = facts.commands.as_slice() {
        return HostCommandUse::Alone(HostCommand {
            name,
            args: only.args.iter().map(|w| w.value.clone()).collect(),
        });
    }
    HostCommandUse::Embedded(format!(
        "`{name}` is answered by Spear itself and never handed to a shell, so it must be typed \
         alone with plain arguments (for example `{name} {}`), not inside a pipeline, a list, a \
         substitution, a redirection, a nested shell or behind variables. Run it on its own and \
         use its answer in your next call.",
        if name == "spear-capability" {
            "list"
        } else {
            "search QUERY"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::command_policy::CommandPolicy;

    fn use_of(src: &str) -> HostCommandUse {
        detect(src, &CommandPolicy::default().classify(src))
    }

    #[test]
    fn alone_is_answered_and_embedded_is_refused() {
        assert_eq!(
            use_of("  spear-capability describe 'search_internet' "),
            HostCommandUse::Alone(HostCommand {
                name: "spear-capability",
                args: vec!["describe".into(), "search_internet".into()]
            })
        );
        assert!(matches!(
            use_of("./spear-knowledge search x"),
            HostCommandUse::Alone(_)
        ));
        for src in [
            "spear-capability list | cat",
            "spear-capability list > out",
            "spear-capability list; ls",
            "spear-capability list &",
            "echo $(spear-knowledge search x)",
            "X=1 spear-capability list",
            "bash -c 'spear-capability list'",
            "spear-knowledge search $HOME",
            "(spear-capability list)",
        ] {
            assert!(matches!(use_of(src), HostCommandUse::Embedded(_)), "{src}");
        }
        assert_eq!(use_of("ls -la"), HostCommandUse::None);
    }
}
