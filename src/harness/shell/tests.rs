use super::*;

thread_local! {
    /// Grammar parses made on this thread, counted by `parse_tree`.
    pub(super) static PARSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The grammar parses one reading of `src` costs.
fn parses_for(src: &str) -> usize {
    PARSES.with(|n| n.set(0));
    let _ = parse(src);
    PARSES.with(std::cell::Cell::get)
}

fn names(src: &str) -> Vec<String> {
    parse(src)
        .commands
        .iter()
        .map(|c| c.name.value.clone())
        .collect()
}

#[test]
fn finds_commands_in_every_construct() {
    let src = "a | b && c || d; e & f\n(g); { h; }; if i; then j; elif k; then l; else m; fi; \
               for x in 1; do n; done; while o; do p; done; until q; do r; done; \
               case $v in z) s;; esac; fn() { t; }; echo $(u) `v` <(w) >(y) \"$(aa)\" $((1+$(bb))); ! cc";
    let mut got = names(src);
    got.sort();
    let mut want: Vec<String> = "a b c d e f g h i j k l m n o p q r s t u v w y aa bb cc echo"
        .split(' ')
        .map(String::from)
        .collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn quote_removal_and_concatenation_give_the_real_name() {
    assert_eq!(names("r''m x"), ["rm"]);
    assert_eq!(names("\"ls\" -l"), ["ls"]);
    assert_eq!(names("\\rm -f x"), ["rm"]);
    assert_eq!(names("$'\\x72m' x"), ["rm"]);
    assert_eq!(names("'r'\"m\" x"), ["rm"]);
    let f = parse("$cmd x; ${X}y");
    assert!(f.commands.iter().all(|c| c.name.dynamic));
}

#[test]
fn redirections_are_recorded_with_operator_and_target() {
    let f = parse("echo a > o1 2>> o2 &> o3 &>> o4 >| o5 2>&1 < in; cat <<< s");
    let got: Vec<(RedirectKind, String)> = f
        .all_redirects()
        .map(|r| {
            (
                r.kind,
                r.target
                    .as_ref()
                    .map(|t| t.value.clone())
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert!(got.contains(&(RedirectKind::Output, "o1".into())));
    assert!(got.contains(&(RedirectKind::Append, "o2".into())));
    assert!(got.contains(&(RedirectKind::OutputAndError, "o3".into())));
    assert!(got.contains(&(RedirectKind::AppendOutputAndError, "o4".into())));
    assert!(got.contains(&(RedirectKind::Clobber, "o5".into())));
    assert!(got.contains(&(RedirectKind::DuplicateOutput, "1".into())));
    assert!(got.contains(&(RedirectKind::Input, "in".into())));
    assert!(got.contains(&(RedirectKind::HereString, "s".into())));
    let f = parse("{ ls; } > out");
    assert_eq!(
        f.statement_redirects[0].target.as_ref().unwrap().value,
        "out"
    );
}

#[test]
fn heredoc_hides_nothing_on_its_line() {
    let f = parse("cat <<EOF; rm x\nhi\nEOF\necho after\n");
    let n: Vec<String> = f.commands.iter().map(|c| c.name.value.clone()).collect();
    assert!(n.contains(&"rm".to_string()), "{n:?}");
    assert!(n.contains(&"echo".to_string()), "{n:?}");
    assert_eq!(f.heredocs.len(), 1);
    assert_eq!(f.heredocs[0].body, "hi\n");
    let f = parse("bash <<'EOF'\nrm -rf /\nEOF\n");
    assert!(f.heredocs[0].quoted);
    assert_eq!(f.heredocs[0].body, "rm -rf /\n");
}

#[test]
fn substitutions_are_linked_to_their_word() {
    let f = parse("bash <(curl http://x)");
    let bash = f.commands.iter().find(|c| c.name.value == "bash").unwrap();
    let inner = &bash.args[0].substitutions;
    assert_eq!(inner.len(), 1);
    assert_eq!(f.commands[inner[0]].name.value, "curl");
}

#[test]
fn pipelines_keep_their_stages() {
    let f = parse("curl x | sh");
    assert_eq!(f.pipelines.len(), 1);
    assert_eq!(f.pipelines[0].len(), 2);
}

#[test]
fn arithmetic_on_variables_and_errors_are_reported() {
    assert!(parse("(( x[$(id)] ))").arithmetic_on_variables);
    assert!(parse("echo $((a+1))").arithmetic_on_variables);
    assert!(!parse("echo $((1+2))").arithmetic_on_variables);
    assert!(parse("[[ $x -eq 3 ]]").arithmetic_on_variables);
    assert!(!parse("[[ 1 -eq 3 ]]").arithmetic_on_variables);
    assert!(!parse("echo 'unterminated").parse_errors.is_empty());
}

#[test]
fn background_jobs_are_reported_and_other_ampersands_are_not() {
    for src in [
        "sleep 1 &",
        "a & b",
        "{ a & }",
        "echo $(sleep 1 &)",
        "a &\nb",
    ] {
        assert!(parse(src).background, "{src}");
    }
    for src in [
        "a && b",
        "a &> f",
        "a >&2",
        "a |& b",
        "echo 'a & b'",
        "echo \"&\"",
        "echo a\\&b",
    ] {
        assert!(!parse(src).background, "{src}");
    }
}

#[test]
fn offsets_and_array_keys_are_arithmetic_unless_they_are_numbers() {
    for src in [
        "echo ${PATH:x}",
        "echo \"${PATH:0:n}\"",
        "echo ${a[@]:i}",
        "echo ${@:x}",
        "a=([x]=1)",
        "a=([$(id)]=1)",
        "declare -a a=([k]=1)",
    ] {
        assert!(parse(src).arithmetic_on_variables, "{src}");
    }
    for src in [
        "echo ${PATH:0:5}",
        "echo ${x:-d} ${x:=d} ${x:?d} ${x:+d}",
        "echo ${x: -3}",
        "a=(1 2 3)",
        "a=([0]=x [1]=y)",
    ] {
        assert!(!parse(src).arithmetic_on_variables, "{src}");
    }
}

#[test]
fn loop_variables_are_assignments() {
    let names =
        |src: &str| -> Vec<String> { parse(src).assignments.into_iter().map(|a| a.name).collect() };
    assert_eq!(names("for OPTIND in 1; do :; done"), ["OPTIND"]);
    assert_eq!(names("select histchars in @; do :; done"), ["histchars"]);
    // The grammar does not read `${PATH:$x}`; a parse error fails it closed all the same.
    let f = parse("echo ${PATH:$x}");
    assert!(f.arithmetic_on_variables || !f.parse_errors.is_empty());
}

#[test]
fn deep_nesting_is_reported_not_overflowed() {
    let src = "$(".repeat(5000) + "ls" + &")".repeat(5000);
    let f = parse(&src);
    assert!(f.too_deep);
}

#[test]
fn a_leading_brace_list_keeps_its_brace() {
    // tree-sitter-bash reads `{rm,-rf,/}` as an unmatched group opener; bash brace-expands it.
    let f = parse("{rm,-rf,/}");
    assert_eq!(f.commands.len(), 1);
    assert_eq!(
        f.commands[0].name.brace_expansion(10).unwrap(),
        ["rm", "-rf", "/"]
    );
    let f = parse("{ ls; }");
    assert_eq!(f.commands[0].name.value, "ls");
}

#[test]
fn a_code_point_above_255_after_a_brace_does_not_crash_the_grammar() {
    // tree-sitter-bash's scanner calls isdigit() on the code point after `{`; U+10FFFF read far
    // outside the C library's table and killed the process. The grammar now sees ASCII only.
    for c in ['\u{10FFFF}', '\u{E0000}', '\u{1F600}', '\u{FFFD}', 'é'] {
        for src in [
            format!("echo {{{c}}}"),
            format!("echo {{{c}"),
            format!("{{{c}..{c}}}"),
        ] {
            let f = parse(&src);
            assert!(!f.commands.is_empty(), "{src:?}");
        }
    }
    // Words keep their real text: only the grammar's copy is rewritten.
    let f = parse("grep 'é' fïle");
    assert_eq!(f.commands[0].args[0].value, "é");
    assert_eq!(f.commands[0].args[1].value, "fïle");
}

#[test]
fn read_write_redirection_keeps_the_pipeline() {
    let f = parse("curl x | tee s | sh | cat <> rw.txt");
    assert!(f.parse_errors.is_empty(), "{:?}", f.parse_errors);
    assert_eq!(f.pipelines.len(), 1);
    assert_eq!(f.pipelines[0].len(), 4);
    let rw = f.commands[3]
        .redirects
        .iter()
        .chain(&f.statement_redirects)
        .next()
        .unwrap();
    assert_eq!(rw.kind, RedirectKind::ReadWrite);
    assert_eq!(rw.target.as_ref().unwrap().value, "rw.txt");
    // Quoted, it is text.
    let f = parse("grep '<>' f");
    assert_eq!(f.commands[0].args[0].value, "<>");
    assert!(f.commands[0].redirects.is_empty());
}

#[test]
fn backticks_glued_across_a_newline_are_a_parse_error() {
    let f = parse("echo `whoami` \n `echo ls`");
    assert!(
        f.parse_errors.iter().any(|e| e.contains("backtick")),
        "{:?}",
        f.parse_errors
    );
    // Blanks between two substitutions are an ordinary argument list.
    assert!(parse("echo `pwd` `whoami`").parse_errors.is_empty());
}

#[test]
fn keywords_before_a_compound_command_are_read_through() {
    for src in [
        "! while true; do rm -rf x; done",
        "time while true; do rm -rf x; done",
        "time -p { rm -rf x; }",
        "! if true; then rm -rf x; fi",
    ] {
        let rm = parse(src)
            .commands
            .iter()
            .find(|c| c.name.value == "rm")
            .map(|c| c.args.iter().map(|a| a.value.clone()).collect::<Vec<_>>());
        assert_eq!(rm, Some(vec!["-rf".to_string(), "x".to_string()]), "{src}");
    }
    // Without the misreading there is one reading only.
    assert_eq!(names("! ls"), ["ls"]);
    assert_eq!(names("time ls"), ["time"]);
}

#[test]
fn control_characters_are_word_characters_as_in_bash() {
    // Bash's blanks are space and tab; CR, VT and FF are word characters. The grammar skipped
    // them as blanks, so a `#` after one started a comment that hid the rest of the line.
    for c in ['\r', '\u{0b}', '\u{0c}'] {
        let src = format!("ls{c}# ; rm -rf x");
        assert!(
            names(&src).iter().any(|n| n == "rm"),
            "{src:?}: {:?}",
            names(&src)
        );
        let src = format!("ls {c}# ; rm -rf x");
        assert!(names(&src).iter().any(|n| n == "rm"), "{src:?}");
    }
    // A NUL does not end the grammar's input early.
    assert!(names("ls\0; rm -rf x").iter().any(|n| n == "rm"));
    // Words keep their real text.
    let f = parse("ls a\rb");
    assert_eq!(f.commands[0].args[0].value, "a\rb");
}

#[test]
fn an_escaped_blank_does_not_start_a_comment() {
    assert!(names("echo \\ # ; rm -rf x").iter().any(|n| n == "rm"));
    assert!(names("echo \\\t# ; rm -rf x").iter().any(|n| n == "rm"));
    // An escaped backslash, then a real blank: the comment is real.
    assert!(!names("echo \\\\ # ; rm -rf x").iter().any(|n| n == "rm"));
    let f = parse("echo a\\ b");
    assert_eq!(f.commands[0].args[0].value, "a b");
}

#[test]
fn invalid_assignment_names_are_parse_errors() {
    assert!(!parse("1a=2 ls").parse_errors.is_empty());
    // The grammar itself reads this one as the command bash runs.
    assert_eq!(names("a-b=1"), ["a-b=1"]);
    assert!(parse("a=1 _b2=3 ls").parse_errors.is_empty());
}

#[test]
fn second_readings_are_made_once_not_per_keyword() {
    // Each keyword once cost a whole reading of its own: 3,000 `time`s took 23 s and 1.8 GB.
    for src in [
        "time ".repeat(300) + "while true; do ls; done",
        "! ".repeat(300) + "while true; do ls; done",
        "coproc ".repeat(300) + "while true; do ls; done",
        "x# ".repeat(300) + "${",
    ] {
        let n = parses_for(&src);
        assert!(n <= 4, "{n} parses for {:?}…", &src[..20]);
    }
}

#[test]
fn too_many_here_documents_are_not_read() {
    // The grammar's here-document scanning is quadratic in the operators on one line.
    let src = "cat <<E; ".repeat(300) + "\n" + &"E\n".repeat(300);
    let f = parse(&src);
    assert!(f.commands.is_empty());
    assert!(
        f.parse_errors
            .iter()
            .any(|e| e.contains("too many to check")),
        "{:?}",
        f.parse_errors
    );
    assert!(parse("cat <<E\nx\nE\n").parse_errors.is_empty());
}

/// Issue 19: read-only is a proof, so the walk must know every construct the grammar can hand
/// it. A grammar upgrade that adds a named kind fails here until the kind is handled or listed.
#[test]
fn grammar_kinds_are_all_modelled() {
    let language: tree_sitter::Language = tree_sitter_bash::LANGUAGE.into();
    let mut unknown = Vec::new();
    for id in 0..language.node_kind_count() as u16 {
        if !language.node_kind_is_named(id) || !language.node_kind_is_visible(id) {
            continue;
        }
        let Some(kind) = language.node_kind_for_id(id) else {
            continue;
        };
        if !walk::WALKED_THROUGH.contains(&kind) && !walk::DISPATCHED.contains(&kind) {
            unknown.push(kind);
        }
    }
    unknown.sort_unstable();
    unknown.dedup();
    assert!(
        unknown.is_empty(),
        "named kinds the walk does not model: {unknown:?}"
    );
}

#[test]
fn an_unmodelled_kind_is_recorded_and_keeps_the_command_from_standing_alone() {
    // The walk only meets kinds the grammar makes, so this checks the recording through the
    // facts' own merge: a reading with an unmodelled kind is never a sole command.
    let mut facts = parse("ls");
    assert!(facts.sole_command().is_some());
    facts.unmodelled.push("future_construct".into());
    assert!(facts.sole_command().is_none());
}

/// The names whose standing assignment has surely run, in its shell, before the last command
/// (text order and scope; the value is not looked at here).
fn set_before_last(src: &str) -> Vec<String> {
    let f = parse(src);
    let last = f.commands.len() - 1;
    let target = &f.commands[last];
    let mut names: Vec<String> = f
        .assignments
        .iter()
        .filter(|a| a.after_commands <= last && a.scope.encloses(&target.scope))
        .map(|a| a.name.clone())
        .collect();
    names.sort();
    names
}

#[test]
fn an_assignment_reaches_only_commands_in_every_region_it_is_in() {
    // Each of these assigns in a shell of its own or in a place that may not run.
    for src in [
        "A=1 & last",
        "A=1 | last",
        "true | A=1; last",
        "(A=1); last",
        "echo $(A=1); last",
        "echo `A=1`; last",
        "cat <(A=1); last",
        "f() { A=1; }; last",
        "if c; then A=1; fi; last",
        "if c; then A=1; else last; fi",
        "if c; then :; elif d; then A=1; else last; fi",
        "case x in x) A=1;; y) last;; esac",
        "false && A=1; last",
        "false || A=1; last",
        "for i in 1; do A=1; done; last",
        "while c; do A=1; done; last",
        "until c; do A=1; done; last",
        "for ((i=0; i<1; i++)); do A=1; done; last",
        "{ A=1; } & last",
        "last; A=1",
    ] {
        assert_eq!(set_before_last(src), Vec::<String>::new(), "{src}");
    }
    // And these surely ran in the shell of the last command, before it.
    for src in [
        "A=1; last",
        "A=1 && last",
        "A=1; (last)",
        "A=1; echo $(last)",
        "A=1; last | cat",
        "A=1; { last; }",
        "if A=1; then last; fi",
        "if c; then A=1; last; fi",
        "if c; then :; elif A=1; then last; fi",
        "case x in x) A=1; last;; esac",
        "for i in 1; do A=1; last; done",
        "f() { A=1; last; }",
        "A=1; if c; then :; else last; fi",
    ] {
        assert_eq!(set_before_last(src), ["A"], "{src}");
    }
}

#[test]
fn a_line_break_the_grammar_ran_across_starts_a_command_with_its_assignments() {
    let f = parse("a | b | c\nA=1 B+=2 rm -rf x");
    let rm = f
        .commands
        .iter()
        .find(|c| c.name.value == "rm")
        .expect("rm is read as a command");
    let set: Vec<&str> = rm.assignments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(set, ["A", "B"]);
}

#[test]
fn a_line_continuation_is_read_joined_too() {
    // bash removes backslash-newline before it splits words: `set\⏎sid` is `setsid`.
    let got = names("set\\\nsid rm x");
    assert!(got.contains(&"setsid".to_string()), "{got:?}");
    assert!(
        got.contains(&"set".to_string()),
        "the reading as written stays: {got:?}"
    );
    // An escaped backslash before the newline is no continuation.
    assert_eq!(join_continuations("a\\\\\nb"), None);
    assert_eq!(join_continuations("a\\\nb").as_deref(), Some("ab"));
    assert_eq!(join_continuations("ls -la"), None);
}
