//! The TUI's tests, one binary: snapshots of every widget's visible states rendered with
//! ratatui's `TestBackend` (pinned by `insta`), and app tests that drive keys and agent events
//! through `update` without a terminal, including the ASK dialog's early-key guard; and the screen end to end through tmux against
//! the loopback model server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap in a test is a failed test

#[path = "tui/app_events.rs"]
mod app_events;
#[path = "support/audit_log.rs"]
mod audit_log;
#[path = "tui/audit_pane.rs"]
mod audit_pane;
#[path = "tui/dialogs.rs"]
mod dialogs;
// The scripted model and the fixture the loop tests use; the screen uses a part of them.
#[allow(dead_code)]
#[path = "agent_loop/support.rs"]
mod loop_support;
#[path = "tui/pager.rs"]
mod pager;
#[path = "tui/screen_loop.rs"]
mod screen_loop;
#[path = "support/mod.rs"]
mod server;
#[path = "tui/support.rs"]
mod support;
#[path = "tui/tmux_e2e.rs"]
mod tmux_e2e;
#[path = "tui/widgets.rs"]
mod widgets;
