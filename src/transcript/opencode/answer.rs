//! `agentlog transcript` of an `OpenCode` database (or older storage directory): one entry per
//! session and the total, each assistant message counted once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::ser::Serializer;

use super::{Parts, SessionInfo, Source, count, read_source, work_dir};
use crate::transcript::error::TranscriptError;
use crate::transcript::format::Format;
use crate::transcript::report::UsageFigures;
use crate::transcript::tally::Tally;

/// What was odd about the rows read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpenCodeDiagnostics {
    /// Message rows (or files) read, of every role.
    pub rows: u64,
    /// Rows whose `data` is not a JSON object: not counted.
    pub unreadable_rows: u64,
    /// Assistant messages whose id was already counted (another source held it): not counted
    /// again.
    pub duplicate_ids: u64,
    /// Token or cost fields holding something other than a count: counted as 0 or truncated.
    pub odd_values: u64,
    /// Messages whose `tokens.total` differs from the sum of their parts (the parts count).
    pub total_mismatches: u64,
}

/// One session of an `OpenCode` answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpenCodeSession {
    /// Its id (`ses_...`).
    pub session: String,
    /// The session that started it (a subagent's session), if any.
    pub parent: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// The directory it ran in.
    pub directory: Option<String>,
    /// The first and last assistant message's `time.created` (RFC 3339).
    pub first: Option<String>,
    /// See `first`.
    pub last: Option<String>,
    /// Its usage.
    pub usage: UsageFigures,
    /// Its usage by model.
    pub models: BTreeMap<String, UsageFigures>,
}

/// `agentlog transcript DB --json`: every session of an `OpenCode` database or storage
/// directory, and their total.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpenCodeReport {
    /// Always [`Format::OpenCode`].
    pub format: Format,
    /// The database file or storage directory read.
    #[serde(serialize_with = "display")]
    pub path: PathBuf,
    /// Whether a `-wal` beside the database was read with it.
    pub wal: bool,
    /// The sessions with usage, by id.
    pub sessions: Vec<OpenCodeSession>,
    /// Every session's usage added up.
    pub total: UsageFigures,
    /// The total by model.
    pub models: BTreeMap<String, UsageFigures>,
    /// What was odd about the rows.
    pub diagnostics: OpenCodeDiagnostics,
    /// Storage files that could not be read, with why.
    pub skipped: Vec<(String, String)>,
}

fn display<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&path.display())
}

/// The source `path` names: a database file, a `storage` directory (holding `message/`), or a
/// data directory holding `storage/`.
fn source_of(path: &Path) -> Result<Source, TranscriptError> {
    let meta = std::fs::metadata(path).map_err(|e| TranscriptError::at("read", path, e))?;
    if !meta.is_dir() {
        return Ok(Source::Database(path.to_path_buf()));
    }
    if path.join("message").is_dir() {
        return Ok(Source::Storage(path.to_path_buf()));
    }
    if path.join("storage").join("message").is_dir() {
        return Ok(Source::Storage(path.join("storage")));
    }
    Err(TranscriptError::NotAFile {
        path: path.to_path_buf(),
        kind: "directory without OpenCode storage",
    })
}

/// A session's messages added up.
struct Acc {
    tally: Tally,
    models: BTreeMap<String, Tally>,
    first: Option<u64>,
    last: Option<u64>,
}

/// The RFC 3339 time of milliseconds since the epoch.
fn time_of(ms: u64) -> Option<String> {
    let ms = i64::try_from(ms).ok()?;
    jiff::Timestamp::from_millisecond(ms)
        .ok()
        .map(|t| t.to_string())
}

/// Reads an `OpenCode` database (with its WAL, through a private copy in the cache under
/// `index_dir`, else the default index directory) or storage directory, and answers every
/// session in it.
///
/// # Errors
/// The path is missing, or the database cannot be read (damaged, or changing throughout).
pub fn read_opencode(
    path: &Path,
    index_dir: Option<&Path>,
) -> Result<OpenCodeReport, TranscriptError> {
    let source = source_of(path)?;
    let store = read_source(&source, work_dir(index_dir).as_deref(), Parts::Skip)?;
    let mut diagnostics = OpenCodeDiagnostics::default();
    let mut bad = Vec::new();
    let counted = count(&store, &mut HashSet::new(), &mut diagnostics, &mut bad);
    let by_id: HashMap<&str, &SessionInfo> =
        store.sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut sessions: BTreeMap<String, Acc> = BTreeMap::new();
    let mut total = Tally::default();
    let mut models: BTreeMap<String, Tally> = BTreeMap::new();
    for c in counted {
        let acc = sessions.entry(c.session.clone()).or_insert_with(|| Acc {
            tally: Tally::default(),
            models: BTreeMap::new(),
            first: None,
            last: None,
        });
        acc.tally.add(&c.tally);
        acc.models.entry(c.model.clone()).or_default().add(&c.tally);
        if let Some(ms) = c.created_ms {
            acc.first = Some(acc.first.map_or(ms, |f| f.min(ms)));
            acc.last = Some(acc.last.map_or(ms, |l| l.max(ms)));
        }
        total.add(&c.tally);
        models.entry(c.model).or_default().add(&c.tally);
    }
    let figures = |t: Tally| UsageFigures::new(Format::OpenCode, t);
    let figures_by = |m: BTreeMap<String, Tally>| {
        m.into_iter()
            .map(|(k, t)| (k, figures(t)))
            .collect::<BTreeMap<_, _>>()
    };
    let sessions = sessions
        .into_iter()
        .map(|(id, acc)| {
            let info = by_id.get(id.as_str());
            OpenCodeSession {
                parent: info.and_then(|s| s.parent.clone()),
                title: info.and_then(|s| s.title.clone()),
                directory: info.and_then(|s| s.directory.clone()),
                first: acc.first.and_then(time_of),
                last: acc.last.and_then(time_of),
                usage: figures(acc.tally),
                models: figures_by(acc.models),
                session: id,
            }
        })
        .collect();
    Ok(OpenCodeReport {
        format: Format::OpenCode,
        path: store.path.clone(),
        wal: store.wal,
        sessions,
        total: figures(total),
        models: figures_by(models),
        diagnostics,
        skipped: bad
            .into_iter()
            .map(|(p, why)| (p.display().to_string(), why))
            .collect(),
    })
}
