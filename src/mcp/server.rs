//! The protocol side: the tool list with each tool's schema, and `tools/call` answered on a
//! blocking thread (the library reads files and SQLite), as `structuredContent` with the same
//! JSON as text beside it. A bad argument is a tool error result (`isError`), which the
//! calling model sees; an unknown tool is a protocol error, as the specification asks.

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::answer::Tools;
use super::args::{ListSessionsArgs, ReadSessionArgs, SearchArgs, StatusArgs, UsageArgs};
use super::error::ToolError;

/// What the server tells a client about itself at initialization.
const INSTRUCTIONS: &str = "Read-only access to the user's AI-agent sessions (Claude Code, \
    Codex, pi): search them, list them, read a window of one, and report token usage. Search \
    hits name a file and an offset: pass them to read_session to see the lines around a hit.";

/// The MCP server: [`Tools`] behind rmcp's handler.
#[derive(Clone, Debug)]
pub struct Server {
    tools: Arc<Tools>,
}

impl Server {
    /// A server answering with `tools`.
    pub fn new(tools: Tools) -> Server {
        Server {
            tools: Arc::new(tools),
        }
    }
}

/// The tools, their descriptions and argument schemas.
pub fn tool_list() -> Vec<Tool> {
    let read_only = || {
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    };
    [
        Tool::new(
            "search",
            "Full-text search over every agent transcript (or one session store): the query \
             as one phrase (match=all: every word), case and accents ignored. Hits best first \
             with file, session, offset, line, generation, type, role, time and snippet; at \
             most 100 per page, the next page via nextCursor.",
            schema_for_type::<SearchArgs>(),
        ),
        Tool::new(
            "list_sessions",
            "Sessions as usage --by session counts them (every agent, the archive's too, and \
             the sessions of --store stores as agent store), newest first, each its usage row \
             with title, start, end, from_archive and files; filter by agent, project text and \
             UTC days. At most 100 per page, the next via next_cursor.",
            schema_for_type::<ListSessionsArgs>(),
        ),
        Tool::new(
            "read_session",
            "A window of one session's lines around a byte offset or line number (a search \
             hit's offset or line): at most 50 lines each side, message text only unless \
             raw, each cut to max_chars (default 1000, at most 8000). next_offset and \
             previous_offset continue the reading. With store: a store session's events \
             around seq.",
            schema_for_type::<ReadSessionArgs>(),
        ),
        Tool::new(
            "usage",
            "Token usage over every transcript, each message counted once, by day, session, \
             project, model, agent, week, month or 5-hour block, with totals, for every agent or one; \
             at most 500 rows per page (default 100), the next via next_cursor.",
            schema_for_type::<UsageArgs>(),
        ),
        Tool::new(
            "status",
            "Tokens since the latest compaction (and per generation, the latest 50) of one \
             transcript file, or the current generation of a configured agent directory.",
            schema_for_type::<StatusArgs>(),
        ),
    ]
    .into_iter()
    .map(|tool| tool.with_annotations(read_only()))
    .collect()
}

/// A tool's answer as a call result.
fn result(answer: Result<serde_json::Value, ToolError>) -> CallToolResult {
    match answer {
        Ok(value) => CallToolResult::structured(value),
        Err(error) => CallToolResult::structured_error(error.to_json()),
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agentlog", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tools = Arc::clone(&self.tools);
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let answer = tokio::task::spawn_blocking(move || tools.call(&name, args))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the tool failed: {e}"), None))?;
        match answer {
            Some(answer) => Ok(result(answer).into()),
            None => Err(ErrorData::invalid_params(
                format!("unknown tool {:?}", request.name),
                None,
            )),
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tool_list().into_iter().find(|t| t.name == name)
    }
}
