//! The dependency direction, read from the source: `harness` and `tools` never import `agent`
//! (the agent uses them, never the reverse).

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

#[test]
fn harness_and_tools_never_import_the_agent() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for layer in ["src/harness", "src/tools"] {
        let mut files = Vec::new();
        sources(&root.join(layer), &mut files);
        for f in files {
            seen += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(
                !text.contains("crate::agent") && !text.contains("spear::agent"),
                "{} imports the agent",
                f.display()
            );
        }
    }
    // Positive control: the rule looked at the layers, and the agent does import them.
    assert!(seen > 40, "{seen}");
    let runtime = std::fs::read_to_string(root.join("src/agent/runtime.rs")).unwrap();
    assert!(runtime.contains("crate::tools::router"));
}
