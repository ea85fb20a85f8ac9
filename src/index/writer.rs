//! [`Writer`]: appends events to the log and keeps the index current.
//!
//! The log is written first, then the event is folded into the in-memory state (so the O(1)
//! answers are current at once) and its rows are queued. Rows reach redb in groups, by a
//! [`CommitPolicy`]; until then other processes fold the few newest bytes themselves, so the
//! index never has to be current on disk to be correct.

use std::fs::File;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::error::Unwritable;
use super::open::{Then, WritableIndex};
use super::rows::Row;
use super::{IndexError, IndexOptions, IndexOutcome};
use crate::event::{EventFields, FoldState, Folded, Folder, LineProblem};
use crate::log::{Appended, Line, LineScanner, LogError, LogPaths, LogWriter, SyncPolicy};

/// When queued index rows are committed to redb. Each commit is durable (an fsync of the
/// log, then redb's two-phase commit), so commits are grouped; they run on a helper thread
/// (unless [`IndexOptions::two_threads`] is off), and an append waits only if the previous
/// commit is still running when the next one is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitPolicy {
    /// Commit once this many rows are queued.
    pub rows: usize,
    /// Commit once this many log bytes are unindexed on disk.
    pub bytes: u64,
    /// Commit once the oldest queued row is this old (checked on each append).
    pub interval: Duration,
}

impl Default for CommitPolicy {
    fn default() -> CommitPolicy {
        CommitPolicy {
            rows: 65_536,
            bytes: 8 << 20,
            interval: Duration::from_secs(1),
        }
    }
}

/// How a [`Writer`] writes.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// When an appended event is acknowledged.
    pub sync: SyncPolicy,
    /// How the log is read and indexed.
    pub index: IndexOptions,
    /// When index rows are committed.
    pub commit: CommitPolicy,
    /// How long to wait for another process (a reader catching the index up) to release the
    /// index before giving up.
    pub index_wait: Duration,
}

impl Default for WriterOptions {
    fn default() -> WriterOptions {
        WriterOptions {
            sync: SyncPolicy::Fsync,
            index: IndexOptions::default(),
            commit: CommitPolicy::default(),
            index_wait: Duration::from_secs(30),
        }
    }
}

/// The single writer of a log and its index.
pub struct Writer {
    paths: LogPaths,
    options: WriterOptions,
    log: LogWriter,
    index: WritableIndex,
    /// The fold over every line written so far (committed or not).
    folder: Folder,
    /// crc32 of `[0, folder.state().end)`.
    crc: crc32fast::Hasher,
    /// When the oldest row queued in the index's buffer was queued.
    pending_since: Option<Instant>,
    /// A commit failed: the rows it held are lost, so the index must be resynchronised with
    /// the log before the next commit.
    index_stale: bool,
    outcome: IndexOutcome,
    /// Reused write buffer.
    batch: Vec<u8>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("log", &self.paths.log)
            .field("end", &self.folder.state().end)
            .finish_non_exhaustive()
    }
}

impl Writer {
    /// Opens the log for writing (taking its lock; a second writer gets
    /// [`LogError::Locked`]) and brings its index up to date.
    pub fn open(paths: &LogPaths, options: WriterOptions) -> Result<Writer, IndexError> {
        let log = LogWriter::open_with(&paths.log, options.sync, options.index.faults().cloned())?;
        let started = Instant::now();
        let (index, outcome) = loop {
            match WritableIndex::open(
                paths,
                log.file(),
                &options.index,
                Then::Write,
                &mut |_, _| {},
            ) {
                Ok(opened) => break opened,
                Err(Unwritable::Busy) if started.elapsed() < options.index_wait => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(Unwritable::Busy) => {
                    return Err(IndexError::Busy {
                        path: paths.index.clone(),
                        waited: started.elapsed(),
                    });
                }
                Err(Unwritable::NotWritable(cause)) => {
                    return Err(IndexError::unavailable(&paths.index, cause));
                }
                Err(Unwritable::Failed(e)) => return Err(e),
            }
        };
        let folder = Folder::new(options.index.extractor(), index.meta.fold.clone());
        let crc = crc32fast::Hasher::new_with_initial(index.meta.running_crc);
        Ok(Writer {
            paths: paths.clone(),
            options,
            log,
            index,
            folder,
            crc,
            pending_since: None,
            index_stale: false,
            outcome,
            batch: Vec::new(),
        })
    }

    /// What opening the index found and did.
    pub fn outcome(&self) -> &IndexOutcome {
        &self.outcome
    }

    /// The facts over every line written so far: O(1), from memory.
    pub fn state(&self) -> &FoldState {
        self.folder.state()
    }

    /// The paths of the log and index.
    pub fn paths(&self) -> &LogPaths {
        &self.paths
    }

    /// Serializes `event` as one JSON line and appends it.
    pub fn append<T: Serialize + ?Sized>(&mut self, event: &T) -> Result<Appended, IndexError> {
        let bytes = serde_json::to_vec(event).map_err(|e| LogError::InvalidEvent {
            index: 0,
            reason: format!("cannot serialize: {e}"),
            source: Some(e),
        })?;
        self.append_json(&bytes)
    }

    /// Appends one event given as JSON text (a single object; newlines between tokens are
    /// allowed and written as spaces).
    pub fn append_json(&mut self, event: &[u8]) -> Result<Appended, IndexError> {
        // The one-event form of `append_batch_json`, without its per-call vectors.
        let fields = validate_event(&mut self.folder, event, self.options.index.max_line, 0)?;
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        push_normalized(event, &mut batch);
        let span = (0, batch.len() as u64);
        batch.push(b'\n');
        self.write(batch, [(span, fields)], |appended| receipt(appended, span))
    }

    /// Appends events in one write: if any is not a JSON object, none is written. Under
    /// [`SyncPolicy::Fsync`] they are on disk when this returns.
    pub fn append_batch_json<B: AsRef<[u8]>>(
        &mut self,
        events: &[B],
    ) -> Result<Vec<Appended>, IndexError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        // The fields borrow the caller's bytes, not the folder.
        let mut fields = Vec::with_capacity(events.len());
        for (index, event) in events.iter().enumerate() {
            fields.push(validate_event(
                &mut self.folder,
                event.as_ref(),
                self.options.index.max_line,
                index,
            )?);
        }
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let mut spans = Vec::with_capacity(events.len());
        for event in events {
            let start = batch.len();
            push_normalized(event.as_ref(), &mut batch);
            spans.push((start as u64, (batch.len() - start) as u64));
            batch.push(b'\n');
        }
        let lines = spans.iter().copied().zip(fields);
        self.write(batch, lines, |appended| {
            spans.iter().map(|&span| receipt(appended, span)).collect()
        })
    }

    /// Appends `batch` (whole lines) in one write, folds `lines` (their spans in it and their
    /// fields) and starts an index commit if one is due; `receipts` says where the events went.
    fn write<'e, R>(
        &mut self,
        batch: Vec<u8>,
        lines: impl IntoIterator<Item = ((u64, u64), EventFields<'e>)>,
        receipts: impl FnOnce(Appended) -> R,
    ) -> Result<R, IndexError> {
        let result = self
            .log
            .append(&batch)
            .map_err(IndexError::from)
            .and_then(|appended| {
                self.absorb(appended, &batch, lines)?;
                Ok(receipts(appended))
            });
        // Kept for the next call's buffer.
        self.batch = batch;
        let receipts = result?;
        self.commit_if_due();
        Ok(receipts)
    }

    /// Folds a successful write into the state and queues its rows. `lines` are the events'
    /// `(start, len)` spans in `batch` (newline excluded) with their fields.
    fn absorb<'e>(
        &mut self,
        appended: Appended,
        batch: &[u8],
        lines: impl IntoIterator<Item = ((u64, u64), EventFields<'e>)>,
    ) -> Result<(), IndexError> {
        let expected = self.folder.state().end;
        if appended.start < expected {
            // The log shrank under us: only a full validation can say what it holds now.
            tracing::warn!(log = %self.paths.log.display(), expected, found = appended.start, "log truncated under the writer");
            return self.resync();
        }
        if appended.start > expected {
            // Another program appended while we hold the writer lock: index its lines first.
            tracing::warn!(log = %self.paths.log.display(), bytes = appended.start - expected, "indexing lines appended by another program");
            self.absorb_foreign(appended.start)?;
            if self.folder.state().end != appended.start {
                return self.resync();
            }
        }
        for ((start, len), fields) in lines {
            let offset = appended.start + start;
            let span = usize::try_from(start)
                .ok()
                .zip(usize::try_from(start + len).ok());
            let line = span
                .and_then(|(from, to)| batch.get(from..to))
                .unwrap_or_default();
            let folded = self.folder.fold_extracted(offset, line, Ok(fields));
            self.queue(&folded, offset);
        }
        self.crc.update(batch);
        Ok(())
    }

    fn queue(&mut self, folded: &Folded<'_>, offset: u64) {
        if let Some(row) =
            Row::from_folded(folded, offset, self.folder.state(), &mut self.index.types)
        {
            self.index.buffer.push(row);
            self.pending_since.get_or_insert_with(Instant::now);
        }
    }

    /// Folds lines another program appended, up to `until`.
    fn absorb_foreign(&mut self, until: u64) -> Result<(), IndexError> {
        let start = self.folder.state().end;
        let file: &File = self.log.file();
        let crc = self.crc.clone().finalize();
        let mut scanner = LineScanner::new(file, start, until, self.options.index.max_line, crc);
        while let Some(line) = scanner
            .next_line()
            .map_err(|e| IndexError::log_read(&self.paths.log, e))?
        {
            let (offset, folded) = match line {
                Line::Complete { offset, bytes } => (offset, self.folder.fold_line(offset, bytes)),
                Line::TooLong { offset, len } => {
                    self.folder.fold_too_long(offset, len);
                    (offset, Folded::Skipped(LineProblem::TooLong))
                }
            };
            if let Some(row) =
                Row::from_folded(&folded, offset, self.folder.state(), &mut self.index.types)
            {
                self.index.buffer.push(row);
            }
        }
        self.crc = crc32fast::Hasher::new_with_initial(scanner.crc());
        self.pending_since.get_or_insert_with(Instant::now);
        Ok(())
    }

    /// Drops queued rows and re-validates the index against the log, rebuilding if needed.
    fn resync(&mut self) -> Result<(), IndexError> {
        // A commit still running is of no interest: the index is validated again below.
        if let Err(e) = self.index.land() {
            tracing::warn!(index = %self.paths.index.display(), error = %e, "a background index commit failed");
        }
        self.index.buffer.clear();
        self.pending_since = None;
        let unwritable = |e| match e {
            Unwritable::Failed(e) => e,
            Unwritable::Busy | Unwritable::NotWritable(_) => {
                IndexError::storage(&self.paths.index, "index lost during resync")
            }
        };
        self.index.reopen(&self.options.index).map_err(unwritable)?;
        let outcome = self
            .index
            .update(self.log.file(), &self.options.index, &mut |_, _| {})
            .map_err(|e| match e {
                Unwritable::Failed(e) => e,
                Unwritable::Busy | Unwritable::NotWritable(_) => {
                    IndexError::storage(&self.paths.index, "index lost during resync")
                }
            })?;
        tracing::warn!(index = %self.paths.index.display(), %outcome, "index resynchronised with the log");
        self.folder = Folder::new(self.options.index.extractor(), self.index.meta.fold.clone());
        self.crc = crc32fast::Hasher::new_with_initial(self.index.meta.running_crc);
        Ok(())
    }

    /// Starts a commit when the policy says one is due: on the index's commit thread, so this
    /// append does not wait for it (unless the previous commit is still running).
    fn commit_if_due(&mut self) {
        let policy = &self.options.commit;
        let unindexed = self.folder.state().end - self.index.meta.watermark();
        let due = self.index.buffer.len() >= policy.rows
            || unindexed >= policy.bytes
            || self
                .pending_since
                .is_some_and(|t| t.elapsed() >= policy.interval);
        if !due {
            return;
        }
        let committed = if self.options.index.two_threads {
            self.land().and_then(|()| self.start_commit())
        } else {
            self.commit_index()
        };
        // The events are in the log, which is the truth: an index failure must not turn an
        // append the caller would then retry (and duplicate) into an error.
        if let Err(e) = committed {
            tracing::error!(index = %self.paths.index.display(), error = %e, "index commit failed; the log is intact and the index will be resynchronised");
            self.index_stale = true;
            self.pending_since = Some(Instant::now());
        }
    }

    /// Commits queued rows to the index now, after waiting for any commit still running on
    /// the commit thread (if that one failed, the index is resynchronised with the log here
    /// instead). The log is synced first, so the index never covers bytes that could vanish in
    /// a power loss. An index found damaged while committing is rebuilt from the log at once;
    /// an I/O error is returned and the index caught up at the next commit.
    pub fn commit_index(&mut self) -> Result<(), IndexError> {
        if let Err(e) = self.land() {
            tracing::warn!(index = %self.paths.index.display(), error = %e, "an index commit on the commit thread failed; resynchronising the index");
        }
        if !self.prepare_commit()? {
            return Ok(());
        }
        self.commit_here()
    }

    /// Hands the queued rows to the commit thread (see [`WritableIndex::commit_in_background`]),
    /// or commits them here if no thread can take them.
    fn start_commit(&mut self) -> Result<(), IndexError> {
        if !self.prepare_commit()? {
            return Ok(());
        }
        match self
            .index
            .commit_in_background(&self.log, self.must_sync_log())
        {
            Ok(true) => {
                self.pending_since = None;
                Ok(())
            }
            Ok(false) => self.commit_here(),
            Err(e) => {
                self.pending_since = None;
                self.commit_failed(e)
            }
        }
    }

    /// Commits the prepared meta record and the queued rows on this thread.
    fn commit_here(&mut self) -> Result<(), IndexError> {
        if self.must_sync_log() {
            self.log.sync()?;
        }
        self.index.refresh_windows(self.log.file())?;
        let committed = self.index.commit_buffer();
        self.pending_since = None;
        committed.or_else(|e| self.commit_failed(e))
    }

    /// Whether the log must be synced before an index commit may cover it (under
    /// [`SyncPolicy::Fsync`] every append already was).
    fn must_sync_log(&self) -> bool {
        self.options.sync != SyncPolicy::Fsync
    }

    /// Resynchronises a stale index, or moves the meta record up to what is written. Says
    /// whether there are rows to commit.
    fn prepare_commit(&mut self) -> Result<bool, IndexError> {
        if self.index_stale {
            self.resync()?;
            self.index_stale = false;
            return Ok(false);
        }
        if self.folder.state().end == self.index.meta.watermark() {
            return Ok(false);
        }
        self.index.meta.fold = self.folder.state().clone();
        self.index.meta.running_crc = self.crc.clone().finalize();
        Ok(true)
    }

    /// Waits for a commit on the commit thread, if any, and deals with its failure.
    fn land(&mut self) -> Result<(), IndexError> {
        self.index.land().or_else(|e| self.commit_failed(e))
    }

    /// A commit failed: its rows are lost. A damaged index is rebuilt from the log at once
    /// (the log holds everything the lost rows described); after an I/O error (a failing
    /// disk), the log goes on and the index is resynchronised at the next commit.
    fn commit_failed(&mut self, e: IndexError) -> Result<(), IndexError> {
        self.index_stale = true;
        if let IndexError::Storage { .. } | IndexError::Damaged { .. } = e {
            tracing::warn!(index = %self.paths.index.display(), error = %e, "index damaged under the writer; rebuilding it from the log");
            self.resync()?;
            self.index_stale = false;
            return Ok(());
        }
        Err(e)
    }

    /// The offset up to which the log is known to be on disk.
    pub fn durable_len(&self) -> u64 {
        self.log.durable_len()
    }

    /// Blocks until the log is durable up to `end` (see [`SyncPolicy`]).
    pub fn wait_durable(&self, end: u64) -> Result<(), IndexError> {
        Ok(self.log.wait_durable(end)?)
    }

    /// Forces the log to disk now.
    pub fn sync(&self) -> Result<(), IndexError> {
        Ok(self.log.sync()?)
    }

    /// Commits the index, syncs and closes everything, reporting errors that dropping would
    /// swallow. (Dropping without `close` loses nothing: the next open catches up.) An index
    /// found damaged while closing is rebuilt from the log rather than reported.
    pub fn close(mut self) -> Result<(), IndexError> {
        self.commit_index()?;
        let Writer {
            log,
            index,
            paths,
            options,
            ..
        } = self;
        // A file found damaged at close is rebuilt from the log (traced), not reported: every
        // event is in the log, and the index left behind is sound.
        let closed = index.close_or_rebuild(&paths, log.file(), &options.index);
        log.close()?;
        closed.map(|_| ())
    }
}

/// Where the event at `(start, len)` of a write that landed at `appended` is.
fn receipt(appended: Appended, (start, len): (u64, u64)) -> Appended {
    Appended {
        start: appended.start + start,
        end: appended.start + start + len + 1,
        previous_end: appended.previous_end,
    }
}

/// Checks that `event` is one JSON object within the line limit; returns its fields.
fn validate_event<'a>(
    folder: &mut Folder,
    event: &'a [u8],
    max_line: usize,
    index: usize,
) -> Result<EventFields<'a>, IndexError> {
    let trimmed = event.trim_ascii();
    let reject = |reason: String| {
        IndexError::Log(LogError::InvalidEvent {
            index,
            reason,
            source: None,
        })
    };
    if trimmed.len() > max_line {
        return Err(reject(format!(
            "the event is {} bytes; the maximum line size is {max_line}",
            trimmed.len()
        )));
    }
    folder.extract(trimmed).map_err(|problem| {
        reject(
            match problem {
                LineProblem::Blank => "the event is empty",
                LineProblem::NotUtf8 => "the event is not valid UTF-8",
                LineProblem::NotJson => "the event is not valid JSON (or is nested too deeply)",
                LineProblem::NotAnObject => "the event is JSON but not an object",
                LineProblem::TooLong => "the event is longer than the maximum line size",
            }
            .to_owned(),
        )
    })
}

/// Appends `event` trimmed, with any newline (only possible between JSON tokens in a valid
/// event) written as a space, so the event stays one line.
fn push_normalized(event: &[u8], out: &mut Vec<u8>) {
    let trimmed = event.trim_ascii();
    if memchr::memchr2(b'\n', b'\r', trimmed).is_none() {
        out.extend_from_slice(trimmed);
    } else {
        out.extend(
            trimmed
                .iter()
                .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
        );
    }
}
