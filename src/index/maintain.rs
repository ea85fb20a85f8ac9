//! Bringing a writable index up to date: validate, then catch up on new complete lines, or
//! rebuild from the log. Used by readers that find the index free and by the writer.
//!
//! A damaged index file can make redb panic, on reads and on writes. Reads are guarded by
//! `catch_unwind`; writes too, and after a panic inside redb the `Database` is leaked instead
//! of dropped (dropping it can panic again while unwinding, which aborts the process; the
//! fuzzer found such a file). A damaged index is then rebuilt from the log.
//!
//! Some damage makes redb panic twice inside one commit (a drop while unwinding), which
//! aborts the process whatever we catch. To stop such a file from killing every process
//! that opens it, a marker file sits beside the index while a commit or close is in
//! progress ([`CommitMarker`]); a writable open that finds one left behind never writes to
//! that file again and rebuilds the index from the log.
//!
//! A new index for a small log is built without syncs ([`UnsyncedBuild`], FORMAT.md §2.3) and
//! synced once at the end: at the close for a reader ([`Then::Close`]), before the open
//! returns for the writer ([`Then::Write`]).

use std::fs::File;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{Database, ReadableDatabase};

use super::committer::{Committer, Job};
use super::db::{self, Opened, RepairFlag, UnsyncedBuild, WritableOpenError, panic_message};
use super::rows::{Row, RowBuffer, TypeMap};
use super::schema::{Meta, PARSER_VERSION, SeqState, TypesSum};
use super::validate::{self, Expected, Loaded, Validity};
use super::{IndexError, IndexOptions, IndexOutcome, StaleReason};
use crate::event::{EventFields, FoldState, Folded, Folder, LineMemo, LineProblem};
use crate::log::{LineScanner, LogError, LogPaths, LogWriter, ReadAhead, Run, WindowSum};

/// Progress of a long build: bytes done and bytes to do.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Why a writable open did not happen.
pub(crate) enum Unwritable {
    /// Another process holds the index for writing.
    Busy,
    /// The index cannot be written here.
    NotWritable(String),
    /// Any other failure.
    Failed(IndexError),
}

impl From<IndexError> for Unwritable {
    fn from(e: IndexError) -> Unwritable {
        Unwritable::Failed(e)
    }
}

/// What to do with the index found on disk.
enum Plan {
    /// No index (or an empty one): build it.
    Create,
    /// A valid index: index new lines, if any.
    Update,
    /// An index that must not be trusted: rebuild it.
    Rebuild(StaleReason),
}

/// What the caller does with a [`WritableIndex`] once it is up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Then {
    /// Closes it at once (a reader that found the index free): a build from scratch stays
    /// unsynced until the close (see [`UnsyncedBuild`]).
    Close,
    /// Keeps writing to it (the writer): a build from scratch is synced before the open
    /// returns, so every later commit is durable as usual.
    Write,
}

/// An index open for writing, with its meta record and type names in memory.
pub(crate) struct WritableIndex {
    /// `None` after a write panicked inside redb: that database was leaked, see the module docs.
    db: Option<Database>,
    /// A build from scratch whose syncs are being skipped, until `make_durable` or the close.
    unsynced: Option<Arc<UnsyncedBuild>>,
    /// What the caller does once the index is up to date.
    then: Then,
    pub(crate) path: PathBuf,
    log_path: PathBuf,
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

pub(crate) fn storage(path: &Path, e: impl std::fmt::Display) -> IndexError {
    IndexError::Storage {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

/// A redb failure: an I/O failure of the disk ([`IndexError::Io`]), or anything else, which
/// means the file is not a sound index ([`IndexError::Storage`]). A read past the end of the
/// file is the latter: the file is shorter than its own pages say (damaged or truncated).
pub(crate) fn redb_failure(path: &Path, e: impl Into<redb::Error>) -> IndexError {
    match e.into() {
        redb::Error::Io(source) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
            storage(path, source)
        }
        redb::Error::Io(source) => IndexError::Io {
            path: path.to_path_buf(),
            source,
        },
        redb::Error::PreviousIo => IndexError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(
                "an earlier I/O error left the index unusable until it is reopened",
            ),
        },
        other => storage(path, other),
    }
}

/// A failure to read the log (as opposed to the index).
pub(crate) fn log_read(log: &Path, e: std::io::Error) -> IndexError {
    IndexError::Log(LogError::io("read", log, e))
}

pub(crate) fn expected(options: &IndexOptions) -> Expected {
    Expected {
        profile: options.fingerprint(),
        max_line: options.max_line as u64,
    }
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
        .map_err(|e| log_read(log_path, e))
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
        let path = &paths.index;
        let repair = RepairFlag::default();
        let defer_syncs = small_build(log, &paths.log, options)?;
        let (opened, damaged) = match db::open_writable(
            path,
            &repair,
            options.repair_budget,
            options.faults.as_ref(),
            defer_syncs,
        ) {
            // Holding the index for writing, a marker left behind is a dead process's (or a
            // power cut's). The marker of a new file this open is building unsynced is its own.
            Ok(opened)
                if !opened.unsynced.as_ref().is_some_and(|u| u.is_deferring())
                    && (CommitMarker::left_behind(path) || UnsyncedBuild::left_behind(path)) =>
            {
                tracing::warn!(index = %path.display(), "a commit to the index never finished; rebuilding it");
                // Closing it writes to it: leak the handle (its file is unlinked just below).
                std::mem::forget(opened.db);
                remove_index(path)?;
                (
                    open_fresh(path, options, defer_syncs)?,
                    Some(StaleReason::CommitInterrupted),
                )
            }
            Ok(opened) => (opened, None),
            Err(WritableOpenError::Busy) => return Err(Unwritable::Busy),
            Err(WritableOpenError::NotWritable(why)) => return Err(Unwritable::NotWritable(why)),
            Err(WritableOpenError::Damaged(detail)) => {
                remove_index(path)?;
                (
                    open_fresh(path, options, defer_syncs)?,
                    Some(StaleReason::Unreadable { detail }),
                )
            }
        };
        let mut index = WritableIndex::new(paths, opened, then, options);
        index.repaired = repair.happened();
        if index.repaired {
            tracing::warn!(index = %path.display(), "index repaired after an unclean shutdown");
        }
        let plan = match damaged {
            // The file was just recreated: nothing to reset.
            Some(reason) => Plan::Rebuild(reason),
            None => index.plan(log, options)?,
        };
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
        let opened = open_fresh(
            &paths.index,
            options,
            small_build(log, &paths.log, options)?,
        )?;
        let mut index = WritableIndex::new(paths, opened, Then::Close, options);
        let outcome = index.run(Plan::Rebuild(reason), log, options, &mut |_, _| {})?;
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
        let opened = open_fresh(&paths.index, options, true)?;
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
        let plan = self.plan(log, options)?;
        self.run(plan, log, options, progress)
    }

    pub(crate) fn database(&self) -> Result<&Database, IndexError> {
        self.db.as_ref().ok_or_else(|| damaged_earlier(&self.path))
    }

    /// Decides what to do; a stale index is reset to an empty one here.
    fn plan(&mut self, log: &File, options: &IndexOptions) -> Result<Plan, Unwritable> {
        let log_len = log_len(log, &self.log_path)?;
        let plan = self.load(log, log_len, options)?;
        if let Plan::Rebuild(reason) = &plan {
            let damaged = matches!(reason, StaleReason::Unreadable { .. });
            self.reset(log, options, damaged)?;
        }
        Ok(plan)
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
                (Plan::Rebuild(reason), work)
            }
            Err(e) => return Err(e.into()),
        };
        let outcome = match plan {
            Plan::Create => IndexOutcome::Created { bytes, events },
            Plan::Rebuild(reason) => IndexOutcome::Rebuilt {
                reason,
                bytes,
                events,
            },
            Plan::Update if bytes == 0 => IndexOutcome::Fresh,
            Plan::Update => IndexOutcome::CaughtUp { bytes, events },
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

    /// Ends an unsynced build (see [`UnsyncedBuild`]): the file is synced once and its marker
    /// removed, and from now on every commit syncs as usual.
    fn make_durable(&mut self, options: &IndexOptions) -> Result<(), IndexError> {
        match self.unsynced.take() {
            Some(unsynced) => unsynced
                .finish(options.faults.as_ref())
                .map_err(|e| redb_failure(&self.path, redb::Error::Io(e))),
            None => Ok(()),
        }
    }

    /// Replaces the index file with an empty one. The old database is closed, or leaked if it
    /// is damaged (closing a damaged database can panic).
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
        let fresh = open_fresh(
            &self.path,
            options,
            small_build(log, &self.log_path, options)?,
        )?;
        self.unsynced = fresh.unsynced;
        if let Some(old) = self.db.replace(fresh.db) {
            if damaged {
                std::mem::forget(old);
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

    /// Reads the meta record and type names and decides what to do.
    fn load(
        &mut self,
        log: &File,
        log_len: u64,
        options: &IndexOptions,
    ) -> Result<Plan, IndexError> {
        let db = match self.database() {
            Ok(db) => db,
            Err(e) => {
                return Ok(Plan::Rebuild(StaleReason::Unreadable {
                    detail: e.to_string(),
                }));
            }
        };
        let loaded = db::guarded("reading the index", || {
            let txn = db.begin_read()?;
            validate::load(&txn)
        });
        let (meta, types) = match loaded {
            Ok(Ok(Loaded::Empty)) => return Ok(Plan::Create),
            Ok(Ok(Loaded::Stale(reason))) => return Ok(Plan::Rebuild(reason)),
            Ok(Ok(Loaded::Found(meta, types))) => (meta, types),
            // A failing disk is not a damaged index: report it, keep the file.
            Ok(Err(e @ (redb::Error::Io(_) | redb::Error::PreviousIo))) => {
                return Err(redb_failure(&self.path, e));
            }
            // Any other read error or a panic inside redb means the file is damaged: rebuild.
            Ok(Err(e)) => {
                return Ok(Plan::Rebuild(StaleReason::Unreadable {
                    detail: e.to_string(),
                }));
            }
            Err(panic) => return Ok(Plan::Rebuild(StaleReason::Unreadable { detail: panic })),
        };
        let validity = validate::validate(&meta, &expected(options), log, log_len)
            .map_err(|e| log_read(&self.log_path, e))?;
        if let Validity::Stale(reason) = validity {
            return Ok(Plan::Rebuild(reason));
        }
        self.meta = *meta;
        self.types = types;
        Ok(Plan::Update)
    }

    /// Indexes the complete lines in `[watermark, limit)`, committing every
    /// `options.commit_bytes` so memory stays flat and a crash loses little work.
    ///
    /// When there is more than one commit's worth of lines, reading and folding the log runs
    /// on this thread while a second thread writes the previous chunk's rows and commits
    /// them: the two halves of a build cost about the same, so a build takes about half the
    /// time on two cores.
    pub(crate) fn catch_up(
        &mut self,
        log: &File,
        limit: u64,
        options: &IndexOptions,
        progress: Progress<'_>,
    ) -> Result<(u64, u64), IndexError> {
        let start = self.meta.watermark();
        if limit <= start {
            return Ok((0, 0));
        }
        let events_before = self.meta.fold.events;
        let pipelined;
        let options = match self.unsynced_chunk(limit - start, options) {
            Some(chunk) => {
                pipelined = IndexOptions {
                    commit_bytes: chunk,
                    ..options.clone()
                };
                &pipelined
            }
            None => options,
        };
        let two_threads = options.two_threads
            && limit - start > options.commit_bytes.max(1)
            && self.catch_up_in_two_threads(log, limit, options, progress)?;
        if !two_threads {
            let log_path = self.log_path.clone();
            let mut reader = ChunkReader::new(log, start, limit, &self.meta, options, &log_path);
            let mut checked = (start, self.meta.running_crc);
            loop {
                let finished = reader.fold_chunk(&mut self.buffer, &mut self.types)?;
                reader.advance(&mut self.meta);
                self.refresh_windows(log)?;
                let end = reader.scanner.end();
                if end - checked.0 <= REREAD_BYTES
                    && !crate::log::bytes_unchanged(log, checked, end, self.meta.running_crc)
                        .map_err(|e| log_read(&log_path, e))?
                {
                    self.buffer.clear();
                    return Err(IndexError::LogChanged {
                        path: self.path.clone(),
                    });
                }
                checked = (end, self.meta.running_crc);
                // The index must never cover bytes a power loss could take away, whoever
                // wrote them (an external writer may never sync): sync the log first.
                log.sync_data().map_err(|e| log_read(&log_path, e))?;
                self.commit_buffer()?;
                progress(reader.scanner.end() - start, limit - start);
                if finished {
                    break;
                }
            }
        }
        Ok((
            self.meta.watermark() - start,
            self.meta.fold.events - events_before,
        ))
    }

    /// The chunk a build without syncs ([`UnsyncedBuild`]) of `bytes` of log, one commit's
    /// worth or less, commits in when it is large enough to run on two threads: its commits
    /// write no `fdatasync`, so a quarter of the log per commit lets the two halves overlap
    /// for most of it. `None` keeps the usual `commit_bytes` (a longer build is on two threads
    /// already, in chunks of that size, which also bounds its memory).
    fn unsynced_chunk(&self, bytes: u64, options: &IndexOptions) -> Option<u64> {
        let deferring = self.unsynced.as_ref().is_some_and(|u| u.is_deferring());
        let sized = (2 * MIN_UNSYNCED_CHUNK..=options.commit_bytes).contains(&bytes);
        (deferring && options.two_threads && sized).then(|| (bytes / 4).max(MIN_UNSYNCED_CHUNK))
    }

    /// The two-thread form of [`WritableIndex::catch_up`]: this thread reads and folds lines
    /// into rows while a helper writes and commits the previous chunk's rows. `Ok(false)` if
    /// the helper could not be started (nothing was done then). On success `self.meta` is the
    /// meta record of the last commit; on failure it may be ahead of the file, as after any
    /// failed commit (the next open validates the file, not this copy).
    fn catch_up_in_two_threads(
        &mut self,
        log: &File,
        limit: u64,
        options: &IndexOptions,
        progress: Progress<'_>,
    ) -> Result<bool, IndexError> {
        let start = self.meta.watermark();
        let WritableIndex {
            db,
            path,
            log_path,
            meta,
            types,
            buffer,
            ..
        } = self;
        let Some(database) = db.as_ref() else {
            return Err(damaged_earlier(path));
        };
        // A rendezvous: at most one chunk is being written while the next one is folded.
        let (to_writer, chunks) = std::sync::mpsc::sync_channel::<Chunk>(0);
        let (to_reader, spent) = std::sync::mpsc::sync_channel::<RowBuffer>(1);
        // Kept by the writer (it sees the stored seq runs), carried across its commits.
        let mut seqs = meta.seqs;
        let Some((read, written)) = std::thread::scope(|scope| {
            let path: &Path = path;
            let log_path: &Path = log_path;
            let spawned = std::thread::Builder::new()
                .name("agentlog-index-writer".to_owned())
                .spawn_scoped(scope, move || -> Result<SeqState, CommitError> {
                    for mut chunk in chunks {
                        log.sync_data()
                            .map_err(|e| CommitError::Failed(log_read(log_path, e)))?;
                        chunk.meta.seqs = seqs;
                        commit_rows(
                            database,
                            path,
                            &mut chunk.rows,
                            &mut chunk.new_types,
                            &mut chunk.meta,
                        )?;
                        seqs = chunk.meta.seqs;
                        // For reuse; never wait for the reader, which may be done (or
                        // holding a spare already): then the buffer is simply dropped.
                        let _ = to_reader.try_send(chunk.rows);
                    }
                    Ok(seqs)
                });
            let Ok(writer) = spawned else {
                return None;
            };
            let mut reader = ChunkReader::new(log, start, limit, meta, options, log_path);
            let mut rows = std::mem::take(buffer);
            let read = loop {
                let finished = match reader.fold_chunk(&mut rows, types) {
                    Ok(finished) => finished,
                    Err(e) => break Err(e),
                };
                reader.advance(meta);
                if let Err(e) = windows(meta, log, path, log_path) {
                    break Err(e);
                }
                let new_types = types.take_unsaved(meta);
                let chunk = Chunk {
                    rows,
                    meta: meta.clone(),
                    new_types,
                };
                if to_writer.send(chunk).is_err() {
                    // The writer stopped on an error, returned below.
                    break Ok(());
                }
                progress(reader.scanner.end() - start, limit - start);
                if finished {
                    break Ok(());
                }
                rows = spent.try_recv().unwrap_or_default();
            };
            drop(to_writer);
            drop(spent);
            Some((read, writer.join()))
        }) else {
            tracing::debug!(index = %path.display(), "cannot start the index writer thread; building on one");
            return Ok(false);
        };
        let seqs = match written {
            Ok(Ok(seqs)) => seqs,
            Ok(Err(CommitError::Failed(e))) => return Err(e),
            Ok(Err(CommitError::Panicked(e))) => {
                leak(db, path);
                return Err(e);
            }
            // Every redb call in the writer is contained; anything else panicking is a bug,
            // but the database it was using is not to be trusted or closed either.
            Err(panic) => {
                leak(db, path);
                return Err(IndexError::Damaged {
                    path: path.clone(),
                    detail: format!(
                        "the index writer thread panicked: {}",
                        panic_message(&*panic)
                    ),
                });
            }
        };
        read?;
        meta.seqs = seqs;
        Ok(true)
    }

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
            return Err(damaged_earlier(&self.path));
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
                // `None` if redb panicked on the thread: the handle was leaked there.
                self.db = landed.db;
                if self.db.is_none() {
                    unlink_leaked(&self.path);
                }
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
            Some(Err(detail)) => Err(IndexError::Damaged {
                path: self.path.clone(),
                detail,
            }),
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
    /// inside redb is contained: the database is leaked and the index reported damaged.
    pub(crate) fn commit_buffer(&mut self) -> Result<(), IndexError> {
        self.land()?;
        let WritableIndex {
            db,
            path,
            meta,
            types,
            buffer,
            ..
        } = self;
        let Some(database) = db.as_ref() else {
            return Err(damaged_earlier(path));
        };
        let mut new_types = types.take_unsaved(meta);
        match commit_rows(database, path, buffer, &mut new_types, meta) {
            Ok(()) => Ok(()),
            Err(CommitError::Failed(e)) => {
                // What the failed transaction did not take is still unsaved.
                types.unsaved = new_types;
                Err(e)
            }
            Err(CommitError::Panicked(e)) => {
                leak(db, path);
                Err(e)
            }
        }
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
            // The handle was leaked after a panic and still holds the file's lock, so opening
            // the same file again would look busy. `plan` finds no handle and rebuilds into a
            // fresh file.
            None => return Ok(()),
        }
        // Closing finished any unsynced build.
        self.unsynced = None;
        let repair = RepairFlag::default();
        match db::open_writable(
            &self.path,
            &repair,
            options.repair_budget,
            options.faults.as_ref(),
            false,
        ) {
            Ok(opened) => {
                self.db = Some(opened.db);
                Ok(())
            }
            Err(WritableOpenError::Busy) => Err(Unwritable::Busy),
            Err(WritableOpenError::NotWritable(why)) => Err(Unwritable::NotWritable(why)),
            // `plan` will find the missing handle and rebuild.
            Err(WritableOpenError::Damaged(_)) => Ok(()),
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
            Err(IndexError::Damaged { detail, .. } | IndexError::Storage { detail, .. }) => detail,
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
            Err(Unwritable::Busy | Unwritable::NotWritable(_)) => Err(IndexError::Damaged {
                path: paths.index.clone(),
                detail: "damaged at close, and could not be rebuilt".to_owned(),
            }),
        }
    }
}

/// Closes a writable database, containing a panic inside redb (a damaged file can make saving
/// its allocator state panic). Closing explicitly matters: `close` marks the database closed
/// before it works, so its `Drop` does not try again while a panic unwinds (which would abort);
/// an implicit drop has no such guard.
fn close_contained(db: Database, path: &Path) -> Result<(), IndexError> {
    let _marker = CommitMarker::begin(path);
    match catch_unwind(AssertUnwindSafe(|| db.close())) {
        Ok(result) => result.map_err(|e| redb_failure(path, e)),
        Err(panic) => Err(IndexError::Damaged {
            path: path.to_path_buf(),
            detail: format!("redb panicked while closing: {}", panic_message(&*panic)),
        }),
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

/// Reads log lines and folds them into rows, one commit's worth at a time.
///
/// Lines are read in runs of up to [`RUN_BYTES`]. Extraction, which is most of a build's
/// reading half, is split over two threads for a large run (see [`fold_run`]); the fold itself
/// stays in file order on this thread.
struct ChunkReader<'a> {
    folder: Folder,
    scanner: LineScanner<'a>,
    /// The buffer the extraction helper reads the next run into (see [`fold_run`]).
    spare: Vec<u8>,
    commit_bytes: u64,
    /// Whether a run may be extracted on two threads (`IndexOptions::two_threads`).
    two_threads: bool,
    log_path: &'a Path,
}

/// The most a run of lines holds: large enough that starting a helper thread for its second
/// part (tens of microseconds) is small next to extracting it (a few milliseconds).
const RUN_BYTES: usize = 4 << 20;

/// Runs smaller than this are extracted on one thread.
const TWO_THREAD_RUN: usize = 512 << 10;

impl<'a> ChunkReader<'a> {
    /// Reads `[start, limit)` of `log`, continuing from `meta`'s fold, whose watermark must be
    /// `start`.
    fn new(
        log: &'a File,
        start: u64,
        limit: u64,
        meta: &Meta,
        options: &IndexOptions,
        log_path: &'a Path,
    ) -> ChunkReader<'a> {
        ChunkReader {
            folder: Folder::new(options.extractor(), meta.fold.clone()),
            scanner: LineScanner::with_buffer(
                log,
                start,
                limit,
                options.max_line,
                meta.running_crc,
                RUN_BYTES,
            ),
            spare: Vec::new(),
            commit_bytes: options.commit_bytes.max(1),
            two_threads: options.two_threads,
            log_path,
        }
    }

    /// Folds lines into `rows` until `commit_bytes` of log are read (at least one line) or the
    /// end is reached; says whether it was.
    fn fold_chunk(
        &mut self,
        rows: &mut RowBuffer,
        types: &mut TypeMap,
    ) -> Result<bool, IndexError> {
        let chunk_start = self.scanner.end();
        loop {
            let done = self.scanner.end() - chunk_start;
            if done >= self.commit_bytes {
                return Ok(false);
            }
            let budget = usize::try_from(self.commit_bytes - done)
                .map_or(RUN_BYTES, |left| left.min(RUN_BYTES));
            let found = self
                .scanner
                .advance_run(budget)
                .map_err(|e| log_read(self.log_path, e))?;
            let Some(found) = found else {
                return Ok(true);
            };
            match self.scanner.run(found) {
                Run::TooLong { offset, len } => {
                    self.folder.fold_too_long(offset, len);
                    let folded = Folded::Skipped(LineProblem::TooLong);
                    if let Some(row) = Row::from_folded(&folded, offset, self.folder.state(), types)
                    {
                        rows.push(row);
                    }
                }
                Run::Lines {
                    offset,
                    bytes,
                    ends,
                } => {
                    let run = RunLines {
                        offset,
                        bytes,
                        ends,
                    };
                    let next = NextRun {
                        scanner: &self.scanner,
                        spare: &mut self.spare,
                    };
                    let ahead =
                        fold_run(&mut self.folder, run, self.two_threads, next, rows, types);
                    if let Some(ahead) = ahead {
                        self.spare = self.scanner.adopt(ahead);
                    }
                }
            }
        }
    }

    /// Moves `meta`'s fold and running checksum to where the reader is (windows aside).
    fn advance(&mut self, meta: &mut Meta) {
        meta.fold = self.folder.state().clone();
        meta.running_crc = self.scanner.crc();
    }
}

/// A [`Run::Lines`], with its lines' offsets and bytes.
#[derive(Clone, Copy)]
struct RunLines<'b> {
    offset: u64,
    bytes: &'b [u8],
    ends: &'b [usize],
}

impl<'b> RunLines<'b> {
    /// The run's lines cut into at most `count` ranges of about equal bytes, in order.
    fn pieces(self, count: usize) -> Vec<std::ops::Range<usize>> {
        let total = self.bytes.len().max(1);
        let mut pieces = Vec::with_capacity(count);
        let mut start = 0;
        for k in 1..=count {
            let bytes = total / count * k;
            let end = if k == count {
                self.ends.len()
            } else {
                self.ends.partition_point(|&e| e <= bytes).max(start)
            };
            if end > start {
                pieces.push(start..end);
                start = end;
            }
        }
        pieces
    }

    /// The lines `range` of the run: (offset, line without its `\n`).
    fn lines(self, range: std::ops::Range<usize>) -> impl Iterator<Item = (u64, &'b [u8])> {
        let first = range.start;
        let start = first
            .checked_sub(1)
            .and_then(|i| self.ends.get(i))
            .copied()
            .unwrap_or(0);
        let ends = self.ends.get(range).unwrap_or(&[]);
        ends.iter().scan(start, move |start, &end| {
            let line = (
                self.offset + *start as u64,
                self.bytes.get(*start..end - 1).unwrap_or(&[]),
            );
            *start = end;
            Some(line)
        })
    }
}

/// The scanner a run came from, and a buffer for reading the run after it.
struct NextRun<'s, 'f> {
    scanner: &'s LineScanner<'f>,
    spare: &'s mut Vec<u8>,
}

/// Extracts and folds the lines of `run` into `rows`, in file order. A large run is cut into
/// [`RUN_PIECES`] pieces: this thread takes pieces from the front, extracting and folding each,
/// while a scoped helper first reads the next run ahead into `next.spare`
/// ([`LineScanner::read_ahead`]), then extracts pieces from the back (see [`Pieces`]); they
/// meet wherever the load puts them, so neither waits on a split fixed in advance (the index
/// writer shares the second core). Returns the run read ahead, if any. If the helper cannot
/// start, this thread does it all.
fn fold_run(
    folder: &mut Folder,
    run: RunLines<'_>,
    two_threads: bool,
    next: NextRun<'_, '_>,
    rows: &mut RowBuffer,
    types: &mut TypeMap,
) -> Option<ReadAhead> {
    let mut fold = |folder: &mut Folder, offset: u64, line: &[u8], extracted| {
        let folded = folder.fold_extracted(offset, line, extracted);
        if let Some(row) = Row::from_folded(&folded, offset, folder.state(), types) {
            rows.push(row);
        }
    };
    let count = run.ends.len();
    if !two_threads || run.bytes.len() < TWO_THREAD_RUN {
        for (offset, line) in run.lines(0..count) {
            let extracted = folder.extract(line);
            fold(folder, offset, line, extracted);
        }
        return None;
    }
    let pieces = run.pieces(RUN_PIECES);
    let shared = Pieces::new(pieces.len());
    // The helper's own copy: this thread's folder is borrowed mutably meanwhile.
    let extractor = folder.extractor().clone();
    std::thread::scope(|scope| {
        let started = std::thread::Builder::new()
            .name("agentlog-extract".to_owned())
            .spawn_scoped(scope, || {
                let _gone = shared.helper_guard();
                // The read this thread would wait for after the run, while it has a core.
                let ahead = next.scanner.read_ahead(next.spare);
                let mut memo = LineMemo::new();
                while let Some(i) = shared.claim_back() {
                    let lines = pieces.get(i).cloned().unwrap_or(0..0);
                    let extracted = run
                        .lines(lines)
                        .map(|(_, l)| extractor.extract_with_memo(&mut memo, l));
                    shared.fill(i, extracted.collect());
                }
                ahead
            });
        if started.is_err() {
            shared.helper_gone();
        }
        let helper = started.ok();
        for (i, lines) in pieces.iter().enumerate() {
            // The helper's result, or `None`: this thread extracts the piece.
            let theirs = if shared.claim_front(i) {
                None
            } else {
                shared.wait(i)
            };
            match theirs {
                Some(extracted) => {
                    for ((offset, line), fields) in run.lines(lines.clone()).zip(extracted) {
                        fold(folder, offset, line, fields);
                    }
                }
                None => {
                    for (offset, line) in run.lines(lines.clone()) {
                        let extracted = folder.extract(line);
                        fold(folder, offset, line, extracted);
                    }
                }
            }
        }
        // Joined here, so that a helper that panicked (a bug) does not make the scope panic:
        // its pieces were extracted on this thread instead, and the next run is read here.
        helper.and_then(|helper| helper.join().ok().flatten())
    })
}

/// How many pieces a run extracted on two threads is cut into: enough that the two threads
/// meet within a piece or two of the balanced point, few enough that claiming one is rare.
const RUN_PIECES: usize = 16;

/// The extracted lines of one piece of a run.
type Extracted<'b> = Vec<Result<EventFields<'b>, LineProblem>>;

/// Pieces of a run shared by this thread, which claims them from the front, and the helper,
/// which claims them from the back and leaves its results in their slots.
struct Pieces<'b> {
    claims: std::sync::Mutex<Claims>,
    slots: Vec<std::sync::Mutex<Option<Extracted<'b>>>>,
    filled: std::sync::Condvar,
}

/// Who holds which pieces of a run.
struct Claims {
    /// The pieces `front..back` are not claimed yet.
    front: usize,
    back: usize,
    /// The helper has stopped (or never started): it fills no more slots.
    helper_gone: bool,
}

/// Marks the helper gone when dropped, also while unwinding from a panic, so that this thread
/// never waits for a piece that will not come.
struct HelperGuard<'p, 'b>(&'p Pieces<'b>);

impl Drop for HelperGuard<'_, '_> {
    fn drop(&mut self) {
        self.0.helper_gone();
    }
}

impl<'b> Pieces<'b> {
    fn new(count: usize) -> Pieces<'b> {
        Pieces {
            claims: std::sync::Mutex::new(Claims {
                front: 0,
                back: count,
                helper_gone: false,
            }),
            slots: (0..count).map(|_| std::sync::Mutex::new(None)).collect(),
            filled: std::sync::Condvar::new(),
        }
    }

    fn lock_claims(&self) -> std::sync::MutexGuard<'_, Claims> {
        // The counters are whole after any panic: each is one assignment.
        self.claims
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Claims piece `i` for this thread if the helper has not: pieces are claimed from the
    /// front in order, so `i` is the front.
    fn claim_front(&self, i: usize) -> bool {
        let mut claims = self.lock_claims();
        if i == claims.front && claims.front < claims.back {
            claims.front += 1;
            true
        } else {
            false
        }
    }

    /// The last unclaimed piece, for the helper.
    fn claim_back(&self) -> Option<usize> {
        let mut claims = self.lock_claims();
        (claims.front < claims.back).then(|| {
            claims.back -= 1;
            claims.back
        })
    }

    fn fill(&self, i: usize, extracted: Extracted<'b>) {
        if let Some(slot) = self.slots.get(i) {
            *slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(extracted);
        }
        // Taken under the claims lock, so a waiter between its check and its wait sees it.
        let _claims = self.lock_claims();
        self.filled.notify_all();
    }

    fn helper_guard(&self) -> HelperGuard<'_, 'b> {
        HelperGuard(self)
    }

    fn helper_gone(&self) {
        let mut claims = self.lock_claims();
        claims.helper_gone = true;
        self.filled.notify_all();
    }

    /// Waits for the helper's result for piece `i`; `None` if the helper is gone without one.
    fn wait(&self, i: usize) -> Option<Extracted<'b>> {
        let take = || {
            self.slots
                .get(i)?
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        };
        let mut claims = self.lock_claims();
        loop {
            if let Some(extracted) = take() {
                return Some(extracted);
            }
            if claims.helper_gone {
                // Gone: it may still have filled the slot just before.
                return take();
            }
            claims = self
                .filled
                .wait(claims)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// One commit's worth of work for the writer thread.
struct Chunk {
    rows: RowBuffer,
    meta: Meta,
    new_types: Vec<(u32, String)>,
}

/// Why [`commit_rows`] failed.
pub(super) enum CommitError {
    /// An error to report; the database handle is still usable (or at least closable).
    Failed(IndexError),
    /// redb panicked: the database must be leaked, never dropped (see the module docs).
    Panicked(IndexError),
}

impl From<IndexError> for CommitError {
    fn from(e: IndexError) -> CommitError {
        CommitError::Failed(e)
    }
}

/// Writes `rows`, `new_types` and `meta` in one durable commit, containing a panic in redb.
pub(super) fn commit_rows(
    database: &Database,
    path: &Path,
    rows: &mut RowBuffer,
    new_types: &mut Vec<(u32, String)>,
    meta: &mut Meta,
) -> Result<(), CommitError> {
    // From the first row written, not only around redb's commit: damage in redb's allocator
    // can make it panic twice while rows are inserted (a table dropped while unwinding),
    // which aborts the process; the marker left behind makes the next one rebuild instead of
    // aborting the same way (found by the `index_file` fuzzer).
    let _marker = CommitMarker::begin(path);
    let attempt = catch_unwind(AssertUnwindSafe(|| {
        // Not dropped if redb panics: its drop could panic again while unwinding.
        let txn = ManuallyDrop::new(database.begin_write().map_err(|e| redb_failure(path, e))?);
        match rows.write(&txn, new_types, meta) {
            Ok(()) => commit(ManuallyDrop::into_inner(txn), path),
            Err(e) => {
                drop(ManuallyDrop::into_inner(txn));
                Err(redb_failure(path, e))
            }
        }
    }));
    match attempt {
        Ok(result) => Ok(result?),
        Err(panic) => {
            rows.clear();
            let detail = format!("redb panicked while committing: {}", panic_message(&*panic));
            tracing::error!(index = %path.display(), %detail, "index damaged");
            Err(CommitError::Panicked(IndexError::Damaged {
                path: path.to_path_buf(),
                detail,
            }))
        }
    }
}

/// Recomputes `meta`'s head and tail windows at its watermark.
pub(super) fn windows(
    meta: &mut Meta,
    log: &File,
    index: &Path,
    log_path: &Path,
) -> Result<(), IndexError> {
    let end = meta.watermark();
    let changed = || IndexError::LogChanged {
        path: index.to_path_buf(),
    };
    let read = |e: std::io::Error| log_read(log_path, e);
    meta.head = WindowSum::head(log, end)
        .map_err(read)?
        .ok_or_else(changed)?;
    meta.tail = WindowSum::tail(log, end)
        .map_err(read)?
        .ok_or_else(changed)?;
    Ok(())
}

/// Forgets a database that redb panicked in (dropping it could panic again and abort), and
/// unlinks its file.
fn leak(db: &mut Option<Database>, path: &Path) {
    if let Some(leaked) = db.take() {
        std::mem::forget(leaked);
    }
    unlink_leaked(path);
}

/// Unlinks the file of a leaked database handle. The handle keeps the file locked for the
/// rest of this process, so an open of the same path would wait on it and time out as busy
/// (a writer dropped right after a panic on its commit thread did); with the path free, the
/// next open builds a fresh index, as the rebuild that follows a leak would anyway.
fn unlink_leaked(path: &Path) {
    // Not being able to remove it is `remove_index`'s only error.
    if let Err(Unwritable::NotWritable(why)) = remove_index(path) {
        tracing::warn!(index = %path.display(), %why, "cannot unlink an index whose handle was leaked");
    }
}

fn damaged_earlier(path: &Path) -> IndexError {
    IndexError::Damaged {
        path: path.to_path_buf(),
        detail: "an earlier write panicked inside redb".to_owned(),
    }
}

fn commit(mut txn: redb::WriteTransaction, path: &Path) -> Result<(), IndexError> {
    // Saving allocator state makes recovery after a crash almost instant (no full repair).
    txn.set_quick_repair(true);
    txn.commit().map_err(|e| redb_failure(path, e))
}

/// A file beside the index (`<index>.committing`) that exists while this process writes rows
/// to the index and commits them, or closes it. It is removed when the commit returns or
/// unwinds (a panic caught and handled); only a dead process leaves it behind. Not synced: lost in a power cut, it
/// only means redb's own recovery is trusted, as it is after any unclean shutdown; left by
/// one, it costs one rebuild.
struct CommitMarker(PathBuf);

impl CommitMarker {
    fn path(index: &Path) -> PathBuf {
        let mut name = index.as_os_str().to_owned();
        name.push(".committing");
        PathBuf::from(name)
    }

    /// Creates the marker. Best effort: an index that can be committed to sits in a writable
    /// directory, and a missing marker only means a lost chance to skip a damaged file.
    fn begin(index: &Path) -> CommitMarker {
        let path = CommitMarker::path(index);
        if let Err(e) = File::create(&path) {
            tracing::debug!(marker = %path.display(), error = %e, "cannot create the commit marker");
        }
        CommitMarker(path)
    }

    /// Whether a marker exists. Call it only while holding the index for writing: then no
    /// live process can be committing.
    fn left_behind(index: &Path) -> bool {
        CommitMarker::path(index).exists()
    }
}

impl Drop for CommitMarker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Removes the index file, then the commit marker of the file it replaces (in that order, so
/// a crash in between leaves a marker without a file, never a suspect file without one).
fn remove_index(path: &Path) -> Result<(), Unwritable> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Unwritable::NotWritable(format!(
                "cannot remove the stale index: {e}"
            )));
        }
    }
    let _ = std::fs::remove_file(CommitMarker::path(path));
    UnsyncedBuild::remove_marker(path);
    Ok(())
}

/// Chunks of at most this many bytes are read again before they are committed
/// ([`crate::log::bytes_unchanged`]): for a catch-up that small the second read costs microseconds,
/// next to the milliseconds of the commit's syncs.
const REREAD_BYTES: u64 = 1 << 20;

/// The smallest chunk an unsynced build commits in on two threads: below it, a commit's fixed
/// writes (~30 pages) outweigh the overlap (a 1 MB log built in 256 KiB chunks was slower).
const MIN_UNSYNCED_CHUNK: u64 = 2 << 20;

/// Whether a build of this log from scratch is one commit (at most `commit_bytes`), small
/// enough to run unsynced and cheap to redo if a power cut tears it ([`UnsyncedBuild`]).
/// Larger builds commit durably as they go, so a crash keeps their progress.
fn small_build(log: &File, log_path: &Path, options: &IndexOptions) -> Result<bool, IndexError> {
    Ok(log_len(log, log_path)? <= options.commit_bytes)
}

fn open_fresh(
    path: &Path,
    options: &IndexOptions,
    defer_syncs: bool,
) -> Result<Opened, Unwritable> {
    match db::open_writable(
        path,
        &RepairFlag::default(),
        options.repair_budget,
        options.faults.as_ref(),
        defer_syncs,
    ) {
        Ok(opened) => Ok(opened),
        Err(WritableOpenError::Busy) => Err(Unwritable::Busy),
        Err(WritableOpenError::NotWritable(why)) => Err(Unwritable::NotWritable(why)),
        Err(WritableOpenError::Damaged(detail)) => Err(Unwritable::Failed(storage(path, detail))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `lens.len()` lines of the given lengths (each plus its `\n`).
    fn run_of(lens: &[usize]) -> (Vec<u8>, Vec<usize>) {
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for &len in lens {
            bytes.extend(std::iter::repeat_n(b'x', len));
            bytes.push(b'\n');
            ends.push(bytes.len());
        }
        (bytes, ends)
    }

    #[test]
    fn pieces_cover_every_line_once_in_order() {
        for lens in [
            vec![10; 1000],
            vec![5; 3],
            vec![1],
            vec![100_000, 3, 3, 3],
            (0..500).map(|i| (i * 37) % 700).collect(),
        ] {
            let (bytes, ends) = run_of(&lens);
            let run = RunLines {
                offset: 1000,
                bytes: &bytes,
                ends: &ends,
            };
            for count in [1, 2, 16, 2000] {
                let pieces = run.pieces(count);
                assert!(pieces.len() <= count && !pieces.is_empty());
                assert_eq!(pieces.first().map(|p| p.start), Some(0));
                assert_eq!(pieces.last().map(|p| p.end), Some(lens.len()));
                for pair in pieces.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start, "{pieces:?}");
                    assert!(pair[0].start < pair[0].end);
                }
                let lines: Vec<(u64, usize)> = pieces
                    .iter()
                    .flat_map(|p| run.lines(p.clone()))
                    .map(|(offset, line)| (offset, line.len()))
                    .collect();
                let mut offset = 1000;
                let expected: Vec<(u64, usize)> = lens
                    .iter()
                    .map(|&len| {
                        let at = offset;
                        offset += len as u64 + 1;
                        (at, len)
                    })
                    .collect();
                assert_eq!(lines, expected);
            }
        }
    }

    #[test]
    fn front_and_back_claims_meet_and_a_gone_helper_is_not_waited_for() {
        let pieces = Pieces::new(4);
        assert!(pieces.claim_front(0));
        assert_eq!(pieces.claim_back(), Some(3));
        assert_eq!(pieces.claim_back(), Some(2));
        assert!(pieces.claim_front(1));
        assert_eq!(pieces.claim_back(), None);
        assert!(!pieces.claim_front(2), "the helper holds it");
        pieces.fill(2, vec![Err(LineProblem::Blank)]);
        assert_eq!(pieces.wait(2), Some(vec![Err(LineProblem::Blank)]));
        // The helper goes without filling piece 3 (a panic, say): the caller is told.
        drop(pieces.helper_guard());
        assert_eq!(pieces.wait(3), None);
        // A helper that never started claims nothing: every piece is the caller's.
        let alone = Pieces::new(3);
        alone.helper_gone();
        assert!((0..3).all(|i| alone.claim_front(i)));
    }
}
