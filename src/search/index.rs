//! [`SearchIndex`]: the search service over a [`Store`], with its derived index.

use std::time::Duration;

use serde::Serialize;

use crate::query::Store;
use crate::query::{SessionFilter, SessionHeader, SurfaceClass, validate_session_id};
use crate::search::catch_up::Caught;
use crate::search::cursor::Pages;
use crate::search::db::{Db, Handle, index_dir};
use crate::search::error::SearchError;
use crate::search::live::LiveOverlay;
use crate::search::predicate::{EVENT_PREDICATE_BUDGET, Predicates, SESSION_PREDICATE_BUDGET};
use crate::search::rank::{RankedRow, rank_events, rank_sessions};
use crate::search::request::{
    EventSearchRequest, Query, SessionSearchRequest, event_fingerprint, session_fingerprint,
};
use crate::search::sessions::{STORE_SCHEMA, reconcile};
use crate::search::snippet::{DEFAULT_SNIPPET_CHARS, make_snippet};
use crate::search::stamp::SETTLED;

/// Configuration of a [`SearchIndex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchConfig {
    /// Snippet length in code points (default 240).
    pub snippet_chars: usize,
    /// How long a log must be left alone before its `stat` alone is trusted (default 2 s;
    /// tests shorten it).
    pub settled: Duration,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            snippet_chars: DEFAULT_SNIPPET_CHARS,
            settled: SETTLED,
        }
    }
}

/// One matching event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSearchHit {
    /// Its session.
    pub session_id: String,
    /// Its seq.
    pub seq: u64,
    /// Its type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Its time, epoch ms.
    pub time: i64,
    /// Its surface class.
    pub surface: SurfaceClass,
    /// An excerpt around its first match.
    pub snippet: String,
    /// The matches within `snippet`, as code point ranges `[start, end)`.
    #[serde(skip)]
    pub marks: Vec<(usize, usize)>,
}

/// One matching session and its best event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSearchHit {
    /// The session's header (the live one when it is live).
    pub header: SessionHeader,
    /// Whether it is live in this store.
    pub live: bool,
    /// Whether it is stored.
    pub persisted: bool,
    /// Its best event: most matches, then shortest text, then latest.
    pub best_match: EventSearchHit,
}

/// A stored session left out of a search because its log breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreadableSession {
    /// The session.
    pub session_id: String,
    /// The query layer's code for what is wrong.
    pub error: String,
    /// What is wrong.
    pub message: String,
}

/// A page of a session search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSearchPage {
    /// The hits, best first.
    pub hits: Vec<SessionSearchHit>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Stored sessions that could not be searched, by id.
    pub unreadable: Vec<UnreadableSession>,
}

/// A page of an event search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSearchPage {
    /// The session searched.
    pub session: SessionHeader,
    /// The hits, best first.
    pub hits: Vec<EventSearchHit>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Full-text search over a store's sessions, live and stored.
///
/// The index lives in `ROOT/.agentlog-search/`; it is caught up with the logs before every
/// search, so a search never answers from bytes no longer in a log and never misses bytes it
/// validated. Searches of one index are serialized, across processes too.
#[derive(Debug)]
pub struct SearchIndex<'s> {
    store: &'s Store,
    config: SearchConfig,
    index: Handle,
    live: LiveOverlay,
}

/// What a search sees once the index is caught up.
struct Ready<'a> {
    db: &'a Db,
    live: &'a LiveOverlay,
    generation: i64,
}

impl<'s> SearchIndex<'s> {
    /// A search service over `store`. Nothing is read or written before the first search.
    pub fn new(store: &'s Store, config: SearchConfig) -> Self {
        let epoch = crate::search::db::new_instance_id();
        Self {
            store,
            config,
            index: Handle::new(index_dir(store.root()), &STORE_SCHEMA),
            live: LiveOverlay::new(epoch),
        }
    }

    /// Catches the index up with the logs without searching.
    pub fn catch_up(&mut self) -> Result<Caught, SearchError> {
        let mut caught = Caught::default();
        self.with_ready(|_| Ok(()), &mut caught)?;
        Ok(caught)
    }

    /// Searches every session: each matching session once, with its best event.
    pub fn search_sessions(
        &mut self,
        request: &SessionSearchRequest,
    ) -> Result<SessionSearchPage, SearchError> {
        let query = Query::new(&request.query, request.mode, request.limit)?;
        let predicates = Predicates::of_filters(
            &request.session_filters,
            &request.event_filters,
            SESSION_PREDICATE_BUDGET,
            3,
        )?;
        let fingerprint = session_fingerprint(
            &query.text,
            request.mode,
            &request.session_filters,
            &request.event_filters,
            query.limit,
        );
        let snippet_chars = self.config.snippet_chars;
        let mut caught = Caught::default();
        self.with_ready(
            |ready| {
                let generation = format!("{}{}", ready.generation, ready.live.generation_suffix());
                let pages = ready.pages("sessions", &fingerprint, &generation, query.limit);
                let offset = pages.offset(request.cursor.as_deref())?;
                let rows = rank_sessions(
                    ready.db,
                    ready.live.has_tables(),
                    &query,
                    &predicates,
                    offset,
                )?;
                let (rows, next_cursor) = pages.page(rows, offset);
                Ok(SessionSearchPage {
                    hits: rows
                        .into_iter()
                        .map(|row| session_hit(row, snippet_chars))
                        .collect::<Result<Vec<_>, _>>()?,
                    next_cursor,
                    unreadable: unreadable(ready, &request.session_filters)?,
                })
            },
            &mut caught,
        )
    }

    /// Searches one session: every matching event.
    pub fn search_events(
        &mut self,
        request: &EventSearchRequest,
    ) -> Result<EventSearchPage, SearchError> {
        let query = Query::new(&request.query, request.mode, request.limit)?;
        validate_session_id(&request.session_id)?;
        // The session id takes the fourth bound value.
        let predicates = Predicates::of_filters(&[], &request.filters, EVENT_PREDICATE_BUDGET, 4)?;
        let fingerprint = event_fingerprint(
            &request.session_id,
            &query.text,
            request.mode,
            &request.filters,
            query.limit,
        );
        let snippet_chars = self.config.snippet_chars;
        let id = request.session_id.as_str();
        let store = self.store;
        let mut caught = Caught::default();
        self.with_ready(
            |ready| {
                let (session, generation) = match ready.live.session_generation(id) {
                    Some(generation) => {
                        let header =
                            store.with_live(id, |v| v.header.clone()).ok_or_else(|| {
                                SearchError::from(crate::query::QueryError::SessionNotFound {
                                    session_id: id.into(),
                                })
                            })?;
                        (header, generation)
                    }
                    None => stored_target(ready, id)?,
                };
                let pages = ready.pages("events", &fingerprint, &generation, query.limit);
                let offset = pages.offset(request.cursor.as_deref())?;
                let rows = rank_events(
                    ready.db,
                    ready.live.has_tables(),
                    id,
                    &query,
                    &predicates,
                    offset,
                )?;
                let (rows, next_cursor) = pages.page(rows, offset);
                Ok(EventSearchPage {
                    session,
                    hits: rows
                        .into_iter()
                        .map(|row| event_hit(row, snippet_chars))
                        .collect(),
                    next_cursor,
                })
            },
            &mut caught,
        )
    }

    /// Takes the lock, opens and catches up the index, and runs `f` (again, if the index
    /// had to be rebuilt on the way).
    fn with_ready<T>(
        &mut self,
        f: impl Fn(&Ready<'_>) -> Result<T, SearchError>,
        caught: &mut Caught,
    ) -> Result<T, SearchError> {
        let (store, settled, live) = (self.store, self.config.settled, &mut self.live);
        let vocabulary = &store.config().vocabulary;
        self.index.with_lock(|db, reopened| {
            if reopened {
                live.reset();
            }
            *caught = reconcile(&mut db.conn, store.root(), vocabulary, settled)?;
            let conn = &db.conn;
            let persisted = |id: &str| {
                conn.query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |_| Ok(()))
                    .is_ok()
            };
            live.sync(conn, store, &persisted)?;
            let generation: i64 = conn
                .query_row(
                    "SELECT generation FROM state WHERE singleton = 1",
                    [],
                    |r| r.get(0),
                )
                .map_err(|e| SearchError::index("reading the generation", e))?;
            f(&Ready {
                db,
                live,
                generation,
            })
        })
    }
}

impl Ready<'_> {
    /// The pages of a search of this index.
    fn pages<'a>(
        &'a self,
        scope: &'a str,
        fingerprint: &'a str,
        generation: &'a str,
        limit: u64,
    ) -> Pages<'a> {
        Pages {
            instance: &self.db.instance,
            scope,
            fingerprint,
            generation,
            limit,
        }
    }
}

fn surface_class(name: &str) -> SurfaceClass {
    match name {
        "current" => SurfaceClass::Current,
        "shadowed" => SurfaceClass::Shadowed,
        _ => SurfaceClass::LogOnly,
    }
}

fn event_hit(row: RankedRow, snippet_chars: usize) -> EventSearchHit {
    let snippet = make_snippet(&row.marked, snippet_chars);
    EventSearchHit {
        session_id: row.session_id,
        seq: row.seq,
        event_type: row.event_type,
        time: row.time,
        surface: surface_class(&row.surface),
        snippet: snippet.text,
        marks: snippet.marks,
    }
}

fn parse_header(json: &str) -> Result<SessionHeader, SearchError> {
    serde_json::from_str(json).map_err(|e| SearchError::IndexFailed {
        operation: "reading a stored header".into(),
        cause: Box::new(e),
    })
}

fn session_hit(row: RankedRow, snippet_chars: usize) -> Result<SessionSearchHit, SearchError> {
    let header = parse_header(&row.header)?;
    let (live, persisted) = (row.live, row.persisted);
    Ok(SessionSearchHit {
        header,
        live,
        persisted,
        best_match: event_hit(row, snippet_chars),
    })
}

/// The header and generation of a stored, readable session.
fn stored_target(ready: &Ready<'_>, id: &str) -> Result<(SessionHeader, String), SearchError> {
    use rusqlite::OptionalExtension;
    /// header, error code, error, generation
    type Row = (Option<String>, Option<String>, Option<String>, i64);
    let row: Option<Row> = ready
        .db
        .conn
        .query_row(
            "SELECT header, error_code, error, generation FROM sessions WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(|e| SearchError::index("reading a session", e))?;
    match row {
        None => Err(crate::query::QueryError::SessionNotFound {
            session_id: id.into(),
        }
        .into()),
        Some((_, Some(code), message, _)) => Err(SearchError::Unreadable {
            session_id: id.into(),
            code: SearchError::unreadable_code(&code),
            message: message.unwrap_or_default(),
        }),
        Some((header, None, _, generation)) => Ok((
            parse_header(header.as_deref().unwrap_or_default())?,
            format!("persisted:{generation}"),
        )),
    }
}

/// The stored sessions left out, restricted to the ids asked for when an id filter is given.
fn unreadable(
    ready: &Ready<'_>,
    filters: &[SessionFilter],
) -> Result<Vec<UnreadableSession>, SearchError> {
    let failed = |e| SearchError::index("listing unreadable sessions", e);
    let mut stmt = ready
        .db
        .conn
        .prepare("SELECT id, error_code, error FROM sessions WHERE error IS NOT NULL ORDER BY id")
        .map_err(failed)?;
    let all = stmt
        .query_map([], |r| {
            Ok(UnreadableSession {
                session_id: r.get(0)?,
                error: r.get(1)?,
                message: r.get(2)?,
            })
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(failed)?;
    Ok(all
        .into_iter()
        .filter(|u| ready.live.session_generation(&u.session_id).is_none())
        .filter(|u| {
            filters.iter().all(|f| match f {
                SessionFilter::Id { values } => values.contains(&u.session_id),
                _ => true,
            })
        })
        .collect())
}
