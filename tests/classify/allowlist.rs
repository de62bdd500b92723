//! The read-only allow-list carries its own examples; every one is checked against the whole
//! classifier, so an entry cannot rot silently.

use spear::harness::command_policy::allowlist::allow_list;
use spear::harness::command_policy::{CommandClass, CommandPolicy};

#[test]
fn every_entry_has_examples_both_ways() {
    let list = allow_list().expect("the allow-list parses");
    assert!(list.commands.len() >= 20, "the allow-list lost entries");
    for e in &list.commands {
        assert!(!e.names.is_empty(), "an entry without names");
        assert!(
            !e.ok.is_empty(),
            "{:?} has no example that must match",
            e.names
        );
        assert!(
            !e.not.is_empty(),
            "{:?} has no example that must not match",
            e.names
        );
    }
}

#[test]
fn examples_classify_as_the_entry_says() {
    let policy = CommandPolicy::default();
    let list = allow_list().expect("allow-list parses");
    let mut failures = Vec::new();
    for e in &list.commands {
        for ok in &e.ok {
            let a = policy.classify(ok);
            if a.class != CommandClass::ReadOnly {
                failures.push(format!(
                    "must be READ_ONLY: {ok:?} -> {} {:?}",
                    a.class, a.reasons
                ));
            }
        }
        for not in &e.not {
            let a = policy.classify(not);
            if a.class == CommandClass::ReadOnly {
                failures.push(format!("must not be READ_ONLY: {not:?} -> {:?}", a.reasons));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} allow-list examples fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_spec_minimum_is_listed() {
    let list = allow_list().unwrap();
    let names: Vec<&str> = list
        .commands
        .iter()
        .flat_map(|e| e.names.iter().map(String::as_str))
        .collect();
    for required in [
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "find", "sed", "awk",
        "git", "stat", "file", "diff", "cmp", "sort", "uniq", "cut", "tr", "nl", "tac", "rev",
        "seq", "echo", "printf", "pwd", "which", "env", "id", "uname", "date", "du", "df", "tree",
        "basename", "dirname", "realpath", "readlink", "jq", "true", "false", "test", "[",
    ] {
        assert!(
            names.contains(&required),
            "`{required}` is missing from the read-only allow-list"
        );
    }
}

/// Spear loads the JSON twin of the TOML (the TOML parse was a third of a `spear exec`
/// process's own instructions); the two must say the same, and the file must be exactly what
/// the generator writes.
#[test]
fn the_loaded_json_is_the_toml() {
    use spear::harness::command_policy::allowlist::{TOML_SOURCE, from_toml, to_json};
    let regenerate = "run `cargo run --example allowlist_json > assets/policy/read_only.json`";
    let source = from_toml(TOML_SOURCE).expect("assets/policy/read_only.toml parses");
    let loaded = allow_list().expect("assets/policy/read_only.json parses");
    assert!(
        &source == loaded,
        "assets/policy/read_only.json says something else than the TOML: {regenerate}"
    );
    let written = include_str!("../../assets/policy/read_only.json");
    assert_eq!(
        to_json(&source).unwrap(),
        written,
        "assets/policy/read_only.json is not the generator's output: {regenerate}"
    );
}
