//! Live tests of the execution layer under real bubblewrap: confinement, limits, process
//! control, the network path, and the refusal when a mechanism is missing. A missing mechanism
//! fails these tests with what to install; nothing is skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The hooks these tests use are kept out of every shipped build.
#[cfg(not(feature = "test-hooks"))]
compile_error!("the live execution suite needs `--features test-hooks` (`make test` passes it)");

#[path = "execution/support.rs"]
mod support;

#[path = "support/features.rs"]
mod features;

#[path = "support/alone.rs"]
mod alone;

#[path = "execution/confinement.rs"]
mod confinement;

#[path = "execution/discipline.rs"]
mod discipline;

#[path = "execution/limits.rs"]
mod limits;

#[path = "execution/process_cap.rs"]
mod process_cap;

#[path = "execution/network.rs"]
mod network;

#[path = "execution/egress.rs"]
mod egress;
#[path = "support/origin.rs"]
mod origin;

#[path = "execution/host_services.rs"]
mod host_services;

#[path = "execution/long_lived.rs"]
mod long_lived;
#[path = "execution/mechanisms.rs"]
mod mechanisms;

#[path = "execution/cli.rs"]
mod cli;

#[path = "execution/kernel_walls.rs"]
mod kernel_walls;

#[path = "execution/seccomp_filter.rs"]
mod seccomp_filter;

#[path = "execution/scratch_space.rs"]
mod scratch_space;

#[path = "execution/keyring.rs"]
mod keyring;

#[path = "execution/signals.rs"]
mod signals;

#[path = "execution/changes.rs"]
mod changes;

#[path = "execution/descriptors.rs"]
mod descriptors;

#[path = "execution/orphans.rs"]
mod orphans;

#[path = "execution/agent_config.rs"]
mod agent_config;
#[path = "execution/git_walls.rs"]
mod git_walls;

#[path = "execution/direct.rs"]
mod direct;
#[path = "execution/git_leftovers.rs"]
mod git_leftovers;
#[path = "execution/held_files.rs"]
mod held_files;
#[path = "execution/set_id.rs"]
mod set_id;

#[path = "execution/sandbox_user.rs"]
mod sandbox_user;
#[path = "execution/sockets.rs"]
mod sockets;
// Issue 19: version managers pinned in the sandbox.
#[path = "execution/version_pins.rs"]
mod version_pins;
