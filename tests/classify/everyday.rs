//! Issue 19's second "done when": making READ_ONLY a proof must not cost the person the
//! everyday exploration commands that run unasked. `tests/data/everyday_commands.txt` holds
//! what people and agents type to look around a project; this test measures the share the
//! classifier calls READ_ONLY and fails when it falls below the share measured before issue 19
//! (an honest floor: raise it when the share rises, never lower it to make a change pass).

use spear::harness::command_policy::{CommandClass, CommandPolicy};

const EVERYDAY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/everyday_commands.txt"
);

/// READ_ONLY commands of the list: 198 before issue 19 began (commit c7266e1), 206 once issue
/// 22's readers (base64, getconf, expr, yes, less, git count-objects, git notes list, pip show)
/// were listed, 218 once xargs, find -exec, timeout and nice took the class of what they run,
/// and wc (any argument), tee (no file), git reflog, cargo metadata --no-deps and cargo --list
/// were read-only.
const READ_ONLY_BEFORE: usize = 218;

/// Issue 22's "done when": at least 95% of the everyday exploration commands run unasked.
const SHARE_PERCENT: usize = 95;

#[test]
fn the_everyday_read_only_share_does_not_fall() {
    let text = std::fs::read_to_string(EVERYDAY).unwrap();
    let commands: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    let policy = CommandPolicy::default();
    let mut asked = Vec::new();
    for c in &commands {
        let a = policy.classify(c);
        if a.class != CommandClass::ReadOnly {
            asked.push(format!(
                "{:<18} {c}\n    {}",
                a.class.to_string(),
                a.reasons.join("; ")
            ));
        }
    }
    let read_only = commands.len() - asked.len();
    println!(
        "everyday commands READ_ONLY: {read_only}/{} ({:.1}%), before issue 19: {READ_ONLY_BEFORE}",
        commands.len(),
        100.0 * read_only as f64 / commands.len() as f64
    );
    assert!(
        read_only >= READ_ONLY_BEFORE,
        "the everyday READ_ONLY share fell to {read_only}/{} from {READ_ONLY_BEFORE}; not read-only now:\n{}",
        commands.len(),
        asked.join("\n")
    );
    assert!(
        read_only * 100 >= SHARE_PERCENT * commands.len(),
        "only {read_only}/{} everyday commands are READ_ONLY, below {SHARE_PERCENT}%",
        commands.len()
    );
}
