//! The sessions the viewer lists: the transcripts found under its roots (as `usage` finds
//! them), grouped into sessions (a transcript with its subagent transcripts), each with the
//! `usage --by session` row of the same library call beside its agent, title, start and end.
//!
//! A session's title is its first user prompt, its start the first timestamp of its main
//! transcript and its end the last one of any of its files: read from a window at the head
//! and at the tail of each file, remembered by (length, mtime), so a refresh re-reads only
//! files that changed. The list is refreshed in the background when older than
//! [`REFRESH_AFTER`]; requests are answered from the last one meanwhile.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::archive::usage;
use crate::log::read_at_retrying;
use crate::search::transcript_line_text;
use crate::transcript::{
    Format, GroupBy, OpenOptions, Skipped, Tally, UsageOptions, UsageRow, detect_format, discover,
    session_of,
};

/// A listing older than this is refreshed (in the background) on the next request.
pub const REFRESH_AFTER: Duration = Duration::from_secs(5);
/// Bytes read at a file's head for its format, title and start.
const HEAD_BYTES: usize = 64 << 10;
/// Bytes read at a file's tail for its end.
const TAIL_BYTES: usize = 16 << 10;
/// Prompts the agents write themselves (command echoes, environment blocks): not a title.
const BOOKKEEPING: &[&str] = &[
    "Caveat:",
    "<command-",
    "<local-command",
    "<environment_context",
    "<user_instructions",
    "<permissions",
    "# AGENTS.md",
];
/// A title is cut to this many characters.
const TITLE_CHARS: usize = 200;

/// One session: a row of `usage --by session --json` and what the viewer adds.
#[derive(Clone, Debug, Serialize)]
pub struct SessionRow {
    /// The id in the viewer's addresses (`/sessions/{id}`): the session's name, made unique.
    pub id: String,
    /// The agent (`claude-code`, `codex`, `pi`).
    pub agent: &'static str,
    /// The first user prompt, cut.
    pub title: Option<String>,
    /// The first timestamp, as written.
    pub start: Option<String>,
    /// The last timestamp, as written.
    pub end: Option<String>,
    /// The usage row: session, project and the tally's fields.
    #[serde(flatten)]
    pub usage: UsageRow,
    /// The main transcript.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its subagent transcripts, each viewable by its own id.
    pub subagents: Vec<SubagentRef>,
    /// Why the session's usage could not be read, if it could not.
    pub error: Option<String>,
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
    /// The file.
    pub path: PathBuf,
    /// Its format, if its head told.
    pub format: Option<Format>,
    /// The session row it belongs to (an index into [`Listing::sessions`]).
    pub session: usize,
}

/// The sessions found, newest end first.
#[derive(Debug, Default)]
pub struct Listing {
    /// The sessions.
    pub sessions: Vec<SessionRow>,
    /// Every viewable transcript by id.
    pub by_id: HashMap<String, Viewable>,
    /// Every viewable transcript's id by path.
    pub by_path: HashMap<PathBuf, String>,
    /// Files and directories that could not be read.
    pub skipped: Vec<Skipped>,
}

/// What a file's head and tail say.
#[derive(Clone, Debug, Default)]
struct Facts {
    format: Option<Format>,
    title: Option<String>,
    start: Option<String>,
    end: Option<String>,
}

/// A file's identity for the facts cache.
type Stamp = (u64, Option<SystemTime>);

#[derive(Default)]
struct Inner {
    listing: Arc<Listing>,
    built: Option<Instant>,
    facts: HashMap<PathBuf, (Stamp, Facts)>,
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
        let (files, mut skipped) = discover(&self.roots);
        let options = UsageOptions {
            open: OpenOptions {
                index_dir: self.index_dir.clone(),
                ..OpenOptions::default()
            },
            by: GroupBy::Session,
            ..UsageOptions::default()
        };
        let report = usage(
            &self.roots,
            &options,
            self.archive_dir.as_deref(),
            &|_, _| {},
        );
        let mut known = {
            let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            inner.facts.clone()
        };
        let mut facts = HashMap::with_capacity(files.len());
        for file in files {
            let Ok(meta) = std::fs::metadata(&file) else {
                continue;
            };
            let stamp = (meta.len(), meta.modified().ok());
            let read = match known.remove(&file) {
                Some((s, f)) if s == stamp => f,
                _ => read_facts(&file, meta.len()),
            };
            facts.insert(file, (stamp, read));
        }
        let errors: HashMap<PathBuf, String> = report
            .skipped
            .iter()
            .map(|s| (s.path.clone(), s.error.to_string()))
            .collect();
        skipped.extend(
            report
                .skipped
                .into_iter()
                .filter(|s| !facts.contains_key(&s.path)),
        );
        let listing = assemble(&facts, report.rows, &errors, skipped);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.listing = Arc::new(listing);
        inner.facts = facts;
        inner.built = Some(Instant::now());
    }
}

/// A file of a session: its path, length and facts.
type Member<'a> = (&'a PathBuf, u64, &'a Facts);

/// Groups files into sessions and joins their usage rows.
fn assemble(
    facts: &HashMap<PathBuf, (Stamp, Facts)>,
    rows: Vec<UsageRow>,
    errors: &HashMap<PathBuf, String>,
    skipped: Vec<Skipped>,
) -> Listing {
    let mut groups: HashMap<(String, String), Vec<Member<'_>>> = HashMap::new();
    for (path, ((len, _), f)) in facts {
        let Some(format) = f.format else { continue };
        let (session, project) = session_of(path, format);
        groups
            .entry((project, session))
            .or_default()
            .push((path, *len, f));
    }
    let mut usage: HashMap<(String, String), UsageRow> = rows
        .into_iter()
        .map(|r| ((r.project.clone().unwrap_or_default(), r.key.clone()), r))
        .collect();
    let mut sessions = Vec::with_capacity(groups.len());
    let mut keys: Vec<_> = groups.keys().cloned().collect();
    keys.sort();
    let mut taken = std::collections::HashSet::new();
    let mut by_id = HashMap::new();
    let mut by_path = HashMap::new();
    for key in keys {
        let Some(mut files) = groups.remove(&key) else {
            continue;
        };
        // The main file: the shallowest (subagents sit below the session's folder).
        files.sort_by_key(|(p, _, _)| (p.components().count(), (*p).clone()));
        let (project, session) = key.clone();
        let mut id = session.clone();
        let mut n = 1;
        while taken.contains(&id) {
            n += 1;
            id = format!("{session}~{n}");
        }
        taken.insert(id.clone());
        let (main, bytes, head) = files[0];
        let end = files.iter().filter_map(|(_, _, f)| f.end.clone()).max();
        let index = sessions.len();
        let mut subagents = Vec::new();
        for (path, _, f) in &files[1..] {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let sub = format!("{id}~{}", stem.unwrap_or_default());
            by_id.insert(
                sub.clone(),
                Viewable {
                    path: (*path).clone(),
                    format: f.format,
                    session: index,
                },
            );
            by_path.insert((*path).clone(), sub.clone());
            subagents.push(SubagentRef {
                id: sub,
                path: (*path).clone(),
            });
        }
        by_id.insert(
            id.clone(),
            Viewable {
                path: main.clone(),
                format: head.format,
                session: index,
            },
        );
        by_path.insert(main.clone(), id.clone());
        let row = usage.remove(&key).unwrap_or_else(|| UsageRow {
            by: GroupBy::Session,
            key: session,
            project: Some(project),
            agents: head.format.into_iter().collect(),
            tally: Tally::default(),
            cost: crate::transcript::RowCost::default(),
            block: None,
            last_activity: None,
        });
        sessions.push(SessionRow {
            id,
            agent: head.format.map_or("unknown", Format::name),
            title: head.title.clone(),
            start: head.start.clone(),
            end: end.or_else(|| head.start.clone()),
            usage: row,
            path: main.clone(),
            bytes,
            subagents,
            error: files.iter().find_map(|(p, _, _)| errors.get(*p).cloned()),
        });
    }
    let order: Vec<usize> = {
        let mut order: Vec<usize> = (0..sessions.len()).collect();
        order.sort_by(|&a, &b| sessions[b].end.cmp(&sessions[a].end));
        order
    };
    let mut position = vec![0; sessions.len()];
    for (new, &old) in order.iter().enumerate() {
        position[old] = new;
    }
    for v in by_id.values_mut() {
        v.session = position[v.session];
    }
    let mut slots: Vec<Option<SessionRow>> = sessions.into_iter().map(Some).collect();
    let sessions = order.iter().filter_map(|&i| slots[i].take()).collect();
    Listing {
        sessions,
        by_id,
        by_path,
        skipped,
    }
}

/// Reads up to `max` bytes at `offset`.
fn read_at(file: &std::fs::File, offset: u64, max: usize) -> Vec<u8> {
    let mut buf = vec![0u8; max];
    let mut got = 0;
    while got < max {
        match read_at_retrying(file, &mut buf[got..], offset + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    buf.truncate(got);
    buf
}

/// A line's `timestamp`, as written.
fn timestamp(value: &Value) -> Option<String> {
    value
        .get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The format, title and start from a file's head, and its end from its tail.
fn read_facts(path: &Path, len: u64) -> Facts {
    let Ok(file) = std::fs::File::open(path) else {
        return Facts::default();
    };
    let head = read_at(&file, 0, HEAD_BYTES);
    // Complete lines only: a cut last line is not read.
    let complete = |bytes: &[u8]| -> Vec<Vec<u8>> {
        bytes
            .split_inclusive(|&b| b == b'\n')
            .filter(|l| l.ends_with(b"\n"))
            .map(|l| l[..l.len() - 1].to_vec())
            .collect()
    };
    let lines = complete(&head);
    let format = detect_format(lines.iter().map(Vec::as_slice));
    let mut facts = Facts {
        format,
        ..Facts::default()
    };
    for line in &lines {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if facts.start.is_none() {
            facts.start = timestamp(&value);
        }
        if facts.title.is_none() && is_prompt(&value) {
            facts.title = format
                .and_then(|f| transcript_line_text(f, line))
                .filter(|t| t.role.as_deref() == Some("user"))
                .map(|t| t.text)
                .filter(|t| !BOOKKEEPING.iter().any(|p| t.starts_with(p)))
                .map(|t| t.chars().take(TITLE_CHARS).collect());
        }
        if facts.start.is_some() && facts.title.is_some() {
            break;
        }
    }
    let tail_from = len.saturating_sub(TAIL_BYTES as u64);
    let tail = if tail_from == 0 {
        head
    } else {
        let mut t = read_at(&file, tail_from, TAIL_BYTES);
        // The first piece may be the end of a line cut by the window.
        let skip = memchr::memchr(b'\n', &t).map_or(t.len(), |i| i + 1);
        t.drain(..skip);
        t
    };
    facts.end = complete(&tail)
        .iter()
        .rev()
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .find_map(|v| timestamp(&v));
    facts
}

/// Whether a line is a prompt a person typed: a user message that is not a tool's result, a
/// compaction summary or bookkeeping.
fn is_prompt(value: &Value) -> bool {
    let flag = |k: &str| value.get(k).and_then(Value::as_bool) == Some(true);
    if flag("isMeta") || flag("isCompactSummary") || flag("isSidechain") {
        return false;
    }
    let content = value
        .get("message")
        .or_else(|| value.get("payload"))
        .and_then(|m| m.get("content"));
    let tool_result = content.and_then(Value::as_array).is_some_and(|parts| {
        parts
            .iter()
            .any(|p| p.get("type").and_then(Value::as_str) == Some("tool_result"))
    });
    !tool_result
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
    pub sessions: Vec<&'a SessionRow>,
    /// How many sessions match.
    pub total: usize,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Every agent and project present (for the filters).
    pub agents: Vec<&'static str>,
    /// Every project present.
    pub projects: Vec<&'a str>,
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
        let day = |name: &str, v: &Option<String>| -> Result<Option<String>, QueryError> {
            match v.as_deref().filter(|s| !s.is_empty()) {
                None => Ok(None),
                Some(s) => s
                    .parse::<jiff::civil::Date>()
                    .map(|d| Some(d.to_string()))
                    .map_err(|e| QueryError::Bad(format!("{name} {s:?} is not a day: {e}"))),
            }
        };
        let since = day("since", &query.since)?;
        let until = day("until", &query.until)?;
        let needle = query
            .q
            .as_deref()
            .filter(|q| !q.is_empty())
            .map(str::to_lowercase);
        let empty = |v: &Option<String>| v.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
        let (agent, project) = (empty(&query.agent), empty(&query.project));
        let mut rows: Vec<&SessionRow> = self
            .sessions
            .iter()
            .filter(|r| agent.as_deref().is_none_or(|a| r.agent == a))
            .filter(|r| {
                project
                    .as_deref()
                    .is_none_or(|p| r.usage.project.as_deref() == Some(p))
            })
            .filter(|r| {
                // Days compare as the timestamps' first ten characters (RFC 3339, UTC).
                let first =
                    |t: &Option<String>| t.as_deref().and_then(|t| t.get(..10)).map(str::to_owned);
                since
                    .as_ref()
                    .is_none_or(|s| first(&r.end).is_some_and(|e| e >= *s))
                    && until
                        .as_ref()
                        .is_none_or(|u| first(&r.start).is_some_and(|b| b <= *u))
            })
            .filter(|r| {
                needle.as_deref().is_none_or(|n| {
                    r.id.to_lowercase().contains(n)
                        || r.title
                            .as_deref()
                            .is_some_and(|t| t.to_lowercase().contains(n))
                        || r.usage
                            .project
                            .as_deref()
                            .is_some_and(|p| p.to_lowercase().contains(n))
                })
            })
            .collect();
        match query.sort.as_deref().unwrap_or("end") {
            "end" => {} // already newest end first
            "start" => rows.sort_by(|a, b| b.start.cmp(&a.start)),
            "tokens" => rows.sort_by_key(|r| std::cmp::Reverse(r.usage.tally.usage.total())),
            "messages" => rows.sort_by_key(|r| std::cmp::Reverse(r.usage.tally.messages)),
            "project" => rows.sort_by(|a, b| b.usage.project.cmp(&a.usage.project)),
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
        let mut agents: Vec<&'static str> = self.sessions.iter().map(|r| r.agent).collect();
        agents.sort_unstable();
        agents.dedup();
        let mut projects: Vec<&str> = self
            .sessions
            .iter()
            .filter_map(|r| r.usage.project.as_deref())
            .collect();
        projects.sort_unstable();
        projects.dedup();
        Ok(SessionPage {
            sessions: rows.into_iter().skip(from).take(limit).collect(),
            total,
            next_cursor,
            agents,
            projects,
            skipped: &self.skipped,
        })
    }
}
