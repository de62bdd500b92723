//! Spear: a terminal coding assistant whose every tool call is decided, confined, bounded and
//! recorded. The library holds the layers; `main.rs` only wires them to a command line.

pub mod agent;
pub mod config;
pub mod harness;
pub mod tools;
pub mod tui;
