//! The security and command-execution substrate. Imports nothing from `tools`, `agent` or `tui`.
//! Decision layer: `primitives`, `shell`, `command_policy` (knows nothing of confinement).
//! Boundary layer: `workspace`, `target_policy`, `audit` (where a call may reach, what it left).

pub mod audit;
pub mod command_policy;
pub mod primitives;
pub mod shell;
pub mod target_policy;
pub mod workspace;
