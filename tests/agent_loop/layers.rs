//! The dependency direction, read from the source: `harness` and `tools` never import `agent`
//! (the agent uses them, never the reverse), and none of the three imports `tui` (the screen
//! drives them).

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every file of `layers` that mentions one of `forbidden`; and how many files were read.
fn importing(layers: &[&str], forbidden: &[&str]) -> (Vec<String>, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut bad, mut seen) = (Vec::new(), 0);
    for layer in layers {
        let mut files = Vec::new();
        sources(&root.join(layer), &mut files);
        for f in files {
            seen += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            if forbidden.iter().any(|m| text.contains(m)) {
                bad.push(f.display().to_string());
            }
        }
    }
    (bad, seen)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

#[test]
fn harness_and_tools_never_import_the_agent() {
    let (bad, seen) = importing(
        &["src/harness", "src/tools"],
        &["crate::agent", "spear::agent"],
    );
    assert!(bad.is_empty(), "these import the agent: {bad:?}");
    // Positive control: the rule looked at the layers, and the agent does import them.
    assert!(seen > 40, "{seen}");
    assert!(read("src/agent/runtime.rs").contains("crate::tools::router"));
}

#[test]
fn no_lower_layer_imports_the_tui() {
    let layers = ["src/harness", "src/tools", "src/agent"];
    let (bad, seen) = importing(&layers, &["crate::tui", "spear::tui"]);
    assert!(bad.is_empty(), "these import the tui: {bad:?}");
    assert!(seen > 60, "{seen}");
    // Positive control: the screen does drive the agent and the router.
    let driver = read("src/tui/driver.rs");
    assert!(driver.contains("crate::agent::runtime") && driver.contains("crate::tools::router"));
}
