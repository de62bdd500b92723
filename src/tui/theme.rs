//! Colours by role. Widgets ask the theme for a role (`text`, `danger`, `added`, a mode's own
//! colour...) and never name a colour themselves. Themes are the `themes/*.toml` files, built in;
//! `NO_COLOR` turns every role into the terminal's default (emphasis by modifiers only).
//! Invariant: a theme always has every role; an unknown name or a bad value is an error, never
//! a silent fallback to some other palette.

use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use thiserror::Error;

use crate::harness::primitives::ExecutionMode;

/// The built-in themes: name and TOML source.
pub const BUILTIN: [(&str, &str); 3] = [
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ThemeError {
    #[error("no theme named `{0}` (themes: dark, light, high-contrast)")]
    Unknown(String),
    #[error("theme `{name}`: {why}")]
    Invalid { name: String, why: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    text: String,
    secondary: String,
    accent: String,
    danger: String,
    warning: String,
    added: String,
    removed: String,
    hint: String,
    made_for: String,
    background: String,
    surface: String,
    mode_safe: String,
    mode_ask: String,
    mode_auto: String,
}

/// A resolved theme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    pub name: String,
    pub text: Color,
    pub secondary: Color,
    pub accent: Color,
    pub danger: Color,
    pub warning: Color,
    pub added: Color,
    pub removed: Color,
    pub hint: Color,
    /// The background the theme is made for (its text roles keep 4.5:1 against it).
    pub made_for: Color,
    pub background: Color,
    pub surface: Color,
    pub mode_safe: Color,
    pub mode_ask: Color,
    pub mode_auto: Color,
    /// `NO_COLOR`: every role is `Reset`; highlighting is off.
    pub monochrome: bool,
}

impl Theme {
    /// The built-in theme `name`.
    pub fn named(name: &str) -> Result<Theme, ThemeError> {
        let (_, src) = BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| ThemeError::Unknown(name.to_string()))?;
        Theme::parse(src)
    }

    /// `name`, or all roles reset when `no_color`.
    pub fn load(name: &str, no_color: bool) -> Result<Theme, ThemeError> {
        let t = Theme::named(name)?;
        Ok(if no_color { t.monochrome() } else { t })
    }

    pub fn parse(src: &str) -> Result<Theme, ThemeError> {
        let f: ThemeFile = toml::from_str(src).map_err(|e| ThemeError::Invalid {
            name: "?".into(),
            why: e.to_string(),
        })?;
        let name = f.name.clone();
        let c = |v: &str| {
            Color::from_str(v).map_err(|_| ThemeError::Invalid {
                name: name.clone(),
                why: format!("`{v}` is not a colour"),
            })
        };
        Ok(Theme {
            text: c(&f.text)?,
            secondary: c(&f.secondary)?,
            accent: c(&f.accent)?,
            danger: c(&f.danger)?,
            warning: c(&f.warning)?,
            added: c(&f.added)?,
            removed: c(&f.removed)?,
            hint: c(&f.hint)?,
            made_for: c(&f.made_for)?,
            background: c(&f.background)?,
            surface: c(&f.surface)?,
            mode_safe: c(&f.mode_safe)?,
            mode_ask: c(&f.mode_ask)?,
            mode_auto: c(&f.mode_auto)?,
            name: f.name,
            monochrome: false,
        })
    }

    fn monochrome(self) -> Theme {
        let r = Color::Reset;
        Theme {
            name: self.name,
            text: r,
            secondary: r,
            accent: r,
            danger: r,
            warning: r,
            added: r,
            removed: r,
            hint: r,
            made_for: self.made_for,
            background: r,
            surface: r,
            mode_safe: r,
            mode_ask: r,
            mode_auto: r,
            monochrome: true,
        }
    }

    pub fn fg(&self, c: Color) -> Style {
        Style::default().fg(c)
    }

    pub fn text(&self) -> Style {
        self.fg(self.text)
    }

    pub fn secondary(&self) -> Style {
        self.fg(self.secondary)
    }

    pub fn accent(&self) -> Style {
        self.fg(self.accent)
    }

    pub fn danger(&self) -> Style {
        self.fg(self.danger).add_modifier(Modifier::BOLD)
    }

    pub fn hint(&self) -> Style {
        self.fg(self.hint)
    }

    pub fn mode_color(&self, mode: ExecutionMode) -> Color {
        match mode {
            ExecutionMode::Safe => self.mode_safe,
            ExecutionMode::Ask => self.mode_ask,
            ExecutionMode::Auto => self.mode_auto,
        }
    }

    /// The mode badge: reversed in the mode's colour; AUTO also bold and blinking-free but
    /// underlined, so it is unmistakable even without colour.
    pub fn mode_badge(&self, mode: ExecutionMode) -> Style {
        let s = Style::default()
            .fg(self.mode_color(mode))
            .add_modifier(Modifier::REVERSED | Modifier::BOLD);
        if mode == ExecutionMode::Auto {
            s.add_modifier(Modifier::UNDERLINED)
        } else {
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A colour as RGB: its own, or xterm's default for a named terminal colour.
    fn rgb(c: Color) -> (u8, u8, u8) {
        match c {
            Color::Rgb(r, g, b) => (r, g, b),
            Color::Black => (0, 0, 0),
            Color::Red => (0xcd, 0, 0),
            Color::Green => (0, 0xcd, 0),
            Color::Yellow => (0xcd, 0xcd, 0),
            Color::Blue => (0, 0, 0xee),
            Color::Magenta => (0xcd, 0, 0xcd),
            Color::Cyan => (0, 0xcd, 0xcd),
            Color::Gray => (0xe5, 0xe5, 0xe5),
            Color::DarkGray => (0x7f, 0x7f, 0x7f),
            Color::LightRed => (0xff, 0, 0),
            Color::LightGreen => (0, 0xff, 0),
            Color::LightYellow => (0xff, 0xff, 0),
            Color::LightBlue => (0x5c, 0x5c, 0xff),
            Color::LightMagenta => (0xff, 0, 0xff),
            Color::LightCyan => (0, 0xff, 0xff),
            Color::White => (0xff, 0xff, 0xff),
            other => panic!("no RGB for {other:?}: a text role needs a concrete colour"),
        }
    }

    /// WCAG 2 contrast ratio.
    fn contrast(a: Color, b: Color) -> f64 {
        let lum = |c: Color| {
            let (r, g, b) = rgb(c);
            let f = |v: u8| {
                let c = f64::from(v) / 255.0;
                if c <= 0.03928 {
                    c / 12.92
                } else {
                    ((c + 0.055) / 1.055).powf(2.4)
                }
            };
            0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)
        };
        let (x, y) = (lum(a), lum(b));
        (x.max(y) + 0.05) / (x.min(y) + 0.05)
    }

    /// Issue 21: body, secondary, danger and warning text of every theme keep WCAG AA (4.5:1)
    /// against the background the theme declares it is made for.
    #[test]
    fn every_themes_text_roles_meet_wcag_aa_on_its_background() {
        for (name, _) in BUILTIN {
            let t = Theme::named(name).unwrap();
            for (role, c) in [
                ("text", t.text),
                ("secondary", t.secondary),
                ("danger", t.danger),
                ("warning", t.warning),
            ] {
                let ratio = contrast(c, t.made_for);
                assert!(ratio >= 4.5, "{name}: {role} is {ratio:.2}:1");
            }
        }
        // The check can fail: the old dark secondary was 4.43:1 on its background.
        let old = Color::from_str("#7b8496").unwrap();
        assert!(contrast(old, Theme::named("dark").unwrap().made_for) < 4.5);
    }

    #[test]
    fn every_builtin_theme_parses_with_every_role() {
        for (name, _) in BUILTIN {
            let t = Theme::named(name).unwrap();
            assert_eq!(t.name, name);
            assert_ne!(
                t.mode_auto, t.mode_safe,
                "{name}: AUTO must differ from SAFE"
            );
        }
    }

    #[test]
    fn no_color_resets_every_role_and_unknown_names_are_refused() {
        let t = Theme::load("dark", true).unwrap();
        assert!(t.monochrome);
        assert_eq!(t.danger, Color::Reset);
        assert_eq!(
            Theme::named("neon"),
            Err(ThemeError::Unknown("neon".into()))
        );
    }
}
