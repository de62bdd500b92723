//! The security and command-execution substrate. Imports nothing from `tools`, `agent` or `tui`.
//! Decision layer: `primitives`, `shell`, `command_policy` (knows nothing of confinement).
//! Boundary layer: `workspace`, `target_policy`, `audit` (where a call may reach, what it left).
//! Execution layer: `sandbox`, `netns`, `process`, `resource_control` (never knows why a command
//! was allowed). `command_runner::CommandRunner` is the one place an `ExecutionProfile` crosses over.

pub mod atomic_file;
pub mod audit;
pub mod checkpoint;
pub mod command_policy;
pub mod command_runner;
pub mod egress;
pub mod primitives;
pub mod process;
pub mod resource_control;
pub mod rules;
pub mod sandbox;
pub mod secrets;
pub mod shell;
pub mod target_policy;
pub mod workspace;
