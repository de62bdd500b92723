//! The standards library end to end: add, search, read by clause and by pages, re-add, remove,
//! for every accepted kind, through the same router and exposure a model's calls take; and the
//! refusals (bad names, binary and empty sources, unknown standards and clauses).

use std::sync::Arc;

use serde_json::json;
use spear::agent::builder::{Place, SessionBuilder};
use spear::config::HarnessSettings;
use spear::harness::command_policy::NoApprover;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::harness::workspace::Workspace;
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::normative::extract::SourceKind;
use spear::tools::normative::library::AddOutcome;
use spear::tools::normative::{EngagedStandard, StandardError, StandardsLibrary};
use spear::tools::router::turn::Turn;
use spear::tools::router::{ToolCall, ToolRouter};

use super::support::Fixture;

pub const FIRE_CODE_MD: &str = "# Fire Code\n\nIntroductory remarks.\n\n## 1 Scope\nThis code \
applies to doors in public buildings.\n\n## 4 Doors\n\n### 4.2 Fire doors\nFire doors shall \
close by themselves within 30 seconds.\n\n#### 4.2.1 Testing\nEvery fire door shall be tested \
once a year and the result logged.\n\n### 4.3 Exit doors\nExit doors shall open outwards without \
a key.\n";

pub struct Lib {
    pub fx: Fixture,
    pub library: Arc<StandardsLibrary>,
    pub engaged: EngagedStandard,
    pub router: ToolRouter,
}

impl Lib {
    pub fn new() -> Lib {
        crate::extractor::use_spear_binary();
        let fx = Fixture::new();
        let library = Arc::new(StandardsLibrary::open_in(&fx.state).unwrap());
        let engaged = EngagedStandard::default();
        // The router the binary builds (the library's builder, the real sandbox); the test
        // fills the library on disk through its own handle, as `spear standard add` does.
        let place = Place::of(
            Workspace::new(&fx.project).unwrap(),
            fx.project.clone(),
            fx.state.clone(),
        );
        let router = SessionBuilder::new(place, HarnessSettings::default(), "test")
            .engaged(engaged.clone())
            .router()
            .unwrap();
        Lib {
            fx,
            library,
            engaged,
            router,
        }
    }

    /// A call as a purely normative turn in SAFE makes it (by its wire name when `wire`).
    pub fn call(&self, name: &str, args: serde_json::Value) -> (ToolStatus, String) {
        let settings = ExposureSettings {
            standard_engaged: true,
            web_enabled: false,
            purely_normative: true,
        };
        let view = ToolExposurePolicy::view(self.router.registry(), &settings);
        let mut turn = Turn::new(ExecutionMode::Safe, view, Arc::new(NoApprover));
        let env = self
            .router
            .call(
                &mut turn,
                &ToolCall {
                    id: "c1".into(),
                    name: name.into(),
                    arguments: args,
                },
            )
            .unwrap();
        let text = if env.status == ToolStatus::Ok {
            env.stdout.clone()
        } else {
            env.reason.clone().unwrap_or_default()
        };
        (env.status, text)
    }
}

#[test]
fn markdown_round_trip_add_search_read_readd_remove() {
    let lib = Lib::new();
    let missing = lib.library.load("fire-code").unwrap_err().to_string();
    assert!(missing.contains("(the library is empty)"), "{missing}");
    let file = lib.fx.base.join("fire-code.md");
    std::fs::write(&file, FIRE_CODE_MD).unwrap();
    let (outcome, meta) = lib.library.add_file(&file, None).unwrap();
    let missing = lib.library.load("door-code").unwrap_err().to_string();
    assert!(missing.contains("(it has: fire-code)"), "{missing}");
    assert_eq!(
        (outcome, meta.name.as_str()),
        (AddOutcome::Added, "fire-code")
    );
    assert_eq!(meta.kind, SourceKind::Markdown);
    // The file on disk is the whole standard, and nothing temporary is left beside it.
    let files: Vec<String> = std::fs::read_dir(lib.library.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files, ["fire-code.json"]);

    let (status, text) = lib.call("standard.list", json!({}));
    assert_eq!(status, ToolStatus::Ok);
    assert!(text.starts_with("fire-code: 6 units"), "{text}");

    // Ranked: the clause about testing first, cited by its number, with the matching line.
    let (status, text) = lib.call(
        "standard_search",
        json!({"query": "how often are fire doors tested", "standard": "fire-code"}),
    );
    assert_eq!(status, ToolStatus::Ok, "{text}");
    let first = text.lines().nth(1).unwrap();
    assert!(first.starts_with("1. [fire-code §4.2.1] Testing"), "{text}");
    assert!(
        text.contains("Every fire door shall be tested once a year"),
        "{text}"
    );

    // Without `standard`, the engaged one is searched; with none engaged, the library.
    lib.engaged.set(Some("fire-code".into()));
    let (_, text) = lib.call("standard.search", json!({"query": "exit key"}));
    assert!(
        text.contains("in fire-code") && text.contains("[fire-code §4.3]"),
        "{text}"
    );

    // A clause comes with its subclauses, and no sibling.
    let (status, text) = lib.call(
        "standard.read",
        json!({"standard": "fire-code", "clause": "§4.2"}),
    );
    assert_eq!(status, ToolStatus::Ok);
    assert!(text.contains("[fire-code §4.2]") && text.contains("[fire-code §4.2.1]"));
    assert!(!text.contains("Exit doors"), "{text}");

    // Markdown has no pages: the refusal says to read by clause.
    let (status, text) = lib.call(
        "standard.read",
        json!({"standard": "fire-code", "pages": "1"}),
    );
    assert_eq!(status, ToolStatus::Failed);
    assert!(
        text.contains("has no pages") && text.contains("by clause"),
        "{text}"
    );

    let (status, text) = lib.call(
        "standard.read",
        json!({"standard": "fire-code", "clause": "9.9"}),
    );
    assert_eq!(status, ToolStatus::NotFound);
    assert!(
        text.contains("no clause `9.9`") && text.contains("it has:"),
        "{text}"
    );

    // Re-adding the same bytes does nothing; changed bytes are indexed again.
    assert_eq!(
        lib.library.add_file(&file, None).unwrap().0,
        AddOutcome::Unchanged
    );
    std::fs::write(
        &file,
        FIRE_CODE_MD.replace("30 seconds", "20 seconds")
            + "\n### 4.4 Sprinklers\nSprinklers shall cover every room.\n",
    )
    .unwrap();
    assert_eq!(
        lib.library.add_file(&file, None).unwrap().0,
        AddOutcome::Reindexed
    );
    let (_, text) = lib.call("search_corpus", json!({"query": "sprinklers"}));
    assert!(text.contains("[fire-code §4.4]"), "{text}");
    let (_, text) = lib.call(
        "standard.read",
        json!({"standard": "fire-code", "clause": "4.2"}),
    );
    assert!(
        text.contains("20 seconds") && !text.contains("30 seconds"),
        "{text}"
    );

    let removed = lib.library.remove("fire-code").unwrap();
    assert_eq!(removed.name, "fire-code");
    let (status, text) = lib.call("standard.list", json!({}));
    assert_eq!(status, ToolStatus::Ok);
    assert!(text.contains("library is empty"), "{text}");
    let (status, _) = lib.call(
        "standard.read",
        json!({"standard": "fire-code", "clause": "4.2"}),
    );
    assert_eq!(status, ToolStatus::NotFound);
}

#[test]
fn plain_text_with_form_feeds_reads_by_clause_and_by_pages() {
    let lib = Lib::new();
    let mut text = String::new();
    for p in 1..=6 {
        text.push_str(&format!(
            "{p}.1 Requirement {p}\nThe value on page {p} shall be {}.\n\x0c",
            p * 10
        ));
    }
    let file = lib.fx.base.join("values.txt");
    std::fs::write(&file, &text).unwrap();
    let (_, meta) = lib.library.add_file(&file, Some("values")).unwrap();
    assert_eq!(
        (meta.kind, meta.pages, meta.units),
        (SourceKind::PlainText, 6, 6)
    );

    let (_, hits) = lib.call("search_corpus", json!({"query": "page 4 value"}));
    assert!(
        hits.lines()
            .nth(1)
            .unwrap()
            .contains("[values §4.1] Requirement 4 (p. 4)"),
        "{hits}"
    );
    let (status, read) = lib.call(
        "standard.read",
        json!({"standard": "values", "pages": "2-3"}),
    );
    assert_eq!(status, ToolStatus::Ok);
    assert!(
        read.contains("[values p. 2]") && read.contains("shall be 30"),
        "{read}"
    );
    assert!(!read.contains("shall be 40"));
    assert!(read.contains("[pages 4-6 follow]"), "{read}");
    let (_, read) = lib.call(
        "standard.read",
        json!({"standard": "values", "pages": "5-"}),
    );
    assert!(
        read.contains("shall be 60") && !read.contains("follow"),
        "{read}"
    );
    let (status, why) = lib.call("standard.read", json!({"standard": "values", "pages": "9"}));
    assert_eq!(status, ToolStatus::Failed);
    assert!(why.contains("6 pages"), "{why}");
    // Exactly one of clause and pages.
    let (status, why) = lib.call(
        "standard.read",
        json!({"standard": "values", "pages": "1", "clause": "1.1"}),
    );
    assert_eq!(status, ToolStatus::Failed);
    assert!(why.contains("exactly one of"), "{why}");
}

#[test]
fn a_long_page_range_is_cut_and_names_the_range_that_continues_it() {
    let lib = Lib::new();
    let page = "This page has words. ".repeat(300);
    let text: String = (0..20).map(|_| format!("{page}\n\x0c")).collect();
    lib.library
        .add("long", "long.txt", SourceKind::PlainText, text.as_bytes())
        .unwrap();
    let (_, first) = lib.call(
        "standard.read",
        json!({"standard": "long", "pages": "1-20"}),
    );
    let next = first
        .lines()
        .last()
        .unwrap()
        .strip_prefix("[cut here: continue with pages: \"")
        .unwrap_or_else(|| panic!("{}", &first[first.len() - 200..]));
    let (from, to) = next.trim_end_matches("\"]").split_once('-').unwrap();
    assert_eq!(to, "20");
    assert!(first.len() <= spear::tools::normative::read::MAX_READ_CHARS + 200);
    assert!(first.contains(&format!("[long p. {}]", from.parse::<u32>().unwrap() - 1)));
    assert!(!first.contains(&format!("[long p. {from}]")));
}

#[test]
fn names_that_could_escape_the_library_and_sources_without_text_are_refused() {
    let lib = Lib::new();
    for bad in ["../escape", "a/b", ".hidden", "", "x y", &"n".repeat(65)] {
        let e = lib
            .library
            .add(bad, "s.md", SourceKind::Markdown, b"# 1 Scope\ntext\n")
            .unwrap_err();
        assert!(matches!(e, StandardError::BadName(_)), "{bad}: {e}");
        assert!(matches!(
            lib.library.load(bad),
            Err(StandardError::BadName(_))
        ));
    }
    assert_eq!(std::fs::read_dir(lib.library.dir()).unwrap().count(), 0);
    assert!(!lib.fx.state.join("spear").join("escape.json").exists());

    let binary = lib.fx.base.join("blob.bin");
    std::fs::write(&binary, [0u8, 159, 146, 150, 255, 0, 1]).unwrap();
    let e = lib.library.add_file(&binary, None).unwrap_err().to_string();
    assert!(e.contains("neither text nor a PDF"), "{e}");
    let e = lib
        .library
        .add("blank", "blank.txt", SourceKind::PlainText, b"\n\n  \n")
        .unwrap_err();
    assert!(matches!(e, StandardError::Empty { .. }), "{e}");
    // A name promising a PDF on bytes without the signature is not believed: read as text.
    let fake = lib.fx.base.join("fake.pdf");
    std::fs::write(&fake, "1 Scope\nJust text.\n").unwrap();
    let (_, meta) = lib.library.add_file(&fake, None).unwrap();
    assert_eq!(meta.kind, SourceKind::PlainText);
}

#[test]
fn a_damaged_library_file_says_how_to_rebuild_it() {
    let lib = Lib::new();
    std::fs::write(lib.library.dir().join("broken.json"), "{not json").unwrap();
    let (status, why) = lib.call(
        "standard.read",
        json!({"standard": "broken", "clause": "1"}),
    );
    assert_eq!(status, ToolStatus::Failed);
    assert!(
        why.contains("damaged") && why.contains("add the standard again"),
        "{why}"
    );
}

#[test]
fn html_round_trip_keeps_the_main_content_and_its_clauses() {
    let lib = Lib::new();
    let html = "<!doctype html><html><head><title>Lift Code</title></head><body>\
        <nav><a href=\"/\">Home</a> | <a href=\"/about\">About</a></nav>\
        <article><h1>Lift Code</h1>\
        <h2>5.1 Cabins</h2><p>Every lift cabin shall carry an alarm button within reach of a \
        seated person. The alarm shall sound in a staffed place.</p>\
        <h2>5.2 Doors</h2><p>Lift doors shall reopen when an obstacle is detected between the \
        leaves, and they shall not close on a person.</p>\
        <h3>5.2.1 Sensors</h3><p>The obstacle sensor shall cover the full door height from the \
        floor to at least 1.8 metres.</p></article>\
        <footer>Copyright notice</footer></body></html>";
    let file = lib.fx.base.join("lift.html");
    std::fs::write(&file, html).unwrap();
    let (_, meta) = lib.library.add_file(&file, None).unwrap();
    assert_eq!((meta.name.as_str(), meta.kind), ("lift", SourceKind::Html));
    let (_, hits) = lib.call(
        "standard.search",
        json!({"query": "obstacle sensor height", "standard": "lift"}),
    );
    assert!(
        hits.lines()
            .nth(1)
            .unwrap()
            .contains("[lift §5.2.1] Sensors"),
        "{hits}"
    );
    let (status, read) = lib.call(
        "standard.read",
        json!({"standard": "lift", "clause": "5.2"}),
    );
    assert_eq!(status, ToolStatus::Ok);
    assert!(
        read.contains("shall reopen") && read.contains("[lift §5.2.1]"),
        "{read}"
    );
    assert!(!read.contains("alarm button"), "{read}");
    lib.library.remove("lift").unwrap();
    assert!(lib.library.names().unwrap().is_empty());
}

#[test]
fn pdf_round_trip_reads_by_clause_and_by_pages_and_a_scan_is_refused() {
    use super::pdf::{Page, build, scanned};
    let lib = Lib::new();
    let lines = |v: &[&str]| Page::Text(v.iter().map(|s| s.to_string()).collect());
    let bytes = build(&[
        lines(&["Ramp Code", "1 Scope", "This code covers ramps."]),
        lines(&["3.1 Slope", "A ramp shall rise at most 1 in 12."]),
        lines(&[
            "3.2 Landings",
            "A landing shall follow every 9 metres of ramp.",
        ]),
        lines(&[
            "3.2.1 Landing size",
            "Each landing shall be 1.5 metres long.",
        ]),
    ]);
    let file = lib.fx.base.join("ramp-code.pdf");
    std::fs::write(&file, &bytes).unwrap();
    let (_, meta) = lib.library.add_file(&file, None).unwrap();
    assert_eq!((meta.kind, meta.pages), (SourceKind::Pdf, 4), "{meta:?}");
    let (_, hits) = lib.call("search_corpus", json!({"query": "how long is a landing"}));
    assert!(
        hits.lines()
            .nth(1)
            .unwrap()
            .contains("[ramp-code §3.2.1] Landing size (p. 4)"),
        "{hits}"
    );
    let (_, read) = lib.call(
        "standard.read",
        json!({"standard": "ramp-code", "clause": "3.2"}),
    );
    assert!(
        read.contains("every 9 metres") && read.contains("1.5 metres long"),
        "{read}"
    );
    assert!(!read.contains("1 in 12"), "{read}");
    let (status, read) = lib.call(
        "standard.read",
        json!({"standard": "ramp-code", "pages": "2"}),
    );
    assert_eq!(status, ToolStatus::Ok);
    assert!(
        read.contains("[ramp-code p. 2]") && read.contains("1 in 12"),
        "{read}"
    );
    assert!(
        !read.contains("every 9 metres") && read.contains("[pages 3-4 follow]"),
        "{read}"
    );

    // A scan: refused with the reason, and nothing stored.
    let scan = lib.fx.base.join("scan.pdf");
    std::fs::write(&scan, scanned(2)).unwrap();
    let e = lib.library.add_file(&scan, None).unwrap_err();
    assert!(matches!(e, StandardError::NoText { .. }), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("scan.pdf is refused") && e.contains("no extractable text"),
        "{e}"
    );
    assert_eq!(lib.library.names().unwrap(), ["ramp-code"]);
}

#[test]
fn a_purely_normative_turn_is_refused_any_call_that_would_touch_the_working_tree() {
    use spear::tools::refusal::Gate;
    let lib = Lib::new();
    let route = |purely_normative: bool, name: &str, args: serde_json::Value| {
        let settings = ExposureSettings {
            standard_engaged: true,
            web_enabled: true,
            purely_normative,
        };
        let view = ToolExposurePolicy::view(lib.router.registry(), &settings);
        let mut turn = Turn::new(ExecutionMode::Auto, view, Arc::new(NoApprover));
        let call = ToolCall {
            id: "w1".into(),
            name: name.into(),
            arguments: args,
        };
        lib.router.call(&mut turn, &call).unwrap()
    };
    // fetch_url is offered to a normative question, but saving into the workspace is not.
    let save = json!({"url": "http://127.0.0.1:9/code.pdf", "save_as": "docs/code.pdf"});
    let env = route(true, "fetch_url", save.clone());
    assert_eq!(env.gate, Some(Gate::RequestScope), "{env:?}");
    assert_eq!(env.refusal_rule.as_deref(), Some("normative_question"));
    assert!(env.reason.as_deref().unwrap().contains("docs/code.pdf"));
    assert!(!lib.fx.project.join("docs/code.pdf").exists());
    // Positive control: the same call in an implementation turn passes that gate (and is then
    // stopped by the address policy, since nothing listens on loopback here).
    let env = route(false, "fetch_url", save);
    assert_ne!(
        env.refusal_rule.as_deref(),
        Some("normative_question"),
        "{env:?}"
    );
    assert_ne!(env.gate, Some(Gate::RequestScope), "{env:?}");
    // A lookup is untouched by the rule.
    let env = route(true, "standard.list", json!({}));
    assert_eq!(env.status, ToolStatus::Ok);
}

#[test]
fn concurrent_adds_of_one_name_leave_one_whole_standard() {
    let lib = Lib::new();
    let texts: Vec<String> = (0..8)
        .map(|i| format!("# 1.{i} Rule {i}\nRule {i} shall hold.\n").repeat(200))
        .collect();
    std::thread::scope(|s| {
        for t in &texts {
            let library = lib.library.clone();
            s.spawn(move || {
                library
                    .add("race", "race.md", SourceKind::Markdown, t.as_bytes())
                    .unwrap();
            });
        }
    });
    // Whichever add came last, the file is one of the sources whole, and no temporary is left.
    let std = lib.library.load("race").unwrap();
    assert!(texts.iter().any(|t| {
        std.units
            .iter()
            .map(|u| u.text.as_str())
            .collect::<String>()
            == *t
    }));
    let files: Vec<String> = std::fs::read_dir(lib.library.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files, ["race.json"]);
}

/// The normative runtime's command tool inspects the project and never changes it, in every
/// mode: a READ_ONLY command is planned as the coding terminal plans it, anything else is
/// refused naming its class and how to ask for the change.
#[test]
fn the_normative_runtimes_terminal_runs_read_only_commands_only() {
    let lib = Lib::new();
    let settings = ExposureSettings {
        standard_engaged: true,
        web_enabled: false,
        purely_normative: false,
    };
    let view = ToolExposurePolicy::view(lib.router.registry(), &settings);
    assert!(view.offers("workspace.terminal"));
    let mut turn = Turn::new(ExecutionMode::Auto, view, Arc::new(NoApprover));
    let call = |command: &str| ToolCall {
        id: "t1".into(),
        name: "workspace.terminal".into(),
        arguments: json!({ "command": command }),
    };
    let env = lib
        .router
        .call(&mut turn, &call("touch created-by-normative"))
        .unwrap();
    assert_eq!(env.status, ToolStatus::Denied, "{env:?}");
    assert_eq!(env.refusal_rule.as_deref(), Some("normative_read_only"));
    let reason = env.reason.unwrap_or_default();
    assert!(
        reason.contains("WORKSPACE_MUTATING") && reason.contains("MIXED"),
        "{reason}"
    );
    assert!(!lib.fx.project.join("created-by-normative").exists());
    // Positive control: a read-only command passes this gate (the test host's executor then
    // answers it, whatever it is).
    let env = lib.router.call(&mut turn, &call("ls")).unwrap();
    assert_ne!(
        env.refusal_rule.as_deref(),
        Some("normative_read_only"),
        "{env:?}"
    );
}
