//! What the composer's text means: a prompt for the model, `!COMMAND` for the harness, or a
//! slash command, with completion over the slash commands and their arguments. Pure parsing:
//! the app decides what to do. Invariant: a slash command that is unknown or has a bad argument
//! is an error shown to the person, never sent to the model as a prompt.

use crate::agent::session::RewindWhat;
use crate::harness::primitives::ExecutionMode;

/// The slash commands, with their argument choices and help.
pub const SLASH: [(&str, &[&str], &str); 14] = [
    ("/help", &[], "key bindings and commands"),
    ("/mode", &["safe", "ask", "auto"], "set the execution mode"),
    (
        "/network",
        &["on", "off"],
        "let commands that need the network have it",
    ),
    ("/audit", &[], "show or hide the audit pane (F2)"),
    (
        "/compact",
        &[],
        "shorten the conversation to fit the context window",
    ),
    (
        "/undo",
        &["force"],
        "take back the last turn's changes to the files (/undo N: turn N and later ones)",
    ),
    (
        "/rewind",
        &[],
        "list the requests; /rewind N [files|conversation]: back to just before request N",
    ),
    ("/new", &[], "start a new session"),
    ("/resume", &[], "reopen one of this workspace's sessions"),
    (
        "/model",
        &[],
        "the provider and model in use; /model NAME switches the model for the next requests",
    ),
    (
        "/standard",
        &["off"],
        "ends the engaged standard; /standard NAME engages one, /standard alone lists the library",
    ),
    (
        "/mcp",
        &["restart"],
        "your MCP servers, where each stands and its tools; /mcp restart NAME starts one again",
    ),
    (
        "/theme",
        &["dark", "light", "high-contrast"],
        "switch the colour theme",
    ),
    ("/quit", &[], "leave Spear"),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Prompt(String),
    Command(String),
    Slash(Slash),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Help,
    Mode(ExecutionMode),
    Network(bool),
    Audit,
    Compact,
    New,
    Resume,
    /// `/undo [N] [force]`: take back the last turn (or turn N and later ones).
    Undo {
        turn: Option<u32>,
        force: bool,
    },
    /// `/rewind [N] [files|conversation] [force]`: list the requests, or go back to just
    /// before request N.
    Rewind {
        request: Option<usize>,
        what: RewindWhat,
        force: bool,
    },
    /// `None`: show the current one.
    Model(Option<String>),
    /// `None`: list the library; `Some("off")` disengages.
    Standard(Option<String>),
    Theme(String),
    /// `/mcp` lists the MCP servers (`None`); `/mcp restart NAME` restarts one.
    Mcp(Option<String>),
    Quit,
}

/// Parse what the person sent. `Ok(None)`: nothing to do (blank).
pub fn parse(text: &str) -> Result<Option<Input>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if let Some(cmd) = t.strip_prefix('!') {
        let cmd = cmd.trim();
        if cmd.is_empty() {
            return Err("`!` needs a command after it, e.g. `!git status`".into());
        }
        return Ok(Some(Input::Command(cmd.to_string())));
    }
    if !t.starts_with('/') || t.contains('\n') {
        return Ok(Some(Input::Prompt(text.trim_end().to_string())));
    }
    let mut words = t.split_whitespace();
    let name = words.next().unwrap_or_default();
    let arg = words.next();
    let slash = match (name, arg) {
        ("/help", _) => Slash::Help,
        ("/mode", Some(m)) => Slash::Mode(m.parse().map_err(|_| bad(name, m))?),
        ("/network", Some("on")) => Slash::Network(true),
        ("/network", Some("off")) => Slash::Network(false),
        ("/audit", _) => Slash::Audit,
        ("/compact", _) => Slash::Compact,
        ("/new", _) => Slash::New,
        ("/resume", _) => Slash::Resume,
        ("/undo", _) => undo_args(t)?,
        ("/rewind", _) => rewind_args(t)?,
        ("/model", name) => Slash::Model(name.map(str::to_string)),
        ("/standard", name) => Slash::Standard(name.map(str::to_string)),
        ("/theme", Some(n)) => Slash::Theme(n.to_string()),
        ("/mcp", None) => Slash::Mcp(None),
        ("/mcp", Some("restart")) => match (words.next(), words.next()) {
            (Some(server), None) => Slash::Mcp(Some(server.to_string())),
            _ => return Err("/mcp restart needs one server's name: /mcp restart NAME".into()),
        },
        ("/quit" | "/exit", _) => Slash::Quit,
        (n, None) if SLASH.iter().any(|(s, args, _)| *s == n && !args.is_empty()) => {
            return Err(format!("{n} needs one of: {}", choices(n)));
        }
        (n, Some(a)) if SLASH.iter().any(|(s, _, _)| *s == n) => return Err(bad(n, a)),
        (n, _) => return Err(format!("no command {n}; /help lists them")),
    };
    Ok(Some(Input::Slash(slash)))
}

/// `/undo`, `/undo force`, `/undo 3`, `/undo 3 force`.
fn undo_args(line: &str) -> Result<Slash, String> {
    let (mut turn, mut force) = (None, false);
    for w in line.split_whitespace().skip(1) {
        match (w, w.parse::<u32>()) {
            ("force", _) if !force => force = true,
            (_, Ok(n)) if turn.is_none() && n > 0 => turn = Some(n),
            _ => {
                return Err(format!(
                    "/undo {w}: expected a turn number and/or `force` (/undo, /undo 3, /undo force)"
                ));
            }
        }
    }
    Ok(Slash::Undo { turn, force })
}

/// `/rewind`, `/rewind 3`, `/rewind 3 files`, `/rewind 3 conversation force`.
fn rewind_args(line: &str) -> Result<Slash, String> {
    let (mut request, mut what, mut force) = (None, None, false);
    for w in line.split_whitespace().skip(1) {
        match (w, w.parse::<usize>()) {
            ("force", _) if !force => force = true,
            ("files", _) if what.is_none() => what = Some(RewindWhat::Files),
            ("conversation", _) if what.is_none() => what = Some(RewindWhat::Conversation),
            (_, Ok(n)) if request.is_none() && n > 0 => request = Some(n),
            _ => {
                return Err(format!(
                    "/rewind {w}: expected a request number, then `files` or `conversation` \
                     and/or `force` (/rewind lists the requests; /rewind 3; /rewind 3 files)"
                ));
            }
        }
    }
    if request.is_none() && (what.is_some() || force) {
        return Err("/rewind needs the request's number first: /rewind lists them".into());
    }
    Ok(Slash::Rewind {
        request,
        what: what.unwrap_or(RewindWhat::Both),
        force,
    })
}

fn choices(name: &str) -> String {
    SLASH
        .iter()
        .find(|(s, _, _)| *s == name)
        .map(|(_, a, _)| a.join(", "))
        .unwrap_or_default()
}

fn bad(name: &str, arg: &str) -> String {
    format!("{name} {arg}: expected one of {}", choices(name))
}

/// Completions of a partly typed slash command: whole command lines that extend `text`.
pub fn complete(text: &str) -> Vec<String> {
    if !text.starts_with('/') || text.contains('\n') {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, args, _) in SLASH {
        if name.starts_with(text) && name != text.trim_end() {
            out.push(name.to_string());
        }
        if let Some(rest) = text.strip_prefix(name).and_then(|r| r.strip_prefix(' ')) {
            for a in args {
                if a.starts_with(rest) && *a != rest {
                    out.push(format!("{name} {a}"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_commands_and_slash_commands_are_told_apart() {
        assert_eq!(parse("  "), Ok(None));
        assert_eq!(parse("!ls -la"), Ok(Some(Input::Command("ls -la".into()))));
        assert_eq!(
            parse("/mode auto"),
            Ok(Some(Input::Slash(Slash::Mode(ExecutionMode::Auto))))
        );
        assert_eq!(parse("fix it"), Ok(Some(Input::Prompt("fix it".into()))));
        assert!(parse("/mode fast").is_err());
        assert!(parse("/mode").is_err());
        assert!(parse("/nope").is_err());
        // A multi-line text that starts with a slash is a prompt (a pasted path, say).
        assert!(matches!(parse("/etc/x\nmore"), Ok(Some(Input::Prompt(_)))));
        assert_eq!(
            parse("/standard fire-code"),
            Ok(Some(Input::Slash(Slash::Standard(Some(
                "fire-code".into()
            )))))
        );
        assert_eq!(
            parse("/standard off"),
            Ok(Some(Input::Slash(Slash::Standard(Some("off".into())))))
        );
        assert_eq!(
            parse("/standard"),
            Ok(Some(Input::Slash(Slash::Standard(None))))
        );
        assert_eq!(complete("/standard o"), vec!["/standard off"]);
        assert_eq!(parse("/mcp"), Ok(Some(Input::Slash(Slash::Mcp(None)))));
        assert_eq!(
            parse("/mcp restart docs"),
            Ok(Some(Input::Slash(Slash::Mcp(Some("docs".into())))))
        );
        for bad in ["/mcp restart", "/mcp restart a b", "/mcp stop docs"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(complete("/mcp r"), vec!["/mcp restart"]);
    }

    #[test]
    fn completion_extends_names_and_arguments() {
        assert_eq!(complete("/mo"), vec!["/mode", "/model"]);
        assert_eq!(complete("/mode a"), vec!["/mode ask", "/mode auto"]);
        assert!(complete("hello").is_empty());
    }

    #[test]
    fn undo_takes_a_turn_and_force_in_any_order() {
        let undo = |turn, force| Ok(Some(Input::Slash(Slash::Undo { turn, force })));
        assert_eq!(parse("/undo"), undo(None, false));
        assert_eq!(parse("/undo force"), undo(None, true));
        assert_eq!(parse("/undo 3"), undo(Some(3), false));
        assert_eq!(parse("/undo 3 force"), undo(Some(3), true));
        assert_eq!(parse("/undo force 2"), undo(Some(2), true));
        for bad in [
            "/undo 0",
            "/undo -1",
            "/undo x",
            "/undo 2 3",
            "/undo force force",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(complete("/un"), vec!["/undo"]);
    }

    #[test]
    fn rewind_takes_a_request_then_what_and_force() {
        let rewind = |request, what, force| {
            Ok(Some(Input::Slash(Slash::Rewind {
                request,
                what,
                force,
            })))
        };
        assert_eq!(parse("/rewind"), rewind(None, RewindWhat::Both, false));
        assert_eq!(parse("/rewind 2"), rewind(Some(2), RewindWhat::Both, false));
        assert_eq!(
            parse("/rewind 2 files"),
            rewind(Some(2), RewindWhat::Files, false)
        );
        assert_eq!(
            parse("/rewind 4 conversation force"),
            rewind(Some(4), RewindWhat::Conversation, true)
        );
        assert_eq!(
            parse("/rewind force 1"),
            rewind(Some(1), RewindWhat::Both, true)
        );
        for bad in [
            "/rewind 0",
            "/rewind x",
            "/rewind 1 2",
            "/rewind files",
            "/rewind force",
            "/rewind 1 files conversation",
            "/rewind 1 force force",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(complete("/rew"), vec!["/rewind"]);
    }
}
