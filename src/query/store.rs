//! The session store: creates sessions, validates and buffers appends, and checkpoints
//! them to `ROOT/<session-id>/events.jsonl`.
//!
//! A session created through a [`Store`] is *live* until it is closed: its header and
//! every accepted event are held in memory, and the query service reads it from there,
//! never from disk, so a broken or missing file can never hide live data. Accepted
//! events are written at a *checkpoint*: when `max_pending_events` are pending, when
//! `max_delay` has passed since the first pending event (checked on append and by
//! [`Store::checkpoint_due`], which an embedder calls from its own timer), or
//! explicitly. A checkpoint fsyncs before it returns.
//!
//! An append is all-or-nothing: every event of the batch must continue the seqs and pass
//! the envelope, vocabulary, legacy-shape, message-shape and surface rules, or nothing
//! is accepted. The rule of thumb is that the store only writes what its own reader
//! reads back unchanged.
//!
//! Nothing is written for a session until it has events (lazy materialization): the
//! header and the first batch are written to a temporary file, fsynced and published
//! with a hard link that fails rather than overwrite, so a session file always starts
//! with a complete header and two writers cannot both create the same id.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::index::{IndexError, Writer, WriterOptions};
use crate::log::{LogPaths, SyncPolicy};
use crate::query::envelope::{
    Vocabulary, check_message_shape, retired_shape, validate_envelope, validate_header,
};
use crate::query::error::SourceError;
use crate::query::error::{HeaderError, QueryError, Result, Violation};
use crate::query::indexed::{IndexedSource, session_index_options};
use crate::query::legacy::normalize_event;
use crate::query::source::{PersistedSource, session_log_path, validate_session_id};
use crate::query::surface::{Chained, SurfaceState, Undo};
use crate::query::types::{SessionEvent, SessionHeader};

/// When buffered events are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointPolicy {
    /// Checkpoint as soon as this many events are pending (at least 1; 1 writes every append).
    pub max_pending_events: usize,
    /// Checkpoint once the oldest pending event has waited this long.
    pub max_delay: Duration,
}

impl Default for CheckpointPolicy {
    fn default() -> Self {
        Self {
            max_pending_events: 64,
            max_delay: Duration::from_millis(200),
        }
    }
}

/// Configuration of a [`Store`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreConfig {
    /// When buffered events are written.
    pub checkpoint: CheckpointPolicy,
    /// Event types accepted without `ignorable: true`.
    pub vocabulary: Vocabulary,
}

/// What an append accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendReceipt {
    /// The seq the next event must have.
    pub next_seq: u64,
    /// How many of the session's events are durable on disk.
    pub durable_events: u64,
}

/// A session being written through this store.
#[derive(Debug)]
struct LiveSession {
    header: SessionHeader,
    events: Vec<SessionEvent>,
    surface: SurfaceState,
    durable: usize,
    materialized: bool,
    first_pending_at: Option<Instant>,
    /// After an automatic checkpoint fails, wait for new events or an explicit
    /// checkpoint instead of retrying (and failing) on every call.
    auto_paused: bool,
    /// Once the log exists: its single writer, holding the OS lock and keeping the index
    /// current while the session is live.
    writer: Option<Writer>,
}

/// A read-only view of a live session.
#[derive(Debug, Clone, Copy)]
pub struct LiveView<'a> {
    /// Its header.
    pub header: &'a SessionHeader,
    /// Every accepted event (durable or pending).
    pub events: &'a [SessionEvent],
    /// Its incrementally folded surface.
    pub surface: &'a SurfaceState,
}

/// A batch's pushes onto a live surface, taken back (last first) when it is dropped: on a
/// rejected event, and on a panic too, so a poisoned lock still guards a consistent session.
/// Clearing `undos` keeps the pushes.
struct Rollback<'a> {
    surface: &'a mut SurfaceState,
    undos: Vec<Undo>,
}

impl Drop for Rollback<'_> {
    fn drop(&mut self) {
        while let Some(undo) = self.undos.pop() {
            self.surface.undo(undo);
        }
    }
}

/// A directory of session logs plus the sessions this process is writing.
pub struct Store {
    root: PathBuf,
    source: Arc<dyn PersistedSource>,
    config: StoreConfig,
    live: Mutex<HashMap<String, LiveSession>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.root)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn failed(operation: String, err: io::Error) -> QueryError {
    QueryError::PersistenceFailed {
        operation,
        cause: Box::new(err),
    }
}

impl Store {
    /// Opens (creating if needed) the store directory `root`, reading stored sessions
    /// through their indexes ([`IndexedSource`]).
    pub fn open(root: impl Into<PathBuf>, config: StoreConfig) -> Result<Self> {
        let root = root.into();
        let source = Arc::new(IndexedSource::new(root.clone()));
        Self::with_source(root, config, source)
    }

    /// Opens `root` for writing, reading the persisted side through `source` (e.g. the
    /// engine's index over the same directory).
    pub fn with_source(
        root: impl Into<PathBuf>,
        config: StoreConfig,
        source: Arc<dyn PersistedSource>,
    ) -> Result<Self> {
        if config.checkpoint.max_pending_events == 0 {
            return Err(QueryError::InvalidConfig {
                reason: "checkpoint.max_pending_events must be at least 1".into(),
            });
        }
        let root = root.into();
        fs::create_dir_all(&root)
            .map_err(|e| failed(format!("creating store directory {}", root.display()), e))?;
        Ok(Self {
            root,
            source,
            config,
            live: Mutex::new(HashMap::new()),
        })
    }

    /// The store directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The persisted side.
    pub fn source(&self) -> &dyn PersistedSource {
        self.source.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, LiveSession>> {
        // A panic elsewhere cannot leave a session half-updated: every mutation below is
        // validated first and applied in one step (a batch's surface pushes are taken back
        // by `Rollback` if it does not finish), so the data is usable after poisoning.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates a live session. Nothing is written until it has events.
    ///
    /// Fails if the id is not a valid directory name, the header breaks a rule, or a
    /// live or stored session already has this id.
    pub fn create_session(&self, header: SessionHeader) -> Result<()> {
        validate_session_id(&header.id)?;
        validate_header(&header).map_err(|reason| QueryError::InvalidHeader {
            cause: HeaderError::Invalid(reason),
        })?;
        let mut live = self.lock();
        if live.contains_key(&header.id) {
            return Err(QueryError::SessionAlreadyExists {
                session_id: header.id,
            });
        }
        match self.source.read_header(&header.id) {
            Err(SourceError::NotFound) => {}
            Err(SourceError::Failed { context, cause }) => {
                return Err(QueryError::PersistenceFailed {
                    operation: context,
                    cause,
                });
            }
            // Something is stored under this id, even if unreadable: never overwrite it.
            Ok(_) | Err(SourceError::Corrupt { .. } | SourceError::Unsupported(_)) => {
                return Err(QueryError::SessionAlreadyExists {
                    session_id: header.id,
                });
            }
        }
        tracing::debug!(session = %header.id, "session created");
        live.insert(
            header.id.clone(),
            LiveSession {
                header,
                events: Vec::new(),
                surface: SurfaceState::new(),
                durable: 0,
                materialized: false,
                first_pending_at: None,
                auto_paused: false,
                writer: None,
            },
        );
        Ok(())
    }

    /// Appends a batch of events to a live session, all or nothing.
    ///
    /// A rejected batch is [`QueryError::InvalidEvent`] naming the first broken rule, and
    /// nothing is accepted. An automatic checkpoint that fails does not reject the batch
    /// (it was accepted and stays pending); it is logged, and the next explicit
    /// [`Store::checkpoint`] retries and reports it.
    pub fn append(&self, session_id: &str, events: Vec<SessionEvent>) -> Result<AppendReceipt> {
        let mut live = self.lock();
        let Some(session) = live.get_mut(session_id) else {
            drop(live);
            return Err(self.not_live_error(session_id));
        };
        if !events.is_empty() {
            self.fold_batch(session, &events)?;
            session.events.extend(events);
            session.first_pending_at.get_or_insert_with(Instant::now);
            session.auto_paused = false;
            if self.checkpoint_is_due(session)
                && let Err(err) = flush(&self.root, session)
            {
                session.auto_paused = true;
                tracing::warn!(session = %session_id, error = %err, "automatic checkpoint failed; events stay pending until an explicit checkpoint");
            }
        }
        Ok(receipt(session))
    }

    fn not_live_error(&self, session_id: &str) -> QueryError {
        match self.source.read_header(session_id) {
            Err(SourceError::NotFound) => QueryError::SessionNotFound {
                session_id: session_id.to_string(),
            },
            _ => QueryError::SessionNotLive {
                session_id: session_id.to_string(),
            },
        }
    }

    /// Checks every event of a batch against the session and the batch before it, folding
    /// each into the session's surface as it passes. If one is rejected, the surface is put
    /// back as it was and the error is returned. Folding in place, not into a copy, keeps an
    /// append at the cost of its own events, whatever the surface's length.
    fn fold_batch(&self, session: &mut LiveSession, batch: &[SessionEvent]) -> Result<()> {
        let reject = |violation: Violation| QueryError::InvalidEvent {
            session_id: session.header.id.clone(),
            violation,
        };
        let mut folded = Rollback {
            surface: &mut session.surface,
            undos: Vec::with_capacity(batch.len()),
        };
        let no_ids = HashMap::new();
        for (i, event) in batch.iter().enumerate() {
            validate_envelope(event).map_err(reject)?;
            if let Some(m) = retired_shape(event) {
                return Err(reject(Violation::at(event.seq, m)));
            }
            self.config.vocabulary.check(event).map_err(reject)?;
            // What is appended must read back unchanged: refuse legacy shapes, which the
            // reader would rewrite, and shapes the reader would reject.
            let normalized =
                normalize_event(&session.header.id, event.clone(), &no_ids).map_err(reject)?;
            if normalized != *event {
                return Err(reject(Violation::at(
                    event.seq,
                    format!(
                        "{} uses a retired pre-identity or pre-react-loop shape; append the current shape",
                        event.event_type
                    ),
                )));
            }
            check_message_shape(event).map_err(reject)?;
            let log = Chained {
                log: &session.events,
                pending: batch.get(..i).unwrap_or_default(),
            };
            let undo = folded.surface.push_undoable(event, &log).map_err(reject)?;
            folded.undos.push(undo);
        }
        folded.undos.clear();
        Ok(())
    }

    fn checkpoint_is_due(&self, session: &LiveSession) -> bool {
        let pending = session.events.len().saturating_sub(session.durable);
        !session.auto_paused
            && pending > 0
            && (pending >= self.config.checkpoint.max_pending_events
                || session
                    .first_pending_at
                    .is_some_and(|t| t.elapsed() >= self.config.checkpoint.max_delay))
    }

    /// Writes and fsyncs the pending events of one live session.
    pub fn checkpoint(&self, session_id: &str) -> Result<AppendReceipt> {
        let mut live = self.lock();
        let Some(session) = live.get_mut(session_id) else {
            drop(live);
            return Err(self.not_live_error(session_id));
        };
        flush(&self.root, session)?;
        Ok(receipt(session))
    }

    /// Checkpoints every live session; returns the first failure after trying them all.
    pub fn checkpoint_all(&self) -> Result<()> {
        let mut live = self.lock();
        let mut first = None;
        for session in live.values_mut() {
            if let Err(err) = flush(&self.root, session) {
                first.get_or_insert(err);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Checkpoints the live sessions whose interval has elapsed (call it from a timer).
    pub fn checkpoint_due(&self) -> Result<()> {
        let mut live = self.lock();
        let mut first = None;
        for session in live.values_mut() {
            if self.checkpoint_is_due(session)
                && let Err(err) = flush(&self.root, session)
            {
                session.auto_paused = true;
                first.get_or_insert(err);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Checkpoints a live session and stops treating it as live.
    ///
    /// A session that never had events leaves nothing behind, so its id can be reused.
    pub fn close_session(&self, session_id: &str) -> Result<()> {
        let mut live = self.lock();
        let Some(session) = live.get_mut(session_id) else {
            drop(live);
            return Err(self.not_live_error(session_id));
        };
        flush(&self.root, session)?;
        if let Some(mut removed) = live.remove(session_id)
            && let Some(writer) = removed.writer.take()
        {
            writer
                .close()
                .map_err(|e| index_failure(session_id, "closing", e))?;
        }
        Ok(())
    }

    /// Headers of the live sessions.
    pub fn live_headers(&self) -> Vec<SessionHeader> {
        self.lock().values().map(|s| s.header.clone()).collect()
    }

    /// Runs `f` on a live session, or returns `None` if `session_id` is not live.
    pub fn with_live<R>(&self, session_id: &str, f: impl FnOnce(LiveView<'_>) -> R) -> Option<R> {
        let live = self.lock();
        live.get(session_id).map(|s| {
            f(LiveView {
                header: &s.header,
                events: &s.events,
                surface: &s.surface,
            })
        })
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Err(err) = self.checkpoint_all() {
            tracing::error!(error = %err, "final checkpoint failed when the store was dropped; pending events are lost");
        }
    }
}

fn receipt(session: &LiveSession) -> AppendReceipt {
    AppendReceipt {
        next_seq: session.surface.next_seq(),
        durable_events: session.durable as u64,
    }
}

/// Writes the pending events of `session` (materializing it first if needed).
fn flush(root: &Path, session: &mut LiveSession) -> Result<()> {
    let pending = session.events.get(session.durable..).unwrap_or_default();
    if pending.is_empty() {
        return Ok(());
    }
    let path = session_log_path(root, &session.header.id)?;
    let mut lines = Vec::with_capacity(pending.len());
    for event in pending {
        lines.push(
            serde_json::to_vec(event).map_err(|e| QueryError::PersistenceFailed {
                operation: format!("encoding event seq {}", event.seq),
                cause: Box::new(e),
            })?,
        );
    }
    if session.materialized {
        let writer = match &mut session.writer {
            Some(writer) => writer,
            None => session
                .writer
                .insert(open_writer(&path, &session.header.id)?),
        };
        writer
            .append_batch_json(&lines)
            .map_err(|e| index_failure(&session.header.id, "appending to", e))?;
    } else {
        let mut bytes = lines.join(&b'\n');
        bytes.push(b'\n');
        materialize(&path, &session.header, &bytes)?;
        session.materialized = true;
        session.writer = Some(open_writer(&path, &session.header.id)?);
    }
    session.durable = session.events.len();
    session.first_pending_at = None;
    session.auto_paused = false;
    tracing::debug!(session = %session.header.id, durable = session.durable, "checkpoint written");
    Ok(())
}

/// Publishes a new log: header + first batch, fsynced, linked into place without
/// overwriting anything.
fn materialize(path: &Path, header: &SessionHeader, first_batch: &[u8]) -> Result<()> {
    static NEXT_TMP: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(path);
    let what = |step: &str| format!("{step} {}", path.display());
    create_private_dir(dir).map_err(|e| failed(what("creating the directory of"), e))?;
    let tmp = dir.join(format!(
        ".events.jsonl.tmp-{}-{}",
        std::process::id(),
        NEXT_TMP.fetch_add(1, Ordering::Relaxed)
    ));
    let mut contents = serde_json::to_vec(header).map_err(|e| QueryError::PersistenceFailed {
        operation: what("encoding the header of"),
        cause: Box::new(e),
    })?;
    contents.push(b'\n');
    contents.extend_from_slice(first_batch);
    let write = || -> io::Result<()> {
        let mut file = create_private_file(&tmp)?;
        file.write_all(&contents)?;
        file.sync_all()?;
        fs::hard_link(&tmp, path)?;
        // Make the new name durable too. The log is published at this point, so a
        // failure here must not make the caller believe it was not.
        if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
            tracing::warn!(dir = %dir.display(), error = %e, "could not fsync the session directory");
        }
        Ok(())
    };
    let result = write();
    // Best effort: a leftover temp file is harmless (its name is not a session log).
    let _ = fs::remove_file(&tmp);
    result.map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            failed(
                format!(
                    "publishing {} (another writer created this session)",
                    path.display()
                ),
                e,
            )
        } else {
            failed(what("writing"), e)
        }
    })
}

/// Appends whole lines and fsyncs; on failure truncates back so a retry cannot
/// duplicate seqs.
/// The single writer of a materialized session log: it takes the log's OS lock (another
/// writer, in any process, is refused), writes whole lines with fsync and rolls back a failed
/// write, and keeps the session's index current with the profile readers use.
fn open_writer(path: &Path, session_id: &str) -> Result<Writer> {
    let options = WriterOptions {
        sync: SyncPolicy::Fsync,
        index: session_index_options(),
        ..WriterOptions::default()
    };
    Writer::open(&LogPaths::for_log_file(path), options)
        .map_err(|e| index_failure(session_id, "opening the writer of", e))
}

fn index_failure(session_id: &str, what: &str, error: IndexError) -> QueryError {
    QueryError::PersistenceFailed {
        operation: format!("{what} session \"{session_id}\""),
        cause: Box::new(error),
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

#[cfg(unix)]
fn create_private_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn create_private_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

#[cfg(test)]
mod tests;
