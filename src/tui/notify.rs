//! Calling the person back: what the screen writes to the terminal when a question opens or a
//! turn ends while Spear's window may not have the focus. The bell always (unless turned off);
//! a desktop notification (OSC 9 or OSC 777) where the person asked for one or `TERM_PROGRAM`
//! names a terminal that shows it, wrapped for tmux's passthrough when inside tmux.
//! Invariant: the bytes are fixed per kind of call-back; no text the model or a tool wrote is
//! ever in them.

use crate::config::Notify;

/// Why the person is called back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallBack {
    /// The ASK dialog opened.
    Question,
    /// A turn ended.
    TurnEnded,
}

impl CallBack {
    /// The notification's text: fixed, never the model's.
    fn text(self) -> &'static str {
        match self {
            CallBack::Question => "Spear is asking before it runs a call",
            CallBack::TurnEnded => "Spear has finished the turn",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Osc {
    Nine,
    SevenSevenSeven,
}

/// How this terminal is called back: decided once, at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    bell: bool,
    osc: Option<Osc>,
    /// Inside tmux: an OSC goes through its passthrough (`allow-passthrough on`).
    tmux: bool,
}

/// Terminals that show OSC 9 as a desktop notification, as they name themselves in
/// `TERM_PROGRAM`.
const SHOWS_OSC9: &[&str] = &["iTerm.app", "WezTerm", "ghostty"];

impl Caller {
    /// From the setting and the environment (`TERM_PROGRAM`, and whether `TMUX` is set).
    pub fn new(setting: Notify, term_program: Option<&str>, in_tmux: bool) -> Self {
        let osc = match setting {
            Notify::Osc9 => Some(Osc::Nine),
            Notify::Osc777 => Some(Osc::SevenSevenSeven),
            Notify::Auto if term_program.is_some_and(|t| SHOWS_OSC9.contains(&t)) => {
                Some(Osc::Nine)
            }
            _ => None,
        };
        Caller {
            bell: setting != Notify::Off,
            osc,
            tmux: in_tmux,
        }
    }

    /// From the process's environment.
    pub fn from_env(setting: Notify) -> Self {
        let env = crate::config::Env::Process;
        Caller::new(setting, env.term_program().as_deref(), env.in_tmux())
    }

    /// The bytes to write for `why` (empty: nothing).
    pub fn bytes(&self, why: CallBack) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(osc) = self.osc {
            let seq = match osc {
                Osc::Nine => format!("\x1b]9;{}\x07", why.text()),
                Osc::SevenSevenSeven => format!("\x1b]777;notify;Spear;{}\x07", why.text()),
            };
            if self.tmux {
                // tmux passes a DCS `tmux;` payload on to the outer terminal, each ESC doubled.
                out.extend_from_slice(b"\x1bPtmux;");
                out.extend_from_slice(seq.replace('\x1b', "\x1b\x1b").as_bytes());
                out.extend_from_slice(b"\x1b\\");
            } else {
                out.extend_from_slice(seq.as_bytes());
            }
        }
        if self.bell {
            out.push(0x07);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_rings_and_posts_osc9_only_where_the_terminal_shows_it() {
        let plain = Caller::new(Notify::Auto, Some("Apple_Terminal"), false);
        assert_eq!(plain.bytes(CallBack::Question), b"\x07");
        let none = Caller::new(Notify::Auto, None, false);
        assert_eq!(none.bytes(CallBack::TurnEnded), b"\x07");
        let iterm = Caller::new(Notify::Auto, Some("iTerm.app"), false);
        assert_eq!(
            iterm.bytes(CallBack::Question),
            b"\x1b]9;Spear is asking before it runs a call\x07\x07"
        );
    }

    #[test]
    fn chosen_oscs_are_sent_and_wrapped_for_tmux() {
        let foot = Caller::new(Notify::Osc777, None, false);
        assert_eq!(
            foot.bytes(CallBack::TurnEnded),
            b"\x1b]777;notify;Spear;Spear has finished the turn\x07\x07"
        );
        let tmux = Caller::new(Notify::Osc9, Some("tmux"), true);
        assert_eq!(
            tmux.bytes(CallBack::TurnEnded),
            b"\x1bPtmux;\x1b\x1b]9;Spear has finished the turn\x07\x1b\\\x07"
        );
        assert!(
            Caller::new(Notify::Off, Some("iTerm.app"), false)
                .bytes(CallBack::Question)
                .is_empty()
        );
        assert_eq!(
            Caller::new(Notify::Bell, Some("iTerm.app"), false).bytes(CallBack::Question),
            b"\x07"
        );
    }
}
