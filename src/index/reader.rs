//! [`Index`]: a validated, up-to-date view of one log's index, for readers.
//!
//! Opening tries to bring the index up to date on disk (catch up or rebuild). If another
//! process holds it for writing (normally the agent's writer) or it cannot be written, the
//! index is used read-only: its last commit is validated against the log like any other open,
//! and the bytes after its watermark are folded in memory. Either way the answers cover every
//! complete line of the log at the moment of opening (`opening.rs`).

mod queries;

use std::fs::File;

use redb::{ReadOnlyDatabase, ReadableDatabase};

use super::derived::contain::Held;
use super::derived::sequence;
use super::derived::storage;
use super::derived::unsynced::Syncs;
use super::error::{Cause, Source, Unwritable};
use super::open::{Progress, WritableIndex};
use super::opening::{Opening, View};
use super::verify::{self, CompareError, TableComparison};
use super::{IndexError, IndexOptions, IndexOutcome, StaleReason};
use crate::event::FoldState;
use crate::log::{LogPaths, open_for_read};

/// A validated view of a log's index. See the module docs.
pub struct Index {
    paths: LogPaths,
    options: IndexOptions,
    /// What the open found: the commit, the fold over every complete line, the outcome.
    view: View,
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
        let view = sequence::open(&mut Opening::new(paths, options, &log, progress))?;
        Ok(Index {
            paths: paths.clone(),
            options: options.clone(),
            view,
            log,
        })
    }

    /// Validates the index against the log again and picks up what changed since this handle
    /// was opened (new lines appended by any program, or a rewrite, which rebuilds): for
    /// long-lived readers such as dashboards. Costs an O(1) check when nothing changed.
    pub fn refresh(&mut self) -> Result<&IndexOutcome, IndexError> {
        *self = Index::open(&self.paths, &self.options)?;
        Ok(&self.view.outcome)
    }

    /// What opening found and did.
    pub fn outcome(&self) -> &IndexOutcome {
        &self.view.outcome
    }

    /// Writes the status file from this open's commit when the commit covers the whole log
    /// and nothing else is about to (an open that found the index fresh commits nothing): so
    /// that a status file lost or never written comes back without waiting for a commit.
    pub(crate) fn publish_status(&self) {
        let watermark = self.view.meta.watermark();
        if self.view.outcome == IndexOutcome::Fresh
            && !self.options.read_only
            && self.options.faults().is_none()
            && self.view.state.end == watermark
            && self.log.metadata().is_ok_and(|m| m.len() == watermark)
        {
            // A reader may find the folder read-only: not worth a warning on every answer.
            if let Err(e) = super::status_file::write(&self.paths.index, &self.view.meta) {
                tracing::debug!(index = %self.paths.index.display(), error = %e, "cannot write the status file");
            }
        }
    }

    /// Bytes of the log this open read (validation windows plus new or rebuilt bytes).
    pub fn bytes_read(&self) -> u64 {
        self.view.bytes_read
    }

    /// Whether redb had to repair the index after an unclean shutdown.
    pub fn was_repaired(&self) -> bool {
        self.view.repaired
    }

    /// The facts over every complete line of the log: O(1), from memory.
    pub fn state(&self) -> &FoldState {
        &self.view.state
    }

    /// The bytes of the log covered by the index on disk (the rest was folded in memory).
    pub fn watermark(&self) -> u64 {
        self.view.meta.watermark()
    }

    /// Events whose explicit seq repeated an earlier one.
    pub fn duplicate_seqs(&self) -> u64 {
        self.view.meta.seqs.duplicates
    }

    /// The crc32 of the indexed prefix `[0, watermark)`, for deep verification.
    pub fn running_crc(&self) -> u32 {
        self.view.meta.running_crc
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
                    db.run("reading the scratch index", ReadableDatabase::begin_read)
                        .map_err(|panicked| IndexError::damaged(&paths.index, panicked))?
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

    fn db(&self) -> Result<&Held<ReadOnlyDatabase>, IndexError> {
        if let Some(db) = self.view.db.get() {
            return Ok(db);
        }
        let settings = self.options.settings(Syncs::Kept);
        match storage::open_read_only(&self.paths.index, &settings) {
            Ok(Some(db)) => Ok(self.view.db.get_or_init(|| db)),
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
        let outcome = db.run("reading the index", |db| {
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

/// Why one comparison of [`Index::compare_with_rebuild`] gave no answer.
enum Retry {
    /// A writer committed up to here since the fresh build was made: extend it and compare
    /// again.
    MovedTo(u64),
    /// The fresh build could not be read.
    ScratchFailed(Source),
}
