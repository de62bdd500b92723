//! The table-driven corpus (`tests/data/classify_corpus.txt`): every line is a command with the
//! class the spec (issue 2 section 4, DESIGN.md "Classification") says it must get, and
//! optionally whether it must or must not need the network. Every mismatch is reported at once,
//! with the classifier's reasons, before the test fails. A second test pins the write targets of a
//! handful of writers.

use std::collections::BTreeMap;

use spear::harness::command_policy::{CommandClass, CommandPolicy};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/classify_corpus.txt"
);

/// One corpus line.
#[derive(Debug)]
struct Case {
    line: usize,
    expected: CommandClass,
    command: String,
    /// `Some(true)` for `net`, `Some(false)` for `nonet`.
    network: Option<bool>,
    /// The `# rule` comment the case sits under.
    section: String,
}

fn parse_class(text: &str) -> Option<CommandClass> {
    match text {
        "READ_ONLY" => Some(CommandClass::ReadOnly),
        "WORKSPACE_MUTATING" => Some(CommandClass::WorkspaceMutating),
        "SHELL_COMPLEX" => Some(CommandClass::ShellComplex),
        "DANGEROUS" => Some(CommandClass::Dangerous),
        _ => None,
    }
}

/// `\n` and `\t` written as two characters stand for a newline and a tab.
fn unescape(text: &str) -> String {
    text.replace("\\n", "\n").replace("\\t", "\t")
}

fn load() -> Vec<Case> {
    let text = std::fs::read_to_string(CORPUS).unwrap();
    let mut cases = Vec::new();
    let mut section = String::from("(no section)");
    let mut malformed = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        if let Some(comment) = raw.strip_prefix('#') {
            let comment = comment.trim();
            if let Some(rule) = comment.strip_prefix("rule:") {
                section = rule.trim().to_string();
            }
            continue;
        }
        let fields: Vec<&str> = raw.split('\t').collect();
        let expected = fields.first().and_then(|f| parse_class(f));
        let network = match fields.get(2).copied() {
            None => Some(None),
            Some("net") => Some(Some(true)),
            Some("nonet") => Some(Some(false)),
            Some(_) => None,
        };
        match (expected, fields.get(1), network) {
            (Some(expected), Some(command), Some(network))
                if fields.len() <= 3 && !command.is_empty() =>
            {
                cases.push(Case {
                    line,
                    expected,
                    command: unescape(command),
                    network,
                    section: section.clone(),
                });
            }
            _ => malformed.push(format!("line {line}: {raw:?}")),
        }
    }
    assert!(
        malformed.is_empty(),
        "malformed corpus lines (want CLASS<TAB>command[<TAB>net|nonet]):\n{}",
        malformed.join("\n")
    );
    cases
}

#[test]
fn corpus_is_large_and_covers_every_class() {
    let cases = load();
    assert!(
        cases.len() >= 250,
        "the corpus has {} cases; the spec asks for at least 250",
        cases.len()
    );
    let mut by_class: BTreeMap<CommandClass, usize> = BTreeMap::new();
    for case in &cases {
        *by_class.entry(case.expected).or_default() += 1;
    }
    for class in [
        CommandClass::ReadOnly,
        CommandClass::WorkspaceMutating,
        CommandClass::ShellComplex,
        CommandClass::Dangerous,
    ] {
        assert!(
            by_class.get(&class).copied().unwrap_or(0) >= 10,
            "the corpus has too few {class} cases: {by_class:?}"
        );
    }
    let with_network = cases.iter().filter(|c| c.network == Some(true)).count();
    let without_network = cases.iter().filter(|c| c.network == Some(false)).count();
    assert!(
        with_network >= 20 && without_network >= 3,
        "too few net ({with_network}) / nonet ({without_network}) cases"
    );
    let mut seen = std::collections::HashSet::new();
    let duplicates: Vec<&str> = cases
        .iter()
        .filter(|c| !seen.insert(c.command.as_str()))
        .map(|c| c.command.as_str())
        .collect();
    assert!(
        duplicates.is_empty(),
        "duplicate corpus commands: {duplicates:?}"
    );
}

#[test]
fn corpus_classes_and_network_match_the_spec() {
    let cases = load();
    assert!(!cases.is_empty(), "the corpus is empty");
    let policy = CommandPolicy::default();
    let mut failures = Vec::new();
    for case in &cases {
        let got = policy.classify(&case.command);
        let mut problems = Vec::new();
        if got.class != case.expected {
            problems.push(format!("expected {}, got {}", case.expected, got.class));
        }
        if let Some(network) = case.network
            && got.network != network
        {
            problems.push(format!(
                "expected network = {network}, got network = {}",
                got.network
            ));
        }
        if !problems.is_empty() {
            failures.push(format!(
                "line {} [{}] {:?}\n    {}\n    executables: {:?}; writes: {:?}\n    reasons: {:?}",
                case.line,
                case.section,
                case.command,
                problems.join("; "),
                got.executables,
                got.writes,
                got.reasons
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases disagree with the spec:\n\n{}\n",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// What `writes` must hold for a writer: exactly these targets, or at least these.
enum Writes {
    Exactly(&'static [&'static str]),
    Contains(&'static [&'static str]),
}

#[test]
fn writers_report_their_targets() {
    use Writes::{Contains, Exactly};
    let table: &[(&str, Writes)] = &[
        ("cp a b", Exactly(&["b"])),
        ("cp -r src dst", Exactly(&["dst"])),
        ("echo x > out.txt 2>&1", Exactly(&["out.txt"])),
        ("echo x >> log.txt", Exactly(&["log.txt"])),
        ("ls &> all.log", Exactly(&["all.log"])),
        ("ls 2> err.log", Exactly(&["err.log"])),
        ("echo x >| clobber.txt", Exactly(&["clobber.txt"])),
        ("tee -a log", Exactly(&["log"])),
        ("echo hi | tee one two", Exactly(&["one", "two"])),
        ("dd if=x of=y", Exactly(&["y"])),
        ("sed -i s/a/b/ f", Exactly(&["f"])),
        ("truncate -s 0 f", Exactly(&["f"])),
        ("touch a b", Exactly(&["a", "b"])),
        ("sort -o sorted.txt f", Exactly(&["sorted.txt"])),
        ("uniq in.txt out.txt", Exactly(&["out.txt"])),
        ("ls > /dev/null 2>&1", Exactly(&[])),
        ("ls 2>&1 | grep x", Exactly(&[])),
        ("cat < in.txt", Exactly(&[])),
        ("mv a b", Contains(&["b"])),
        ("ln -s target link", Contains(&["link"])),
        ("install -m 644 a dst/a", Contains(&["dst/a"])),
        ("rm -rf build", Contains(&["build"])),
        ("mkdir -p build/out", Contains(&["build/out"])),
        ("cp a b && echo x > c", Contains(&["b", "c"])),
        ("bash -c 'echo x > inner.txt'", Contains(&["inner.txt"])),
        ("echo $(touch made.txt)", Contains(&["made.txt"])),
        ("find . -fprint listing.txt", Contains(&["listing.txt"])),
    ];
    let policy = CommandPolicy::default();
    let mut failures = Vec::new();
    for (command, want) in table {
        let got = policy.classify(command);
        let ok = match want {
            Exactly(targets) => {
                got.writes == targets.iter().map(|t| t.to_string()).collect::<Vec<_>>()
            }
            Contains(targets) => targets.iter().all(|t| got.writes.iter().any(|w| w == t)),
        };
        let must_write = match want {
            Exactly(targets) | Contains(targets) => !targets.is_empty(),
        };
        let class_ok = !must_write || got.class >= CommandClass::WorkspaceMutating;
        if !ok || !class_ok {
            let wanted = match want {
                Exactly(t) => format!("exactly {t:?}"),
                Contains(t) => format!("at least {t:?}"),
            };
            failures.push(format!(
                "{command:?}: writes should be {wanted}, got {:?} (class {}; reasons {:?})",
                got.writes, got.class, got.reasons
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "write targets disagree:\n{}",
        failures.join("\n")
    );
}
