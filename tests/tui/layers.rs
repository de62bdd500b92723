//! The dependency direction for the screen: `harness`, `tools` and `agent` never import `tui`
//! (the screen drives them, never the reverse), and the screen reaches tools only through the
//! router and the agent.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_lower_layer_imports_the_tui() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for layer in ["src/harness", "src/tools", "src/agent"] {
        let mut files = Vec::new();
        sources(&root.join(layer), &mut files);
        for f in files {
            seen += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(
                !text.contains("crate::tui") && !text.contains("spear::tui"),
                "{} imports the tui",
                f.display()
            );
        }
    }
    assert!(seen > 60, "{seen}");
    // Positive control: the screen does drive the agent and the router.
    let driver = std::fs::read_to_string(root.join("src/tui/driver.rs")).unwrap();
    assert!(driver.contains("crate::agent::runtime") && driver.contains("crate::tools::router"));
}
