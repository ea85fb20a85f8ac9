//! Catching a writable index up with the log: reading lines, extracting and folding them
//! into rows, and committing them in chunks, on two threads for a long build.

use std::fs::File;
use std::path::Path;

use super::commit::{CommitError, commit_rows, remove_index, windows};
use super::derived::contain::panic_message;
use super::error::Unwritable;
use super::open::{Progress, WritableIndex};
use super::rows::{Row, RowBuffer, TypeMap};
use super::schema::{Meta, SeqState};
use super::{IndexError, IndexOptions};
use crate::event::{EventFields, Folded, Folder, LineMemo, LineProblem};
use crate::log::{LineScanner, ReadAhead, Run};

impl WritableIndex {
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
                        .map_err(|e| IndexError::log_read(&log_path, e))?
                {
                    self.buffer.clear();
                    return Err(IndexError::LogChanged {
                        path: self.path.clone(),
                    });
                }
                checked = (end, self.meta.running_crc);
                // The index must never cover bytes a power loss could take away, whoever
                // wrote them (an external writer may never sync): sync the log first.
                log.sync_data()
                    .map_err(|e| IndexError::log_read(&log_path, e))?;
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

    /// The chunk a build without syncs (`derived/unsynced.rs`) of `bytes` of log, one commit's
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
            return Err(IndexError::damaged_earlier(path));
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
                            .map_err(|e| CommitError::Failed(IndexError::log_read(log_path, e)))?;
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
                // Given up: the handle redb panicked in forgets its database when dropped.
                *db = None;
                return Err(e);
            }
            // Every redb call in the writer is contained; anything else panicking is a bug,
            // but the database it was using is not to be trusted or closed either.
            Err(panic) => {
                if let Some(held) = db.take() {
                    held.abandon();
                }
                // The handle keeps the file locked: free the path for the rebuild.
                if let Err(Unwritable::NotWritable(why)) = remove_index(path) {
                    tracing::warn!(index = %path.display(), %why, "cannot unlink an index whose handle was given up");
                }
                return Err(IndexError::damaged(
                    path,
                    format!(
                        "the index writer thread panicked: {}",
                        panic_message(&*panic)
                    ),
                ));
            }
        };
        read?;
        meta.seqs = seqs;
        Ok(true)
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
                .map_err(|e| IndexError::log_read(self.log_path, e))?;
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
                    let mut next = NextRun {
                        scanner: &self.scanner,
                        spare: &mut self.spare,
                    };
                    let ahead = fold_run(
                        &mut self.folder,
                        run,
                        self.two_threads,
                        &mut next,
                        rows,
                        types,
                    );
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
    next: &mut NextRun<'_, '_>,
    rows: &mut RowBuffer,
    types: &mut TypeMap,
) -> Option<ReadAhead> {
    let mut fold = |folder: &mut Folder, offset: u64, line: &[u8], extracted| {
        let event = folder.fold_extracted(offset, line, extracted);
        if let Some(row) = Row::from_folded(&event, offset, folder.state(), types) {
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

/// Chunks of at most this many bytes are read again before they are committed
/// ([`crate::log::bytes_unchanged`]): for a catch-up that small the second read costs microseconds,
/// next to the milliseconds of the commit's syncs.
const REREAD_BYTES: u64 = 1 << 20;

/// The smallest chunk an unsynced build commits in on two threads: below it, a commit's fixed
/// writes outweigh what the overlap saves.
const MIN_UNSYNCED_CHUNK: u64 = 2 << 20;

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
