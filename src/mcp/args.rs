//! The tools' arguments: one struct per tool, whose JSON schema (schemars, as rmcp uses) is
//! the tool's `inputSchema`. Unknown fields are refused, so a misspelt argument is an error
//! rather than silently ignored.

use rmcp::schemars::JsonSchema;
use serde::Deserialize;

/// How a query's words must occur.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(crate = "rmcp::schemars")]
pub(crate) enum MatchArg {
    /// The whole query as one phrase.
    #[default]
    Phrase,
    /// Every word of the query, in any order.
    All,
}

/// `search`: full-text search over the transcripts (or one session store).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct SearchArgs {
    /// The text to find; case and accents are ignored.
    pub query: String,
    /// `phrase` (default): the query as one phrase; `all`: every word, in any order.
    #[serde(rename = "match", default)]
    pub match_mode: MatchArg,
    /// Hits per page, 1 to 100 (default 20).
    pub limit: Option<u64>,
    /// The `nextCursor` of the previous page of the same search.
    pub cursor: Option<String>,
    /// Search this session store (one the server was started with) instead of the
    /// transcripts.
    pub store: Option<String>,
}

/// `list_sessions`: sessions, most recently updated first.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct ListSessionsArgs {
    /// Only this agent: `claude-code`, `codex`, `pi`, `gemini`, `copilot`, `opencode`,
    /// `qwen`, `kimi`, or `store` (the sessions of the session stores the server was started
    /// with).
    pub agent: Option<String>,
    /// Only sessions whose project contains this text.
    pub project: Option<String>,
    /// Only sessions active (from start to end) on or after this UTC day (YYYY-MM-DD).
    pub since: Option<String>,
    /// Only sessions active (from start to end) on or before this UTC day (YYYY-MM-DD).
    pub until: Option<String>,
    /// Sessions per page, 1 to 100 (default 20).
    pub limit: Option<u64>,
    /// The `next_cursor` of the previous page of the same listing.
    pub cursor: Option<String>,
}

/// `read_session`: a window of a session's lines (or a store session's events).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct ReadSessionArgs {
    /// A session id (as `list_sessions` and `usage` name it) or a transcript file (a search
    /// hit's `file`, a subagent's file); with `store`, a store session's id.
    pub session: String,
    /// Centre the window on the line holding this byte offset (a search hit's `offset`).
    pub offset: Option<u64>,
    /// Centre the window on this line number (1-based, a search hit's `line`); with `store`,
    /// on the event with this seq. Without `offset` or `seq`: the first line.
    pub seq: Option<u64>,
    /// Lines (events) shown before the centre, 0 to 50 (default 10; store: 0).
    pub before: Option<u64>,
    /// Lines (events) shown after the centre, 0 to 50 (default 10; store: 0).
    pub after: Option<u64>,
    /// Each line's text is cut to this many characters, 1 to 8000 (default 1000).
    pub max_chars: Option<usize>,
    /// Show every line as its raw JSON (cut likewise) instead of message text only.
    #[serde(default)]
    pub raw: bool,
    /// Read `session` in this session store (one the server was started with).
    pub store: Option<String>,
}

/// `usage`: token usage over every transcript, grouped.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct UsageArgs {
    /// Rows by `day` (default), `week`, `month`, `block`, `session`, `project`, `model` or
    /// `agent`.
    pub by: Option<String>,
    /// Only this agent's usage: `claude-code`, `codex`, `pi`, `kimi`, ...
    pub agent: Option<String>,
    /// Only usage on or after this day (YYYY-MM-DD).
    pub since: Option<String>,
    /// Only usage on or before this day (YYYY-MM-DD).
    pub until: Option<String>,
    /// The time zone days, weeks and months are cut in (IANA name; default: the system's).
    pub timezone: Option<String>,
    /// Rows per page, 1 to 500 (default 100); the totals always cover every row.
    pub limit: Option<u64>,
    /// The `next_cursor` of the previous page of the same report.
    pub cursor: Option<String>,
}

/// `status`: the tokens since the latest compaction of one transcript or agent directory.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct StatusArgs {
    /// A transcript file inside the transcript sources, or an agent directory the server was
    /// started with.
    pub path: String,
}
