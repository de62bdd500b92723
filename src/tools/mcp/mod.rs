//! The person's MCP servers' tools as the model reaches them: `capability` plans a call
//! (`spear-capability call SERVER.TOOL`) through the router, SpearHost runs it
//! (`tools::host::mcp`). Spear as an MCP server is `tools::mcp_server`.

pub mod capability;
#[cfg(feature = "test-hooks")]
pub mod test_server;
