//! The session catalog: every session a usage report counts (a session is what `usage --by
//! session` calls one: a transcript with its subagents, or an `OpenCode` root session), each
//! row the report's session row (`session`, `project`, `agent`, the tally's fields, the cost's)
//! with what a listing adds: its title (its first user prompt), start and end, whether it is
//! read from the archive alone, and its files. The viewer (`agentlog serve`) and the MCP
//! server's `list_sessions` both list these rows; the archive-aware entry is
//! `agentlog::archive::session_catalog`, which hands the archive's cache copies in beside the
//! originals.
//!
//! A row's title, start and end come from bounded windows of its files (64 KiB at the head,
//! 16 KiB at the tail) or, for `OpenCode`, from its database rows ([`FactsCache`]); its tokens
//! from the one usage report, so a catalog costs one `usage` run and a few kilobytes per file.

mod build;
mod facts;

use std::path::{Path, PathBuf};

use jiff::civil::Date;
use serde::Serialize;

pub use build::{CatalogFile, catalog_of_files};
pub use facts::{FactsCache, PromptText};

use super::format::Format;
use super::price::RowCost;
use super::tally::Tally;
use super::usage::{Skipped, parse_agent};

/// Sessions per page when no limit is asked for.
pub const DEFAULT_SESSIONS_LIMIT: u64 = 20;
/// The most sessions one page holds.
pub const MAX_SESSIONS_LIMIT: u64 = 100;
/// The agent name a session store's sessions are listed under.
pub const STORE_AGENT: &str = "store";

/// A file of a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionFile {
    /// The file as the agent wrote it (for an archived copy, the original's path).
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Its size in bytes (of the copy, when read from one).
    pub bytes: u64,
    /// The archive's cache copy it is read from, when its lines come from the archive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy: Option<PathBuf>,
    /// The archived version the copy holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
}

impl SessionFile {
    /// The file to read: the copy, else the original.
    pub fn read_path(&self) -> &Path {
        self.copy.as_deref().unwrap_or(&self.path)
    }
}

/// One session: a `usage --by session --json` row and what a listing adds. In JSON the
/// report's field names (`session`, `project`, `agent`, `input_tokens`, ..., `total_tokens`,
/// `messages`, `cost_usd`, `models`, `unpriced_models`, `last_activity`) then `title`,
/// `start`, `end`, `from_archive`, `files`, `error`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionRow {
    /// The session id, as `usage --by session` names it.
    pub session: String,
    /// Its project, as `usage` names it.
    pub project: String,
    /// The agents whose usage it holds (comma-separated in name order when several), else the
    /// format of its main file; [`STORE_AGENT`] for a session store's.
    pub agent: String,
    /// Its tokens, each message counted once.
    #[serde(flatten)]
    pub tally: Tally,
    /// What they cost.
    #[serde(flatten)]
    pub cost: RowCost,
    /// The end of its last quarter-hour with usage (RFC 3339).
    pub last_activity: Option<String>,
    /// Its first user prompt (or `OpenCode`'s session title), cut to 200 characters.
    pub title: Option<String>,
    /// The first time in its files (RFC 3339, UTC).
    pub start: Option<String>,
    /// The last time in its files (RFC 3339, UTC).
    pub end: Option<String>,
    /// Whether every file of it is gone and it is read from the archive alone.
    pub from_archive: bool,
    /// Its files, the main one first (an `OpenCode` session: its database).
    pub files: Vec<SessionFile>,
    /// Why one of its files could not be read, if one could not.
    pub error: Option<String>,
}

impl SessionRow {
    /// Whether `agent` (a name) is one of the row's agents.
    pub fn has_agent(&self, agent: &str) -> bool {
        self.agent.split(',').any(|a| a == agent)
    }

    /// Its main file, if it has files.
    pub fn main_file(&self) -> Option<&SessionFile> {
        self.files.first()
    }
}

/// Every session found, newest first, and what could not be read.
#[derive(Debug, Default, Serialize)]
pub struct SessionCatalog {
    /// The sessions, by `end` then `start`, newest first (without times: last).
    pub sessions: Vec<SessionRow>,
    /// Sessions read from the archive alone.
    pub archive_only_sessions: u64,
    /// Transcripts, stores and directories that could not be read.
    pub skipped: Vec<Skipped>,
}

/// Which sessions a listing keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionFilter {
    /// Only sessions of this agent (`claude-code`, `codex`, `pi`, `gemini`, `copilot`,
    /// `opencode`, `qwen`, `kimi`, or `store`).
    pub agent: Option<String>,
    /// Only sessions whose project contains this text.
    pub project: Option<String>,
    /// Only sessions active on or after this UTC day (their `end`, else `start`).
    pub since: Option<Date>,
    /// Only sessions active on or before this UTC day (their `start`, else `end`).
    pub until: Option<Date>,
}

/// Why a listing gives no page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionListError {
    /// The limit is 0 or above [`MAX_SESSIONS_LIMIT`].
    #[error("limit must be between 1 and {MAX_SESSIONS_LIMIT}, not {0}")]
    Limit(u64),
    /// The cursor is not one this listing gave.
    #[error("the cursor is not a next_cursor of this listing (same filters and limit)")]
    Cursor,
    /// `since` is after `until`.
    #[error("since {since} is after until {until}")]
    Range {
        /// The first day.
        since: Date,
        /// The last day.
        until: Date,
    },
    /// The agent is not one agentlog reads.
    #[error("{0}")]
    Agent(String),
}

/// A page of sessions.
#[derive(Debug, Serialize)]
pub struct SessionPage<'a> {
    /// The sessions, newest first.
    pub sessions: Vec<&'a SessionRow>,
    /// How many sessions match, over all pages.
    pub total: u64,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Sessions read from the archive alone (of the whole catalog).
    pub archive_only_sessions: u64,
    /// What could not be read.
    pub skipped: &'a [Skipped],
}

impl SessionFilter {
    /// Checks the filter: a known agent, `since` not after `until`.
    pub fn check(&self) -> Result<(), SessionListError> {
        if let Some(agent) = self.agent.as_deref()
            && agent != STORE_AGENT
        {
            parse_agent(agent).map_err(|e| SessionListError::Agent(e.to_string()))?;
        }
        if let (Some(since), Some(until)) = (self.since, self.until)
            && since > until
        {
            return Err(SessionListError::Range { since, until });
        }
        Ok(())
    }

    /// Whether a row passes: its agent, a project containing the text, and activity (its
    /// `start`..`end` UTC days) meeting `since`..`until` (a row without times passes only
    /// without days).
    pub fn keeps(&self, row: &SessionRow) -> bool {
        if self.agent.as_deref().is_some_and(|a| !row.has_agent(a)) {
            return false;
        }
        if self
            .project
            .as_deref()
            .is_some_and(|p| !row.project.contains(p))
        {
            return false;
        }
        let day = |t: &Option<String>| {
            t.as_deref()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| jiff::tz::Offset::UTC.to_datetime(t).date())
        };
        let (first, last) = (day(&row.start), day(&row.end));
        let (first, last) = (first.or(last), last.or(first));
        self.since.is_none_or(|s| last.is_some_and(|d| d >= s))
            && self.until.is_none_or(|u| first.is_some_and(|d| d <= u))
    }
}

impl SessionCatalog {
    /// Sorts the rows newest first: by `end`, then `start` (rows without an `end` last), then
    /// project and session.
    pub fn sort_newest_first(&mut self) {
        self.sessions.sort_by(|a, b| {
            (b.end.is_some(), &b.end, &b.start, &a.project, &a.session).cmp(&(
                a.end.is_some(),
                &a.end,
                &a.start,
                &b.project,
                &b.session,
            ))
        });
    }

    /// The rows `filter` keeps, newest first.
    pub fn select<'a>(&'a self, filter: &SessionFilter) -> Vec<&'a SessionRow> {
        self.sessions.iter().filter(|r| filter.keeps(r)).collect()
    }

    /// A page of the rows `filter` keeps: `limit` rows (default [`DEFAULT_SESSIONS_LIMIT`], 1
    /// to [`MAX_SESSIONS_LIMIT`]) from the `next_cursor` of the previous page of the same
    /// filter and limit.
    pub fn page(
        &self,
        filter: &SessionFilter,
        limit: Option<u64>,
        cursor: Option<&str>,
    ) -> Result<SessionPage<'_>, SessionListError> {
        let limit = limit.unwrap_or(DEFAULT_SESSIONS_LIMIT);
        if !(1..=MAX_SESSIONS_LIMIT).contains(&limit) {
            return Err(SessionListError::Limit(limit));
        }
        filter.check()?;
        let print = fingerprint(filter, limit);
        let offset = match cursor {
            None => 0,
            Some(c) => parse_cursor(c, &print).ok_or(SessionListError::Cursor)?,
        };
        let rows = self.select(filter);
        let total = rows.len() as u64;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let page: Vec<&SessionRow> = rows
            .into_iter()
            .skip(start)
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .collect();
        let end = offset + page.len() as u64;
        Ok(SessionPage {
            sessions: page,
            total,
            next_cursor: (end < total).then(|| offset_cursor(end, &print)),
            archive_only_sessions: self.archive_only_sessions,
            skipped: &self.skipped,
        })
    }
}

/// What ties a cursor to its listing: the filters and the page size.
fn fingerprint(filter: &SessionFilter, limit: u64) -> String {
    request_print(&format!(
        "{:?}\0{:?}\0{:?}\0{:?}\0{limit}",
        filter.agent, filter.project, filter.since, filter.until
    ))
}

/// A request's fingerprint for an offset cursor: FNV-1a of its text, stable across runs and
/// builds, as a cursor must be.
pub(crate) fn request_print(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// The cursor of the page starting at `offset` of the request with this fingerprint.
pub(crate) fn offset_cursor(offset: u64, fingerprint: &str) -> String {
    format!("{offset}.{fingerprint}")
}

/// The offset of a cursor given for the request with this fingerprint.
pub(crate) fn parse_cursor(cursor: &str, fingerprint: &str) -> Option<u64> {
    let (offset, print) = cursor.split_once('.')?;
    (print == fingerprint).then_some(())?;
    offset.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(agent: &str, project: &str, start: Option<&str>, end: Option<&str>) -> SessionRow {
        SessionRow {
            session: "s".into(),
            project: project.into(),
            agent: agent.into(),
            tally: Tally::default(),
            cost: RowCost::default(),
            last_activity: None,
            title: None,
            start: start.map(str::to_owned),
            end: end.map(str::to_owned),
            from_archive: false,
            files: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn a_cursor_is_bound_to_its_filters_and_limit() {
        let filter = SessionFilter::default();
        let print = fingerprint(&filter, 20);
        assert_eq!(parse_cursor(&format!("40.{print}"), &print), Some(40));
        let other = SessionFilter {
            agent: Some("codex".into()),
            ..SessionFilter::default()
        };
        assert_ne!(fingerprint(&other, 20), print);
        assert_ne!(fingerprint(&filter, 21), print);
        assert_eq!(parse_cursor("40", &print), None);
        assert_eq!(parse_cursor(&format!("x.{print}"), &print), None);
    }

    #[test]
    fn the_filter_reads_agents_projects_and_days() {
        let day = |s: &str| s.parse::<Date>().unwrap();
        let r = row(
            "claude-code,kimi",
            "/home/me/app",
            Some("2026-01-02T23:00:00Z"),
            Some("2026-01-04T01:00:00Z"),
        );
        let f = |agent: Option<&str>, since: Option<&str>, until: Option<&str>| SessionFilter {
            agent: agent.map(str::to_owned),
            project: Some("me/app".into()),
            since: since.map(day),
            until: until.map(day),
        };
        assert!(f(Some("kimi"), None, None).keeps(&r));
        assert!(!f(Some("codex"), None, None).keeps(&r));
        assert!(f(None, Some("2026-01-04"), Some("2026-01-04")).keeps(&r));
        assert!(!f(None, Some("2026-01-05"), None).keeps(&r));
        assert!(!f(None, None, Some("2026-01-01")).keeps(&r));
        assert!(!f(None, Some("2026-01-01"), None).keeps(&row("codex", "me/app", None, None)));
        assert!(f(Some("nobody"), None, None).check().is_err());
        assert!(f(Some(STORE_AGENT), None, None).check().is_ok());
        assert!(
            f(None, Some("2026-01-05"), Some("2026-01-04"))
                .check()
                .is_err()
        );
    }
}
