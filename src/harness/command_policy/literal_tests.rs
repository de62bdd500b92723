use std::process::Command;

use crate::harness::command_policy::CommandPolicy;

fn argv(src: &str) -> Option<Vec<String>> {
    CommandPolicy::default()
        .classify(src)
        .literal_argv
        .map(|a| a.argv().to_vec())
}

/// Lines that are one program with literal words, and the argv each runs.
const DIRECT: &[(&str, &[&str])] = &[
    ("ls", &["ls"]),
    ("ls -la src", &["ls", "-la", "src"]),
    ("cargo build --release", &["cargo", "build", "--release"]),
    ("git log --oneline -5", &["git", "log", "--oneline", "-5"]),
    ("grep -rn 'fn main' src", &["grep", "-rn", "fn main", "src"]),
    ("grep \"a b\" f", &["grep", "a b", "f"]),
    ("grep 'a$b*c' f", &["grep", "a$b*c", "f"]),
    ("grep \"x*{y}~\" f", &["grep", "x*{y}~", "f"]),
    ("sleep 0", &["sleep", "0"]),
    ("env", &["env"]),
    ("make CC=gcc -j2", &["make", "CC=gcc", "-j2"]),
    ("ls ''", &["ls", ""]),
    ("l's' -a\"l\"", &["ls", "-al"]),
    ("ls a,b x:y u@h %z", &["ls", "a,b", "x:y", "u@h", "%z"]),
    ("  ls   -l  ", &["ls", "-l"]),
    ("python3 -c 'print(1)'", &["python3", "-c", "print(1)"]),
];

/// Lines that keep bash, and why.
const KEEP_BASH: &[(&str, &str)] = &[
    ("true", "a builtin"),
    ("echo hi", "a builtin"),
    ("pwd", "a builtin"),
    ("printf x", "a builtin"),
    ("test -f x", "a builtin"),
    ("[ -f x ]", "a builtin"),
    ("cd /tmp", "a builtin"),
    ("exec ls", "a builtin"),
    ("command ls", "a builtin"),
    ("eval ls", "a builtin"),
    ("kill 1", "a builtin"),
    ("time ls", "a keyword"),
    ("! ls", "negation"),
    ("{ ls; }", "a group"),
    ("(ls)", "a subshell"),
    ("f() { ls; }", "a function"),
    ("ls *.rs", "a glob"),
    ("ls [ab]", "a glob"),
    ("ls a?", "a glob"),
    ("ls ~", "a tilde"),
    ("ls ~/x", "a tilde"),
    ("ls {a,b}", "a brace list"),
    ("ls {1..3}", "a brace sequence"),
    ("ls $HOME", "an expansion"),
    ("ls \"$HOME\"", "an expansion in quotes"),
    ("ls ${x}", "an expansion"),
    ("ls $(pwd)", "a substitution"),
    ("ls `pwd`", "a substitution"),
    ("ls $((1+1))", "arithmetic"),
    ("ls <(ls)", "a process substitution"),
    ("ls \\*", "a backslash"),
    ("ls a\\ b", "a backslash"),
    ("ls $'a'", "ANSI-C quoting"),
    ("ls $\"a\"", "a translated string"),
    ("ls \"a\\\"b\"", "an escape in double quotes"),
    ("ls \"a!b\"", "history syntax in double quotes"),
    ("ls 'a\nb'", "a newline in quotes"),
    ("ls 'é'", "non-ASCII text"),
    ("ls é", "non-ASCII text"),
    ("X=1 ls", "an assignment"),
    ("X=1", "an assignment alone"),
    ("ls > f", "a redirection"),
    ("ls 2>&1", "a redirection"),
    ("ls < f", "a redirection"),
    ("cat <<E\nx\nE", "a here-document"),
    ("cat <<< x", "a here-string"),
    ("ls | wc", "a pipeline"),
    ("ls; ls", "a list"),
    ("ls && ls", "a list"),
    ("ls || ls", "a list"),
    ("ls &", "in the background"),
    ("ls;", "a terminator"),
    ("ls\nls", "two lines"),
    ("ls # note", "a comment"),
    ("ls \\\n -l", "a line continuation"),
    ("/bin/true", "a path"),
    (
        "./build.sh a",
        "a path (without #!, bash and execvp read it differently)",
    ),
    ("%1", "a job to bash"),
    ("-x", "an option"),
    ("''", "an empty name"),
    ("ls )", "a parse error"),
    ("ls 'open", "a parse error"),
    ("", "nothing to run"),
    ("if ls; then ls; fi", "a compound"),
    ("ls ((", "a parse error"),
];

#[test]
fn which_lines_run_without_bash() {
    for (src, want) in DIRECT {
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(argv(src), Some(want), "{src:?} should be exec'd directly");
    }
    for (src, why) in KEEP_BASH {
        assert_eq!(argv(src), None, "{src:?} must keep bash ({why})");
    }
}

#[test]
fn the_fact_is_tied_to_its_line_and_reaches_the_profile_only_when_granted() {
    use crate::harness::command_policy::{AuthorizationResult, NoApprover};
    use crate::harness::primitives::ExecutionMode;
    let policy = CommandPolicy::default();
    let a = policy.classify("ls -l");
    assert_eq!(a.literal_argv.as_ref().map(|l| l.source()), Some("ls -l"));
    match policy.authorize(ExecutionMode::Auto, &a, &NoApprover) {
        AuthorizationResult::Granted { profile, .. } => {
            assert_eq!(profile.literal_argv, a.literal_argv);
        }
        other => panic!("ls -l is read-only: {other:?}"),
    }
    // Nested scripts never carry one of their own.
    let outer = policy.classify("bash -c 'ls -l'");
    assert_eq!(
        outer.literal_argv.map(|l| l.argv().to_vec()),
        Some(vec!["bash".to_string(), "-c".into(), "ls -l".into()])
    );
}

/// Bash, asked to print the words of each line, is the oracle for the values read here.
fn bash_words(src: &str) -> Vec<String> {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("printf '%s\\0' {src}"))
        .output()
        .expect("bash must be installed to run this test: apt-get install bash");
    assert!(out.status.success(), "bash could not read {src:?}");
    let mut words: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .map(String::from)
        .collect();
    assert_eq!(words.pop().as_deref(), Some(""), "printf ends with a NUL");
    words
}

#[test]
fn every_direct_argv_is_what_bash_reads() {
    for (src, _) in DIRECT {
        assert_eq!(argv(src).unwrap(), bash_words(src), "{src:?}");
    }
    // Every pairing of fragments: whatever is taken as literal, bash reads the same way.
    let fragments = [
        "a", "-b", "'c d'", "\"e f\"", "g'h'", "'$x'", "\"*\"", "i=j", "k,l", "''", "\"\"", "m%n",
        "o@p", "q^r", "'{s,t}'", "\"~u\"", "v:w", "x+y", "./z", "'\t'",
    ];
    let mut checked = 0;
    for first in ["ls", "run", "env"] {
        for a in fragments {
            for b in fragments {
                let src = format!("{first} {a}{b} {b}");
                if let Some(got) = argv(&src) {
                    assert_eq!(got, bash_words(&src), "{src:?}");
                    checked += 1;
                }
            }
        }
    }
    assert!(
        checked > 1000,
        "the direct path was taken only {checked} times"
    );
}

#[test]
fn the_builtin_list_is_bashs_own() {
    let out = Command::new("bash")
        .args(["-c", "compgen -b; compgen -k"])
        .output()
        .expect("bash must be installed to run this test: apt-get install bash");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut real: Vec<&str> = text.lines().collect();
    real.sort_unstable();
    real.dedup();
    let mut ours: Vec<&str> = super::BASH_OWN.to_vec();
    ours.sort_unstable();
    assert_eq!(
        ours, real,
        "bash's builtins and keywords changed: update BASH_OWN"
    );
}
