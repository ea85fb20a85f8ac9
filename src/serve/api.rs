//! The JSON API under `/api/` (docs/SERVE.md, "API"): every answer a library call or a
//! bounded window, every error `{"error": code, "message": ...}` with its status. Blocking
//! reads run on tokio's blocking pool.

use std::fs::File;
use std::sync::{Arc, PoisonError};

use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};

use super::State as Shared;
use super::catalog::{SessionQuery, ViewRow};
use super::reply::{ApiError, find, window_error};
use super::window::LineView;
use super::window::{self, LineWindow};
use crate::archive::{report, usage};
use crate::search::{
    MatchMode, SearchConfig, TranscriptSearch, TranscriptSearchHit, TranscriptSearchRequest,
};
use crate::transcript::{
    Format, OpenOptions, ReportOptions, TranscriptReport, UsageArgError, UsageOptions, UsageReport,
    parse_day, parse_group_by, parse_timezone,
};

/// The API's routes.
pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/api/sessions", get(sessions))
        .route("/api/sessions/{id}", get(session))
        .route("/api/sessions/{id}/lines", get(lines))
        .route("/api/sessions/{id}/follow", get(super::follow::follow))
        .route("/api/search", get(search))
        .route("/api/usage", get(usage_report))
        .fallback(not_found)
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such address")
}

/// Runs a blocking read on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
}

async fn sessions(
    State(state): State<Arc<Shared>>,
    Query(query): Query<SessionQuery>,
) -> Result<Response, ApiError> {
    let listing = state.catalog.listing();
    let page = listing
        .page(&query)
        .map_err(|e| ApiError::bad(e.to_string()))?;
    Ok(Json(page).into_response())
}

/// `/api/sessions/{id}`: the session's row, which transcript this is, and its report.
#[derive(Serialize)]
struct SessionAnswer {
    /// The id asked for.
    id: String,
    /// The session it belongs to.
    session: ViewRow,
    /// The transcript shown.
    path: std::path::PathBuf,
    /// Its format.
    format: Option<Format>,
    /// The transcript's report (`transcript --json`), when it could be read.
    report: Option<TranscriptReport>,
    /// Why it could not be, if it could not.
    error: Option<String>,
}

async fn session(
    State(state): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<SessionAnswer>, ApiError> {
    let (viewable, row) = find(&state, &id)?;
    let (report, error) = if viewable.opencode.is_some() {
        // A database of many sessions: the row holds this session's figures; its messages
        // come in pages from `/lines`.
        (None, None)
    } else {
        let main = row
            .row
            .main_file()
            .is_some_and(|f| f.read_path() == viewable.path);
        let options = ReportOptions {
            open: OpenOptions {
                index_dir: state.index_dir.clone(),
                format: viewable.format,
                ..OpenOptions::default()
            },
            subagents: main && viewable.format == Some(Format::ClaudeCode),
        };
        let path = viewable.path.clone();
        let archive = state.archive_dir.clone();
        match blocking(move || Ok(report(&path, &options, archive.as_deref()))).await? {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e.to_string())),
        }
    };
    Ok(Json(SessionAnswer {
        id,
        session: row,
        path: viewable.path,
        format: viewable.format,
        report,
        error,
    }))
}

/// `/api/sessions/{id}/lines` parameters.
#[derive(Deserialize)]
struct LinesQuery {
    /// Read forward from this line offset (default 0).
    offset: Option<u64>,
    /// Or read the lines ending at this offset (`end`: the transcript's end).
    before: Option<String>,
    /// How many lines (default 100, at most 500).
    limit: Option<usize>,
}

/// The offset a `before` names: `None` for `end`, the transcript's end.
fn before_offset(before: &str) -> Result<Option<u64>, ApiError> {
    if before == "end" {
        return Ok(None);
    }
    before
        .parse::<u64>()
        .map(Some)
        .map_err(|_| ApiError::bad(format!("before {before:?} is not an offset or end")))
}

async fn lines(
    State(state): State<Arc<Shared>>,
    Path(id): Path<String>,
    Query(query): Query<LinesQuery>,
) -> Result<Json<LineWindow>, ApiError> {
    let (viewable, _) = find(&state, &id)?;
    let limit = query.limit.unwrap_or(100);
    if let Some(session) = viewable.opencode.clone() {
        let index_dir = state.index_dir.clone();
        return blocking(move || {
            opencode_window(
                &viewable.path,
                &session,
                index_dir.as_deref(),
                &query,
                limit,
            )
        })
        .await
        .map(Json);
    }
    let window = blocking(move || {
        let file = File::open(&viewable.path)
            .map_err(|e| ApiError::new(StatusCode::NOT_FOUND, "unreadable", e.to_string()))?;
        let len = file
            .metadata()
            .map_err(|e| ApiError::internal(e.to_string()))?
            .len();
        let end =
            window::complete_end(&file, len).map_err(|e| ApiError::internal(e.to_string()))?;
        let read = match query.before.as_deref() {
            Some(b) => {
                let before = before_offset(b)?.unwrap_or(end);
                window::read_backward(&file, viewable.format, before, limit, end)
            }
            None => window::read_forward(
                &file,
                viewable.format,
                query.offset.unwrap_or(0),
                limit,
                end,
            ),
        };
        read.map_err(window_error)
    })
    .await?;
    Ok(Json(window))
}

/// A window of an `OpenCode` session's messages, shaped as a window of lines: a message's
/// `offset` is its place in the session (0 the oldest), `end` the number of messages, `json`
/// its data as stored (`type` `message`, `role`, `time` from it).
fn opencode_window(
    db: &std::path::Path,
    session: &str,
    index_dir: Option<&std::path::Path>,
    query: &LinesQuery,
    limit: usize,
) -> Result<LineWindow, ApiError> {
    let limit = limit.clamp(1, window::MAX_LINES);
    let read = |offset: u64| {
        crate::transcript::read_opencode_messages(db, session, index_dir, offset, limit)
            .map_err(|e| ApiError::new(StatusCode::NOT_FOUND, "unreadable", e.to_string()))
    };
    // Forward: one read. Backward: the count first, then the page before the place asked.
    // `before`: the place asked, `None` for the end (or a forward read).
    let (from, page, before) = match query.before.as_deref() {
        None => {
            let from = query.offset.unwrap_or(0);
            (from, read(from)?, None)
        }
        Some(b) => {
            let total = read(0)?.total;
            let before = before_offset(b)?;
            let from = before
                .unwrap_or(total)
                .min(total)
                .saturating_sub(limit as u64);
            (from, read(from)?, before)
        }
    };
    let total = page.total;
    if from > total {
        return Err(ApiError::bad(format!(
            "offset {from} is past the session's {total} messages"
        )));
    }
    let until = before.map_or(total, |b| b.min(total));
    let lines: Vec<LineView> = page
        .messages
        .into_iter()
        .filter(|m| m.index < until)
        .map(|m| LineView {
            offset: m.index,
            bytes: m.bytes,
            kind: Some("message".to_owned()),
            role: m.role,
            time: m.time,
            json: m.data,
            text: None,
            truncated: false,
        })
        .collect();
    Ok(LineWindow {
        next_offset: lines.last().map_or(from, |l| l.offset + 1),
        first_offset: lines.first().map_or(from, |l| l.offset),
        lines,
        end: total,
    })
}

/// `/api/search` parameters.
#[derive(Deserialize)]
struct SearchQuery {
    q: String,
    cursor: Option<String>,
    limit: Option<u64>,
    mode: Option<MatchMode>,
}

/// A hit with the viewer's id of its transcript and its marks.
#[derive(Serialize)]
struct Hit {
    #[serde(flatten)]
    found: TranscriptSearchHit,
    /// The viewer's id of the hit's transcript.
    id: Option<String>,
    /// The matches within `snippet`, as code point ranges `[start, end)`.
    marks: Vec<(usize, usize)>,
}

/// A page of hits, as `search --transcripts --json`, with ids and marks.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SearchAnswer {
    hits: Vec<Hit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
    unreadable: Vec<crate::search::UnreadableTranscript>,
}

async fn search(
    State(state): State<Arc<Shared>>,
    Query(query): Query<SearchQuery>,
) -> Result<Json<SearchAnswer>, ApiError> {
    let shared = Arc::clone(&state);
    let page = blocking(move || {
        let mut slot = shared.search.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(
                TranscriptSearch::new(shared.index_dir.clone(), SearchConfig::default())
                    .map_err(|e| ApiError::internal(e.to_string()))?,
            );
        }
        let Some(search) = slot.as_mut() else {
            return Err(ApiError::internal("no search index"));
        };
        let request = TranscriptSearchRequest {
            query: query.q,
            paths: shared.roots.clone(),
            limit: query.limit,
            cursor: query.cursor,
            mode: query.mode.unwrap_or_default(),
        };
        search
            .search(&request)
            .map_err(|e| ApiError::bad(e.to_string()))
    })
    .await?;
    let listing = state.catalog.listing();
    let hits = page
        .hits
        .into_iter()
        .map(|hit| Hit {
            id: listing.by_path.get(&hit.file).cloned(),
            marks: hit.marks.clone(),
            found: hit,
        })
        .collect();
    Ok(Json(SearchAnswer {
        hits,
        next_cursor: page.next_cursor,
        unreadable: page.unreadable,
    }))
}

/// `/api/usage` parameters.
#[derive(Deserialize)]
struct UsageQuery {
    /// The grouping, as `usage --by` (default `day`).
    by: Option<String>,
    since: Option<String>,
    until: Option<String>,
    /// The zone days are cut in, an IANA name (default: the server's).
    timezone: Option<String>,
    /// `model`: also each row's usage by model (`by_model`), what the stacked charts draw.
    split: Option<String>,
    /// At most this many rows (default 1,000, at most 10,000).
    limit: Option<usize>,
}

/// The usage report (`usage --json`), its rows cut to the limit.
#[derive(Serialize)]
struct UsageAnswer {
    #[serde(flatten)]
    report: UsageReport,
    /// How many rows there were before the cut.
    rows_total: usize,
}

async fn usage_report(
    State(state): State<Arc<Shared>>,
    Query(query): Query<UsageQuery>,
) -> Result<Json<UsageAnswer>, ApiError> {
    let bad = |e: UsageArgError| ApiError::bad(e.to_string());
    let day = |v: Option<&str>| {
        v.filter(|s| !s.is_empty())
            .map(parse_day)
            .transpose()
            .map_err(bad)
    };
    let split_by_model = match query.split.as_deref().filter(|s| !s.is_empty()) {
        None => false,
        Some("model") => true,
        Some(other) => return Err(ApiError::bad(format!("split {other:?} is not model"))),
    };
    let options = UsageOptions {
        open: OpenOptions {
            index_dir: state.index_dir.clone(),
            ..OpenOptions::default()
        },
        by: parse_group_by(query.by.as_deref().unwrap_or("day")).map_err(bad)?,
        since: day(query.since.as_deref())?,
        until: day(query.until.as_deref())?,
        timezone: parse_timezone(query.timezone.as_deref().filter(|s| !s.is_empty()))
            .map_err(bad)?,
        split_by_model,
        ..UsageOptions::default()
    };
    let limit = query.limit.unwrap_or(1000).clamp(1, 10_000);
    let roots = state.roots.clone();
    let archive = state.archive_dir.clone();
    let mut report =
        blocking(move || Ok(usage(&roots, &options, archive.as_deref(), &|_, _| {}))).await?;
    let rows_total = report.rows.len();
    if rows_total > limit {
        report.rows.truncate(limit);
        let kept: std::collections::BTreeSet<&str> =
            report.rows.iter().map(|r| r.key.as_str()).collect();
        report.by_model.retain(|key, _| kept.contains(key.as_str()));
    }
    Ok(Json(UsageAnswer { report, rows_total }))
}
