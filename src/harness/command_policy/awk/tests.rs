//! Programs that must read as read-only, programs with each side effect, and programs the
//! parser must refuse. Each family the outside probe of issue 19 found has cases here.

use proptest::prelude::*;

use super::effects::Effect;
use super::{AwkFacts, Invocation, program};
use crate::harness::shell::Word;

fn effects(p: &str) -> Vec<Effect> {
    let facts = program(p);
    assert_eq!(facts.not_understood, None, "{p}");
    facts.effects
}

fn runs(p: &str) -> bool {
    effects(p).iter().any(|e| matches!(e, Effect::Runs { .. }))
}

fn refused(p: &str) -> bool {
    program(p).not_understood.is_some()
}

#[test]
fn everyday_programs_are_read_only() {
    for p in [
        "{print $1}",
        "$3 > 1000 {print $1}",
        "NR==1",
        "{s+=$2} END {print s}",
        "/re/ {c++} END {print c}",
        "length > 80",
        "{printf \"%s\\n\", $1}",
        "NR>=10 && NR<=20",
        "/fn /{print NR\": \"$0}",
        "length($0) > 100 {print FILENAME\":\"NR}",
        "/a|b/ {print}",
        "{print \"a|b\"}",
        "a || b {print}",
        "BEGIN { FS = \":\" } { print $1, $NF }",
        "{ a[$1]++ } END { for (k in a) print k, a[k] }",
        "{ n = split($0, parts, \",\"); print parts[n] }",
        "{ gsub(/x/, \"y\"); print }",
        "{ print (a > b) }",
        "{ print ($1 > 5 ? \"big\" : \"small\") }",
        "function f(x,  y) { y = x * 2; return y }\n{ print f($1) }",
        "func g(a) { return a } { print g(1) }",
        "/start/,/end/",
        "NR % 2 == 0 { print; next }",
        "{ if ($1 > 0) print \"pos\"; else print \"neg\" }",
        "{ if ($1)\n print 1\n else\n print 2 }",
        "{ i = 0; while (i < 3) { i++ }; do { i-- } while (i > 0) }",
        "{ for (i = 1; i <= NF; i++) s += $i }\nEND { print s / NR }",
        "{ x = 6 / 2 / 3; print x }",
        "{ $2 = \"\"; print }",
        "{ print $NF-1, $(NF-1), -$1 }",
        "{ print substr($0, 2, 3) toupper($1) }",
        "{ while ((getline line) > 0) n++ }",
        "{ getline; print }",
        "BEGIN { while ((getline l < \"data.txt\") > 0) print l; close(\"data.txt\") }",
        "# a comment with \" and / and >\n{ print }",
        "{ print \\\n $1 }",
        "$1 ~ /[/]/ { print }",
        "$0 ~ \"a\" && !/b/",
        "{ delete a[$1]; delete a }",
        "BEGIN { printf(\"%d\\n\", 2^10) }",
        "{ print length }",
        "{ print 1,\n 2 }",
        "BEGINFILE { n = 0 } ENDFILE { print FILENAME, n }",
        "{ switch ($1) { case 1: print \"one\"; break; case /x/: print; default: print \"?\" } }",
        "@namespace \"ns\"\nfunction f() { return 1 }\nBEGIN { print f() }",
        "{ if (@/re/ ~ $0) print }",
        "{ print ++n, n-- }",
        "{ printf \"%s %s\\n\", $1, $2 }",
        "",
        "\n\n;\n",
    ] {
        let facts = program(p);
        assert_eq!(facts, AwkFacts::default(), "{p:?}");
    }
}

#[test]
fn output_to_a_stream_only_prints() {
    for p in [
        "{ print > \"/dev/null\" }",
        "{ print \"oops\" > \"/dev/stderr\" }",
    ] {
        assert!(program(p).prints_only(), "{p}");
        assert!(!program(p).read_only(), "{p}");
    }
    assert!(!program("{ print > \"/dev/sda\" }").prints_only());
}

#[test]
fn each_side_effect_is_found() {
    assert!(runs("BEGIN { system(\"id\") }"));
    assert!(runs("BEGIN { system (\"id\") }"));
    assert!(runs("{ \"date\" | getline d }"));
    assert!(runs("{ \"date\" |& getline d }"));
    assert!(runs("{ print | \"sh\" }"));
    assert!(runs("{ print |& \"cat\" }"));
    assert!(runs("{ cmd = \"ls\"; while ((cmd | getline x) > 0) n++ }"));
    assert_eq!(
        effects("{ print > \"out.txt\" }"),
        [Effect::Writes("out.txt".into())]
    );
    assert_eq!(
        effects("{ printf \"%s\", $1 >> \"log\" }"),
        [Effect::Writes("log".into())]
    );
    assert_eq!(
        effects("BEGIN { system(\"rm -rf x\") }"),
        [Effect::Runs {
            how: "`system`",
            command: Some("rm -rf x".into())
        }]
    );
    assert_eq!(effects("{ print > $2 }"), [Effect::WritesAtRunTime]);
    assert_eq!(
        effects("{ print > \"a\" \".txt\" }"),
        [Effect::WritesAtRunTime]
    );
    // An escape awks spell differently is not a known name.
    assert_eq!(
        effects("{ print > \"o\\x75t\" }"),
        [Effect::WritesAtRunTime]
    );
    assert_eq!(
        effects("@load \"filefuncs\""),
        [Effect::Loads("@load \"filefuncs\"".into())]
    );
    assert_eq!(
        effects("@include \"lib.awk\"\n{ print }"),
        [Effect::Loads("@include \"lib.awk\"".into())]
    );
    assert_eq!(
        effects("BEGIN { f = \"system\"; @f(\"id\") }"),
        [Effect::IndirectCall("f".into())]
    );
    assert!(
        effects("BEGIN { s = \"/inet/tcp/0/example.com/80\" }").contains(&Effect::Network {
            name: "/inet/tcp/0/example.com/80".into(),
            opened: false
        })
    );
    for p in [
        "BEGIN { print \"x\" |& \"/inet/tcp/0/h/80\" }",
        "BEGIN { getline l < \"/inet4/tcp/0/h/80\" }",
        "BEGIN { \"/inet6/udp/0/h/53\" |& getline }",
        "BEGIN { print > \"/p/tcp/h/80\" }",
    ] {
        assert!(
            effects(p)
                .iter()
                .any(|e| matches!(e, Effect::Network { opened: true, .. })),
            "{p}"
        );
    }
    assert_eq!(effects("{ getline l < $1 }"), [Effect::ReadsAtRunTime]);
    assert_eq!(effects("{ ARGV[ARGC++] = $1 }"), [Effect::ChangesArgv]);
    assert_eq!(effects("{ split($0, ARGV) }"), [Effect::ChangesArgv]);
    assert_eq!(
        effects("function f(a) { a[1] = 1 } { f(ARGV) }"),
        [Effect::ChangesArgv]
    );
}

/// The families the outside probe found: literal stripping hid these.
#[test]
fn effects_behind_regexes_strings_and_newlines_are_found() {
    assert!(runs("/#/ { system(\"id\") }"));
    assert!(runs("{ x = /\"/ } { system(\"id\") }"));
    assert!(runs("BEGIN { if (1) {} } /#/; { system(\"id\") }"));
    assert!(runs("{ print /#/; system(\"id\") }"));
    assert!(runs("{ print /\"/; system(\"id\") }"));
    assert!(runs("/[/]/ { system(\"id\") }"));
    assert!(runs("$0 ~ /[/]x/ { system(\"id\") }"));
    assert_eq!(
        effects("{ print\n print > \"out\" }"),
        [Effect::Writes("out".into())]
    );
    assert_eq!(
        effects("/;/ { print > \"out\" }"),
        [Effect::Writes("out".into())]
    );
    assert_eq!(
        effects("{ print \"a\" }\n{ print > \"out\" }"),
        [Effect::Writes("out".into())]
    );
}

#[test]
fn what_the_parser_cannot_read_is_refused() {
    for p in [
        "{ print ",
        "{ print \"unterminated }",
        "/unterminated",
        "{ undefined_function(1) }",
        "{ print length / 2 / 1 }",
        "{ a++ / 2 / 1 }",
        "# comment \\\n{ print }",
        "{ x = SYMTAB[\"y\"] }",
        "{ print $1 }}",
        "{ @unknown }",
        "{ print } garbage here ) ",
        "{ x = a | b }",
        "/[\\]/]/",
        "/[a[b]/]/",
        "{ print \"x\\\" }",
        "BEGIN { getline < }",
        "{ a = substr }",
        "\\ { print }",
        "{ if (x) /re/ }",
    ] {
        assert!(refused(p), "{p:?} was read as {:?}", program(p));
    }
}

#[test]
fn nesting_past_the_limit_is_refused_without_overflow() {
    let deep = format!("{{ x = {}1{} }}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(refused(&deep));
    let blocks = format!("{}{}", "{".repeat(10_000), "}".repeat(10_000));
    assert!(refused(&blocks));
    let fields = format!("{{ print {}0 }}", "$".repeat(10_000));
    assert!(refused(&fields));
    let nots = format!("{{ print {}1 }}", "!".repeat(10_000));
    assert!(refused(&nots));
    // A long flat chain is one node, not a deep tree.
    let sum = format!("{{ print 1{} }}", "+1".repeat(100_000));
    assert!(program(&sum).read_only());
}

fn words(v: &[&str]) -> Vec<Word> {
    v.iter().map(|s| Word::literal(s)).collect()
}

#[test]
fn every_program_on_the_command_line_is_found() {
    let read = |v: &[&str]| Invocation::read(&words(v));
    assert_eq!(read(&["{print}", "f"]).programs, ["{print}"]);
    assert_eq!(read(&["-F:", "{print}", "f"]).programs, ["{print}"]);
    // (A long option before the first operand makes it a program too: mawk, below.)
    assert_eq!(
        read(&["-e", "A", "--source=B", "f"]).programs,
        ["f", "A", "B"]
    );
    assert_eq!(read(&["-e", "A", "-e", "B", "f"]).programs, ["A", "B"]);
    // An operand before `-e` is the program to gawk and mawk; `-e`'s value to others.
    assert_eq!(read(&["A", "-e", "B"]).programs, ["A", "B"]);
    assert_eq!(read(&["-e", "A", "f", "-e", "B"]).programs, ["A", "B"]);
    assert_eq!(read(&["--", "A", "f"]).programs, ["A"]);
    assert_eq!(read(&["--so", "A"]).programs, ["A"]);
    // mawk knows no long option and, after some, runs the first operand as its program:
    // with a long option before it, the first operand is judged as a program too.
    assert_eq!(
        read(&["--posix", "--source=A", "B", "f"]).programs,
        ["B", "A"]
    );
    assert_eq!(read(&["--source", "A", "f"]).programs, ["f", "A"]);
    // A short `-e` alone is refused by mawk: its operand stays a file.
    assert_eq!(read(&["-e", "A", "f"]).programs, ["A"]);
    let f = read(&["-f", "prog.awk", "data"]);
    assert!(f.programs.is_empty());
    assert!(!f.findings.is_empty());
    for v in [
        &["-o", "{print}"][..],
        &["--profile=p.out", "{print}"],
        &["-d", "{print}"],
        &["-W", "exec", "x"],
        &["-Wexec", "x"],
        &["-D", "{print}"],
        &["-x", "{print}"],
        &["-E", "p"],
        &["-l", "lib", "{print}"],
        &["{print}", "/inet/tcp/0/h/80"],
    ] {
        assert!(!read(v).findings.is_empty(), "{v:?}");
    }
    assert!(
        read(&["-S", "-v", "n=1", "-bF", ",", "{print}", "x=1", "f"])
            .findings
            .is_empty()
    );
    assert!(
        read(&["--sandbox", "--posix", "--lint", "{print}"])
            .findings
            .is_empty()
    );
}

proptest! {
    #[test]
    fn the_parser_never_panics(s in "\\PC{0,200}") {
        let _ = program(&s);
    }

    #[test]
    fn the_parser_never_panics_on_awk_like_text(
        s in "[ \\n{}()\\[\\]/\"\\\\$;,<>|&!=+*^?:~#@a-z0-9_.-]{0,120}"
    ) {
        let _ = program(&s);
    }
}
