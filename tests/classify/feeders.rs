//! Issue 22, item 7: a wrapper that only feeds a command its arguments, or runs it with a time
//! limit or a priority, is as read-only as that command and never more. Checked over every
//! simple command of the corpus and of the allow-list's examples, against the same command
//! written without the wrapper:
//! - `timeout 5 E` and `nice -n 3 E` are READ_ONLY exactly when `E` is;
//! - `xargs E` (and with `-0 -n 1`) exactly when `E "$x"` is: xargs appends what it reads, which
//!   may be anything, an option included;
//! - `find . -exec E {} +` only when `E ./f` and `E` are, and `-execdir … \;` likewise.

use spear::harness::command_policy::allowlist::allow_list;
use spear::harness::command_policy::{CommandClass, CommandPolicy};

use crate::compose::{composable, corpus_commands};

/// Simple commands: one program and its words, nothing the shell would read around them.
fn simple_commands() -> Vec<String> {
    let mut v = corpus_commands();
    let list = allow_list().expect("the allow-list parses");
    for e in &list.commands {
        v.extend(e.ok.iter().cloned());
        v.extend(e.not.iter().cloned());
    }
    v.retain(|c| {
        composable(c)
            && !c.contains([
                '|', ';', '&', '<', '>', '(', ')', '$', '`', '{', '}', '\'', '"', '\\',
            ])
            && !c.contains('=')
            && !c.trim().is_empty()
    });
    v.sort();
    v.dedup();
    v
}

/// Words bash reads itself before any program: behind a wrapper they name a program of that
/// name instead (`timeout 5 ! x` runs `!`), or a glob (`[`), so there the wrapped line may rightly
/// ask where the bare one does not. Only the safe direction is checked for them.
fn shell_word(c: &str) -> bool {
    let first = c.split_whitespace().next().unwrap_or("");
    [
        "!", "[", "[[", "unset", "export", "declare", "local", "readonly", "alias",
    ]
    .contains(&first)
}

fn read_only(p: &CommandPolicy, c: &str) -> bool {
    p.classify(c).class == CommandClass::ReadOnly
}

#[test]
fn a_feeding_wrapper_is_as_read_only_as_what_it_runs() {
    let p = CommandPolicy::default();
    let commands = simple_commands();
    assert!(commands.len() > 300, "too few simple commands to check");
    let mut wrong = Vec::new();
    let mut lifted = 0;
    for e in &commands {
        let alone = read_only(&p, e);
        let exact = !shell_word(e);
        for wrapped in [format!("timeout 5 {e}"), format!("nice -n 3 {e}")] {
            let ro = read_only(&p, &wrapped);
            if (ro && !alone) || (exact && ro != alone) {
                wrong.push(format!(
                    "{wrapped:?} differs from {e:?} (read-only: {alone})"
                ));
            }
        }
        let with_input = read_only(&p, &format!("{e} \"$x\""));
        for fed in [format!("xargs {e}"), format!("xargs -0 -n 1 {e}")] {
            let ro = read_only(&p, &fed);
            if (ro && !with_input) || (exact && ro != with_input) {
                wrong.push(format!(
                    "{fed:?} differs from `{e} \"$x\"` (read-only: {with_input})"
                ));
            }
        }
        let with_file = read_only(&p, &format!("{e} ./f"));
        for found in [
            format!("find . -exec {e} {{}} +"),
            format!("find src -name '*.rs' -execdir {e} {{}} \\;"),
        ] {
            let ro = read_only(&p, &found);
            if ro && !(with_file && alone) {
                wrong.push(format!(
                    "{found:?} is READ_ONLY but `{e} ./f` or `{e}` is not"
                ));
            }
            lifted += usize::from(ro);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(lifted > 100, "find -exec was read-only only {lifted} times");
}

/// What the wrappers must never lift, whatever runs inside: a file name spliced into code, a
/// terminal prompt, a variable xargs sets, input put anywhere, an option the wrapper may not
/// have, and the line around them.
#[test]
fn what_stays_asking() {
    let p = CommandPolicy::default();
    for c in [
        "find . -exec sh -c 'cat {}' \\;",
        "find . -exec cat {}x +",
        "find . -exec {} \\;",
        "find . -ok cat {} \\;",
        "find . -okdir cat {} \\;",
        "find . -exec cat {} + -delete",
        "find . -exec cat {} \\; -exec rm {} \\;",
        "find . -exec cat {} \\; -fprint out",
        "find . -exec cat {}",
        "find \"$d\" -exec cat {} +",
        "find . -exec tail {} \\;",
        "find . -exec sed -n p {} +",
        "xargs sh -c",
        "xargs bash",
        "xargs rm",
        "xargs -I{} cat {}",
        "xargs -i cat {}",
        "xargs -p cat",
        "xargs -o cat",
        "xargs --process-slot-var=BASH_ENV cat",
        "xargs -e cat",
        "xargs $opt cat",
        "xargs env",
        "xargs git",
        "xargs awk",
        "xargs sed -n",
        "xargs tail",
        "xargs date",
        "xargs hostname",
        "xargs tee",
        "timeout $t ls",
        "timeout 5 $cmd",
        "timeout --frob 5 ls",
        "timeout 5 rm x",
        "nice -5 ls",
        "nice rm x",
        "tee out",
        "tee --output-error warn",
        "tee -- -a",
        "git reflog expire --all",
        "git reflog -5 expire",
        "git reflog delete HEAD@{1}",
        "cargo metadata",
        "cargo tree",
        "cargo +nightly metadata --no-deps",
        "cargo metadata --no-deps --filter-platform x86_64-unknown-linux-gnu",
        "wc $(rm -rf x)",
    ] {
        let a = p.classify(c);
        assert_ne!(a.class, CommandClass::ReadOnly, "{c:?}: {:?}", a.reasons);
    }
    for (c, writes) in [("tee --output-error warn", "warn"), ("tee -- -a", "-a")] {
        let a = p.classify(c);
        assert!(
            a.writes.iter().any(|w| w == writes),
            "{c:?} writes {writes}: {:?}",
            a.writes
        );
    }
}
