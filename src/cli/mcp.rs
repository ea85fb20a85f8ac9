//! `agentlog mcp [PATH...]`: the Model Context Protocol server on stdin and stdout (the tools:
//! docs/MCP.md). Runs until the client closes stdin.

use std::path::PathBuf;

use agentlog::mcp::{McpConfig, serve_stdio};

use super::{EXIT_FAILURE, EXIT_OK, Failure};

/// The arguments of `agentlog mcp`.
#[derive(clap::Args)]
pub struct Args {
    /// Transcript files or directories the tools read (default: the places Claude Code,
    /// Codex and pi keep theirs).
    paths: Vec<PathBuf>,
    /// An agent directory the `status` tool may read (repeat for several).
    #[arg(long = "agent-dir", value_name = "DIR")]
    agent_dirs: Vec<PathBuf>,
    /// A session store the `search`, `read_session` and `list_sessions` tools may read (repeat
    /// for several).
    #[arg(long = "store", value_name = "ROOT")]
    stores: Vec<PathBuf>,
    /// Keep index files in DIR instead of the cache directory.
    #[arg(long, value_name = "DIR")]
    index_dir: Option<PathBuf>,
    /// Read the original transcripts alone, not the archived sessions they no longer hold.
    #[arg(long)]
    no_archive: bool,
}

/// Runs the server.
pub fn run(args: &Args) -> Result<u8, Failure> {
    let config = McpConfig {
        transcripts: args.paths.clone(),
        agent_dirs: args.agent_dirs.clone(),
        stores: args.stores.clone(),
        index_dir: args.index_dir.clone(),
        no_archive: args.no_archive,
    };
    serve_stdio(&config)
        .map_err(|e| Failure::new("io_error", EXIT_FAILURE, format!("the MCP server: {e}")))?;
    Ok(EXIT_OK)
}
