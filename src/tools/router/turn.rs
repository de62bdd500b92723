//! `Turn`: what the router remembers within one turn. The mode, the tools the turn may call, who
//! to ask, the count of each refused operation (five of the same, once spelling is set aside,
//! stop the turn), and whether a command reported the sandbox missing (then every later write or
//! delete in the turn is declined).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::harness::primitives::ExecutionMode;
use crate::tools::approval::CallApprover;
use crate::tools::executor::{CancelToken, OutputTap};
use crate::tools::exposure::ToolView;

/// Default number of identical refusals that stop a turn.
pub const DEFAULT_REFUSAL_REPEATS: u32 = 5;

/// The limit an override text (`SPEAR_REFUSAL_REPEATS`, read by `config`) gives. Zero or
/// garbage means the default: a misspelt override must not switch the stop off.
pub fn refusal_repeats(text: Option<&str>) -> u32 {
    text.and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_REFUSAL_REPEATS)
}

/// Normalise a target for comparing refusals: spacing collapsed, quotes removed, a leading `./`
/// and trailing slashes dropped from every word, doubled slashes merged.
pub fn normalize_target(text: &str) -> String {
    text.split_whitespace()
        .map(|w| {
            let mut w: String = w.chars().filter(|c| !matches!(c, '\'' | '"')).collect();
            while w.contains("//") {
                w = w.replace("//", "/");
            }
            let mut s = w.as_str();
            while let Some(rest) = s.strip_prefix("./") {
                s = rest;
            }
            while s.len() > 1
                && let Some(rest) = s.strip_suffix('/')
            {
                s = rest;
            }
            s.to_string()
        })
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A refused operation, spelled-out differences set aside.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RefusalKey {
    pub tool: String,
    pub target: String,
    pub rule: String,
}

/// Numbers turns, so the ResultStore can tell this turn's results from older ones.
static TURNS: AtomicU64 = AtomicU64::new(1);

/// One turn's state.
pub struct Turn {
    id: u64,
    pub mode: ExecutionMode,
    /// The network switch for this turn's next call; `None` leaves the command policy's
    /// session setting. The agent narrows it between calls (`/network off` during a turn).
    pub network: Option<bool>,
    pub view: ToolView,
    /// Asked, with the call's typed request, when ASK mode needs a yes.
    pub approver: Arc<dyn CallApprover>,
    /// The front end's own time limit for a command that names none (`spear exec --timeout`,
    /// else the sandbox's 45 s there); `None` leaves the terminal's 180 s.
    pub command_timeout: Option<Duration>,
    /// Cancelling it stops a running command of this turn (the agent's task owns it).
    pub cancel: CancelToken,
    /// Sees command output as it arrives (the agent's `output_chunk` events).
    pub output_tap: Option<Arc<dyn OutputTap>>,
    /// The person's own command (`!COMMAND`), not the model's: what the model would be refused
    /// for carrying a known secret out, the person is asked about.
    pub by_person: bool,
    refusals: HashMap<RefusalKey, u32>,
    sandbox_down: Option<String>,
    stopped: Option<String>,
}

impl Turn {
    /// A turn in `mode` over `view`, asking `approver` (a harness `Approver` works too: it is
    /// asked the request's harness view).
    pub fn new(mode: ExecutionMode, view: ToolView, approver: impl CallApprover + 'static) -> Self {
        Turn {
            id: TURNS.fetch_add(1, Ordering::Relaxed),
            mode,
            network: None,
            view,
            approver: Arc::new(approver),
            command_timeout: None,
            cancel: CancelToken::new(),
            output_tap: None,
            by_person: false,
            refusals: HashMap::new(),
            sandbox_down: None,
            stopped: None,
        }
    }

    /// This turn's number, unique within the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Count one more refusal of `key`; returns the count so far.
    pub fn note_refusal(&mut self, key: RefusalKey) -> u32 {
        let n = self.refusals.entry(key).or_insert(0);
        *n += 1;
        *n
    }

    pub fn mark_sandbox_down(&mut self, reason: &str) {
        if self.sandbox_down.is_none() {
            self.sandbox_down = Some(reason.to_string());
        }
    }

    /// Why the sandbox is known to be down in this turn, if it is.
    pub fn sandbox_down(&self) -> Option<&str> {
        self.sandbox_down.as_deref()
    }

    pub fn stop(&mut self, answer: String) {
        self.stopped = Some(answer);
    }

    /// The answer that stopped the turn, if it was stopped.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_refusal_limit_override_is_read_safely() {
        assert_eq!(super::refusal_repeats(None), 5);
        assert_eq!(super::refusal_repeats(Some(" 3 ")), 3);
        // A zero or a typo must not switch the stop off.
        assert_eq!(super::refusal_repeats(Some("0")), 5);
        assert_eq!(super::refusal_repeats(Some("five")), 5);
    }

    use super::*;

    #[test]
    fn spellings_of_one_target_normalise_alike() {
        let want = normalize_target("touch vendor/x");
        for s in [
            "touch  vendor/x",
            "touch './vendor/x'",
            "touch \"./vendor/x/\"",
            " touch ./././vendor//x// ",
        ] {
            assert_eq!(normalize_target(s), want, "{s}");
        }
        assert_ne!(normalize_target("touch vendor/y"), want);
        assert_eq!(normalize_target("/"), "/");
    }
}
