//! Properties of the classifier: it never panics, whatever it is given, and composing commands
//! never yields a class lower than either part's.

use proptest::prelude::*;
use spear::harness::command_policy::{CommandClass, CommandPolicy};

use crate::compose::{SEEDS, WRAPS, composable, corpus_commands, independent, wrap};

fn policy() -> CommandPolicy {
    CommandPolicy::default()
}

fn parts() -> Vec<String> {
    let mut v: Vec<String> = SEEDS.iter().map(|s| s.to_string()).collect();
    v.extend(corpus_commands());
    v.retain(|c| composable(c));
    v
}

#[test]
fn seeds_cover_every_class_and_compose() {
    let p = policy();
    let classes: Vec<CommandClass> = SEEDS.iter().map(|s| p.classify(s).class).collect();
    for c in [
        CommandClass::ReadOnly,
        CommandClass::WorkspaceMutating,
        CommandClass::ShellComplex,
        CommandClass::Dangerous,
    ] {
        assert!(classes.contains(&c), "no seed of class {c}");
    }
    assert!(
        SEEDS.iter().all(|s| composable(s)),
        "every seed must be composable"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn composition_never_lowers_the_class(
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        op in 0usize..5,
    ) {
        let parts = parts();
        let (x, y) = (a.get(&parts), b.get(&parts));
        prop_assume!(independent(x, y));
        let op = ["&&", "||", ";", "|", "\n"][op];
        let p = policy();
        let (cx, cy) = (p.classify(x).class, p.classify(y).class);
        let joined = format!("{x} {op} {y}");
        let cj = p.classify(&joined);
        prop_assert!(
            cj.class >= cx.max(cy),
            "{joined:?} is {} but its parts are {cx} and {cy}: {:?}",
            cj.class,
            cj.reasons
        );
    }

    #[test]
    fn classify_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        let a = policy().classify(&text);
        prop_assert!(!a.reasons.is_empty());
    }

    /// Any code point, not only what lossy UTF-8 makes of bytes: tree-sitter-bash's scanner
    /// once read outside a C table on a code point above 255 after `{`, and the process died.
    #[test]
    fn classify_never_crashes_on_any_unicode(
        chars in prop::collection::vec(
            prop_oneof![any::<char>(), Just('{'), Just('}'), Just('.'), Just('$'), Just(' ')],
            0..256,
        )
    ) {
        let text: String = chars.into_iter().collect();
        let a = policy().classify(&text);
        prop_assert!(!a.reasons.is_empty());
    }

    #[test]
    fn wrapping_never_lowers_the_class(a in any::<prop::sample::Index>(), w in 0usize..WRAPS.len()) {
        let parts = parts();
        let x = a.get(&parts);
        let wrapped = wrap(WRAPS[w], x);
        prop_assume!(wrapped.is_some());
        let wrapped = wrapped.unwrap_or_default();
        let p = policy();
        let inner = p.classify(x).class;
        let got = p.classify(&wrapped);
        prop_assert!(
            got.class >= inner,
            "{wrapped:?} is {} but {x:?} alone is {inner}: {:?}",
            got.class,
            got.reasons
        );
    }

    #[test]
    fn classify_never_panics_on_shell_shaped_noise(s in r#"[a-z0-9 $|&;<>(){}.,'"`\\=*?~#!\n-]{0,300}"#) {
        let a = policy().classify(&s);
        prop_assert!(!a.reasons.is_empty());
    }

    /// Issue 10, item 3: brace sequences with digits, `..` and numbers at and past the ends of
    /// i64 (two of them once overflowed and killed the release binary).
    #[test]
    fn classify_never_panics_on_sequences_of_large_numbers(
        parts in prop::collection::vec(
            prop_oneof![
                Just("{".to_string()),
                Just("}".to_string()),
                Just("..".to_string()),
                Just(",".to_string()),
                Just("-".to_string()),
                Just(" ".to_string()),
                Just("9223372036854775807".to_string()),
                Just("-9223372036854775808".to_string()),
                Just("9223372036854775808".to_string()),
                Just("4611686018427387904".to_string()),
                Just("18446744073709551615".to_string()),
                (0u64..=u64::MAX).prop_map(|n| n.to_string()),
                (i64::MIN..=i64::MAX).prop_map(|n| n.to_string()),
                "[0-9]{1,3}",
                "[a-z]",
            ],
            0..24,
        )
    ) {
        let text = format!("echo {}", parts.concat());
        let a = policy().classify(&text);
        prop_assert!(!a.reasons.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn long_lines_are_classified(unit in r#"[a-z0-9 $|&;<>(){}.,'"`\\=-]{1,40}"#, repeat in 1000usize..4000) {
        let line: String = unit.repeat(repeat).chars().take(100_000).collect();
        let a = policy().classify(&line);
        prop_assert!(!a.reasons.is_empty());
    }

    #[test]
    fn deep_nesting_is_never_less_than_complex(depth in 1usize..10_000, kind in 0usize..5) {
        let (open, close) = [("$(", ")"), ("(", ")"), ("{ ", "; }"), ("`", "`"), ("bash -c '", "'")][kind];
        let src = format!("{}rm -rf /{}", open.repeat(depth), close.repeat(depth));
        let a = policy().classify(&src);
        prop_assert!(a.class >= CommandClass::ShellComplex, "{}: {:?}", a.class, a.reasons);
    }
}
