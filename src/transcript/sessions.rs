//! The sessions found under a set of transcript paths, newest first, a page at a time: each
//! with its agent, project, times and tokens (a session is what `usage --by session` calls one:
//! a transcript with its subagents).
//!
//! The tokens are the usage report's session rows (one merge, each message counted once, from
//! the run-level snapshot); the agent and the start time come from a bounded read of each
//! file's head, the last activity from its modification time, so a listing costs one `usage`
//! run and a few kilobytes per file.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use jiff::civil::Date;
use serde::Serialize;

use super::format::Format;
use super::readers::detect_format;
use super::store::OpenOptions;
use super::tally::Tally;
use super::usage::{GroupBy, Skipped, UsageOptions, day_of, discover, session_of, usage};

/// Sessions per page when no limit is asked for.
pub const DEFAULT_SESSIONS_LIMIT: u64 = 20;
/// The most sessions one page holds.
pub const MAX_SESSIONS_LIMIT: u64 = 100;
/// How much of a file's head is read for its format and start time.
const HEAD_BYTES: u64 = 64 << 10;

/// What [`list_sessions`] lists.
#[derive(Clone, Debug, Default)]
pub struct SessionListOptions {
    /// How transcripts are opened (the index directory).
    pub open: OpenOptions,
    /// Only sessions of this agent (a format name: `claude-code`, `codex`, `pi`, ...).
    pub agent: Option<String>,
    /// Only sessions whose project contains this text.
    pub project: Option<String>,
    /// Only sessions active on or after this UTC day; their tokens from this day on.
    pub since: Option<Date>,
    /// Only sessions active on or before this UTC day; their tokens up to this day.
    pub until: Option<Date>,
    /// Page size (default [`DEFAULT_SESSIONS_LIMIT`], 1 to [`MAX_SESSIONS_LIMIT`]).
    pub limit: Option<u64>,
    /// The `next_cursor` of the previous page of the same listing.
    pub cursor: Option<String>,
}

/// One session: its main transcript with its subagents.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionInfo {
    /// The session id, as `usage --by session` names it.
    pub session: String,
    /// Its project, as `usage` names it.
    pub project: String,
    /// The agent that wrote it (the format of its main transcript).
    pub agent: Format,
    /// Its main transcript (the subagents' files sit beside it).
    pub file: String,
    /// How many transcript files it has (the main one and its subagents').
    pub files: u64,
    /// The time of its first timestamped line (RFC 3339), if its head has one.
    pub started: Option<String>,
    /// The last time one of its files was written (RFC 3339).
    pub updated: Option<String>,
    /// Its tokens (within `since`/`until` when given), each message counted once.
    #[serde(flatten)]
    pub tally: Tally,
}

/// A page of sessions: `list_sessions` answers it.
#[derive(Debug, Default, Serialize)]
pub struct SessionList {
    /// The sessions, most recently updated first.
    pub sessions: Vec<SessionInfo>,
    /// How many sessions match, over all pages.
    pub total: u64,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Transcripts and directories that could not be read.
    pub skipped: Vec<Skipped>,
}

/// Why [`list_sessions`] gives no list.
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
}

/// What a file tells about its session, from its head and metadata.
struct FileFacts {
    format: Format,
    started: Option<jiff::Timestamp>,
    updated: Option<jiff::Timestamp>,
}

/// The sessions under `paths` (the agents' default places when empty, as [`usage`] finds
/// them), filtered and paged as `options` say, most recently updated first.
pub fn list_sessions(
    paths: &[PathBuf],
    options: &SessionListOptions,
) -> Result<SessionList, SessionListError> {
    let limit = options.limit.unwrap_or(DEFAULT_SESSIONS_LIMIT);
    if !(1..=MAX_SESSIONS_LIMIT).contains(&limit) {
        return Err(SessionListError::Limit(limit));
    }
    if let (Some(since), Some(until)) = (options.since, options.until)
        && since > until
    {
        return Err(SessionListError::Range { since, until });
    }
    let fingerprint = fingerprint(options, limit);
    let offset = match &options.cursor {
        None => 0,
        Some(cursor) => parse_cursor(cursor, &fingerprint).ok_or(SessionListError::Cursor)?,
    };
    let report = usage(
        paths,
        &UsageOptions {
            open: options.open.clone(),
            by: GroupBy::Session,
            since: options.since,
            until: options.until,
            ..UsageOptions::default()
        },
        &|_, _| {},
    );
    let tallies: BTreeMap<(String, String), Tally> = report
        .rows
        .into_iter()
        .map(|row| ((row.project.unwrap_or_default(), row.key), row.tally))
        .collect();
    let roots = if paths.is_empty() {
        super::usage::default_roots()
    } else {
        paths.to_vec()
    };
    let (files, _) = discover(&roots);
    let mut sessions = gather(&files, &tallies);
    sessions.retain(|s| keeps(s, options));
    sessions.sort_by(|a, b| {
        (b.updated.as_deref(), &a.project, &a.session).cmp(&(
            a.updated.as_deref(),
            &b.project,
            &b.session,
        ))
    });
    let total = sessions.len() as u64;
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let page: Vec<SessionInfo> = sessions
        .into_iter()
        .skip(start)
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .collect();
    let end = offset + page.len() as u64;
    Ok(SessionList {
        sessions: page,
        total,
        next_cursor: (end < total).then(|| offset_cursor(end, &fingerprint)),
        skipped: report.skipped,
    })
}

/// The files grouped into sessions, with their tallies.
fn gather(files: &[PathBuf], tallies: &BTreeMap<(String, String), Tally>) -> Vec<SessionInfo> {
    let mut sessions: BTreeMap<(String, String), SessionInfo> = BTreeMap::new();
    for path in files {
        // A file that is not a transcript (or cannot be read) is the usage report's to skip.
        let Some(facts) = facts(path) else { continue };
        let (session, project) = session_of(path, facts.format);
        let key = (project.clone(), session.clone());
        let is_main = path.file_stem().is_some_and(|s| *s == *session);
        let stamp = |t: Option<jiff::Timestamp>| t.map(|t| t.to_string());
        let entry = sessions.entry(key.clone()).or_insert_with(|| SessionInfo {
            session,
            project,
            agent: facts.format,
            file: path.display().to_string(),
            files: 0,
            started: None,
            updated: None,
            tally: tallies.get(&key).copied().unwrap_or_default(),
        });
        entry.files += 1;
        if is_main {
            entry.file = path.display().to_string();
            entry.agent = facts.format;
        }
        // RFC 3339 in UTC sorts as time does.
        entry.started = min_some(entry.started.take(), stamp(facts.started));
        entry.updated = max_some(entry.updated.take(), stamp(facts.updated));
    }
    sessions.into_values().collect()
}

fn min_some(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_some(a: Option<String>, b: Option<String>) -> Option<String> {
    a.max(b)
}

/// Whether a session passes the filters: its agent, a project containing the text, and
/// activity (from its start to its last write) overlapping the days.
fn keeps(session: &SessionInfo, options: &SessionListOptions) -> bool {
    if options
        .agent
        .as_ref()
        .is_some_and(|a| a != session.agent.name())
    {
        return false;
    }
    if options
        .project
        .as_ref()
        .is_some_and(|p| !session.project.contains(p.as_str()))
    {
        return false;
    }
    let day = |t: &Option<String>| {
        t.as_deref()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .and_then(|t| day_of(t.as_second().div_euclid(900)))
    };
    let (first, last) = (day(&session.started), day(&session.updated));
    let first = first.or(last);
    let last = last.or(first);
    let after_since = options
        .since
        .is_none_or(|s| last.is_some_and(|d| d >= s) || session.tally.messages > 0);
    let before_until = options
        .until
        .is_none_or(|u| first.is_some_and(|d| d <= u) || session.tally.messages > 0);
    after_since && before_until
}

/// A file's format and first timestamp from its head, and its modification time; `None` when
/// it cannot be read or shows no format.
fn facts(path: &Path) -> Option<FileFacts> {
    let file = std::fs::File::open(path).ok()?;
    let updated = file
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| jiff::Timestamp::try_from(t).ok());
    let mut head = Vec::new();
    file.take(HEAD_BYTES).read_to_end(&mut head).ok()?;
    let lines = || {
        head.split_inclusive(|&b| b == b'\n')
            .filter_map(|line| line.strip_suffix(b"\n"))
    };
    let format = detect_format(lines())?;
    let started = lines().find_map(timestamp_of);
    Some(FileFacts {
        format,
        started,
        updated,
    })
}

/// A line's `timestamp` (every supported format writes one, ISO 8601), if it has one.
fn timestamp_of(line: &[u8]) -> Option<jiff::Timestamp> {
    #[derive(serde::Deserialize)]
    struct Stamped<'a> {
        #[serde(borrow)]
        timestamp: Option<&'a str>,
    }
    let stamped: Stamped = serde_json::from_slice(line).ok()?;
    stamped.timestamp?.trim().parse().ok()
}

/// What ties a cursor to its listing: the filters and the page size.
fn fingerprint(options: &SessionListOptions, limit: u64) -> String {
    request_print(&format!(
        "{:?}\0{:?}\0{:?}\0{:?}\0{limit}",
        options.agent, options.project, options.since, options.until
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

    #[test]
    fn a_cursor_is_bound_to_its_filters_and_limit() {
        let options = SessionListOptions::default();
        let print = fingerprint(&options, 20);
        assert_eq!(parse_cursor(&format!("40.{print}"), &print), Some(40));
        let other = SessionListOptions {
            agent: Some("codex".into()),
            ..SessionListOptions::default()
        };
        assert_ne!(fingerprint(&other, 20), print);
        assert_ne!(fingerprint(&options, 21), print);
        assert_eq!(parse_cursor("40", &print), None);
        assert_eq!(parse_cursor(&format!("x.{print}"), &print), None);
    }

    #[test]
    fn the_start_is_the_first_timestamp() {
        assert_eq!(
            timestamp_of(br#"{"type":"x","timestamp":"2026-01-02T03:04:05Z"}"#)
                .map(|t| t.to_string()),
            Some("2026-01-02T03:04:05Z".to_owned())
        );
        assert_eq!(timestamp_of(br#"{"type":"x"}"#), None);
        assert_eq!(timestamp_of(b"not json"), None);
    }
}
