//! What each MCP tool looked like when the person last let it run: the hash of its name,
//! description and input schema, kept in the person's state (`spear/mcp-tools.toml`). Every
//! grant and rule for a tool speaks for that version only: a tool whose hash differs is asked
//! about again (whatever a rule, a session grant or the config's `read_only_tools` says), and
//! the new hash is kept once the person lets it run.
//!
//! A server seen for the first time is pinned as it is: the person chose to add it, so its
//! first tools are what they approved by adding it (the audit record of that call says so).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::harness::rules::trust::sha256_hex;

/// The fingerprint of one tool as the server describes it: SHA-256, hex, over its name,
/// description and input schema as canonical JSON (keys sorted, so the server's key order does
/// not matter; every other difference does).
pub fn fingerprint(name: &str, description: &str, input_schema: &serde_json::Value) -> String {
    let mut text = String::new();
    canonical(
        &serde_json::json!({
            "name": name,
            "description": description,
            "input_schema": input_schema,
        }),
        &mut text,
    );
    sha256_hex(text.as_bytes())
}

/// `v` as JSON with every object's keys sorted, whatever order the map keeps them in (a
/// dependency turning on serde_json's `preserve_order` must not make every tool look changed).
fn canonical(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// How a tool compares with what was kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Its server was never seen: every tool it lists is pinned now, as it is.
    First,
    /// As kept.
    Same,
    /// Not as kept: the kept hash.
    Changed { kept: String },
    /// Not listed when its server was first seen: asked about like a change.
    New,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Shape {
    /// `SERVER.TOOL` → hash.
    #[serde(default)]
    tools: BTreeMap<String, String>,
}

/// The kept fingerprints.
#[derive(Debug, Clone)]
pub struct ToolPins {
    path: PathBuf,
}

impl ToolPins {
    /// The pins under a state home (`$XDG_STATE_HOME`).
    pub fn open_in(state_home: &Path) -> ToolPins {
        ToolPins {
            path: state_home.join("spear").join("mcp-tools.toml"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<Shape, String> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => toml::from_str(&text).map_err(|e| {
                format!(
                    "{} is not a valid MCP tool record ({e}); move it aside to start afresh \
                     (every tool is then pinned as it is next seen)",
                    self.path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Shape::default()),
            Err(e) => Err(format!("{} cannot be read: {e}", self.path.display())),
        }
    }

    fn write(&self, shape: &Shape) -> Result<(), String> {
        let err = |e: std::io::Error| format!("{} cannot be written: {e}", self.path.display());
        let text = toml::to_string(shape).map_err(|e| err(std::io::Error::other(e)))?;
        crate::harness::atomic_file::write_private_in_new_dir(&self.path, text.as_bytes())
            .map_err(err)
    }

    /// Compare `server`'s `tool` with what was kept. A server never seen has every tool of
    /// `listed` (name, hash) kept now.
    pub fn check(&self, server: &str, listed: &[(&str, &str)], tool: &str) -> Result<Seen, String> {
        let _lock = self.lock()?;
        let mut shape = self.read()?;
        let prefix = format!("{server}.");
        if !shape.tools.keys().any(|k| k.starts_with(&prefix)) {
            for (name, hash) in listed {
                shape
                    .tools
                    .insert(format!("{server}.{name}"), hash.to_string());
            }
            self.write(&shape)?;
            return Ok(Seen::First);
        }
        let now = listed.iter().find(|(n, _)| *n == tool).map(|(_, h)| *h);
        Ok(match (shape.tools.get(&format!("{server}.{tool}")), now) {
            (Some(kept), Some(h)) if kept == h => Seen::Same,
            (Some(kept), _) => Seen::Changed { kept: kept.clone() },
            (None, _) => Seen::New,
        })
    }

    /// An exclusive lock on the record for one read-modify-write: two Spears never lose each
    /// other's entries.
    fn lock(&self) -> Result<std::fs::File, String> {
        let path = self.path.with_extension("lock");
        if let Some(dir) = path.parent() {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("{} cannot be opened: {e}", path.display()))?;
        f.lock()
            .map_err(|e| format!("{} cannot be locked: {e}", path.display()))?;
        Ok(f)
    }

    /// Keep `hash` as `server.tool`'s approved version.
    pub fn keep(&self, server: &str, tool: &str, hash: &str) -> Result<(), String> {
        let _lock = self.lock()?;
        let mut shape = self.read()?;
        shape
            .tools
            .insert(format!("{server}.{tool}"), hash.to_string());
        self.write(&shape)
    }

    /// The kept hash of `server.tool`, if any (without keeping anything).
    pub fn kept(&self, server: &str, tool: &str) -> Result<Option<String>, String> {
        Ok(self.read()?.tools.remove(&format!("{server}.{tool}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_ignores_key_order_and_sees_every_other_change() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{"type":"object","properties":{"q":{"type":"string"}}}"#)
                .unwrap();
        let b: serde_json::Value =
            serde_json::from_str(r#"{"properties":{"q":{"type":"string"}},"type":"object"}"#)
                .unwrap();
        let base = fingerprint("search", "Search the docs.", &a);
        assert_eq!(base, fingerprint("search", "Search the docs.", &b));
        assert_ne!(base, fingerprint("search", "Search the docs. ", &a));
        assert_ne!(base, fingerprint("search2", "Search the docs.", &a));
        let c: serde_json::Value =
            serde_json::from_str(r#"{"type":"object","properties":{"q":{"type":"number"}}}"#)
                .unwrap();
        assert_ne!(base, fingerprint("search", "Search the docs.", &c));
        assert_eq!(base.len(), 64);
    }

    #[test]
    fn a_server_is_pinned_when_first_seen_and_a_change_or_a_new_tool_is_reported_until_kept() {
        let state = tempfile::tempdir().unwrap();
        let pins = ToolPins::open_in(state.path());
        assert_eq!(pins.kept("docs", "search").unwrap(), None);
        let first = [("search", "h1"), ("get", "g1")];
        assert_eq!(pins.check("docs", &first, "search").unwrap(), Seen::First);
        // Every tool listed then was kept.
        assert_eq!(pins.check("docs", &first, "get").unwrap(), Seen::Same);
        assert_eq!(pins.check("docs", &first, "search").unwrap(), Seen::Same);
        let changed = [("search", "h2"), ("get", "g1"), ("wipe", "w1")];
        assert_eq!(
            pins.check("docs", &changed, "search").unwrap(),
            Seen::Changed { kept: "h1".into() }
        );
        // Still changed until the person lets the new one run.
        assert_eq!(
            pins.check("docs", &changed, "search").unwrap(),
            Seen::Changed { kept: "h1".into() }
        );
        // A tool that appeared later is not taken on trust.
        assert_eq!(pins.check("docs", &changed, "wipe").unwrap(), Seen::New);
        pins.keep("docs", "search", "h2").unwrap();
        pins.keep("docs", "wipe", "w1").unwrap();
        assert_eq!(pins.check("docs", &changed, "search").unwrap(), Seen::Same);
        assert_eq!(pins.check("docs", &changed, "wipe").unwrap(), Seen::Same);
        // Another server is its own.
        assert_eq!(pins.check("other", &first, "get").unwrap(), Seen::First);
        // A second store over the same state sees the same record.
        let again = ToolPins::open_in(state.path());
        assert_eq!(again.kept("docs", "search").unwrap(), Some("h2".into()));
    }

    #[test]
    fn the_fingerprint_does_not_depend_on_the_order_a_map_keeps() {
        let mut a = serde_json::Map::new();
        a.insert("type".into(), serde_json::json!("object"));
        a.insert("b".into(), serde_json::json!(1));
        let mut b = serde_json::Map::new();
        b.insert("b".into(), serde_json::json!(1));
        b.insert("type".into(), serde_json::json!("object"));
        assert_eq!(
            fingerprint("t", "d", &serde_json::Value::Object(a)),
            fingerprint("t", "d", &serde_json::Value::Object(b))
        );
    }

    #[test]
    fn a_damaged_record_is_an_error_that_says_what_to_do() {
        let state = tempfile::tempdir().unwrap();
        let pins = ToolPins::open_in(state.path());
        std::fs::create_dir_all(state.path().join("spear")).unwrap();
        std::fs::write(pins.path(), "tools = 3\n").unwrap();
        let e = pins
            .check("docs", &[("search", "h1")], "search")
            .unwrap_err();
        assert!(e.contains("move it aside"), "{e}");
    }
}
