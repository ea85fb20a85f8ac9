//! `agentlog mcp [PATH...]`: the Model Context Protocol server on stdin and stdout (the tools:
//! docs/MCP.md). Runs until the client closes stdin.

use std::path::PathBuf;

use agentlog::mcp::{McpConfig, serve_stdio};

use super::cache::CacheArgs;
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
    #[command(flatten)]
    cache: CacheArgs,
}

/// Runs the server.
pub fn run(args: &Args) -> Result<u8, Failure> {
    let config = McpConfig {
        transcripts: args.paths.clone(),
        agent_dirs: args.agent_dirs.clone(),
        stores: args.stores.clone(),
        index_dir: args.cache.index_dir.clone(),
        no_archive: args.cache.no_archive,
    };
    serve_stdio(&config)
        .map_err(|e| Failure::new("io_error", EXIT_FAILURE, format!("the MCP server: {e}")))?;
    Ok(EXIT_OK)
}
