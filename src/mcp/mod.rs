//! `agentlog mcp`: the engine's answers as Model Context Protocol tools over stdio, on the
//! official Rust SDK (rmcp). Read-only presenters of library calls: `search`
//! ([`TranscriptSearch`](crate::search::TranscriptSearch)), `list_sessions`
//! ([`session_catalog`](crate::archive::session_catalog)), `read_session`
//! ([`transcript_window`](crate::search::transcript_window)), `usage`
//! ([`usage`](crate::transcript::usage)) and `status`
//! ([`read_report`](crate::transcript::read_report)); each answer is the JSON the CLI's
//! `--json` prints, bounded, as `structuredContent`. docs/MCP.md is the reference.
//!
//! ```no_run
//! let config = agentlog::mcp::McpConfig::default();
//! agentlog::mcp::serve_stdio(&config)?;
//! # Ok::<(), std::io::Error>(())
//! ```

mod answer;
mod args;
mod error;
mod scope;
mod server;

pub use answer::{DEFAULT_USAGE_ROWS, MAX_LISTED, MAX_STATUS_GENERATIONS, MAX_USAGE_ROWS, Tools};
pub use error::ToolError;
pub use scope::McpConfig;
pub use server::{Server, tool_list};

use rmcp::ServiceExt;

/// Serves the tools over `config`'s sources on stdin and stdout until the client closes them.
pub fn serve_stdio(config: &McpConfig) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let server = Server::new(Tools::new(config));
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    })
}
