//! Every pair of composable commands (the corpus and the property tests' seeds) joined by every list operator, and every command in
//! every wrapping construct: the class must never drop below its parts'. The property tests in
//! `tests/classify/properties.rs` sample this space on each `make test`; this walks all of it
//! (about 2.3 million classifications, half a minute in a release build):
//!
//!     cargo run --release --example compose_corpus
//!
//! It prints the first failures and exits 1 when there are any.

#[path = "../tests/classify/compose.rs"]
mod compose;

use compose::{SEEDS, WRAPS, composable, corpus_commands, independent, wrap};
use spear::harness::command_policy::CommandPolicy;

const OPERATORS: [&str; 6] = ["&&", "||", ";", "|", "\n", "&"];
const SHOWN: usize = 30;

fn main() {
    let mut parts = corpus_commands();
    parts.extend(SEEDS.iter().map(|s| s.to_string()));
    if parts.len() == SEEDS.len() {
        eprintln!("the corpus is empty or unreadable");
        std::process::exit(2);
    }
    parts.retain(|c| composable(c));
    let policy = CommandPolicy::default();
    let classes: Vec<_> = parts.iter().map(|x| policy.classify(x).class).collect();
    let mut failures = 0usize;
    let mut dependent = 0usize;
    let mut report = |text: &str, got, floor| {
        failures += 1;
        if failures <= SHOWN {
            println!("{text:?} is {got}, below {floor}");
        }
    };
    for (i, x) in parts.iter().enumerate() {
        for (j, y) in parts.iter().enumerate() {
            if !independent(x, y) {
                dependent += 1;
                continue;
            }
            for op in OPERATORS {
                let joined = format!("{x} {op} {y}");
                let got = policy.classify(&joined).class;
                let floor = classes[i].max(classes[j]);
                if got < floor {
                    report(&joined, got, floor);
                }
            }
        }
        for w in WRAPS {
            if let Some(wrapped) = wrap(w, x) {
                let got = policy.classify(&wrapped).class;
                if got < classes[i] {
                    report(&wrapped, got, classes[i]);
                }
            }
        }
    }
    println!(
        "{} composable commands, {} joined pairs ({dependent} pairs skipped where the second \
         reads a variable the first sets), {} wraps: {failures} below their parts",
        parts.len(),
        (parts.len() * parts.len() - dependent) * OPERATORS.len(),
        parts.len() * WRAPS.len()
    );
    if failures > 0 {
        std::process::exit(1);
    }
}
