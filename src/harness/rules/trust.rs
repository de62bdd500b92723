//! Trust in a project's rules file: the person's word that the allows in one file, at one
//! place, with exactly these bytes, may count. Recorded in the person's state (never in the
//! workspace); a changed, moved or copied file is untrusted again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::files::RulesError;

/// One trusted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trusted {
    /// The workspace's canonical root.
    pub root: PathBuf,
    /// The rules file's canonical path.
    pub path: PathBuf,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Shape {
    #[serde(default)]
    trusted: Vec<Trusted>,
}

/// The trust records, in `$XDG_STATE_HOME/spear/trusted-rules.toml`.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl TrustStore {
    /// The store under a state home (`$XDG_STATE_HOME`).
    pub fn open_in(state_home: &Path) -> TrustStore {
        TrustStore {
            path: state_home.join("spear").join("trusted-rules.toml"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<Vec<Trusted>, RulesError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(RulesError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let shape: Shape = toml::from_str(&text).map_err(|e| RulesError::Parse {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        Ok(shape.trusted)
    }

    /// The record `root`'s rules file at `file` with `bytes` would need.
    fn record(root: &Path, file: &Path, bytes: &[u8]) -> Trusted {
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        Trusted {
            root: canon(root),
            path: canon(file),
            sha256: sha256_hex(bytes),
        }
    }

    /// Whether the person trusted exactly this file, at this place, with these bytes.
    pub fn is_trusted(&self, root: &Path, file: &Path, bytes: &[u8]) -> Result<bool, RulesError> {
        let want = Self::record(root, file, bytes);
        Ok(self.read()?.contains(&want))
    }

    /// Trust this file as it is now (replacing what was trusted at the same place).
    pub fn trust(&self, root: &Path, file: &Path, bytes: &[u8]) -> Result<Trusted, RulesError> {
        let rec = Self::record(root, file, bytes);
        let mut all = self.read()?;
        all.retain(|t| !(t.root == rec.root && t.path == rec.path));
        all.push(rec.clone());
        self.write(all)?;
        Ok(rec)
    }

    /// Forget the trust given to the file at this place.
    pub fn untrust(&self, root: &Path, file: &Path) -> Result<bool, RulesError> {
        let rec = Self::record(root, file, b"");
        let mut all = self.read()?;
        let before = all.len();
        all.retain(|t| !(t.root == rec.root && t.path == rec.path));
        let removed = all.len() != before;
        if removed {
            self.write(all)?;
        }
        Ok(removed)
    }

    fn write(&self, trusted: Vec<Trusted>) -> Result<(), RulesError> {
        let err = |source| RulesError::Write {
            path: self.path.clone(),
            source,
        };
        let text =
            toml::to_string(&Shape { trusted }).map_err(|e| err(std::io::Error::other(e)))?;
        crate::harness::atomic_file::write_private_in_new_dir(&self.path, text.as_bytes())
            .map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_holds_for_the_same_bytes_at_the_same_place_only() {
        let state = tempfile::tempdir().unwrap();
        let store = TrustStore::open_in(state.path());
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let file = |root: &Path| {
            std::fs::create_dir_all(root.join(".spear")).unwrap();
            root.join(".spear/rules.toml")
        };
        let (fa, fb) = (file(a.path()), file(b.path()));
        let bytes = b"[[rule]]\n";
        assert!(!store.is_trusted(a.path(), &fa, bytes).unwrap());
        store.trust(a.path(), &fa, bytes).unwrap();
        assert!(store.is_trusted(a.path(), &fa, bytes).unwrap());
        // Edited: untrusted. The same bytes in another repository: untrusted.
        assert!(!store.is_trusted(a.path(), &fa, b"[[rule]]\n#\n").unwrap());
        assert!(!store.is_trusted(b.path(), &fb, bytes).unwrap());
        // Trusting the new bytes replaces the old record.
        store.trust(a.path(), &fa, b"x").unwrap();
        assert!(!store.is_trusted(a.path(), &fa, bytes).unwrap());
        assert!(store.untrust(a.path(), &fa).unwrap());
        assert!(!store.is_trusted(a.path(), &fa, b"x").unwrap());
    }
}
