//! The commands of the `sre-agent` binary (`main.rs` only parses and dispatches):
//! `serve`, `ask`, `investigations list|show`, `report`, `eval`, `check-config`, `healthcheck`,
//! `mcp` (the MCP server over stdio).
//! Commands that read or start investigations use the running daemon's API when one answers
//! (`daemon.rs`, the one way to find it), else open the store in-process (`backend.rs`).

pub mod ask;
mod backend;
pub mod check_config;
mod check_mcp;
mod daemon;
pub mod eval;
pub mod healthcheck;
pub mod investigations;
pub mod mcp;
pub mod report;
pub mod serve;
