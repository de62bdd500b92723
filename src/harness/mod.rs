//! The security and command-execution substrate. Imports nothing from `tools`, `agent` or `tui`.
//! Decision layer: `primitives`, `shell`, `command_policy` (knows nothing of confinement).

pub mod command_policy;
pub mod primitives;
pub mod shell;
