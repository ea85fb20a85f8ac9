//! What the session catalog and the viewer read of `OpenCode` data: each root session's title
//! and times (for a catalog row), and a bounded page of one session's messages (`OpenCode`
//! keeps rows in a database, not lines at byte offsets: a message is addressed by its place in
//! the session, oldest first).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::{Parts, SessionInfo, Source, read_source, root_of, work_dir};
use crate::transcript::error::TranscriptError;

/// The most messages one page of [`read_opencode_messages`] holds.
pub const MAX_OPENCODE_MESSAGES: usize = 500;

/// A root session of an `OpenCode` source, as the catalog lists it: the session a usage row
/// names (its subagents' sessions folded in).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OpenCodeFacts {
    /// The root session's id (`ses_...`).
    pub(crate) session: String,
    /// Its project: its working directory, else `opencode` (as the usage rows name it).
    pub(crate) project: String,
    /// Its title.
    pub(crate) title: Option<String>,
    /// The first and last message's `time.created` over it and its subagents' sessions (RFC
    /// 3339).
    pub(crate) start: Option<String>,
    /// See `start`.
    pub(crate) end: Option<String>,
}

/// A message's `time.created` (milliseconds) and role, read tolerantly.
fn created_and_role(data: &[u8]) -> (Option<u64>, Option<String>, Option<Value>) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return (None, None, None);
    };
    let created = value
        .get("time")
        .and_then(|t| t.get("created"))
        .and_then(Value::as_u64);
    let role = value.get("role").and_then(Value::as_str).map(str::to_owned);
    (created, role, Some(value))
}

/// RFC 3339 of milliseconds since the epoch.
fn rfc3339(ms: u64) -> Option<String> {
    let ms = i64::try_from(ms).ok()?;
    jiff::Timestamp::from_millisecond(ms)
        .ok()
        .map(|t| t.to_string())
}

/// The root sessions of the `OpenCode` database or storage `path` with their titles and
/// times (every message of every role counts for the times). The database is read through
/// its private copy under `index_dir`.
pub(crate) fn opencode_facts(
    path: &Path,
    index_dir: Option<&Path>,
) -> Result<Vec<OpenCodeFacts>, TranscriptError> {
    let source = source_at(path);
    let store = read_source(&source, work_dir(index_dir).as_deref(), Parts::Skip)?;
    let by_id: HashMap<&str, &SessionInfo> =
        store.sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut roots: BTreeMap<&str, (Option<u64>, Option<u64>)> = BTreeMap::new();
    for row in &store.rows {
        let root = root_of(&row.session, &by_id);
        let (created, _, _) = created_and_role(&row.data);
        let span = roots.entry(root).or_default();
        if let Some(ms) = created {
            span.0 = Some(span.0.map_or(ms, |f| f.min(ms)));
            span.1 = Some(span.1.map_or(ms, |l| l.max(ms)));
        }
    }
    Ok(roots
        .into_iter()
        .map(|(root, (first, last))| {
            let info = by_id.get(root);
            OpenCodeFacts {
                session: root.to_owned(),
                project: info
                    .and_then(|s| s.directory.clone())
                    .unwrap_or_else(|| "opencode".to_owned()),
                title: info.and_then(|s| s.title.clone()),
                start: first.and_then(rfc3339),
                end: last.and_then(rfc3339),
            }
        })
        .collect())
}

/// The source a found path stands for: a database, or the storage directory of a message
/// file (or the storage directory itself).
fn source_at(path: &Path) -> Source {
    if path.is_dir() {
        return Source::Storage(path.to_path_buf());
    }
    match super::storage_of(path) {
        Some(storage) => Source::Storage(storage),
        None => Source::Database(path.to_path_buf()),
    }
}

/// The `OpenCode` source (database file or storage directory) a found file belongs to.
pub(crate) fn source_path(path: &Path) -> PathBuf {
    source_at(path).path().to_path_buf()
}

/// One message of a page of [`read_opencode_messages`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpenCodeMessageRow {
    /// Its place in the session's messages, oldest first (0-based): a page starts at one.
    pub index: u64,
    /// Its id (`msg_...`).
    pub id: String,
    /// The session that holds it (the root session or one of its subagents').
    pub session: String,
    /// Its `role`.
    pub role: Option<String>,
    /// Its `time.created`, RFC 3339.
    pub time: Option<String>,
    /// Its bytes as stored.
    pub bytes: u64,
    /// Its data as stored, parsed (`None` when it is not JSON).
    pub data: Option<Value>,
}

/// A page of one `OpenCode` session's messages.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpenCodeMessages {
    /// The messages, oldest first.
    pub messages: Vec<OpenCodeMessageRow>,
    /// How many messages the session (with its subagents' sessions) holds.
    pub total: u64,
}

/// The messages `offset..offset + limit` (`limit` at most [`MAX_OPENCODE_MESSAGES`]) of the
/// root session `session` of the `OpenCode` database or storage at `path`, its subagents'
/// sessions' messages among them, ordered by `time.created` then id. The whole source is
/// read (through its private copy under `index_dir`): the cost of a page is the database's.
///
/// # Errors
/// The source cannot be read.
pub fn read_opencode_messages(
    path: &Path,
    session: &str,
    index_dir: Option<&Path>,
    offset: u64,
    limit: usize,
) -> Result<OpenCodeMessages, TranscriptError> {
    let source = source_at(path);
    let store = read_source(&source, work_dir(index_dir).as_deref(), Parts::Skip)?;
    let by_id: HashMap<&str, &SessionInfo> =
        store.sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut mine: Vec<(Option<u64>, &str, &super::Row)> = store
        .rows
        .iter()
        .filter(|r| root_of(&r.session, &by_id) == session)
        .map(|r| (created_and_role(&r.data).0, r.id.as_str(), r))
        .collect();
    mine.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let total = mine.len() as u64;
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let messages = mine
        .into_iter()
        .enumerate()
        .skip(start)
        .take(limit.min(MAX_OPENCODE_MESSAGES))
        .map(|(index, (created, id, row))| {
            let (_, role, data) = created_and_role(&row.data);
            OpenCodeMessageRow {
                index: index as u64,
                id: id.to_owned(),
                session: row.session.clone(),
                role,
                time: created.and_then(rfc3339),
                bytes: row.data.len() as u64,
                data,
            }
        })
        .collect();
    Ok(OpenCodeMessages { messages, total })
}
