//! The theme the person chose with `/theme`, kept for the next runs: `$XDG_STATE_HOME/spear/
//! theme`, one name, mode 0600, written whole (a temporary file renamed over it). Spear never
//! rewrites the person's config file for it. A kept name that is not a theme is ignored.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::tui::theme::Theme;

#[derive(Debug, Clone)]
pub struct ThemeChoice {
    path: PathBuf,
}

impl ThemeChoice {
    /// The choice kept under `state_home` (`$XDG_STATE_HOME`).
    pub fn in_state(state_home: &Path) -> Self {
        ThemeChoice {
            path: state_home.join("spear").join("theme"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The kept theme's name, when there is one that names a theme.
    pub fn load(&self) -> Option<String> {
        let name = std::fs::read_to_string(&self.path).ok()?;
        let name = name.trim();
        Theme::named(name).ok().map(|_| name.to_string())
    }

    pub fn save(&self, name: &str) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        crate::tui::history::write_private(&self.path, format!("{name}\n").as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_choice_is_kept_privately_and_a_bad_one_ignored() {
        let d = tempfile::tempdir().unwrap();
        let c = ThemeChoice::in_state(d.path());
        assert_eq!(c.load(), None);
        c.save("light").unwrap();
        assert_eq!(c.load().as_deref(), Some("light"));
        let mode = std::fs::metadata(c.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(c.path(), "no-such-theme\n").unwrap();
        assert_eq!(c.load(), None);
    }
}
