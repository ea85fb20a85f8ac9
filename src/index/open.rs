//! The index open for writing ([`WritableIndex`]): validate it against the log, then catch up
//! on new complete lines, or rebuild it from the log; reopen and close it. Used by readers
//! that find the index free and by the writer. The core opens the file and deals with the
//! markers it finds (`derived/sequence.rs`).
//!
//! A new index for a small log is built without syncs (`derived/unsynced.rs`; docs/FORMAT.md,
//! "Builds without syncs") and synced once at the end: at the close for a reader
//! ([`Then::Close`]), before the open returns for the writer ([`Then::Write`]).
//!
//! Catching up is in `build.rs`, the commits' mechanics in `commit.rs`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::Database;

use super::commit::{
    CommitError, close_contained, commit_rows, fresh_failed, remove_index, windows,
};
use super::committer::{Committer, Job};
use super::derived::contain::Held;
use super::derived::sequence::{self, open_for_writing};
use super::derived::storage::{self, OpenFailure, Opened};
use super::derived::unsynced::{Syncs, Unsynced};
use super::derived::validate::Unread;
use super::error::Unwritable;
use super::rows::{RowBuffer, TypeMap};
use super::schema::{Meta, PARSER_VERSION, SeqState, TypesSum};
use super::validate::LogChecks;
use super::{IndexError, IndexOptions, IndexOutcome, StaleReason};
use crate::event::FoldState;
use crate::log::{LogPaths, LogWriter, WindowSum};

/// Progress of a long build: bytes done and bytes to do.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// What to do with the index found on disk.
enum Plan {
    /// Build it from the first line: there was none (`None`), or it must not be trusted.
    Build(Option<StaleReason>),
    /// A valid index: index new lines, if any.
    Update,
}

/// What the caller does with a [`WritableIndex`] once it is up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Then {
    /// Closes it at once (a reader that found the index free): a build from scratch stays
    /// unsynced until the close (see [`Unsynced`]).
    Close,
    /// Keeps writing to it (the writer): a build from scratch is synced before the open
    /// returns, so every later commit is durable as usual.
    Write,
}

/// An index open for writing, with its meta record and type names in memory.
pub(crate) struct WritableIndex {
    /// `None` after redb panicked in it (the handle gave its file up), or while a commit is
    /// on the commit thread.
    pub(super) db: Option<Held<Database>>,
    /// A build from scratch whose syncs are being skipped, until `make_durable` or the close.
    pub(super) unsynced: Option<Arc<Unsynced>>,
    /// What the caller does once the index is up to date.
    then: Then,
    pub(crate) path: PathBuf,
    pub(super) log_path: PathBuf,
    pub(crate) meta: Meta,
    pub(crate) types: TypeMap,
    /// Whether redb had to repair the file after an unclean shutdown.
    pub(crate) repaired: bool,
    /// Rows waiting for the next commit.
    pub(crate) buffer: RowBuffer,
    /// An emptied buffer back from the commit thread, for reuse.
    spare: RowBuffer,
    /// The writer's commit thread; while a commit is on it, so is the database (`db` is
    /// `None`) and every use of the database lands that commit first.
    committer: Committer,
}

fn empty_meta(options: &IndexOptions) -> Meta {
    Meta {
        parser: PARSER_VERSION,
        profile: options.fingerprint(),
        max_line: options.max_line as u64,
        head: WindowSum::default(),
        tail: WindowSum::default(),
        running_crc: 0,
        fold: FoldState::default(),
        seqs: SeqState::default(),
        types: TypesSum::default(),
    }
}

pub(crate) fn log_len(log: &File, log_path: &Path) -> Result<u64, IndexError> {
    log.metadata()
        .map(|m| m.len())
        .map_err(|e| IndexError::log_read(log_path, e))
}

impl WritableIndex {
    /// Opens the index for writing and brings it up to date with the log's complete lines.
    pub(crate) fn open(
        paths: &LogPaths,
        log: &File,
        options: &IndexOptions,
        then: Then,
        progress: Progress<'_>,
    ) -> Result<(WritableIndex, IndexOutcome), Unwritable> {
        let settings = options.settings(syncs(log, &paths.log, options)?);
        let opened = match open_for_writing(&paths.index, &settings) {
            Ok(opened) => opened,
            Err(OpenFailure::Busy) => return Err(Unwritable::Busy),
            Err(OpenFailure::NotWritable(why)) => return Err(Unwritable::NotWritable(why)),
            Err(OpenFailure::Damaged(cause)) => {
                return Err(Unwritable::Failed(fresh_failed(&paths.index, cause)));
            }
        };
        WritableIndex::from_opened(paths, log, options, then, opened, progress)
    }

    /// Brings the index `opened` for writing up to date with the log's complete lines.
    pub(crate) fn from_opened(
        paths: &LogPaths,
        log: &File,
        options: &IndexOptions,
        then: Then,
        opened: Opened,
        progress: Progress<'_>,
    ) -> Result<(WritableIndex, IndexOutcome), Unwritable> {
        let (repaired, replaced) = (opened.repaired, opened.replaced.clone());
        let mut index = WritableIndex::new(paths, opened, then, options);
        index.repaired = repaired;
        if repaired {
            tracing::warn!(index = %paths.index.display(), "index repaired after an unclean shutdown");
        }
        let plan = index.plan(log, options, replaced)?;
        let outcome = index.run(plan, log, options, progress)?;
        Ok((index, outcome))
    }

    /// Opens the index for writing and rebuilds it from the log whatever it holds (used when a
    /// reader found a damaged row; the caller closes it right after).
    pub(crate) fn rebuild(
        paths: &LogPaths,
        log: &File,
        options: &IndexOptions,
        reason: StaleReason,
    ) -> Result<(WritableIndex, IndexOutcome), Unwritable> {
        remove_index(&paths.index)?;
        let opened = open_fresh(&paths.index, options, syncs(log, &paths.log, options)?)?;
        let mut index = WritableIndex::new(paths, opened, Then::Close, options);
        let outcome = index.run(Plan::Build(Some(reason)), log, options, &mut |_, _| {})?;
        Ok((index, outcome))
    }

    /// Builds a new index of the log's first `limit` bytes (a line boundary) at
    /// `paths.index`, which must not exist yet: the scratch copy that
    /// [`Index::compare_with_rebuild`](super::Index::compare_with_rebuild) compares with.
    /// Extend it with [`WritableIndex::extend_scratch`].
    pub(crate) fn build_scratch(
        paths: &LogPaths,
        log: &File,
        options: &IndexOptions,
        limit: u64,
    ) -> Result<WritableIndex, Unwritable> {
        // Nobody relies on a scratch file surviving a power cut: skip syncs while building.
        let opened = open_fresh(&paths.index, options, Syncs::SkippedForNewFile)?;
        let mut index = WritableIndex::new(paths, opened, Then::Close, options);
        index.extend_scratch(log, limit, options)?;
        if index.meta.watermark() == 0 {
            // Every index holds a meta record and all its tables, even for an empty log.
            index.refresh_windows(log)?;
            index.commit_buffer()?;
        }
        Ok(index)
    }

    /// Brings a scratch build up to `limit` (a line boundary).
    pub(crate) fn extend_scratch(
        &mut self,
        log: &File,
        limit: u64,
        options: &IndexOptions,
    ) -> Result<(), IndexError> {
        self.catch_up(log, limit, options, &mut |_, _| {})?;
        Ok(())
    }

    fn new(paths: &LogPaths, opened: Opened, then: Then, options: &IndexOptions) -> WritableIndex {
        WritableIndex {
            db: Some(opened.db),
            unsynced: opened.unsynced,
            then,
            path: paths.index.clone(),
            log_path: paths.log.clone(),
            meta: empty_meta(options),
            types: TypeMap::default(),
            repaired: false,
            buffer: RowBuffer::default(),
            spare: RowBuffer::default(),
            committer: Committer::default(),
        }
    }

    /// Validates the index against the log again and catches up or rebuilds (used by the
    /// writer when the log changed under it, or when a commit failed).
    pub(crate) fn update(
        &mut self,
        log: &File,
        options: &IndexOptions,
        progress: Progress<'_>,
    ) -> Result<IndexOutcome, Unwritable> {
        self.settle();
        let plan = self.plan(log, options, None)?;
        self.run(plan, log, options, progress)
    }

    pub(crate) fn database(&self) -> Result<&Held<Database>, IndexError> {
        self.db
            .as_ref()
            .ok_or_else(|| IndexError::damaged_earlier(&self.path))
    }

    /// Decides what to do (the core's plan); an index to rebuild is reset to an empty one
    /// here, in a new file.
    fn plan(
        &mut self,
        log: &File,
        options: &IndexOptions,
        replaced: Option<StaleReason>,
    ) -> Result<Plan, Unwritable> {
        let planned = match self.database() {
            Ok(db) => sequence::plan(&LogChecks::new(options, log), db, replaced),
            // redb panicked in the handle: nothing of the file is to be read.
            Err(e) => Ok(sequence::Plan::Rebuild(StaleReason::Unreadable {
                detail: e.to_string(),
            })),
        };
        match planned {
            Ok(sequence::Plan::Build(reason)) => Ok(Plan::Build(reason)),
            Ok(sequence::Plan::Rebuild(reason)) => {
                let damaged = matches!(reason, StaleReason::Unreadable { .. });
                self.reset(log, options, damaged)?;
                Ok(Plan::Build(Some(reason)))
            }
            Ok(sequence::Plan::Update(commit)) => {
                self.meta = *commit.meta;
                self.types = commit.loaded;
                Ok(Plan::Update)
            }
            Err(Unread::Source(e)) => Err(IndexError::log_read(&self.log_path, e).into()),
            // A failing disk is not a damaged index: report it, keep the file.
            Err(Unread::Index(e)) => Err(IndexError::redb_failure(&self.path, e).into()),
            Err(Unread::Panicked(detail)) => Err(IndexError::damaged(&self.path, detail).into()),
        }
    }

    fn run(
        &mut self,
        plan: Plan,
        log: &File,
        options: &IndexOptions,
        progress: Progress<'_>,
    ) -> Result<IndexOutcome, Unwritable> {
        let log_len = log_len(log, &self.log_path)?;
        let (plan, (bytes, events)) = match self.catch_up(log, log_len, options, progress) {
            Ok(work) => (plan, work),
            Err(e @ (IndexError::Storage { .. } | IndexError::Damaged { .. })) => {
                // The index broke while we wrote to it: rebuild it from the log, once.
                tracing::warn!(index = %self.path.display(), error = %e, "index failed while being written; rebuilding it");
                self.reset(log, options, true)?;
                let work = self.catch_up(log, log_len, options, progress)?;
                let reason = StaleReason::Unreadable {
                    detail: e.to_string(),
                };
                (Plan::Build(Some(reason)), work)
            }
            Err(e) => return Err(e.into()),
        };
        let outcome = match plan {
            Plan::Build(reason) => IndexOutcome::built(reason, bytes, events),
            Plan::Update => IndexOutcome::updated(bytes, events),
        };
        if bytes == 0 && !matches!(outcome, IndexOutcome::Fresh) {
            // Commit an (empty) meta record, so the next open finds a valid index.
            self.refresh_windows(log)?;
            self.commit_buffer()?;
        }
        if self.then == Then::Write {
            self.make_durable(options)?;
        }
        outcome.trace(&self.path);
        Ok(outcome)
    }

    /// Ends an unsynced build (see [`Unsynced`]): the file is synced once and its marker
    /// removed, and from now on every commit syncs as usual.
    fn make_durable(&mut self, options: &IndexOptions) -> Result<(), IndexError> {
        match self.unsynced.take() {
            Some(unsynced) => unsynced
                .finish(options.faults())
                .map_err(|e| IndexError::redb_failure(&self.path, redb::Error::Io(e))),
            None => Ok(()),
        }
    }

    /// Replaces the index file with an empty one. The old database is closed, or given up if
    /// it is damaged (closing a damaged database can panic).
    fn reset(
        &mut self,
        log: &File,
        options: &IndexOptions,
        damaged: bool,
    ) -> Result<(), Unwritable> {
        if let Some(unsynced) = self.unsynced.take() {
            // The file goes: its durability no longer matters, and the marker about to be
            // removed with it must not be taken for the next build's.
            unsynced.abandon();
        }
        remove_index(&self.path)?;
        let fresh = open_fresh(&self.path, options, syncs(log, &self.log_path, options)?)?;
        self.unsynced = fresh.unsynced;
        if let Some(old) = self.db.replace(fresh.db) {
            if damaged {
                old.abandon();
            } else {
                // The old file is unlinked; its close errors do not matter, and a file that
                // is stale for another reason may be damaged too.
                let _ = close_contained(old, &self.path);
            }
        }
        self.meta = empty_meta(options);
        self.types = TypeMap::default();
        self.buffer.clear();
        Ok(())
    }

    /// Closes the database handle and opens a new one on the same file, keeping its contents:
    /// a redb handle that met an I/O error stays unusable until reopened.
    pub(crate) fn reopen(&mut self, options: &IndexOptions) -> Result<(), Unwritable> {
        self.settle();
        match self.db.take() {
            // A handle that failed may fail to close; that is what we are replacing.
            Some(old) => {
                let _ = close_contained(old, &self.path);
            }
            // redb panicked in the handle, which still holds the file's lock, so opening the
            // same file again would look busy. `plan` finds no handle and rebuilds into a
            // fresh file.
            None => return Ok(()),
        }
        // Closing finished any unsynced build.
        self.unsynced = None;
        match storage::open_writable(&self.path, &options.settings(Syncs::Kept)) {
            Ok(opened) => {
                self.db = Some(opened.db);
                Ok(())
            }
            Err(OpenFailure::Busy) => Err(Unwritable::Busy),
            Err(OpenFailure::NotWritable(why)) => Err(Unwritable::NotWritable(why)),
            // `plan` will find the missing handle and rebuild.
            Err(OpenFailure::Damaged(_)) => Ok(()),
        }
    }

    /// Closes the database, reporting errors that dropping it would swallow.
    pub(crate) fn close(mut self) -> Result<(), IndexError> {
        self.settle();
        // Closing the database finishes an unsynced build (its backend syncs the file while it
        // still holds the file's locks).
        self.unsynced = None;
        match self.db.take() {
            Some(db) => close_contained(db, &self.path),
            None => Ok(()),
        }
    }

    /// Closes the database; if closing finds the file damaged, rebuilds it from the log and
    /// closes that instead, so the file left behind is sound. Returns the rebuilt index's
    /// meta, type names and outcome in that case.
    ///
    /// redb saves its allocator state when a database closes, and damage that no read
    /// touched (a corrupted allocator page) can make that panic or fail with a corruption
    /// error: the fuzzer found both kinds of file.
    pub(crate) fn close_or_rebuild(
        self,
        paths: &LogPaths,
        log: &File,
        options: &IndexOptions,
    ) -> Result<Option<(Meta, TypeMap, IndexOutcome)>, IndexError> {
        let detail = match self.close() {
            Ok(()) => return Ok(None),
            // redb reports damage it meets while closing (saving allocator state, say) as a
            // corruption error, or panics (contained, `Damaged`): either way a rebuild heals it.
            // An I/O error (`Io`) is not damage: it is returned.
            Err(IndexError::Damaged { detail, .. }) => detail,
            Err(IndexError::Storage { source, .. }) => source.to_string(),
            Err(e) => return Err(e),
        };
        tracing::warn!(index = %paths.index.display(), %detail, "index damaged at close; rebuilding it");
        let reason = StaleReason::Unreadable { detail };
        match WritableIndex::rebuild(paths, log, options, reason) {
            Ok((index, outcome)) => {
                let (meta, types) = (index.meta.clone(), index.types.clone());
                index.close()?;
                Ok(Some((meta, types, outcome)))
            }
            Err(Unwritable::Failed(e)) => Err(e),
            // The damaged file was closed and this process holds the log's writer lock or
            // just wrote the index: neither can happen; report the damage as found.
            Err(Unwritable::Busy | Unwritable::NotWritable(_)) => Err(IndexError::damaged(
                &paths.index,
                "damaged at close, and could not be rebuilt",
            )),
        }
    }
}

/// Commits: here, or handed to the commit thread and landed later.
impl WritableIndex {
    /// Recomputes the head and tail windows at the current watermark.
    pub(crate) fn refresh_windows(&mut self, log: &File) -> Result<(), IndexError> {
        windows(&mut self.meta, log, &self.path, &self.log_path)
    }

    /// Starts committing the queued rows and the current meta record (its windows are
    /// computed at its watermark) on the commit thread, and returns `Ok(true)`: the rows queued
    /// from now on go to a fresh buffer. The log is synced first if `sync_log`. A commit
    /// already on the thread is landed first, and its failure returned (nothing new is started
    /// then). `Ok(false)` if no thread can take the commit: nothing changed, commit here.
    pub(crate) fn commit_in_background(
        &mut self,
        log: &LogWriter,
        sync_log: bool,
    ) -> Result<bool, IndexError> {
        self.land()?;
        let Some(db) = self.db.take() else {
            return Err(IndexError::damaged_earlier(&self.path));
        };
        let new_types = self.types.take_unsaved(&mut self.meta);
        let job = Job {
            db,
            rows: std::mem::replace(&mut self.buffer, std::mem::take(&mut self.spare)),
            new_types,
            meta: self.meta.clone(),
            sync_log,
        };
        let Err(job) = self.committer.send(job, log, &self.path, &self.log_path) else {
            return Ok(true);
        };
        let Job {
            db,
            rows,
            new_types,
            ..
        } = *job;
        self.db = Some(db);
        self.spare = std::mem::replace(&mut self.buffer, rows);
        self.types.unsaved = new_types;
        Ok(false)
    }

    /// Waits for a commit on the commit thread, if any, takes the database back and returns
    /// the commit's outcome.
    pub(crate) fn land(&mut self) -> Result<(), IndexError> {
        match self.committer.land() {
            None => Ok(()),
            Some(Ok(landed)) => {
                // `None` if redb panicked on the thread (the handle gave its file up there).
                self.db = landed.db;
                self.spare = landed.rows;
                // The fold and checksum may have moved on for the next commit; what committing
                // computed is the seq runs' state, and the windows at its watermark.
                self.meta.seqs = landed.meta.seqs;
                if self.meta.watermark() == landed.meta.watermark() {
                    self.meta.head = landed.meta.head;
                    self.meta.tail = landed.meta.tail;
                }
                landed.result
            }
            // The database went down with the thread: rebuild as after a panic in redb.
            Some(Err(detail)) => Err(IndexError::damaged(&self.path, detail)),
        }
    }

    /// Lands a background commit whose outcome the caller does not act on: it is about to
    /// validate, replace or close the index anyway.
    fn settle(&mut self) {
        if let Err(e) = self.land() {
            tracing::warn!(index = %self.path.display(), error = %e, "a background index commit failed");
        }
    }

    /// Writes the queued rows and the current meta record in one durable commit. A panic
    /// inside redb is contained: the handle is given up and the index reported damaged.
    pub(crate) fn commit_buffer(&mut self) -> Result<(), IndexError> {
        self.land()?;
        let mut new_types = self.types.take_unsaved(&mut self.meta);
        let Some(database) = self.db.as_ref() else {
            return Err(IndexError::damaged_earlier(&self.path));
        };
        let (path, rows, meta) = (&self.path, &mut self.buffer, &mut self.meta);
        match commit_rows(database, path, rows, &mut new_types, meta) {
            Ok(()) => Ok(()),
            Err(CommitError::Failed(e)) => {
                // What the failed transaction did not take is still unsaved.
                self.types.unsaved = new_types;
                Err(e)
            }
            Err(CommitError::Panicked(e)) => {
                // The handle redb panicked in gave its file up; dropping it forgets its database.
                self.db = None;
                Err(e)
            }
        }
    }
}

impl Drop for WritableIndex {
    fn drop(&mut self) {
        self.settle();
        if let Some(db) = self.db.take()
            && let Err(e) = close_contained(db, &self.path)
        {
            tracing::warn!(index = %self.path.display(), error = %e, "closing the index failed");
        }
    }
}

/// The syncs a build of this log from scratch skips: all of them if it is one commit (at most
/// `commit_bytes`), small enough to run unsynced and cheap to redo if a power cut tears it
/// (`derived/unsynced.rs`). Larger builds commit durably as they go, so a crash keeps their
/// progress.
fn syncs(log: &File, log_path: &Path, options: &IndexOptions) -> Result<Syncs, IndexError> {
    Ok(if log_len(log, log_path)? <= options.commit_bytes {
        Syncs::SkippedForNewFile
    } else {
        Syncs::Kept
    })
}

/// Opens a new index file where none is (the caller removed the old one).
fn open_fresh(path: &Path, options: &IndexOptions, syncs: Syncs) -> Result<Opened, Unwritable> {
    match storage::open_writable(path, &options.settings(syncs)) {
        Ok(opened) => Ok(opened),
        Err(OpenFailure::Busy) => Err(Unwritable::Busy),
        Err(OpenFailure::NotWritable(why)) => Err(Unwritable::NotWritable(why)),
        Err(OpenFailure::Damaged(cause)) => Err(Unwritable::Failed(fresh_failed(path, cause))),
    }
}
