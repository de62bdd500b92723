//! The Model Context Protocol: `server` is Spear's harness as an MCP server (`spear mcp serve`).

pub mod server;
