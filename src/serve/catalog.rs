//! The sessions the viewer lists: the library's session catalog
//! ([`crate::archive::session_catalog`]: every session `usage --by session`
//! counts, the archive's and `OpenCode`'s included, each a usage row with its title, start and
//! end), given the viewer's ids. The titles and times are remembered by (length, mtime) across
//! refreshes, so a refresh re-reads only files that changed. The list is refreshed in the
//! background when older than [`REFRESH_AFTER`]; requests are answered from the last one
//! meanwhile.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::archive::{CatalogOptions, session_catalog};
use crate::transcript::{
    FactsCache, Format, OpenOptions, STORE_AGENT, SessionCatalog, SessionFilter, SessionRow,
    Skipped,
};

/// A listing older than this is refreshed (in the background) on the next request.
pub const REFRESH_AFTER: Duration = Duration::from_secs(5);

/// One session as the viewer lists it: the library's row and the viewer's ids.
#[derive(Clone, Debug, Serialize)]
pub struct ViewRow {
    /// The id in the viewer's addresses (`/sessions/{id}`): the session's name, made unique.
    pub id: String,
    /// The catalog's row: the `usage --by session --json` row, `title`, `start`, `end`,
    /// `from_archive`, `files`, `error`.
    #[serde(flatten)]
    pub row: SessionRow,
    /// The main file as the agent wrote it (for an `OpenCode` session, its database).
    pub path: Option<PathBuf>,
    /// The bytes of the main file read.
    pub bytes: u64,
    /// Its subagent transcripts, each viewable by its own id.
    pub subagents: Vec<SubagentRef>,
}

/// A subagent transcript of a session.
#[derive(Clone, Debug, Serialize)]
pub struct SubagentRef {
    /// Its id in the viewer's addresses.
    pub id: String,
    /// The file.
    pub path: PathBuf,
}

/// A transcript the viewer can show: a session's main file or a subagent's.
#[derive(Clone, Debug)]
pub struct Viewable {
    /// The file read (the archive's cache copy for an archived one; an `OpenCode` database).
    pub path: PathBuf,
    /// Its format.
    pub format: Option<Format>,
    /// The session row it belongs to (an index into [`Listing::sessions`]).
    pub session: usize,
    /// For an `OpenCode` session: its root session id in the database (its messages are
    /// addressed by their place, not by byte offsets).
    pub opencode: Option<String>,
}

/// The sessions found, newest end first.
#[derive(Debug, Default)]
pub struct Listing {
    /// The sessions.
    pub sessions: Vec<ViewRow>,
    /// Every viewable transcript by id.
    pub by_id: HashMap<String, Viewable>,
    /// Every viewable line transcript's id by the path read.
    pub by_path: HashMap<PathBuf, String>,
    /// Files and directories that could not be read.
    pub skipped: Vec<Skipped>,
    /// Sessions read from the archive alone.
    pub archive_only_sessions: u64,
}

#[derive(Default)]
struct Inner {
    listing: Arc<Listing>,
    built: Option<Instant>,
    facts: FactsCache,
}

/// The sessions under some roots, kept fresh.
#[derive(Clone)]
pub struct Catalog {
    roots: Arc<Vec<PathBuf>>,
    index_dir: Option<PathBuf>,
    archive_dir: Option<PathBuf>,
    inner: Arc<Mutex<Inner>>,
    refreshing: Arc<AtomicBool>,
}

impl Catalog {
    /// A catalog of the transcripts under `roots` (nothing is read yet), their usage read
    /// with the archive in `archive_dir` (`None`: the originals alone).
    pub fn new(
        roots: Vec<PathBuf>,
        index_dir: Option<PathBuf>,
        archive_dir: Option<PathBuf>,
    ) -> Catalog {
        Catalog {
            roots: Arc::new(roots),
            index_dir,
            archive_dir,
            inner: Arc::default(),
            refreshing: Arc::default(),
        }
    }

    /// The last listing; a refresh is started in the background when it is old.
    pub fn listing(&self) -> Arc<Listing> {
        let (listing, stale) = {
            let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            let stale = inner.built.is_none_or(|b| b.elapsed() > REFRESH_AFTER);
            (Arc::clone(&inner.listing), stale)
        };
        if stale && !self.refreshing.swap(true, Ordering::AcqRel) {
            let me = self.clone();
            std::thread::spawn(move || {
                me.refresh();
                me.refreshing.store(false, Ordering::Release);
            });
        }
        listing
    }

    /// Reads the sessions again (blocking), re-reading the heads and tails of changed files.
    pub fn refresh(&self) {
        let mut facts = {
            let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            std::mem::take(&mut inner.facts)
        };
        let options = CatalogOptions {
            open: OpenOptions {
                index_dir: self.index_dir.clone(),
                ..OpenOptions::default()
            },
            stores: Vec::new(),
            prompt: Some(crate::search::user_prompt),
        };
        let catalog = session_catalog(
            &self.roots,
            &options,
            self.archive_dir.as_deref(),
            &mut facts,
        );
        let listing = assemble(catalog);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.listing = Arc::new(listing);
        inner.facts = facts;
        inner.built = Some(Instant::now());
    }
}

/// Gives the catalog's rows the viewer's ids (a session's name, made unique; a subagent's
/// `{session id}~{file stem}`).
fn assemble(catalog: SessionCatalog) -> Listing {
    let mut taken = std::collections::HashSet::new();
    let mut by_id = HashMap::new();
    let mut by_path = HashMap::new();
    let mut sessions = Vec::with_capacity(catalog.sessions.len());
    for row in catalog.sessions {
        let mut id = row.session.clone();
        let mut n = 1;
        while taken.contains(&id) {
            n += 1;
            id = format!("{}~{n}", row.session);
        }
        taken.insert(id.clone());
        let index = sessions.len();
        let mut subagents = Vec::new();
        let opencode = row
            .main_file()
            .is_some_and(|f| f.format == Format::OpenCode);
        if let Some(main) = row.main_file() {
            by_id.insert(
                id.clone(),
                Viewable {
                    path: main.read_path().to_path_buf(),
                    format: Some(main.format),
                    session: index,
                    opencode: opencode.then(|| row.session.clone()),
                },
            );
            if !opencode {
                by_path.insert(main.read_path().to_path_buf(), id.clone());
            }
        }
        // An OpenCode session's subagents' messages are among its own.
        for file in row.files.iter().skip(1).filter(|_| !opencode) {
            let stem = file
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned());
            let sub = format!("{id}~{}", stem.unwrap_or_default());
            by_id.insert(
                sub.clone(),
                Viewable {
                    path: file.read_path().to_path_buf(),
                    format: Some(file.format),
                    session: index,
                    opencode: None,
                },
            );
            by_path.insert(file.read_path().to_path_buf(), sub.clone());
            subagents.push(SubagentRef {
                id: sub,
                path: file.path.clone(),
            });
        }
        sessions.push(ViewRow {
            id,
            path: row.main_file().map(|f| f.path.clone()),
            bytes: row.main_file().map_or(0, |f| f.bytes),
            subagents,
            row,
        });
    }
    Listing {
        sessions,
        by_id,
        by_path,
        skipped: catalog.skipped,
        archive_only_sessions: catalog.archive_only_sessions,
    }
}

/// Sessions matching a request's filters, sorted, one page.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct SessionQuery {
    /// Only this agent.
    pub agent: Option<String>,
    /// Only this project.
    pub project: Option<String>,
    /// Only sessions active on or after this day (`YYYY-MM-DD`).
    pub since: Option<String>,
    /// Only sessions active on or before this day (`YYYY-MM-DD`).
    pub until: Option<String>,
    /// Only sessions whose id, title or project holds this text (case ignored).
    pub q: Option<String>,
    /// `end` (default), `start`, `tokens`, `messages`, `project`.
    pub sort: Option<String>,
    /// `desc` (default) or `asc`.
    pub order: Option<String>,
    /// Rows per page (default 100, at most 500).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// A page of sessions.
#[derive(Debug, Serialize)]
pub struct SessionPage<'a> {
    /// The rows.
    pub sessions: Vec<&'a ViewRow>,
    /// How many sessions match.
    pub total: usize,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Every agent name the filter takes (for the filters).
    pub agents: Vec<&'static str>,
    /// Every project present.
    pub projects: Vec<&'a str>,
    /// Sessions read from the archive alone.
    pub archive_only_sessions: u64,
    /// Files and directories that could not be read.
    pub skipped: &'a [Skipped],
}

/// The default page size.
pub const DEFAULT_PAGE: usize = 100;
/// The largest page.
pub const MAX_PAGE: usize = 500;

/// Why a session query is refused.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// A parameter is not one of its values.
    #[error("{0}")]
    Bad(String),
}

impl Listing {
    /// A page of the sessions `query` selects.
    pub fn page(&self, query: &SessionQuery) -> Result<SessionPage<'_>, QueryError> {
        let day =
            |name: &str, v: &Option<String>| -> Result<Option<jiff::civil::Date>, QueryError> {
                match v.as_deref().filter(|s| !s.is_empty()) {
                    None => Ok(None),
                    Some(s) => s
                        .parse::<jiff::civil::Date>()
                        .map(Some)
                        .map_err(|e| QueryError::Bad(format!("{name} {s:?} is not a day: {e}"))),
                }
            };
        let empty = |v: &Option<String>| v.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
        let filter = SessionFilter {
            agent: empty(&query.agent),
            project: empty(&query.project),
            since: day("since", &query.since)?,
            until: day("until", &query.until)?,
        };
        filter.check().map_err(|e| QueryError::Bad(e.to_string()))?;
        let needle = query
            .q
            .as_deref()
            .filter(|q| !q.is_empty())
            .map(str::to_lowercase);
        let mut rows: Vec<&ViewRow> = self
            .sessions
            .iter()
            .filter(|r| filter.keeps(&r.row))
            .filter(|r| {
                needle.as_deref().is_none_or(|n| {
                    r.id.to_lowercase().contains(n)
                        || r.row
                            .title
                            .as_deref()
                            .is_some_and(|t| t.to_lowercase().contains(n))
                        || r.row.project.to_lowercase().contains(n)
                })
            })
            .collect();
        match query.sort.as_deref().unwrap_or("end") {
            "end" => {} // already newest end first
            "start" => rows.sort_by(|a, b| b.row.start.cmp(&a.row.start)),
            "tokens" => rows.sort_by_key(|r| std::cmp::Reverse(r.row.tally.usage.total())),
            "messages" => rows.sort_by_key(|r| std::cmp::Reverse(r.row.tally.messages)),
            "project" => rows.sort_by(|a, b| b.row.project.cmp(&a.row.project)),
            other => {
                return Err(QueryError::Bad(format!(
                    "sort {other:?} is not end, start, tokens, messages or project"
                )));
            }
        }
        match query.order.as_deref().unwrap_or("desc") {
            "desc" => {}
            "asc" => rows.reverse(),
            other => {
                return Err(QueryError::Bad(format!(
                    "order {other:?} is not asc or desc"
                )));
            }
        }
        let limit = query.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
        let from = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
            None => 0,
            Some(c) => c
                .strip_prefix('o')
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| {
                    QueryError::Bad(format!("cursor {c:?} is not one this server gave"))
                })?,
        };
        let total = rows.len();
        let next_cursor = (from + limit < total).then(|| format!("o{}", from + limit));
        let mut agents: Vec<&'static str> = Format::ALL.iter().map(|f| f.name()).collect();
        if self.sessions.iter().any(|r| r.row.agent == STORE_AGENT) {
            agents.push(STORE_AGENT);
        }
        agents.sort_unstable();
        let mut projects: Vec<&str> = self
            .sessions
            .iter()
            .map(|r| r.row.project.as_str())
            .collect();
        projects.sort_unstable();
        projects.dedup();
        Ok(SessionPage {
            sessions: rows.into_iter().skip(from).take(limit).collect(),
            total,
            next_cursor,
            agents,
            projects,
            archive_only_sessions: self.archive_only_sessions,
            skipped: &self.skipped,
        })
    }
}
