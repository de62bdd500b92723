//! Test support shared by the integration-test binaries: the scripted OpenAI-compatible
//! server and builders of what it sends.

pub mod chunks;
pub mod mock_server;
