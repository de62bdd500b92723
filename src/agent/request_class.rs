//! Classifying a request when a standard is engaged: NORMATIVE (what the standard requires),
//! IMPLEMENTATION (change the code) or MIXED (both), by a weighted table of cues first and a
//! short model call only when the table is unsure. Invariant: every cue carries examples it must
//! match, checked by a test, so a rule cannot rot silently; and a request the table and the
//! model both fail to place is MIXED, which runs both passes, so nothing asked for is dropped.
//!
//! The decision (also in docs/standards.md): with N the normative weight and I the
//! implementation weight of the cues a request matches, it is MIXED when N >= 3 and I >= 3,
//! NORMATIVE when N >= 3 and I <= 1, IMPLEMENTATION when I >= 3 and N <= 1, and unsure otherwise.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::tools::exposure::RequestClass;

/// What a cue points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Leaning {
    Normative,
    Implementation,
}

/// One row of the table.
pub struct Cue {
    pub name: &'static str,
    pub leaning: Leaning,
    pub weight: u32,
    /// Case-insensitive regex.
    pub pattern: &'static str,
    /// Requests this cue must match.
    pub examples: &'static [&'static str],
}

/// A class is certain from this weight on.
pub const SURE: u32 = 3;
/// The other side may weigh this much and the class is still certain.
pub const TOLERATED: u32 = 1;

use Leaning::{Implementation as I, Normative as N};

/// The cues, strongest first within each side.
pub const CUES: &[Cue] = &[
    Cue {
        name: "asks_what_the_standard_says",
        leaning: N,
        weight: 3,
        pattern: r"\bwhat (?:does|do|did)\b.{0,40}\b(?:standard|norm|code|spec(?:ification)?|regulation|rfc|clause|section)s?\b.{0,20}\b(?:say|require|mandate|specify|allow|permit|define)",
        examples: &[
            "What does the standard say about fire doors?",
            "what do ISO 9001 clauses require for audits",
        ],
    },
    Cue {
        name: "clause_reference",
        leaning: N,
        weight: 3,
        pattern: r"(?:\b(?:clause|section|annex|paragraph|article)\s*[a-z]?\d|§\s*\d|\b\d+\.\d+(?:\.\d+)*\b)",
        examples: &["Quote clause 4.2", "see § 5.1", "per 4.2.1"],
    },
    Cue {
        name: "mentions_clauses",
        leaning: N,
        weight: 2,
        pattern: r"\b(?:clauses|provisions?|annex(?:es)?|normative)\b",
        examples: &["Which clauses cover lighting", "the provisions on exits"],
    },
    Cue {
        name: "obligation_words",
        leaning: N,
        weight: 2,
        pattern: r"\b(?:require[sd]?|requirements?|mandatory|permitted|prohibited|complian(?:t|ce)|conform(?:s|ity|ance)?|obligat\w*)\b",
        examples: &["Is a handrail required?", "compliance with the norm"],
    },
    Cue {
        name: "according_to",
        leaning: N,
        weight: 2,
        pattern: r"\b(?:according to|as per|under the|in the standard)\b",
        examples: &["according to the code, how wide", "as per the norm"],
    },
    Cue {
        name: "explain_or_quote",
        leaning: N,
        weight: 2,
        pattern: r"\b(?:explain|summari[sz]e|quote|cite|interpret)\b",
        examples: &["Summarise the scope", "cite the clause"],
    },
    Cue {
        name: "names_a_standard",
        leaning: N,
        weight: 1,
        pattern: r"\b(?:standard|norm|regulation|rfc|iso|din|en|iec|ieee|building code)\b",
        examples: &["the standard", "RFC 9110", "ISO"],
    },
    Cue {
        name: "limit_words",
        leaning: N,
        weight: 1,
        pattern: r"\b(?:minimum|maximum|at least|at most|tolerance|threshold|limit)\b",
        examples: &["the minimum width", "at least 3"],
    },
    Cue {
        name: "question",
        leaning: N,
        weight: 1,
        pattern: r"(?:^\s*(?:what|which|when|why|how|is|are|does|do|can|may|must|shall)\b|\?\s*$)",
        examples: &["Which doors?", "is it allowed"],
    },
    Cue {
        name: "names_a_source_file",
        leaning: I,
        weight: 3,
        pattern: r"\b[\w./-]+\.(?:rs|py|ts|tsx|js|go|c|h|cc|cpp|hpp|java|kt|rb|toml|json|ya?ml|sh|sql)\b",
        examples: &["fix src/door.rs", "update config.toml"],
    },
    Cue {
        name: "code_change_verbs",
        leaning: I,
        weight: 2,
        pattern: r"\b(?:implement|refactor|fix|patch|rename|debug|enforce|validate|migrate)\b",
        examples: &["Implement the check", "fix the bug", "enforce the limit"],
    },
    Cue {
        name: "edit_verbs",
        leaning: I,
        weight: 1,
        pattern: r"\b(?:add|write|create|delete|remove|update|change|modify|edit|make)\b",
        examples: &["add a test", "make it faster"],
    },
    Cue {
        name: "code_nouns",
        leaning: I,
        weight: 1,
        pattern: r"\b(?:function|method|module|struct|class|crate|endpoint|tests?|unit test|bug|compiler?|build|commit|codebase|repo(?:sitory)?|our code|the code)\b",
        examples: &["the function", "a unit test", "in our code"],
    },
    Cue {
        name: "code_span",
        leaning: I,
        weight: 1,
        pattern: r"`[^`]+`",
        examples: &["rename `foo`"],
    },
    Cue {
        name: "run_the_build",
        leaning: I,
        weight: 2,
        pattern: r"\brun (?:the )?(?:tests|test suite|build|cargo|make|linter)\b",
        examples: &["run the tests", "run cargo"],
    },
];

static COMPILED: LazyLock<Vec<Option<Regex>>> = LazyLock::new(|| {
    CUES.iter()
        .map(|c| Regex::new(&format!("(?i){}", c.pattern)).ok())
        .collect()
});

/// How a request was classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassifiedBy {
    Rules,
    Model,
    /// Neither the rules nor the model could say: MIXED, so both passes run.
    Fallback,
}

/// What the table says of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleVerdict {
    /// `None` when the table is unsure.
    pub class: Option<RequestClass>,
    pub normative: u32,
    pub implementation: u32,
    /// Names of the cues that matched.
    pub cues: Vec<&'static str>,
}

/// Score `request` against the table.
pub fn by_rules(request: &str) -> RuleVerdict {
    let mut v = RuleVerdict {
        class: None,
        normative: 0,
        implementation: 0,
        cues: Vec::new(),
    };
    for (cue, re) in CUES.iter().zip(COMPILED.iter()) {
        if re.as_ref().is_some_and(|r| r.is_match(request)) {
            v.cues.push(cue.name);
            match cue.leaning {
                N => v.normative += cue.weight,
                I => v.implementation += cue.weight,
            }
        }
    }
    v.class = match (v.normative, v.implementation) {
        (n, i) if n >= SURE && i >= SURE => Some(RequestClass::Mixed),
        (n, i) if n >= SURE && i <= TOLERATED => Some(RequestClass::Normative),
        (n, i) if i >= SURE && n <= TOLERATED => Some(RequestClass::Implementation),
        _ => None,
    };
    v
}

/// The class a model's short answer names (the first of the three words it contains).
pub fn parse_model_answer(answer: &str) -> Option<RequestClass> {
    let upper = answer.to_uppercase();
    RequestClass::ALL
        .iter()
        .filter_map(|c| upper.find(c.as_str()).map(|at| (at, *c)))
        .min_by_key(|(at, _)| *at)
        .map(|(_, c)| c)
}

/// The instruction of the short model call.
pub fn model_prompt(standard: &str) -> String {
    format!(
        "A standard named {standard} is engaged. Classify the user's request. Answer with exactly \
         one word: NORMATIVE if it only asks what the standard requires, IMPLEMENTATION if it only \
         asks to change code, MIXED if it asks both."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cue_compiles_and_matches_its_examples() {
        for (cue, re) in CUES.iter().zip(COMPILED.iter()) {
            let re = re
                .as_ref()
                .unwrap_or_else(|| panic!("{} does not compile", cue.name));
            assert!(!cue.examples.is_empty(), "{} has no examples", cue.name);
            for ex in cue.examples {
                assert!(re.is_match(ex), "{} must match {ex:?}", cue.name);
            }
        }
    }

    #[test]
    fn the_table_classifies_requests_as_expected() {
        use RequestClass::{Implementation as Impl, Mixed, Normative as Norm};
        let table: &[(&str, Option<RequestClass>)] = &[
            (
                "What does the standard say about fire door closing times?",
                Some(Norm),
            ),
            (
                "Is a handrail required on both sides of a stair?",
                Some(Norm),
            ),
            ("Quote clause 4.2.1 and explain it", Some(Norm)),
            (
                "According to the norm, what is the minimum corridor width?",
                Some(Norm),
            ),
            ("Which clauses cover emergency lighting?", Some(Norm)),
            ("Fix the off-by-one error in src/parse.rs", Some(Impl)),
            ("Refactor the `Door` struct into its own module", Some(Impl)),
            (
                "Add a unit test for the parser and run the tests",
                Some(Impl),
            ),
            (
                "Rename the function load_config to read_config in config.py",
                Some(Impl),
            ),
            (
                "Make src/door.rs enforce the closing time that clause 4.2 requires",
                Some(Mixed),
            ),
            (
                "What does the standard require for exit signs? Then implement the check in signs.py",
                Some(Mixed),
            ),
            (
                "Update validate.rs so it is compliant with § 5.1",
                Some(Mixed),
            ),
            // Too little to go on: the model is asked.
            ("doors", None),
            ("help me with the exits", None),
            ("change the door rule", None),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter_map(|(request, want)| {
                let v = by_rules(request);
                (v.class != *want).then(|| format!("{request:?}: want {want:?}, got {v:?}"))
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn model_answers_are_read_by_their_first_class_word() {
        assert_eq!(
            parse_model_answer("NORMATIVE"),
            Some(RequestClass::Normative)
        );
        assert_eq!(parse_model_answer(" mixed.\n"), Some(RequestClass::Mixed));
        assert_eq!(
            parse_model_answer("Implementation (not mixed)"),
            Some(RequestClass::Implementation)
        );
        assert_eq!(parse_model_answer("I cannot tell"), None);
    }
}
