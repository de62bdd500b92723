//! Print the JSON twin of `assets/policy/read_only.toml`, which is what Spear loads:
//!
//!     cargo run --example allowlist_json > assets/policy/read_only.json
//!
//! `tests/classify/allowlist.rs` fails while the two differ.

use spear::harness::command_policy::allowlist::{TOML_SOURCE, from_toml, to_json};

fn main() {
    match from_toml(TOML_SOURCE).and_then(|list| to_json(&list)) {
        Ok(json) => print!("{json}"),
        Err(e) => {
            eprintln!("assets/policy/read_only.toml: {e}");
            std::process::exit(1);
        }
    }
}
