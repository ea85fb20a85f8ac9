//! Open = validate, then catch up or rebuild; or, when the index cannot be written, answer from
//! its last commit and a fold of what follows (or from a fold of the whole transcript).

use std::path::{Path, PathBuf};

use redb::{Database, ReadableDatabase, ReadableTableMetadata};

use super::db::{self, OpenFailure, guarded};
use super::recall::{Tables, load_all, row_counts};
use super::schema::{
    BUCKETS, FORMAT_KEY, FORMAT_VERSION, KEYS, META, META_KEY, Meta, PARSER_VERSION, decode,
    encode, encode_messages, encode_tally,
};
use super::source::Source;
use super::{OpenOptions, Transcript};
use crate::index::{IndexOutcome, ReadOnlyReason, StaleReason};
use crate::log::{Coverage, CoverageBuilder, CoverageCheck, Line, scan_lines};
use crate::transcript::cache::{default_index_dir, ensure_private_dir, index_file};
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::{Dedup, Fold, Nothing, Recall, RecallError};
use crate::transcript::format::Format;

/// Reads a transcript through its index: validates the index, then catches it up, rebuilds
/// it, or steps around it, and answers. Only a problem with the transcript itself is an error.
pub fn open(path: &Path, options: &OpenOptions) -> Result<Transcript, TranscriptError> {
    let source = Source::open(path, options.format)?;
    let Some(dir) = options.index_dir.clone().or_else(default_index_dir) else {
        return from_scratch(&source, None, options, not_writable("no cache directory"));
    };
    let index = index_file(&dir, &source.path);
    // Most opens find the index current: a read-only handle answers them and writes nothing
    // (a writable open and close alone cost redb several syncs).
    if let Some(answer) = without_writing(&source, &index, options)? {
        answer.outcome.trace(&index);
        return Ok(answer);
    }
    if let Err(e) = ensure_private_dir(&dir) {
        let why = not_writable(&format!("cannot create {}: {e}", dir.display()));
        return read_only(&source, &index, options, why);
    }
    let mut torn = None;
    if db::Unsynced::torn(&index) {
        // Written without syncs before the machine restarted, never synced: maybe torn.
        let _ = std::fs::remove_file(&index);
        db::Unsynced::remove_marker(&index);
        torn = Some(StaleReason::CommitInterrupted);
    }
    let answer = match db::open_writable(&index, options.repair_budget) {
        Ok(db) => match torn {
            Some(reason) => build(&source, &index, &db, options, Some(reason)),
            None => writable(&source, &index, &db, options),
        },
        Err(OpenFailure::Busy) => {
            return read_only(
                &source,
                &index,
                options,
                ReadOnlyReason::HeldByAnotherProcess,
            );
        }
        Err(OpenFailure::NotWritable(detail)) => {
            return read_only(&source, &index, options, not_writable(&detail));
        }
        Err(OpenFailure::Damaged(detail)) => {
            // Not an index (random bytes, another program's file, torn beyond repair): a fresh
            // file replaces it.
            let _ = std::fs::remove_file(&index);
            match db::open_writable(&index, options.repair_budget) {
                Ok(db) => build(&source, &index, &db, options, Some(unreadable(detail))),
                Err(e) => {
                    let why = match e {
                        OpenFailure::Busy => ReadOnlyReason::HeldByAnotherProcess,
                        OpenFailure::NotWritable(d) | OpenFailure::Damaged(d) => not_writable(&d),
                    };
                    return from_scratch(&source, Some(index), options, why);
                }
            }
        }
    };
    let answer = answer?;
    answer.outcome.trace(&index);
    Ok(answer)
}

/// The answer through a read-only handle, when that is all it takes: the index is current;
/// or only a small tail (or, read-only as asked, any tail) follows it. `None` when the index
/// must be written (built, caught up, rebuilt).
fn without_writing(
    source: &Source,
    index: &Path,
    options: &OpenOptions,
) -> Result<Option<Transcript>, TranscriptError> {
    let Some(db) = db::open_read_only(index) else {
        return match options.read_only {
            true => from_scratch(
                source,
                Some(index.to_path_buf()),
                options,
                ReadOnlyReason::Requested,
            )
            .map(Some),
            false => Ok(None),
        };
    };
    match validate(&db, source, options)? {
        Validity::Usable(meta, CoverageCheck::Current { .. }) => {
            fresh(source, index, &db, options, *meta).map(Some)
        }
        Validity::Usable(meta, _) if options.read_only => memory_tail(
            source,
            index,
            &db,
            options,
            *meta,
            ReadOnlyReason::Requested,
        )
        .map(Some),
        Validity::Usable(meta, check)
            if check.log_len() - meta.coverage.end <= options.max_memory_tail =>
        {
            memory_tail(
                source,
                index,
                &db,
                options,
                *meta,
                ReadOnlyReason::SmallTail,
            )
            .map(Some)
        }
        _ if options.read_only => from_scratch(
            source,
            Some(index.to_path_buf()),
            options,
            ReadOnlyReason::Requested,
        )
        .map(Some),
        _ => Ok(None),
    }
}

fn not_writable(detail: &str) -> ReadOnlyReason {
    ReadOnlyReason::NotWritable(detail.to_owned())
}

fn unreadable(detail: String) -> StaleReason {
    StaleReason::Unreadable { detail }
}

/// What reading an index's meta record and checking it against the transcript found.
pub(super) enum Validity {
    /// No commit yet.
    Empty,
    /// It must not be used.
    Stale(StaleReason),
    /// It covers the transcript's first bytes: all of its complete lines (`Current`), or
    /// fewer (`Grew`).
    Usable(Box<Meta>, CoverageCheck),
}

/// Reads the meta record and checks it against `source`: versions, the transcript it is of,
/// the format, the row counts, then the coverage (length, head and tail windows).
pub(super) fn validate(
    db: &impl ReadableDatabase,
    source: &Source,
    options: &OpenOptions,
) -> Result<Validity, TranscriptError> {
    let read = guarded("reading the index", || read_meta(db));
    let meta = match read {
        Err(detail) => return Ok(Validity::Stale(unreadable(detail))),
        Ok(Err(detail)) => return Ok(Validity::Stale(unreadable(detail))),
        Ok(Ok(None)) => return Ok(Validity::Empty),
        Ok(Ok(Some(Err(reason)))) => return Ok(Validity::Stale(reason)),
        Ok(Ok(Some(Ok(meta)))) => meta,
    };
    let inconsistent = |detail: String| Ok(Validity::Stale(StaleReason::Inconsistent { detail }));
    if meta.parser != PARSER_VERSION {
        return Ok(Validity::Stale(StaleReason::ParserChanged {
            found: meta.parser,
            expected: PARSER_VERSION,
        }));
    }
    if meta.transcript != source.path_bytes() {
        return inconsistent(format!(
            "the index is of another transcript ({})",
            String::from_utf8_lossy(&meta.transcript)
        ));
    }
    if meta.format != source.format || meta.max_line != options.max_line as u64 {
        return Ok(Validity::Stale(StaleReason::ProfileChanged));
    }
    if !meta.summary.is_well_formed()
        || !meta.coverage.is_well_formed()
        || meta.summary.format != meta.format
    {
        return inconsistent("the meta record does not hold together".to_owned());
    }
    let counts = guarded("counting the index's rows", || row_counts(db));
    match counts {
        Ok(Ok(counts)) if counts == (meta.summary.keys, meta.summary.buckets) => {}
        Ok(Ok((keys, buckets))) => {
            return inconsistent(format!(
                "{keys} key rows and {buckets} bucket rows, the meta record says {} and {}",
                meta.summary.keys, meta.summary.buckets
            ));
        }
        Ok(Err(e)) => return Ok(Validity::Stale(unreadable(e.0))),
        Err(detail) => return Ok(Validity::Stale(unreadable(detail))),
    }
    let check = meta
        .coverage
        .check(&source.file)
        .map_err(|e| TranscriptError::io("read", &source.path, e))?;
    Ok(match check {
        CoverageCheck::Current { .. } | CoverageCheck::Grew { .. } => {
            Validity::Usable(Box::new(meta), check)
        }
        CoverageCheck::Truncated { len } => Validity::Stale(StaleReason::LogTruncated {
            indexed: meta.coverage.end,
            len,
        }),
        CoverageCheck::HeadChanged { .. } => Validity::Stale(StaleReason::HeadChanged),
        CoverageCheck::TailChanged { .. } | CoverageCheck::BodyChanged { .. } => {
            Validity::Stale(StaleReason::TailChanged)
        }
    })
}

type MetaRead = Option<Result<Meta, StaleReason>>;

fn read_meta(db: &impl ReadableDatabase) -> Result<MetaRead, String> {
    let txn = db.begin_read().map_err(|e| e.to_string())?;
    let table = match txn.open_table(META) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => {
            let any = txn.list_tables().map_err(|e| e.to_string())?.next();
            return match any {
                None => Ok(None),
                Some(_) => Err("tables without a meta record".to_owned()),
            };
        }
        Err(e) => return Err(e.to_string()),
    };
    let Some(format) = table.get(FORMAT_KEY).map_err(|e| e.to_string())? else {
        return Err("no format record".to_owned());
    };
    let Ok(format) = <[u8; 4]>::try_from(format.value()) else {
        return Err("malformed format record".to_owned());
    };
    let format = u32::from_le_bytes(format);
    if format != FORMAT_VERSION {
        return Ok(Some(Err(StaleReason::FormatChanged {
            found: format,
            expected: FORMAT_VERSION,
        })));
    }
    let Some(meta) = table.get(META_KEY).map_err(|e| e.to_string())? else {
        return Err("no meta record".to_owned());
    };
    match decode::<Meta>(meta.value()) {
        Some(meta) => Ok(Some(Ok(meta))),
        None => Err("the meta record fails its checksum".to_owned()),
    }
}

/// The answer through an index this process holds for writing.
fn writable(
    source: &Source,
    index: &Path,
    db: &Database,
    options: &OpenOptions,
) -> Result<Transcript, TranscriptError> {
    match validate(db, source, options)? {
        Validity::Empty => build(source, index, db, options, None),
        Validity::Stale(reason) => build(source, index, db, options, Some(reason)),
        Validity::Usable(meta, CoverageCheck::Current { .. }) => {
            fresh(source, index, db, options, *meta)
        }
        Validity::Usable(meta, _) => catch_up(source, index, db, options, *meta),
    }
}

/// Why a fold stopped.
pub(super) enum FoldFailure {
    Read(std::io::Error),
    Recall(RecallError),
}

/// Folds the complete lines after the builder's end, up to the length the transcript had
/// when it was opened. Returns the number of lines folded.
fn fold_rest(
    source: &Source,
    builder: &mut CoverageBuilder,
    fold: &mut Fold,
    recall: &mut dyn Recall,
    options: &OpenOptions,
) -> Result<u64, FoldFailure> {
    fold_until(source, source.len, builder, fold, recall, options)
}

/// [`fold_rest`] up to `limit` bytes into the transcript.
pub(super) fn fold_until(
    source: &Source,
    limit: u64,
    builder: &mut CoverageBuilder,
    fold: &mut Fold,
    recall: &mut dyn Recall,
    options: &OpenOptions,
) -> Result<u64, FoldFailure> {
    let before = fold.summary.lines;
    let result = scan_lines(
        &source.file,
        builder,
        limit,
        options.max_line,
        |line| match line {
            Line::Complete { offset, bytes } => fold
                .line_with(offset, bytes, recall)
                .map_err(FoldFailure::Recall),
            Line::TooLong { .. } => {
                fold.too_long();
                Ok(())
            }
        },
    );
    result?;
    Ok(fold.summary.lines - before)
}

impl From<std::io::Error> for FoldFailure {
    fn from(e: std::io::Error) -> FoldFailure {
        FoldFailure::Read(e)
    }
}

fn read_error(source: &Source, e: std::io::Error) -> TranscriptError {
    TranscriptError::io("read", &source.path, e)
}

/// Folds the whole transcript in memory.
fn fold_whole(
    source: &Source,
    options: &OpenOptions,
) -> Result<(Fold, CoverageBuilder), TranscriptError> {
    let mut fold = Fold::new(source.format);
    let mut builder = CoverageBuilder::new();
    match fold_rest(source, &mut builder, &mut fold, &mut Nothing, options) {
        Ok(_) => Ok((fold, builder)),
        Err(FoldFailure::Read(e)) => Err(read_error(source, e)),
        // Recalling nothing never fails.
        Err(FoldFailure::Recall(_)) => Ok((fold, builder)),
    }
}

/// Builds the index from the first line, replacing whatever it held.
fn build(
    source: &Source,
    index: &Path,
    db: &Database,
    options: &OpenOptions,
    reason: Option<StaleReason>,
) -> Result<Transcript, TranscriptError> {
    let (fold, builder) = fold_whole(source, options)?;
    let coverage = builder.coverage();
    let (bytes, events) = (coverage.end, fold.summary.lines);
    let written = guarded("writing the index", || {
        commit(db, source, options, &fold, &coverage)
    });
    let outcome = match flatten(written) {
        Ok(()) => match reason {
            None => IndexOutcome::Created { bytes, events },
            Some(reason) => IndexOutcome::Rebuilt {
                reason,
                bytes,
                events,
            },
        },
        Err(detail) => IndexOutcome::ReadOnly {
            why: not_writable(&detail),
            tail_bytes: bytes,
            tail_events: events,
        },
    };
    Ok(answer(
        source,
        Some(index),
        coverage,
        fold.summary.clone(),
        outcome,
        options.load_dedup.then_some(fold.dedup),
    ))
}

/// Answers from a commit that covers every complete line.
fn fresh(
    source: &Source,
    index: &Path,
    db: &impl ReadableDatabase,
    options: &OpenOptions,
    meta: Meta,
) -> Result<Transcript, TranscriptError> {
    let dedup = match options.load_dedup {
        false => None,
        true => match flatten(guarded("reading the index", || {
            load_all(db, source.format == Format::ClaudeCode).map_err(|e| e.0)
        })) {
            Ok(dedup) => Some(dedup),
            // Damaged rows: answer from a fold of the whole transcript instead.
            Err(detail) => {
                return from_scratch(
                    source,
                    Some(index.to_path_buf()),
                    options,
                    not_writable(&detail),
                );
            }
        },
    };
    Ok(answer(
        source,
        Some(index),
        meta.coverage,
        meta.summary,
        IndexOutcome::Fresh,
        dedup,
    ))
}

/// Folds the new lines into the index and commits them (or, for a small tail, only folds).
fn catch_up(
    source: &Source,
    index: &Path,
    db: &Database,
    options: &OpenOptions,
    meta: Meta,
) -> Result<Transcript, TranscriptError> {
    if source.len - meta.coverage.end <= options.max_memory_tail {
        return memory_tail(source, index, db, options, meta, ReadOnlyReason::SmallTail);
    }
    let Some(mut builder) =
        CoverageBuilder::resume(&meta.coverage, &source.file).map_err(|e| read_error(source, e))?
    else {
        return build(source, index, db, options, Some(StaleReason::TailChanged));
    };
    let start = meta.coverage.end;
    let mut fold = Fold::resume(meta.summary.clone());
    let stepped = guarded("catching up the index", || -> Result<Step, redb::Error> {
        let txn = db.begin_write()?;
        let folded = {
            let mut tables = Tables {
                keys: txn.open_table(KEYS)?,
                buckets: txn.open_table(BUCKETS)?,
            };
            fold_rest(source, &mut builder, &mut fold, &mut tables, options)
        };
        match folded {
            Ok(0) => {
                txn.abort()?;
                Ok(Step::Nothing)
            }
            Ok(lines) => {
                let coverage = builder.coverage();
                let written = write_rows(&txn, source, options, &fold, &coverage, false)
                    .and_then(|()| Ok(txn.commit()?));
                Ok(match written {
                    Ok(()) => Step::Committed(lines),
                    Err(e) => Step::Unwritten(lines, e.to_string()),
                })
            }
            Err(failure) => {
                txn.abort()?;
                Ok(Step::Failed(failure))
            }
        }
    });
    let (lines, unwritten) = match stepped {
        Ok(Ok(Step::Committed(lines))) => (lines, None),
        Ok(Ok(Step::Unwritten(lines, detail))) => (lines, Some(detail)),
        // Only a torn tail after the covered lines: nothing new to count yet.
        Ok(Ok(Step::Nothing)) => return fresh(source, index, db, options, meta),
        Ok(Ok(Step::Failed(FoldFailure::Read(e)))) => return Err(read_error(source, e)),
        Ok(Ok(Step::Failed(FoldFailure::Recall(e)))) => {
            let reason = StaleReason::Inconsistent { detail: e.0 };
            return build(source, index, db, options, Some(reason));
        }
        Ok(Err(e)) => {
            return build(source, index, db, options, Some(unreadable(e.to_string())));
        }
        Err(detail) => return build(source, index, db, options, Some(unreadable(detail))),
    };
    let coverage = builder.coverage();
    let bytes = coverage.end - start;
    let outcome = match unwritten {
        None => IndexOutcome::CaughtUp {
            bytes,
            events: lines,
        },
        Some(detail) => IndexOutcome::ReadOnly {
            why: not_writable(&detail),
            tail_bytes: bytes,
            tail_events: lines,
        },
    };
    let dedup = match options.load_dedup {
        true => with_overlay(db, source, fold.dedup.clone()),
        false => None,
    };
    Ok(answer(
        source,
        Some(index),
        coverage,
        fold.summary,
        outcome,
        dedup,
    ))
}

/// How a catch-up's write transaction ended.
enum Step {
    /// New lines folded and committed.
    Committed(u64),
    /// New lines folded; the commit failed (the answer stands, the index stays behind).
    Unwritten(u64, String),
    /// No new complete line.
    Nothing,
    /// The fold failed.
    Failed(FoldFailure),
}

/// Builds the index's rows from scratch in one commit.
fn commit(
    db: &Database,
    source: &Source,
    options: &OpenOptions,
    fold: &Fold,
    coverage: &Coverage,
) -> Result<(), String> {
    let run = || -> Result<(), redb::Error> {
        let txn = db.begin_write()?;
        write_rows(&txn, source, options, fold, coverage, true)?;
        txn.commit()?;
        Ok(())
    };
    run().map_err(|e| e.to_string())
}

/// Writes what a fold touched and the meta record (after emptying every table, for a fold
/// from the first line). A catch-up's lookups were made in the same transaction.
fn write_rows(
    txn: &redb::WriteTransaction,
    source: &Source,
    options: &OpenOptions,
    fold: &Fold,
    coverage: &Coverage,
    from_scratch: bool,
) -> Result<(), redb::Error> {
    if from_scratch {
        txn.delete_table(KEYS)?;
        txn.delete_table(BUCKETS)?;
        txn.delete_table(META)?;
    }
    let mut keys = txn.open_table(KEYS)?;
    for (id, messages) in &fold.dedup.messages {
        keys.insert(id.as_str(), encode_messages(messages).as_slice())?;
    }
    let seen = encode(&());
    for id in &fold.dedup.ids {
        keys.insert(id.as_str(), seen.as_slice())?;
    }
    let mut buckets = txn.open_table(BUCKETS)?;
    for (key, tally) in &fold.dedup.buckets {
        buckets.insert(*key, encode_tally(tally).as_slice())?;
    }
    // The row counts the next open checks against the meta record.
    if (keys.len()?, buckets.len()?) != (fold.summary.keys, fold.summary.buckets) {
        return Err(redb::Error::Corrupted(
            "the row counts disagree with the fold".to_owned(),
        ));
    }
    let mut meta = txn.open_table(META)?;
    meta.insert(FORMAT_KEY, FORMAT_VERSION.to_le_bytes().as_slice())?;
    let record = Meta {
        parser: PARSER_VERSION,
        transcript: source.path_bytes(),
        format: source.format,
        max_line: options.max_line as u64,
        coverage: *coverage,
        summary: fold.summary.clone(),
    };
    meta.insert(META_KEY, encode(&record).as_slice())?;
    Ok(())
}

fn flatten<T>(result: Result<Result<T, String>, String>) -> Result<T, String> {
    result.and_then(|inner| inner)
}

/// Every row of the index with a fold's touched entries laid over them.
fn with_overlay(db: &impl ReadableDatabase, source: &Source, touched: Dedup) -> Option<Dedup> {
    let loaded = guarded("reading the index", || {
        load_all(db, source.format == Format::ClaudeCode)
    });
    let mut all = loaded.ok()?.ok()?;
    all.messages.extend(touched.messages);
    all.ids.extend(touched.ids);
    all.buckets.extend(touched.buckets);
    Some(all)
}

/// Answers from the index's last commit and a fold, in memory, of the lines after it.
fn memory_tail(
    source: &Source,
    index: &Path,
    db: &impl ReadableDatabase,
    options: &OpenOptions,
    meta: Meta,
    why: ReadOnlyReason,
) -> Result<Transcript, TranscriptError> {
    let Some(mut builder) =
        CoverageBuilder::resume(&meta.coverage, &source.file).map_err(|e| read_error(source, e))?
    else {
        return from_scratch(source, Some(index.to_path_buf()), options, why);
    };
    let start = meta.coverage.end;
    let mut fold = Fold::resume(meta.summary.clone());
    let folded = guarded(
        "reading the index",
        || -> Result<Result<u64, FoldFailure>, redb::Error> {
            let txn = db.begin_read()?;
            let mut tables = Tables {
                keys: txn.open_table(KEYS)?,
                buckets: txn.open_table(BUCKETS)?,
            };
            Ok(fold_rest(
                source,
                &mut builder,
                &mut fold,
                &mut tables,
                options,
            ))
        },
    );
    let lines = match folded {
        Ok(Ok(Ok(lines))) => lines,
        Ok(Ok(Err(FoldFailure::Read(e)))) => return Err(read_error(source, e)),
        _ => return from_scratch(source, Some(index.to_path_buf()), options, why),
    };
    if lines == 0 {
        return fresh(source, index, db, options, meta);
    }
    let coverage = builder.coverage();
    let outcome = IndexOutcome::ReadOnly {
        why,
        tail_bytes: coverage.end - start,
        tail_events: lines,
    };
    let dedup = match options.load_dedup {
        true => with_overlay(db, source, fold.dedup.clone()),
        false => None,
    };
    Ok(answer(
        source,
        Some(index),
        coverage,
        fold.summary,
        outcome,
        dedup,
    ))
}

/// The answer without writing: through the index read-only if it is usable, else from a fold
/// of the whole transcript.
fn read_only(
    source: &Source,
    index: &Path,
    options: &OpenOptions,
    why: ReadOnlyReason,
) -> Result<Transcript, TranscriptError> {
    let Some(db) = db::open_read_only(index) else {
        return from_scratch(source, Some(index.to_path_buf()), options, why);
    };
    match validate(&db, source, options)? {
        Validity::Usable(meta, CoverageCheck::Current { .. }) => {
            fresh(source, index, &db, options, *meta)
        }
        Validity::Usable(meta, _) => memory_tail(source, index, &db, options, *meta, why),
        Validity::Empty | Validity::Stale(_) => {
            from_scratch(source, Some(index.to_path_buf()), options, why)
        }
    }
}

/// The answer from a fold of the whole transcript, in memory.
fn from_scratch(
    source: &Source,
    index: Option<PathBuf>,
    options: &OpenOptions,
    why: ReadOnlyReason,
) -> Result<Transcript, TranscriptError> {
    let (fold, builder) = fold_whole(source, options)?;
    let coverage = builder.coverage();
    let outcome = IndexOutcome::ReadOnly {
        why,
        tail_bytes: coverage.end,
        tail_events: fold.summary.lines,
    };
    if let Some(index) = &index {
        outcome.trace(index);
    }
    let dedup = options.load_dedup.then(|| fold.dedup.clone());
    Ok(answer(
        source,
        index.as_deref(),
        coverage,
        fold.summary,
        outcome,
        dedup,
    ))
}

fn answer(
    source: &Source,
    index: Option<&Path>,
    coverage: Coverage,
    summary: crate::transcript::fold::Summary,
    outcome: IndexOutcome,
    dedup: Option<Dedup>,
) -> Transcript {
    Transcript {
        path: source.path.clone(),
        format: source.format,
        index: index.map(Path::to_path_buf),
        coverage,
        summary,
        outcome,
        dedup,
    }
}
