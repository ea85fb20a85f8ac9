//! `OpenCode`: sessions in an SQLite database (`opencode.db`, `opencode-*.db`, read with its
//! WAL through a private copy: [`db`]) or, in older versions, JSON files ([`storage`]). Not a
//! JSONL file, so not a line reader: its entry in the reader table ([`rules`]) only names the format, its
//! native fields and where the agent keeps its data; the rows are read here and handed to the
//! same answers ([`answer`]: `transcript FILE`; the usage rows) as typed tallies. The rules:
//! `docs/TRANSCRIPTS.md, "OpenCode"`.

mod answer;
mod catalog;
#[cfg(feature = "opencode")]
mod db;
mod memo;
mod message;
// Messages with their parts are read by search and the export only.
#[cfg_attr(not(any(feature = "search", feature = "export")), allow(dead_code))]
mod part;
pub(crate) mod rules;
mod storage;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use answer::{OpenCodeDiagnostics, OpenCodeReport, OpenCodeSession, read_opencode};
pub use catalog::{
    MAX_OPENCODE_MESSAGES, OpenCodeMessageRow, OpenCodeMessages, read_opencode_messages,
};
pub(crate) use catalog::{OpenCodeFacts, opencode_facts, source_path};
pub(crate) use memo::for_usage_kept;
pub use message::{NotAnObject, OpenCodeMessage, parse_message};
#[cfg_attr(not(feature = "export"), allow(unused_imports))]
pub(crate) use part::{Conversation, ConversationMessage, conversation};
pub use part::{OpenCodePart, parse_part};

use super::error::TranscriptError;
use super::fold::UNKNOWN_QUARTER;
use super::tally::{Money, Tally};

/// A message row as stored: its id, session and `data`, and the file it came from (older
/// storage only).
pub(crate) struct Row {
    pub(crate) id: String,
    pub(crate) session: String,
    pub(crate) data: Vec<u8>,
    pub(crate) file: Option<PathBuf>,
}

/// A part row as stored: its id, its message and `data`.
pub(crate) struct PartRow {
    pub(crate) id: String,
    pub(crate) message: String,
    pub(crate) data: Vec<u8>,
}

/// A session's own record: title, working directory, parent (a subagent's session).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SessionInfo {
    pub(crate) id: String,
    pub(crate) parent: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) directory: Option<String>,
}

/// What one database or storage directory holds.
pub(crate) struct Store {
    /// The database file or the storage directory.
    pub(crate) path: PathBuf,
    pub(crate) rows: Vec<Row>,
    /// The parts of the messages (text, reasoning, tools).
    pub(crate) parts: Vec<PartRow>,
    /// Part rows that could not be read (a missing column, a non-text id).
    pub(crate) skipped_parts: u64,
    pub(crate) sessions: Vec<SessionInfo>,
    /// Whether a `-wal` was read with the database.
    pub(crate) wal: bool,
}

/// Where `OpenCode` data was found: a database, or an older storage directory.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Source {
    /// `opencode.db` or `opencode-*.db`.
    Database(PathBuf),
    /// A `storage` directory holding `message/<session>/msg_*.json`.
    Storage(PathBuf),
}

impl Source {
    pub(crate) fn path(&self) -> &Path {
        match self {
            Source::Database(p) | Source::Storage(p) => p,
        }
    }
}

/// Whether a file is an `OpenCode` database by its name.
pub(crate) fn is_database(path: &Path) -> bool {
    let db = path.extension().is_some_and(|e| e == "db");
    let stem = path.file_stem().and_then(|n| n.to_str()).unwrap_or("");
    db && (stem == "opencode"
        || stem
            .strip_prefix("opencode-")
            .is_some_and(|s| !s.is_empty()))
}

/// The storage directory of a message file `<storage>/message/<session>/<file>.json`.
pub(crate) fn storage_of(path: &Path) -> Option<PathBuf> {
    let session = path.parent()?;
    let message = session.parent()?;
    let storage = message.parent()?;
    let json = path.extension().is_some_and(|e| e == "json");
    (json && message.file_name()? == "message" && storage.file_name()? == "storage")
        .then(|| storage.to_path_buf())
}

/// `<db>-wal`: where SQLite keeps the newest rows of a database in WAL mode.
fn wal_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// Whether a walked file belongs to `OpenCode` (a database, or an older message file).
pub(crate) fn wanted(path: &Path) -> bool {
    is_database(path) || storage_of(path).is_some()
}

/// Splits found files into the line transcripts and the `OpenCode` sources (each storage
/// directory once).
pub(crate) fn split(files: &[PathBuf]) -> (Vec<PathBuf>, Vec<Source>) {
    let mut lines = Vec::new();
    let mut sources = Vec::new();
    for f in files {
        if is_database(f) {
            sources.push(Source::Database(f.clone()));
        } else if let Some(storage) = storage_of(f) {
            sources.push(Source::Storage(storage));
        } else {
            lines.push(f.clone());
        }
    }
    // Databases first: a message migrated from the older storage into a database counts once,
    // from the database.
    sources.sort();
    sources.dedup();
    (lines, sources)
}

/// Where private copies of databases are made: `<index dir>/opencode`.
pub(crate) fn work_dir(index_dir: Option<&Path>) -> Option<PathBuf> {
    index_dir
        .map(Path::to_path_buf)
        .or_else(super::cache::default_index_dir)
        .map(|d| d.join("opencode"))
}

/// Whether a read takes the messages' parts (their text, most of a database's bytes): only a
/// conversation shown or searched needs them; usage and the session list do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parts {
    Read,
    Skip,
}

/// Reads a source.
pub(crate) fn read_source(
    source: &Source,
    work: Option<&Path>,
    parts: Parts,
) -> Result<Store, TranscriptError> {
    match source {
        Source::Storage(dir) => storage::read_storage(dir, parts),
        #[cfg(feature = "opencode")]
        Source::Database(db) => {
            let work = work.ok_or_else(|| TranscriptError::Unreadable {
                path: db.clone(),
                reason: "no cache directory to copy the database into".to_owned(),
            })?;
            db::read_database(db, work, parts)
        }
        #[cfg(not(feature = "opencode"))]
        Source::Database(db) => {
            let _ = (work, parts);
            Err(TranscriptError::Unreadable {
                path: db.clone(),
                reason: "agentlog was built without the opencode feature".to_owned(),
            })
        }
    }
}

#[cfg_attr(not(any(feature = "search", feature = "export")), allow(dead_code))]
/// The messages and parts of the database `db` (through a private copy under `index_dir`'s
/// work directory, as every read of a database).
pub(crate) fn conversation_of_database(
    db: &Path,
    index_dir: Option<&Path>,
) -> Result<Conversation, TranscriptError> {
    let work = work_dir(index_dir);
    let store = read_source(
        &Source::Database(db.to_path_buf()),
        work.as_deref(),
        Parts::Read,
    )?;
    Ok(conversation(&store))
}

/// One counted assistant message.
pub(crate) struct Counted {
    /// Its session.
    pub(crate) session: String,
    /// Quarter-hours since the epoch of `time.created` ([`UNKNOWN_QUARTER`] without one).
    pub(crate) quarter: i64,
    pub(crate) created_ms: Option<u64>,
    pub(crate) model: String,
    pub(crate) tally: Tally,
}

/// Every assistant message of a store counted once (ids already in `seen` are left out, and
/// added), with what was odd. A storage file that is not a JSON object is listed in `bad`.
pub(crate) fn count(
    store: &Store,
    seen: &mut HashSet<String>,
    diagnostics: &mut OpenCodeDiagnostics,
    bad: &mut Vec<(PathBuf, String)>,
) -> Vec<Counted> {
    let mut out = Vec::new();
    for row in &store.rows {
        diagnostics.rows += 1;
        let m = match parse_message(&row.data) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => {
                diagnostics.unreadable_rows += 1;
                if let Some(file) = &row.file {
                    bad.push((file.clone(), e.to_string()));
                }
                continue;
            }
        };
        if !seen.insert(row.id.clone()) {
            diagnostics.duplicate_ids += 1;
            continue;
        }
        diagnostics.odd_values += u64::from(m.odd_values);
        diagnostics.total_mismatches += u64::from(m.total_mismatch);
        let quarter = m
            .created_ms
            .and_then(|ms| i64::try_from(ms / 1000 / 900).ok())
            .unwrap_or(UNKNOWN_QUARTER);
        out.push(Counted {
            session: row.session.clone(),
            quarter,
            created_ms: m.created_ms,
            model: m.model.unwrap_or_else(|| "unknown".to_owned()),
            tally: Tally::message(m.usage, m.cost),
        });
    }
    out
}

/// The root of a session: its parent's root (a subagent's session belongs to the session that
/// started it), at most as many steps as there are sessions.
pub(crate) fn root_of<'a>(session: &'a str, by_id: &HashMap<&'a str, &'a SessionInfo>) -> &'a str {
    let mut at = session;
    for _ in 0..=by_id.len() {
        match by_id.get(at).and_then(|s| s.parent.as_deref()) {
            Some(parent) if by_id.contains_key(parent) => at = parent,
            _ => break,
        }
    }
    at
}

/// A session's usage for a usage report: the buckets of the messages of a root session and
/// its subagents' sessions, by quarter-hour, model and whether a cost was recorded (a bucket
/// without one is priced from its tokens).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SessionUsage {
    pub(crate) session: String,
    pub(crate) project: String,
    pub(crate) buckets: BTreeMap<(i64, String, bool), Tally>,
}

/// What a usage report takes from `OpenCode` sources: the sessions' usage, how many sources
/// were read, and what could not be read.
#[derive(Default)]
pub(crate) struct ForUsage {
    pub(crate) sessions: Vec<SessionUsage>,
    pub(crate) read: u64,
    pub(crate) skipped: Vec<(PathBuf, TranscriptError)>,
}

/// Reads every source for a usage report (databases through private copies under `work`),
/// each message id once across them.
pub(crate) fn for_usage(sources: &[Source], work: Option<&Path>) -> ForUsage {
    let mut out = ForUsage::default();
    let mut seen = HashSet::new();
    let mut sessions: BTreeMap<(String, String), SessionUsage> = BTreeMap::new();
    for source in sources {
        let store = match read_source(source, work, Parts::Skip) {
            Ok(s) => s,
            Err(e) => {
                out.skipped.push((source.path().to_path_buf(), e));
                continue;
            }
        };
        out.read += 1;
        let mut diagnostics = OpenCodeDiagnostics::default();
        let mut bad = Vec::new();
        let counted = count(&store, &mut seen, &mut diagnostics, &mut bad);
        for (path, reason) in bad {
            out.skipped
                .push((path.clone(), TranscriptError::Unreadable { path, reason }));
        }
        let by_id: HashMap<&str, &SessionInfo> =
            store.sessions.iter().map(|s| (s.id.as_str(), s)).collect();
        for c in counted {
            let root = root_of(&c.session, &by_id);
            let project = by_id
                .get(root)
                .and_then(|s| s.directory.clone())
                .unwrap_or_else(|| "opencode".to_owned());
            let entry = sessions
                .entry((project.clone(), root.to_owned()))
                .or_insert_with(|| SessionUsage {
                    session: root.to_owned(),
                    project,
                    buckets: BTreeMap::new(),
                });
            let recorded = c.tally.cost != Money::default();
            entry
                .buckets
                .entry((c.quarter, c.model, recorded))
                .or_default()
                .add(&c.tally);
        }
    }
    out.sessions = sessions.into_values().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_places() {
        assert!(is_database(Path::new("/x/opencode.db")));
        assert!(is_database(Path::new("/x/opencode-beta.db")));
        assert!(!is_database(Path::new("/x/opencode.db-wal")));
        assert!(!is_database(Path::new("/x/opencode-.db")));
        assert!(!is_database(Path::new("/x/other.db")));
        let msg = Path::new("/d/storage/message/ses_1/msg_2.json");
        assert_eq!(storage_of(msg), Some(PathBuf::from("/d/storage")));
        assert_eq!(storage_of(Path::new("/d/storage/part/ses_1/p.json")), None);
        let (lines, sources) = split(&[
            PathBuf::from("/a/s.jsonl"),
            msg.to_path_buf(),
            PathBuf::from("/d/storage/message/ses_1/msg_3.json"),
            PathBuf::from("/d/opencode.db"),
        ]);
        assert_eq!(lines, [PathBuf::from("/a/s.jsonl")]);
        assert_eq!(
            sources,
            [
                Source::Database(PathBuf::from("/d/opencode.db")),
                Source::Storage(PathBuf::from("/d/storage"))
            ]
        );
    }
}
