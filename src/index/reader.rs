//! [`Index`]: a validated, up-to-date view of one log's index, for readers.
//!
//! Opening tries to bring the index up to date on disk (catch up or rebuild). If another
//! process holds it for writing (normally the agent's writer) or it cannot be written, the
//! index is used read-only: its last commit is validated against the log like any other open,
//! and the bytes after its watermark are folded in memory. Either way the answers cover every
//! complete line of the log at the moment of opening. A reader never keeps the index open for
//! writing, so it never blocks the agent's writer.

mod queries;

use std::fs::File;
use std::sync::OnceLock;

use redb::{ReadOnlyDatabase, ReadableDatabase};

use super::db::{self, guarded};
use super::error::{Cause, Source, Unwritable};
use super::open::{Progress, Then, WritableIndex, log_len};
use super::rows::TypeMap;
use super::schema::Meta;
use super::validate::{self, Expected, Loaded, Validity};
use super::verify::{self, CompareError, TableComparison};
use super::{IndexError, IndexOptions, IndexOutcome, ReadOnlyReason, StaleReason};
use crate::event::{EventKind, FoldState, Folded, Folder, GenerationStart, Totals};
use crate::log::{Line, LineScanner, LogPaths, open_for_read};

/// What an in-memory scan after the watermark found, beyond the fold state.
#[derive(Clone, Debug, Default)]
struct Tail {
    /// Boundaries found after the watermark.
    boundaries: Vec<GenerationStart>,
    /// (offset, totals after) of token events after the watermark.
    prefix: Vec<(u64, Totals)>,
}

/// A validated view of a log's index. See the module docs.
pub struct Index {
    paths: LogPaths,
    options: IndexOptions,
    /// The committed meta record the answers start from.
    meta: Meta,
    /// The fold over every complete line: `meta.fold` plus the in-memory tail.
    state: FoldState,
    tail: Tail,
    types: TypeMap,
    outcome: IndexOutcome,
    repaired: bool,
    /// Bytes of the log this open read: validation windows and caught-up or scanned bytes.
    bytes_read: u64,
    /// Opened on the first query that needs rows.
    db: OnceLock<ReadOnlyDatabase>,
    /// The log as validated at open, for reading lines back.
    log: File,
}

impl Index {
    /// Opens the index of the log at `paths`, building, catching up or rebuilding it when it
    /// can, and validating it in every case.
    ///
    /// # Errors
    ///
    /// The log is missing or unreadable; the index is stale and cannot be rebuilt by this
    /// process; no index exists and none can be created; a storage failure.
    pub fn open(paths: &LogPaths, options: &IndexOptions) -> Result<Index, IndexError> {
        Index::open_with_progress(paths, options, &mut |_, _| {})
    }

    /// [`Index::open`], reporting `(bytes done, bytes to do)` during long builds.
    pub fn open_with_progress(
        paths: &LogPaths,
        options: &IndexOptions,
        progress: Progress<'_>,
    ) -> Result<Index, IndexError> {
        let log = open_for_read(&paths.log)?;
        if options.read_only {
            return Index::open_read_only(paths, options, log, ReadOnlyReason::Requested);
        }
        // An index that already covers the log, or all but a small tail of it, needs no write
        // access: a writable open, commit and close cost several fsyncs in redb's
        // multi-process mode, a read-only one none.
        if let Look::Valid {
            db,
            meta,
            types,
            current,
        } = look(paths, options, &log)?
        {
            if current {
                return Ok(Index::from_look(
                    paths,
                    options,
                    log,
                    db,
                    *meta,
                    types,
                    IndexOutcome::Fresh,
                ));
            }
            let tail = log_len(&log, &paths.log)?.saturating_sub(meta.watermark());
            if tail <= options.max_memory_tail {
                let why = ReadOnlyReason::SmallTail;
                return Index::with_tail(paths, options, log, db, *meta, types, why);
            }
        }
        let why = match WritableIndex::open(paths, &log, options, Then::Close, progress) {
            Ok((index, outcome)) => {
                let (mut meta, mut types, repaired) =
                    (index.meta.clone(), index.types.clone(), index.repaired);
                let mut outcome = outcome;
                if let Some(rebuilt) = index.close_or_rebuild(paths, &log, options)? {
                    (meta, types, outcome) = rebuilt;
                }
                let bytes_read = meta.head.len + meta.tail.len + outcome.work().0;
                return Ok(Index {
                    log,
                    bytes_read,
                    paths: paths.clone(),
                    options: options.clone(),
                    state: meta.fold.clone(),
                    meta,
                    tail: Tail::default(),
                    types,
                    outcome,
                    repaired,
                    db: OnceLock::new(),
                });
            }
            Err(Unwritable::Busy) => ReadOnlyReason::HeldByAnotherProcess,
            Err(Unwritable::NotWritable(why)) => ReadOnlyReason::NotWritable(why.detail),
            Err(Unwritable::Failed(e)) => return Err(e),
        };
        Index::open_read_only(paths, options, log, why)
    }

    /// An index whose last commit covers the whole log, read through `db`.
    fn from_look(
        paths: &LogPaths,
        options: &IndexOptions,
        log: File,
        db: ReadOnlyDatabase,
        meta: Meta,
        types: TypeMap,
        outcome: IndexOutcome,
    ) -> Index {
        outcome.trace(&paths.index);
        let cell = OnceLock::new();
        let _ = cell.set(db);
        Index {
            log,
            bytes_read: meta.head.len + meta.tail.len,
            paths: paths.clone(),
            options: options.clone(),
            state: meta.fold.clone(),
            meta,
            tail: Tail::default(),
            types,
            outcome,
            repaired: false,
            db: cell,
        }
    }

    /// Uses the last commit as it is, folding the bytes after it in memory.
    fn open_read_only(
        paths: &LogPaths,
        options: &IndexOptions,
        log: File,
        why: ReadOnlyReason,
    ) -> Result<Index, IndexError> {
        let (db, meta, types) = match look(paths, options, &log)? {
            Look::Valid {
                db, meta, types, ..
            } => (db, meta, types),
            Look::Stale(reason) => {
                return Err(IndexError::StaleReadOnly {
                    path: paths.index.clone(),
                    reason,
                    why,
                });
            }
            Look::Unavailable(cause) => {
                return Err(IndexError::Unavailable {
                    path: paths.index.clone(),
                    detail: format!("{cause}, and {why}"),
                    source: cause.source,
                });
            }
        };
        Index::with_tail(paths, options, log, db, *meta, types, why)
    }

    /// Uses the last commit as it is (`meta`, validated), folding the bytes after it in
    /// memory.
    fn with_tail(
        paths: &LogPaths,
        options: &IndexOptions,
        log: File,
        db: ReadOnlyDatabase,
        meta: Meta,
        types: TypeMap,
        why: ReadOnlyReason,
    ) -> Result<Index, IndexError> {
        let limit = log_len(&log, &paths.log)?;
        let read = |e| IndexError::log_read(&paths.log, e);
        let folded = fold_tail(&log, &meta.fold, limit, options).map_err(read)?;
        // The commit was validated against the log a moment ago. A log rewritten in place
        // since (against its append-only contract) would stitch the commit to another
        // version's lines, or one version's lines to another's: so the commit is validated
        // again, and the bytes the fold read are read again and must be the same.
        let from = meta.watermark();
        let now = log_len(&log, &paths.log)?;
        let still_valid = !matches!(
            validate::validate(&meta, &Expected::of(options), &log, now).map_err(read)?,
            Validity::Stale(_)
        );
        // The fold's crc started afresh at the watermark.
        let unchanged = crate::log::bytes_unchanged(&log, (from, 0), folded.end, folded.crc);
        if !still_valid || !unchanged.map_err(read)? {
            return Err(IndexError::LogChanged {
                path: paths.index.clone(),
            });
        }
        let FoldedTail {
            state,
            tail,
            bytes,
            events,
            ..
        } = folded;
        let outcome = if bytes == 0 && why == ReadOnlyReason::SmallTail {
            // Only a torn line follows the commit, which covers every complete line.
            IndexOutcome::Fresh
        } else {
            IndexOutcome::ReadOnly {
                why,
                tail_bytes: bytes,
                tail_events: events,
            }
        };
        let mut index = Index::from_look(paths, options, log, db, meta, types, outcome);
        index.bytes_read += bytes;
        index.state = state;
        index.tail = tail;
        Ok(index)
    }

    /// Validates the index against the log again and picks up what changed since this handle
    /// was opened (new lines appended by any program, or a rewrite, which rebuilds): for
    /// long-lived readers such as dashboards. Costs an O(1) check when nothing changed.
    pub fn refresh(&mut self) -> Result<&IndexOutcome, IndexError> {
        *self = Index::open(&self.paths, &self.options)?;
        Ok(&self.outcome)
    }

    /// What opening found and did.
    pub fn outcome(&self) -> &IndexOutcome {
        &self.outcome
    }

    /// Writes the status file from this open's commit when the commit covers the whole log
    /// and nothing else is about to (an open that found the index fresh commits nothing): so
    /// that a status file lost or never written comes back without waiting for a commit.
    pub(crate) fn publish_status(&self) {
        let watermark = self.meta.watermark();
        if self.outcome == IndexOutcome::Fresh
            && !self.options.read_only
            && self.options.faults().is_none()
            && self.state.end == watermark
            && self.log.metadata().is_ok_and(|m| m.len() == watermark)
        {
            // A reader may find the folder read-only: not worth a warning on every answer.
            if let Err(e) = super::status_file::write(&self.paths.index, &self.meta) {
                tracing::debug!(index = %self.paths.index.display(), error = %e, "cannot write the status file");
            }
        }
    }

    /// Bytes of the log this open read (validation windows plus new or rebuilt bytes).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Whether redb had to repair the index after an unclean shutdown.
    pub fn was_repaired(&self) -> bool {
        self.repaired
    }

    /// The facts over every complete line of the log: O(1), from memory.
    pub fn state(&self) -> &FoldState {
        &self.state
    }

    /// The bytes of the log covered by the index on disk (the rest was folded in memory).
    pub fn watermark(&self) -> u64 {
        self.meta.watermark()
    }

    /// Events whose explicit seq repeated an earlier one.
    pub fn duplicate_seqs(&self) -> u64 {
        self.meta.seqs.duplicates
    }

    /// The crc32 of the indexed prefix `[0, watermark)`, for deep verification.
    pub fn running_crc(&self) -> u32 {
        self.meta.running_crc
    }

    /// The paths of the log and index.
    pub fn paths(&self) -> &LogPaths {
        &self.paths
    }

    /// Compares every table of the index, row by row and byte for byte, with a fresh build of
    /// the same prefix of the log (`[0, watermark)`): one [`TableComparison`] per table, each
    /// [`TableComparison::matches`] for a sound index. This finds what the checks on open
    /// cannot, such as a damaged key (see `docs/RELIABILITY.md`).
    ///
    /// The fresh build goes to a scratch directory under the system's temporary directory,
    /// removed afterwards; nothing beside the log is written. It costs about a build from
    /// scratch: the whole indexed prefix is read, and the scratch index is as large as this
    /// one. A writer that commits meanwhile is followed (the fresh build is extended to what
    /// the index holds when its tables are read), a few times at most.
    ///
    /// # Errors
    ///
    /// The log cannot be read ([`IndexError::Log`]); the scratch index cannot be written
    /// ([`IndexError::Io`], with its path); or this index cannot be read, which is a damaged
    /// file ([`IndexError::Damaged`]; it is rebuilt unless the index was opened `read_only`).
    pub fn compare_with_rebuild(&self) -> Result<Vec<TableComparison>, IndexError> {
        // How often a writer committing meanwhile is followed.
        const ATTEMPTS: usize = 3;
        let scratch_dir = tempfile::Builder::new()
            .prefix("agentlog-verify-")
            .tempdir()
            .map_err(|source| IndexError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
        let paths = LogPaths {
            log: self.paths.log.clone(),
            index: scratch_dir.path().join("rebuild.redb"),
        };
        let scratch_failed = |error: Source| IndexError::Io {
            path: paths.index.clone(),
            source: std::io::Error::other(error),
        };
        // A failure to read the log is the log's, and said so; any other is the scratch file's.
        let building_failed = |e: IndexError| match e {
            IndexError::Log(_) => e,
            other => scratch_failed(other.into()),
        };
        let options = IndexOptions {
            read_only: false,
            #[cfg(feature = "testing")]
            faults: None,
            ..self.options.clone()
        };
        let mut fresh = WritableIndex::build_scratch(&paths, &self.log, &options, self.watermark())
            .map_err(|e| match e {
                Unwritable::Failed(e) => building_failed(e),
                Unwritable::Busy => scratch_failed("held by another process".into()),
                Unwritable::NotWritable(why) => scratch_failed(why.into_source()),
            })?;
        for attempt in 1..=ATTEMPTS {
            let fresh_txn = fresh
                .database()
                .and_then(|db| {
                    db.begin_read()
                        .map_err(|e| IndexError::redb_failure(&paths.index, e))
                })
                .map_err(|e| scratch_failed(e.into()))?;
            let built_to = fresh.meta.watermark();
            let compared = self.read(|stored| {
                let committed = verify::committed_watermark(stored)
                    .map_err(|e| IndexError::redb_failure(&self.paths.index, e))?;
                match committed {
                    Some(moved) if moved > built_to && attempt < ATTEMPTS => {
                        return Ok(Err(Retry::MovedTo(moved)));
                    }
                    _ => {}
                }
                match verify::compare_tables(stored, &fresh_txn) {
                    Ok(comparisons) => Ok(Ok(comparisons)),
                    Err(CompareError::Stored(e)) => {
                        Err(IndexError::redb_failure(&self.paths.index, e))
                    }
                    Err(CompareError::Fresh(e)) => Ok(Err(Retry::ScratchFailed(e.into()))),
                }
            })?;
            drop(fresh_txn);
            match compared {
                Ok(comparisons) => return Ok(comparisons),
                Err(Retry::ScratchFailed(detail)) => return Err(scratch_failed(detail)),
                Err(Retry::MovedTo(watermark)) => fresh
                    .extend_scratch(&self.log, watermark, &options)
                    .map_err(building_failed)?,
            }
        }
        Err(scratch_failed("the index kept moving".into()))
    }

    fn db(&self) -> Result<&ReadOnlyDatabase, IndexError> {
        if let Some(db) = self.db.get() {
            return Ok(db);
        }
        match db::open_read_only(&self.paths.index) {
            Ok(Some(db)) => Ok(self.db.get_or_init(|| db)),
            Ok(None) => Err(IndexError::unavailable(
                &self.paths.index,
                Cause::described("the index file disappeared"),
            )),
            Err(cause) => Err(IndexError::storage(&self.paths.index, cause.into_source())),
        }
    }

    /// Reports a damaged row, and rebuilds the index from the log if this process can write
    /// it and was not asked to leave it alone (`read_only`), so the next open is sound (a
    /// corrupt index is rebuilt, never believed).
    fn damaged(&self, detail: impl Into<String>) -> IndexError {
        self.damaged_by(detail.into(), None)
    }

    /// [`Index::damaged`], for damage found by the storage error `source`.
    fn damaged_by(&self, detail: String, source: Option<Source>) -> IndexError {
        tracing::warn!(index = %self.paths.index.display(), %detail, "damaged index row");
        if self.options.read_only {
            // `verify` reports the damage; a reader free to write rebuilds it when it meets it.
        } else if let Ok(log) = open_for_read(&self.paths.log) {
            let reason = StaleReason::Unreadable {
                detail: detail.clone(),
            };
            match WritableIndex::rebuild(&self.paths, &log, &self.options, reason) {
                Ok((index, _)) => {
                    let _ = index.close();
                }
                Err(Unwritable::Busy | Unwritable::NotWritable(_)) => {}
                Err(Unwritable::Failed(e)) => {
                    tracing::warn!(index = %self.paths.index.display(), error = %e, "rebuilding a damaged index failed");
                }
            }
        }
        IndexError::Damaged {
            path: self.paths.index.clone(),
            detail,
            source,
        }
    }

    /// Runs a read transaction. A storage error or a panic inside redb means the index file is
    /// damaged: it is reported, and rebuilt if this process can (see [`Index::damaged`]).
    fn read<T>(
        &self,
        f: impl FnOnce(&redb::ReadTransaction) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        let db = self.db()?;
        let outcome = guarded("reading the index", || {
            let txn = db
                .begin_read()
                .map_err(|e| IndexError::redb_failure(&self.paths.index, e))?;
            f(&txn)
        });
        match outcome {
            Ok(Err(IndexError::Storage { source, .. })) => {
                Err(self.damaged_by(source.to_string(), Some(source)))
            }
            Ok(result) => result,
            Err(panic) => Err(self.damaged(panic)),
        }
    }
}

/// The lines after a commit, folded in memory.
struct FoldedTail {
    /// The fold over the commit and these lines.
    state: FoldState,
    tail: Tail,
    /// Bytes and events folded.
    bytes: u64,
    events: u64,
    /// Where the scan stopped, and the crc32 of the bytes it read (from the commit's
    /// watermark to `end`).
    end: u64,
    crc: u32,
}

/// Why one comparison of [`Index::compare_with_rebuild`] gave no answer.
enum Retry {
    /// A writer committed up to here since the fresh build was made: extend it and compare
    /// again.
    MovedTo(u64),
    /// The fresh build could not be read.
    ScratchFailed(Source),
}

/// What a read-only look at the index's last commit found.
enum Look {
    /// The last commit agrees with the log; `current` if the log has no bytes after it.
    Valid {
        db: ReadOnlyDatabase,
        meta: Box<Meta>,
        types: TypeMap,
        current: bool,
    },
    /// The last commit must not be used.
    Stale(StaleReason),
    /// There is no commit to look at (no file, an empty index, a file needing repair or
    /// unreadable).
    Unavailable(Cause),
}

/// Opens the index read-only and validates its last commit against the log. Takes no write
/// lock and writes nothing.
fn look(paths: &LogPaths, options: &IndexOptions, log: &File) -> Result<Look, IndexError> {
    let db = match db::open_read_only(&paths.index) {
        Ok(Some(db)) => db,
        Ok(None) => return Ok(Look::Unavailable(Cause::described("there is no index"))),
        Err(cause) => return Ok(Look::Unavailable(cause)),
    };
    let loaded = guarded("reading the index", || {
        let txn = db.begin_read()?;
        validate::load(&txn)
    });
    // After the index's snapshot, not before: a writer commits the index only after the log
    // bytes it covers are written, so a length read now is at least the snapshot's watermark.
    // Read first, a commit landing in between looked like a truncated log.
    let log_len = log_len(log, &paths.log)?;
    let (meta, types) = match loaded {
        Ok(Ok(Loaded::Found(meta, types))) => (meta, types),
        Ok(Ok(Loaded::Empty)) => {
            return Ok(Look::Unavailable(Cause::described(
                "the index holds no commit yet",
            )));
        }
        Ok(Ok(Loaded::Stale(reason))) => return Ok(Look::Stale(reason)),
        Ok(Err(e)) => return Ok(Look::Unavailable(Cause::error(e))),
        Err(panic) => return Ok(Look::Unavailable(Cause::described(panic))),
    };
    let current = match validate::validate(&meta, &Expected::of(options), log, log_len)
        .map_err(|e| IndexError::log_read(&paths.log, e))?
    {
        Validity::Stale(reason) => return Ok(Look::Stale(reason)),
        Validity::Current => true,
        Validity::Behind => false,
    };
    Ok(Look::Valid {
        db,
        meta,
        types,
        current,
    })
}

/// Folds `[state.end, limit)` in memory, keeping the boundaries and prefix sums it finds.
fn fold_tail(
    log: &File,
    from: &FoldState,
    limit: u64,
    options: &IndexOptions,
) -> std::io::Result<FoldedTail> {
    let mut folder = Folder::new(options.extractor(), from.clone());
    let mut scanner = LineScanner::new(log, from.end, limit, options.max_line, 0);
    let mut tail = Tail::default();
    while let Some(line) = scanner.next_line()? {
        match line {
            Line::TooLong { offset, len } => folder.fold_too_long(offset, len),
            Line::Complete { offset, bytes } => {
                if let Folded::Event(event) = folder.fold_line(offset, bytes) {
                    let state = folder.state();
                    match event.kind {
                        EventKind::Token => tail.prefix.push((offset, state.totals)),
                        EventKind::Boundary => tail.boundaries.extend(state.latest.clone()),
                        EventKind::Header | EventKind::Other => {}
                    }
                }
            }
        }
    }
    let (end, crc) = (scanner.end(), scanner.crc());
    let state = folder.into_state();
    let (bytes, events) = (state.end - from.end, state.events - from.events);
    Ok(FoldedTail {
        state,
        tail,
        bytes,
        events,
        end,
        crc,
    })
}
