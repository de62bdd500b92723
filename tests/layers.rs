//! The layers of DESIGN.md, read from the source: every `use`, `crate::`, `super::`, `self::`
//! and (in the binary) `spear::` path of every file under `src/`, judged against one table
//! (`layers/table.rs`). A breach names the file, the line and the rule it breaks. The same scan
//! finds import cycles among sibling modules, and the external crates each layer names.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap in a test is a failed test

#[path = "layers/check.rs"]
mod check;
#[path = "layers/fixture.rs"]
mod fixture;
#[path = "layers/lex.rs"]
mod lex;
#[path = "layers/scan.rs"]
mod scan;
#[path = "layers/table.rs"]
mod table;

use std::path::{Path, PathBuf};

/// Every `.rs` under `src/`, by its path relative to the package.
fn sources() -> scan::Sources {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = scan::Sources::new();
    let mut dirs = vec![root.join("src")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel: PathBuf = p.strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    out
}

const CRATES: [scan::CrateRoot; 2] = [
    scan::CrateRoot {
        name: "spear",
        root: "src/lib.rs",
    },
    scan::CrateRoot {
        name: "main",
        root: "src/main.rs",
    },
];

/// Fails with every breach, one a line, each with its file and line.
fn assert_none(breaches: &[check::Breach], what: &str) {
    let shown: Vec<String> = breaches.iter().map(ToString::to_string).collect();
    assert!(
        breaches.is_empty(),
        "{} {what}:\n{}",
        shown.len(),
        shown.join("\n")
    );
}

#[test]
fn the_table_is_well_formed() {
    let errors = check::table_errors(table::TABLE);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn every_import_in_src_keeps_to_the_table() {
    let src = sources();
    let scan = scan::scan(&src, &CRATES, "spear");
    assert_none(
        &check::check(table::TABLE, &scan),
        "breach(es) of the layer table (tests/layers/table.rs)",
    );
    // Positive controls: every file was placed, and the scan saw the edges the design is
    // made of, so an empty breach list is not an empty scan.
    assert_eq!(scan.modules.len(), src.len());
    assert!(scan.references.len() > 500, "{}", scan.references.len());
    let seen = |from: &str, to: &str| {
        scan.references.iter().any(|r| {
            check::place(table::TABLE, &r.from).map(|l| l.name) == Some(from)
                && check::place(table::TABLE, &r.target).map(|l| l.name) == Some(to)
        })
    };
    for (from, to) in [
        ("command_runner", "sandbox"),
        ("command_runner", "execution profile"),
        ("sandbox", "process"),
        ("sandbox", "secrets"),
        ("audit", "secrets"),
        ("command_policy", "shell"),
        ("coding tools", "tools"),
        ("agent", "tools"),
        ("tui", "agent"),
        ("cli", "tui"),
    ] {
        assert!(seen(from, to), "no reference from {from} to {to} was seen");
    }
}

#[test]
fn external_crates_are_used_only_where_the_table_says() {
    let errors = check::crate_rule_errors(table::CRATE_RULES);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let src = sources();
    let scan = scan::scan(&src, &CRATES, "spear");
    assert_none(
        &check::crate_breaches(table::CRATE_RULES, &scan),
        "use(s) of a crate outside its layers (tests/layers/table.rs, CRATE_RULES)",
    );
    // Positive controls: each rule names a real dependency (a renamed crate would otherwise
    // make its rule match nothing), and the scan saw each crate where it is allowed.
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let deps = manifest
        .split("\n[dependencies]\n")
        .nth(1)
        .and_then(|d| d.split("\n[").next())
        .unwrap();
    for rule in table::CRATE_RULES {
        let dashed = rule.krate.replace('_', "-");
        assert!(
            deps.lines()
                .any(|l| l.starts_with(&format!("{} ", rule.krate))
                    || l.starts_with(&format!("{dashed} "))),
            "{} is not a dependency in Cargo.toml",
            rule.krate
        );
        let seen = scan
            .outside
            .iter()
            .filter(|r| r.target.first().map(String::as_str) == Some(rule.krate))
            .count();
        assert!(seen > 0, "no use of {} was seen in src/", rule.krate);
    }
}

/// No import cycle among sibling modules anywhere under `root` (DESIGN.md: "no import cycles
/// inside any of them"). A folder stands for everything in it, so `tools::web::fetch_url`
/// naming `tools::host` is the edge `web -> host`.
fn assert_no_sibling_cycles(root: &str) {
    let src = sources();
    let scan = scan::scan(&src, &CRATES, "spear");
    // Positive control: the root is there and has modules to judge.
    let prefix: Vec<&str> = root.split("::").collect();
    let below = scan
        .modules
        .values()
        .filter(|m| m.len() > prefix.len() && m.iter().zip(&prefix).all(|(a, b)| a == b))
        .count();
    assert!(
        below > 3,
        "{root} has only {below} modules: is it still there?"
    );
    let cycles = check::sibling_cycles(&scan, root);
    assert!(
        cycles.is_empty(),
        "import cycles among sibling modules:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn harness_modules_import_their_siblings_without_cycles() {
    assert_no_sibling_cycles("spear::harness");
}

#[test]
fn tools_modules_import_their_siblings_without_cycles() {
    assert_no_sibling_cycles("spear::tools");
}

#[test]
fn agent_modules_import_their_siblings_without_cycles() {
    assert_no_sibling_cycles("spear::agent");
}

#[test]
fn tui_modules_import_their_siblings_without_cycles() {
    assert_no_sibling_cycles("spear::tui");
}

/// Every environment variable `src/` reads by name is in `spear::config::env::VARIABLES`, the
/// one documented list (issue 18: every variable Spear reads, in one place).
#[test]
fn every_environment_variable_read_is_listed_in_config() {
    let listed: Vec<&str> = spear::config::env::VARIABLES
        .iter()
        .map(|v| v.name)
        .collect();
    let read = regex::Regex::new(r#"\b(?:var|var_os|get)\("([A-Z][A-Z0-9_]+)"\)"#).unwrap();
    let mut seen = 0;
    let mut missing = Vec::new();
    for (path, text) in sources().iter() {
        for (n, line) in text.lines().enumerate() {
            for c in read.captures_iter(line) {
                seen += 1;
                if !listed.contains(&&c[1]) {
                    missing.push(format!("{}:{}: {}", path.display(), n + 1, &c[1]));
                }
            }
        }
    }
    // Positive control: the reads the settings are made of were found.
    assert!(
        seen >= 15,
        "only {seen} reads found: the pattern no longer matches the code"
    );
    assert!(
        missing.is_empty(),
        "not in config::env::VARIABLES:\n{}",
        missing.join("\n")
    );
}

/// Where a `ToolRouter` may be assembled by hand: the library's builder, and the test modules
/// below, each a unit test of the router's own gates with a double for what the builder would
/// not let it swap (issue 18: the builder's overrides never replace the sandbox, the audit log
/// or the policy). A new file on this list is a decision to be made in review, with its reason.
const ROUTER_BY_HAND: &[(&str, &str)] = &[
    ("src/agent/builder.rs", "the one composition root"),
    (
        "tests/tools/support.rs",
        "gate tests: an executor that records or refuses, so a refused command provably never runs",
    ),
    (
        "tests/tools/fail_closed.rs",
        "registers a tool that forgets to name its writes, which no shipped registry holds",
    ),
    (
        "tests/agent_loop/support.rs",
        "recording_router only: the few loop tests that count what ran, simulate a missing \
         sandbox, or hand the loop a dangerous string that must never reach a shell",
    ),
    (
        "benches/agent_loop.rs",
        "measures the loop's own overhead with a no-op tool and no commands",
    ),
];

#[test]
fn routers_are_built_by_the_builder_or_a_listed_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = ["src", "tests", "benches", "examples"]
        .iter()
        .map(|d| root.join(d))
        .filter(|d| d.exists())
        .collect();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && p != Path::new(file!()) {
                let text = std::fs::read_to_string(&p).unwrap();
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                if text.contains(concat!("ToolRouter", "::new(")) && rel != "tests/layers.rs" {
                    found.push(rel);
                }
            }
        }
    }
    // Positive control: the builder itself was found by the scan.
    assert!(
        found.iter().any(|f| f == "src/agent/builder.rs"),
        "{found:?}"
    );
    let stray: Vec<&String> = found
        .iter()
        .filter(|f| !ROUTER_BY_HAND.iter().any(|(p, _)| p == f))
        .collect();
    assert!(
        stray.is_empty(),
        "a ToolRouter assembled outside the library's builder (agent/builder.rs): {stray:?}; \
         build through SessionBuilder, or list the file in ROUTER_BY_HAND with its reason"
    );
}

/// The egress proxy's test-only reach (an exemption of an exact address, a resolver table, the
/// variables that set them) exists only in a `test-hooks` build: every mention of it in `src/`
/// sits under a `cfg` naming `test-hooks`, on itself or on an item around it. A release build
/// therefore has none of it.
#[test]
fn the_egress_test_hooks_exist_only_in_test_builds() {
    const HOOKS: &[&str] = &[
        "exempt_egress_for_tests",
        "resolve_egress_for_tests",
        "egress_exempt",
        "TableResolver",
        "SPEAR_TEST_EGRESS",
        "egress_hooks_from_env_for_tests",
        "exempt:",
        ".exempt",
    ];
    let mut seen = 0;
    let mut ungated = Vec::new();
    for (path, text) in sources().iter() {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if HOOKS.iter().any(|h| code.contains(h)) {
                seen += 1;
                if !gated(&lines, i) {
                    ungated.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        seen >= 10,
        "only {seen} mentions found: the scan no longer finds the hooks"
    );
    assert!(
        ungated.is_empty(),
        "test-only egress hooks outside a test-hooks cfg:\n{}",
        ungated.join("\n")
    );
    // Negative control: the same check flags an ungated use.
    let fixture = [
        "impl R {",
        "    fn f(&self) {",
        "        self.egress_exempt.push(x);",
        "    }",
        "}",
    ];
    assert!(!gated(&fixture, 2));
    let gated_fixture = [
        "#[cfg(any(test, feature = \"test-hooks\"))]",
        "fn f(&self) {",
        "    if x {",
        "        self.egress_exempt.push(x);",
        "    }",
        "}",
    ];
    assert!(gated(&gated_fixture, 3));
}

/// Whether line `i` is under a `cfg` naming `test-hooks`: on the attribute lines right above
/// it, or above the line that opens any block enclosing it.
fn gated(lines: &[&str], i: usize) -> bool {
    let attrs_gate = |at: usize| {
        lines[..at]
            .iter()
            .rev()
            .take_while(|l| l.trim_start().starts_with("#["))
            .any(|l| l.contains("test-hooks"))
    };
    if attrs_gate(i) {
        return true;
    }
    let mut balance: i64 = 0;
    for j in (0..i).rev() {
        let code = lines[j].split("//").next().unwrap_or("");
        balance += code.matches('}').count() as i64 - code.matches('{').count() as i64;
        if balance < 0 {
            if attrs_gate(j) {
                return true;
            }
            balance = 0;
        }
    }
    false
}
