//! The checker on a small made-up crate, so it cannot pass by matching nothing: every way a
//! path can be written is caught, and nothing that is not a path is taken for one.

use std::path::PathBuf;

use super::check::{
    Breach, CrateRule, Layer, check, crate_breaches, crate_rule_errors, table_errors,
};
use super::scan::{CrateRoot, Sources, scan};

const TABLE: &[Layer] = &[
    Layer {
        name: "low",
        holds: &["kit::low"],
        within: None,
        may_use: &[],
        private: &[],
    },
    Layer {
        name: "mid",
        holds: &["kit::mid"],
        within: None,
        may_use: &[("low", "mid is built on low")],
        private: &[],
    },
    Layer {
        name: "low values",
        holds: &["kit::low::Value"],
        within: Some("low"),
        may_use: &[],
        private: &[],
    },
    Layer {
        name: "top",
        holds: &["kit::top"],
        within: None,
        may_use: &[
            ("mid", "top is built on mid"),
            ("low values", "values only"),
        ],
        private: &[("kit::top::inner", "top's own machinery")],
    },
    Layer {
        name: "bin",
        holds: &["app"],
        within: None,
        may_use: &[("top", "the binary wires top")],
        private: &[],
    },
];

fn fixture(files: &[(&str, &str)]) -> Sources {
    files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect()
}

const CRATES: [CrateRoot; 2] = [
    CrateRoot {
        name: "kit",
        root: "src/lib.rs",
    },
    CrateRoot {
        name: "app",
        root: "src/main.rs",
    },
];

fn breaches(files: &[(&str, &str)]) -> Vec<Breach> {
    check(TABLE, &scan(&fixture(files), &CRATES, "kit"))
}

fn at(b: &[Breach]) -> Vec<(String, usize, String)> {
    b.iter()
        .map(|b| (b.file.display().to_string(), b.line, b.written.clone()))
        .collect()
}

/// A crate that keeps the table: lib root, three layers, a binary.
const CLEAN: &[(&str, &str)] = &[
    ("src/lib.rs", "pub mod low;\npub mod mid;\npub mod top;\n"),
    (
        "src/low.rs",
        "pub struct Value;\npub struct Hidden;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    ),
    (
        "src/mid/mod.rs",
        "mod part;\nuse crate::low::{Value, Hidden};\npub use part::Part;\n",
    ),
    (
        "src/mid/part.rs",
        "pub struct Part(super::super::low::Value);\n",
    ),
    (
        "src/top.rs",
        "#[path = \"top_inner.rs\"]\nmod inner;\nuse crate::mid::Part;\nuse crate::low::Value;\n\
         fn f() -> inner::X { todo!() }\n",
    ),
    ("src/top_inner.rs", "pub struct X;\n"),
    ("src/main.rs", "mod cli;\nfn main() { kit::top::run(); }\n"),
    (
        "src/cli.rs",
        "use kit::top::Thing;\nuse crate::main_helper as _;\n",
    ),
];

#[test]
fn a_crate_that_keeps_the_table_has_no_breach_and_was_really_read() {
    let s = scan(&fixture(CLEAN), &CRATES, "kit");
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    assert_eq!(s.modules.len(), CLEAN.len());
    assert_eq!(
        s.modules.get(&PathBuf::from("src/top_inner.rs")),
        Some(&vec!["kit".into(), "top".into(), "inner".into()]),
        "#[path] is followed"
    );
    let targets: Vec<String> = s.references.iter().map(|r| r.target.join("::")).collect();
    for want in [
        "kit::low::Value",
        "kit::low::Hidden",
        "kit::mid::part::Part",
        "kit::top::inner::X",
        "kit::top::run",
        "app::main_helper",
    ] {
        assert!(
            targets.iter().any(|t| t == want),
            "{want} not in {targets:?}"
        );
    }
    // `use super::*` in an inline test module names its own file's module, not the parent.
    let glob = s
        .references
        .iter()
        .find(|r| r.from.join("::") == "kit::low::tests");
    assert_eq!(glob.map(|r| r.target.join("::")), Some("kit::low".into()));
    let b = check(TABLE, &s);
    assert!(b.is_empty(), "{b:?}");
}

fn with(path: &str, text: &str) -> Vec<(&'static str, String)> {
    CLEAN
        .iter()
        .map(|(p, t)| {
            (
                *p,
                if *p == path {
                    text.to_string()
                } else {
                    t.to_string()
                },
            )
        })
        .collect()
}

fn breaches_with(path: &str, text: &str) -> Vec<Breach> {
    let files = with(path, text);
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    breaches(&refs)
}

#[test]
fn an_upward_use_is_named_by_file_line_and_rule() {
    let b = breaches_with("src/low.rs", "pub struct Value;\n\nuse crate::mid::Part;\n");
    assert_eq!(
        at(&b),
        [("src/low.rs".into(), 3, "crate::mid::Part".into())]
    );
    assert!(b[0].rule.contains("low may not use mid"), "{}", b[0].rule);
}

#[test]
fn every_spelling_of_a_path_is_caught() {
    let spellings = [
        // a nested use tree
        "use crate::{low::Value, mid::{part::{Part as P}}};\n",
        // a path in an expression
        "fn f() { let _ = crate::mid::part::make(); }\n",
        // super:: leaving the module
        "fn f() -> super::mid::Part { todo!() }\n",
        // self:: then super::
        "use self::super::mid::Part;\n",
        // a glob
        "use crate::mid::*;\n",
    ];
    for text in spellings {
        let b = breaches_with("src/low.rs", text);
        assert_eq!(b.len(), 1, "{text}: {b:?}");
        assert!(
            b[0].rule.contains("low may not use mid"),
            "{text}: {}",
            b[0].rule
        );
    }
}

#[test]
fn comments_strings_and_outside_crates_are_not_paths() {
    let text = "// use crate::mid::Part;\n/* crate::mid::x */\nconst S: &str = \"crate::mid\";\n\
                use std::mid::Part;\nuse ::mid::Part as Q;\n/// [`crate::mid::Part`]\nfn f() {}\n";
    assert!(breaches_with("src/low.rs", text).is_empty());
}

#[test]
fn the_library_name_counts_only_in_the_binary() {
    // In the binary, `kit::mid` is the library's mid, which bin may not use.
    let b = breaches_with("src/cli.rs", "use kit::mid::Part;\n");
    assert_eq!(at(&b), [("src/cli.rs".into(), 1, "kit::mid::Part".into())]);
    assert!(b[0].rule.contains("bin may not use mid"), "{}", b[0].rule);
    // In the library the name is nobody's: it is not taken for the crate itself.
    assert!(breaches_with("src/low.rs", "use kit::mid::Part;\n").is_empty());
}

#[test]
fn item_rows_narrow_an_edge_and_private_paths_stay_private() {
    // top may use low's Value, not low's other items.
    let top = "#[path = \"top_inner.rs\"]\nmod inner;\nuse crate::low::{Value, Hidden};\n";
    let b = breaches_with("src/top.rs", top);
    assert_eq!(
        at(&b),
        [("src/top.rs".into(), 3, "crate::low::Hidden".into())]
    );
    // bin may use top, but not top's private inner module.
    let b = breaches_with("src/cli.rs", "use kit::top::inner::X;\n");
    assert_eq!(b.len(), 1, "{b:?}");
    assert!(b[0].rule.contains("private to top"), "{}", b[0].rule);
}

#[test]
fn a_file_or_module_the_table_cannot_place_is_a_breach() {
    let mut files: Vec<(&str, &str)> = CLEAN.to_vec();
    files.push(("src/stray.rs", "use crate::low::Value;\n"));
    let b = breaches(&files);
    assert!(
        b.iter()
            .any(|b| b.rule.contains("src/stray.rs: no `mod` declaration")),
        "{b:?}"
    );
    let b = breaches_with(
        "src/lib.rs",
        "pub mod low;\npub mod mid;\npub mod top;\npub mod extra;\n",
    );
    assert!(
        b.iter().any(|b| b.rule.contains("declared but missing")),
        "{b:?}"
    );
    let b = breaches_with("src/mid/part.rs", "use crate::nowhere::Thing;\n");
    assert!(
        b.iter()
            .any(|b| b.rule.contains("which no layer of the table holds")),
        "{b:?}"
    );
}

#[test]
fn a_table_with_a_dangling_or_unexplained_edge_is_refused() {
    let bad = [Layer {
        name: "a",
        holds: &["x::a"],
        within: None,
        may_use: &[("ghost", "why"), ("a", " ")],
        private: &[],
    }];
    let e = table_errors(&bad);
    assert!(
        e.iter().any(|e| e.contains("ghost, which is not a row")),
        "{e:?}"
    );
    assert!(e.iter().any(|e| e.contains("without saying why")), "{e:?}");
    assert!(table_errors(TABLE).is_empty());
}

#[test]
fn a_cycle_among_siblings_is_found_and_a_parent_edge_is_not_one() {
    let files = [
        ("src/lib.rs", "pub mod mid;\n"),
        ("src/mid/mod.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\n"),
        ("src/mid/a.rs", "use super::b::B;\npub struct A;\n"),
        ("src/mid/b.rs", "pub struct B;\nfn f() { super::c::g(); }\n"),
        ("src/mid/c.rs", "use crate::mid::A;\npub fn g() {}\n"),
    ];
    let s = scan(&fixture(&files), &CRATES[..1], "kit");
    // c names A through the parent's re-export: no edge, no cycle.
    assert!(super::check::sibling_cycles(&s, "kit").is_empty());
    let mut files = files.to_vec();
    files[4] = ("src/mid/c.rs", "use super::a::A;\npub fn g() {}\n");
    let s = scan(&fixture(&files), &CRATES[..1], "kit");
    assert_eq!(
        super::check::sibling_cycles(&s, "kit"),
        ["kit::mid: a -> b -> c -> a"]
    );
}

#[test]
fn a_cycle_between_folders_is_found_however_deep_its_files_sit() {
    // `web/fetch.rs` names `host`, and `host/mod.rs` names `web::Pair`: `host -> web -> host`
    // among the children of `kit::tools`, though no two files of one folder name each other.
    let files = [
        ("src/lib.rs", "pub mod tools;\n"),
        ("src/tools/mod.rs", "pub mod host;\npub mod web;\n"),
        (
            "src/tools/host/mod.rs",
            "mod gates;\nuse crate::tools::web::Pair;\n",
        ),
        ("src/tools/host/gates.rs", "use super::Host;\n"),
        ("src/tools/web/mod.rs", "pub mod fetch;\npub struct Pair;\n"),
        ("src/tools/web/fetch.rs", "use crate::tools::host::Host;\n"),
    ];
    let s = scan(&fixture(&files), &CRATES[..1], "kit");
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    assert_eq!(
        super::check::sibling_cycles(&s, "kit::tools"),
        ["kit::tools: host -> web -> host"]
    );
    // The client moved under the host: `host/web` is the host's own, and nothing goes back up.
    let files = [
        ("src/lib.rs", "pub mod tools;\n"),
        ("src/tools/mod.rs", "pub mod host;\npub mod web;\n"),
        (
            "src/tools/host/mod.rs",
            "mod client;\nuse crate::tools::host::client::Pair;\n",
        ),
        (
            "src/tools/host/client.rs",
            "use super::Host;\npub struct Pair;\n",
        ),
        ("src/tools/web/mod.rs", "pub mod fetch;\n"),
        (
            "src/tools/web/fetch.rs",
            "use crate::tools::host::{Host, client::Pair};\n",
        ),
    ];
    let s = scan(&fixture(&files), &CRATES[..1], "kit");
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    assert!(super::check::sibling_cycles(&s, "kit::tools").is_empty());
}

/// `drawkit` only in `top` (as `ratatui` only in the screen), `netkit` only in `mid::part`.
const CRATE_RULES: &[CrateRule] = &[
    CrateRule {
        krate: "drawkit",
        used_by: &[("kit::top", "top draws")],
    },
    CrateRule {
        krate: "netkit",
        used_by: &[("kit::mid::part", "part talks to the network")],
    },
];

fn crate_breaches_with(path: &str, text: &str) -> Vec<Breach> {
    let files = with(path, text);
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    crate_breaches(CRATE_RULES, &scan(&fixture(&refs), &CRATES, "kit"))
}

#[test]
fn a_crate_used_where_its_rule_allows_is_no_breach_and_was_really_read() {
    let top = "#[path = \"top_inner.rs\"]\nmod inner;\nuse drawkit::Frame;\n\
               fn f() { drawkit::draw(); }\n";
    let files = with("src/top.rs", top);
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let s = scan(&fixture(&refs), &CRATES, "kit");
    let seen: Vec<(usize, String)> = s
        .outside
        .iter()
        .filter(|r| r.target[0] == "drawkit")
        .map(|r| (r.line, r.from.join("::")))
        .collect();
    assert_eq!(seen, [(3, "kit::top".into()), (4, "kit::top".into())]);
    assert!(crate_breaches(CRATE_RULES, &s).is_empty());
    let part = "use netkit::Client;\npub struct Part(super::super::low::Value);\n";
    assert!(crate_breaches_with("src/mid/part.rs", part).is_empty());
}

#[test]
fn a_crate_used_outside_its_layers_is_named_by_file_line_and_rule() {
    let low = "pub struct Value;\nuse drawkit::Frame;\nuse ::drawkit::{a, b::C};\n\
               fn f() { let _ = drawkit::draw(); }\n// drawkit::x\n\
               const S: &str = \"drawkit::y\";\nuse std::drawkit::Z;\n";
    let b = crate_breaches_with("src/low.rs", low);
    assert_eq!(
        at(&b),
        [
            ("src/low.rs".into(), 2, "drawkit::Frame".into()),
            ("src/low.rs".into(), 3, "::drawkit::a".into()),
            ("src/low.rs".into(), 3, "::drawkit::b::C".into()),
            ("src/low.rs".into(), 4, "drawkit::draw".into()),
        ]
    );
    assert!(
        b[0].rule
            .contains("kit::low may not use the crate drawkit (only kit::top may)"),
        "{}",
        b[0].rule
    );
    // A sibling of the allowed module is outside it; so is its parent.
    let b = crate_breaches_with("src/mid/mod.rs", "mod part;\nuse netkit::Client;\n");
    assert_eq!(
        at(&b),
        [("src/mid/mod.rs".into(), 2, "netkit::Client".into())]
    );
    // The binary is judged too.
    let b = crate_breaches_with("src/cli.rs", "use drawkit::Frame;\n");
    assert_eq!(at(&b), [("src/cli.rs".into(), 1, "drawkit::Frame".into())]);
    assert!(b[0].rule.contains("app::cli may not use"), "{}", b[0].rule);
}

#[test]
fn a_crate_table_with_a_twice_named_crate_or_an_unexplained_edge_is_refused() {
    let bad = [
        CrateRule {
            krate: "drawkit",
            used_by: &[("kit::top", " ")],
        },
        CrateRule {
            krate: "drawkit",
            used_by: &[],
        },
    ];
    let e = crate_rule_errors(&bad);
    assert!(e.iter().any(|e| e.contains("without saying why")), "{e:?}");
    assert!(e.iter().any(|e| e.contains("in the table twice")), "{e:?}");
    assert!(crate_rule_errors(CRATE_RULES).is_empty());
}
