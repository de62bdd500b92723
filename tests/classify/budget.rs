//! Issue 10, item 3: one command killed Spear (brace sequences overflowing i64), and nothing
//! bounded what classifying one input may cost. These tests count what a classification spends
//! against its budget; none of them times anything.

use spear::harness::command_policy::{CommandClass, CommandPolicy};
use spear::harness::shell::{Budget, BudgetLimits, Resource};

const ALL: [Resource; 6] = [
    Resource::SourceBytes,
    Resource::ParsedBytes,
    Resource::ParserSteps,
    Resource::Nodes,
    Resource::BraceWork,
    Resource::PipeOperators,
];

fn classify(source: &str, budget: &Budget) -> spear::harness::command_policy::CommandAssessment {
    CommandPolicy::default().classify_within(source, budget)
}

/// The two commands of the issue: each is answered (they once aborted the release binary and
/// panicked a debug one), as a brace expansion of `echo`.
#[test]
fn the_i64_sequences_of_the_issue_are_classified() {
    for cmd in [
        "echo {-9223372036854775808..9223372036854775807}",
        "echo {1..9223372036854775807..4611686018427387904}",
        "{-9223372036854775808..9223372036854775807}",
        "ls {9223372036854775807..-9223372036854775808..1}",
    ] {
        let budget = Budget::default();
        let a = classify(cmd, &budget);
        assert!(!a.reasons.is_empty(), "{cmd}");
        assert!(budget.spent().is_none(), "{cmd}: {:?}", a.reasons);
    }
    // Brace expansion of a command name is still seen through.
    let a = CommandPolicy::default().classify("{-9223372036854775808..9223372036854775807}");
    assert!(a.class >= CommandClass::ShellComplex, "{a:?}");
}

/// Hostile shapes of a mebibyte each: every one stays within every limit of the budget, and
/// an answer that spent it is SHELL_COMPLEX or above and says which limit it reached.
#[test]
fn a_mebibyte_of_any_shape_stays_within_the_budget() {
    const MB: usize = 1 << 20;
    let shapes: Vec<(&str, String)> = vec![
        ("open braces", format!("echo {}", "{".repeat(MB - 5))),
        (
            "brace lists",
            format!("echo {}", "{a,b}".repeat(MB / 5 - 1)),
        ),
        (
            "sequences",
            format!("echo {}", "{1..9223372036854775807} ".repeat(MB / 25)),
        ),
        ("words", format!("echo {}", "a ".repeat(MB / 2 - 3))),
        ("lists", "a;".repeat(MB / 2)),
        ("pipes", format!("{}a", "a|".repeat(MB / 2 - 1))),
        ("a pipeline that errs", format!("echo {}", "a|".repeat(900))),
        (
            "substitutions",
            format!("echo {}", "$(a)".repeat(MB / 4 - 2)),
        ),
        ("backticks", format!("echo {}", "`a`".repeat(MB / 3 - 2))),
        (
            "nested substitutions",
            format!("echo {}x{}", "$(".repeat(5000), ")".repeat(5000)),
        ),
        ("subshells", "(a);".repeat(MB / 4)),
        ("keywords", format!("{}a", "time ".repeat(MB / 5))),
        ("functions", "f(){ a; };".repeat(MB / 11)),
        ("here-strings", "cat <<< x;".repeat(MB / 10)),
        ("unicode", format!("echo {}", "é{".repeat(MB / 3))),
    ];
    for (name, source) in &shapes {
        let budget = Budget::default();
        let a = classify(source, &budget);
        let limits = BudgetLimits::DEFAULT;
        for r in ALL {
            // A charge that is refused is recorded before it is refused: one step over at most.
            let slack = match r {
                Resource::ParserSteps | Resource::Nodes => 1,
                _ => 0,
            };
            let used = budget.used(r);
            let over = match r {
                // Charged whole: the amount that was refused is the one recorded.
                Resource::SourceBytes
                | Resource::ParsedBytes
                | Resource::BraceWork
                | Resource::PipeOperators => budget.spent() == Some(r),
                _ => false,
            };
            assert!(
                over || used <= limits.limit(r) + slack,
                "{name}: {used} of {r:?} (limit {})",
                limits.limit(r)
            );
        }
        if let Some(spent) = budget.spent() {
            assert!(a.class >= CommandClass::ShellComplex, "{name}: {a:?}");
            assert!(
                a.reasons
                    .iter()
                    .any(|r| r.contains("classification budget")),
                "{name} spent {spent:?} but does not say so: {:?}",
                a.reasons
            );
        }
    }
}

/// A source longer than the budget is answered without a parse.
#[test]
fn a_source_past_the_budget_is_not_parsed() {
    let source = format!("echo {}", "a ".repeat(600_000));
    let budget = Budget::default();
    let a = classify(&source, &budget);
    assert_eq!(budget.spent(), Some(Resource::SourceBytes));
    assert_eq!(budget.used(Resource::ParsedBytes), 0, "nothing was parsed");
    assert_eq!(a.class, CommandClass::ShellComplex, "{a:?}");
    assert!(
        a.reasons[0].contains("classification budget of 1048576 bytes of command"),
        "{:?}",
        a.reasons
    );
}

/// Each limit, made small, is reached and named, and the answer is SHELL_COMPLEX at least,
/// even for a command that is read-only within the default budget.
#[test]
fn every_limit_when_reached_makes_the_answer_shell_complex() {
    let cases: [(Resource, u64, String); 6] = [
        (Resource::SourceBytes, 10, "ls -la src tests".into()),
        (Resource::ParsedBytes, 10, "ls -la src tests".into()),
        (Resource::ParserSteps, 1, format!("ls {}", "a ".repeat(500))),
        (Resource::Nodes, 3, "ls a; ls b; ls c".into()),
        (Resource::BraceWork, 5, "ls {a,b,c}{d,e,f}".into()),
        (Resource::PipeOperators, 2, "ls | cat | wc | head".into()),
    ];
    for (r, limit, cmd) in cases {
        let within = Budget::default();
        let normal = classify(&cmd, &within);
        assert!(within.spent().is_none(), "{cmd}: {:?}", normal.reasons);
        let budget = Budget::new(BudgetLimits::DEFAULT.with(r, limit));
        let a = classify(&cmd, &budget);
        assert_eq!(budget.spent(), Some(r), "{cmd}: {:?}", a.reasons);
        assert!(a.class >= CommandClass::ShellComplex, "{cmd}: {a:?}");
        assert!(a.class >= normal.class, "{cmd}: {a:?}");
        let reason = format!("classification budget of {limit} ");
        assert!(
            a.reasons.iter().any(|x| x.contains(&reason)),
            "{cmd}: {:?}",
            a.reasons
        );
    }
}

/// Nested shells share the budget: each level's parse is charged to the one budget.
#[test]
fn nested_shells_spend_the_same_budget() {
    let cmd = "bash -c \"bash -c 'ls a; ls b'\"";
    let budget = Budget::default();
    let a = classify(cmd, &budget);
    assert!(budget.spent().is_none(), "{:?}", a.reasons);
    let parsed = budget.used(Resource::ParsedBytes);
    assert!(
        parsed > cmd.len() as u64,
        "only {parsed} bytes charged for {}",
        cmd.len()
    );
    let tight = Budget::new(BudgetLimits::DEFAULT.with(Resource::ParsedBytes, cmd.len() as u64));
    let b = classify(cmd, &tight);
    assert_eq!(
        tight.spent(),
        Some(Resource::ParsedBytes),
        "{:?}",
        b.reasons
    );
    assert!(b.class >= CommandClass::ShellComplex);
}

/// A real command spends a small part of the budget.
#[test]
fn an_ordinary_command_spends_little() {
    let budget = Budget::default();
    let a = classify(
        "git status --short && cargo test --lib 2>&1 | tail -n 20 > out.txt",
        &budget,
    );
    assert!(budget.spent().is_none(), "{:?}", a.reasons);
    assert!(budget.used(Resource::ParserSteps) < 10);
    assert!(budget.used(Resource::Nodes) < 200);
}
