//! Writing the index: a build from the first line, or a catch-up of the lines after what it
//! covers, each in one write transaction. A file redb panics in is replaced by a new one.

use std::path::Path;

use redb::{Database, ReadableTableMetadata, WriteTransaction};

use super::answer::{answer, fresh, memory_tail, not_writable};
use super::db::{self, Held, Leak, Unsynced};
use super::recall::Tables;
use super::scan::{FoldFailure, fold_rest, fold_whole, read_error};
use super::schema::{
    BUCKETS, FORMAT_KEY, FORMAT_VERSION, KEYS, MARKS, META, META_KEY, Meta, PARSER_VERSION, encode,
    encode_messages, encode_tally,
};
use super::source::Source;
use super::validate::unreadable;
use super::{OpenOptions, Transcript};
use crate::index::{IndexOutcome, ReadOnlyReason, StaleReason};
use crate::log::{Coverage, CoverageBuilder};
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::{Dedup, Fold};

/// Builds the index from the first line. Into `db` itself when its file is new (`new_file`);
/// otherwise into a new file that replaces it: an index found stale may also hide damage redb
/// has not met yet (its allocator state, its length), which a build in place would inherit.
pub(super) fn build(
    source: &Source,
    index: &Path,
    db: Held<Database>,
    options: &OpenOptions,
    reason: Option<StaleReason>,
    new_file: bool,
) -> Result<Transcript, TranscriptError> {
    let (fold, builder) = fold_whole(source, options)?;
    let coverage = builder.coverage();
    let (bytes, events) = (coverage.end, fold.summary.lines);
    let mut reason = reason;
    let mut written = if new_file {
        commit_and_close(db, source, options, &fold, &coverage)
    } else {
        db.abandon();
        Err(Failed::Damaged(String::new()))
    };
    if let Err(Failed::Damaged(detail)) = &written {
        // A stale file, or one that made redb panic or holds structures redb refuses: a new
        // file takes its place.
        reason = Some(reason.unwrap_or_else(|| unreadable(detail.clone())));
        written = replace_file(index, options)
            .map_err(Failed::Io)
            .and_then(|db| commit_and_close(db, source, options, &fold, &coverage));
    }
    let written = written.map_err(|(Failed::Io(d) | Failed::Damaged(d))| d);
    let outcome = match written {
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
    let dedup = options.wants_rows().then_some(fold.dedup);
    Ok(answer(
        source,
        Some(index),
        coverage,
        fold.summary,
        outcome,
        dedup,
    ))
}

/// [`commit`], then closes the file, so a close that finds it damaged is known here.
fn commit_and_close(
    db: Held<Database>,
    source: &Source,
    options: &OpenOptions,
    fold: &Fold,
    coverage: &Coverage,
) -> Result<(), Failed> {
    let committed = commit(&db, source, options, fold, coverage);
    let closed = db.close().map_err(Failed::Damaged);
    committed.and(closed)
}

/// Removes an index file redb panicked in and opens a new one in its place.
fn replace_file(index: &Path, options: &OpenOptions) -> Result<Held<Database>, String> {
    let _ = std::fs::remove_file(index);
    Unsynced::remove_marker(index);
    db::open_writable(index, options.repair_budget).map_err(|e| format!("{e:?}"))
}

/// Why a commit failed.
enum Failed {
    /// The file cannot be written now (I/O, a full disk): the index stays behind.
    Io(String),
    /// The file is damaged (redb panicked, or refused its own structures).
    Damaged(String),
}

impl Failed {
    fn of(e: redb::Error) -> Failed {
        match e {
            redb::Error::Io(_) => Failed::Io(e.to_string()),
            other => Failed::Damaged(other.to_string()),
        }
    }
}

/// How a catch-up's write transaction ended.
enum Step {
    /// New lines folded and committed.
    Committed(u64),
    /// New lines folded; the commit failed (the answer stands, the index stays behind).
    Unwritten(u64, Failed),
    /// No new complete line.
    Nothing,
    /// The fold failed.
    Failed(FoldFailure),
}

/// Folds the new lines into the index and commits them (or, for a small tail, only folds).
pub(super) fn catch_up(
    source: &Source,
    index: &Path,
    db: Held<Database>,
    options: &OpenOptions,
    (meta, rows): (Meta, Option<Dedup>),
) -> Result<Transcript, TranscriptError> {
    if source.len - meta.coverage.end <= options.max_memory_tail {
        let why = ReadOnlyReason::SmallTail;
        return memory_tail(source, index, &db, options, (meta, rows), why);
    }
    let Some(mut builder) =
        CoverageBuilder::resume(&meta.coverage, &source.file).map_err(|e| read_error(source, e))?
    else {
        return build(
            source,
            index,
            db,
            options,
            Some(StaleReason::TailChanged),
            false,
        );
    };
    let start = meta.coverage.end;
    let mut fold = Fold::resume(meta.summary.clone());
    let stepped = db.run("catching up the index", |db| -> Result<Step, redb::Error> {
        let txn = Leak::new(db.begin_write()?);
        let mut tables = Leak::new(Tables {
            keys: txn.get()?.open_table(KEYS)?,
            buckets: txn.get()?.open_table(BUCKETS)?,
            marks: txn.get()?.open_table(MARKS)?,
        });
        let folded = fold_rest(source, &mut builder, &mut fold, tables.get_mut()?, options);
        drop(tables);
        match folded {
            Ok(0) => {
                txn.take()?.abort()?;
                Ok(Step::Nothing)
            }
            Ok(lines) => {
                let coverage = builder.coverage();
                let written = write_rows(txn.get()?, source, options, &fold, &coverage, false)
                    .and_then(|()| Ok(txn.take()?.commit()?));
                Ok(match written {
                    Ok(()) => Step::Committed(lines),
                    Err(e) => Step::Unwritten(lines, Failed::of(e)),
                })
            }
            Err(failure) => {
                txn.take()?.abort()?;
                Ok(Step::Failed(failure))
            }
        }
    });
    let (lines, unwritten) = match stepped {
        Ok(Ok(Step::Committed(lines))) => (lines, None),
        Ok(Ok(Step::Unwritten(lines, Failed::Io(detail)))) => (lines, Some(detail)),
        // Damage redb reported, or a panic it raised: a new file takes this one's place.
        Ok(Ok(Step::Unwritten(_, Failed::Damaged(detail)))) | Err(detail) => {
            return build(source, index, db, options, Some(unreadable(detail)), false);
        }
        // Only a torn tail after the covered lines: nothing new to count yet.
        Ok(Ok(Step::Nothing)) => return Ok(fresh(source, index, meta, rows)),
        Ok(Ok(Step::Failed(FoldFailure::Read(e)))) => return Err(read_error(source, e)),
        Ok(Ok(Step::Failed(FoldFailure::Recall(e)))) => {
            let reason = StaleReason::Inconsistent { detail: e.0 };
            return build(source, index, db, options, Some(reason), false);
        }
        Ok(Err(e)) => {
            let reason = Some(unreadable(e.to_string()));
            return build(source, index, db, options, reason, false);
        }
    };
    let mut unwritten = unwritten;
    if unwritten.is_none()
        && let Err(detail) = db.close()
    {
        // The commit stands only if the file closed cleanly: build it again, in a new file.
        match replace_file(index, options) {
            Ok(db) => {
                return build(source, index, db, options, Some(unreadable(detail)), true);
            }
            Err(e) => unwritten = Some(format!("{detail}; {e}")),
        }
    }
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
    let dedup = rows.map(|rows| super::answer::overlay(rows, fold.dedup.clone()));
    Ok(answer(
        source,
        Some(index),
        coverage,
        fold.summary,
        outcome,
        dedup,
    ))
}

/// Builds the index's rows from scratch in one commit.
fn commit(
    db: &Held<Database>,
    source: &Source,
    options: &OpenOptions,
    fold: &Fold,
    coverage: &Coverage,
) -> Result<(), Failed> {
    let run = db.run("writing the index", |db| -> Result<(), redb::Error> {
        let txn = Leak::new(db.begin_write()?);
        write_rows(txn.get()?, source, options, fold, coverage, true)?;
        txn.take()?.commit()?;
        Ok(())
    });
    match run {
        Ok(result) => result.map_err(Failed::of),
        Err(panicked) => Err(Failed::Damaged(panicked)),
    }
}

/// Writes what a fold touched and the meta record (after emptying every table, for a fold
/// from the first line). A catch-up's lookups were made in the same transaction.
fn write_rows(
    txn: &WriteTransaction,
    source: &Source,
    options: &OpenOptions,
    fold: &Fold,
    coverage: &Coverage,
    from_scratch: bool,
) -> Result<(), redb::Error> {
    if from_scratch {
        txn.delete_table(KEYS)?;
        txn.delete_table(BUCKETS)?;
        txn.delete_table(MARKS)?;
        txn.delete_table(META)?;
    }
    let mut keys = Leak::new(txn.open_table(KEYS)?);
    for (id, messages) in &fold.dedup.messages {
        keys.get_mut()?
            .insert(id.as_str(), encode_messages(messages).as_slice())?;
    }
    for (id, entry) in &fold.dedup.entries {
        keys.get_mut()?
            .insert(id.as_str(), encode(entry).as_slice())?;
    }
    let mut buckets = Leak::new(txn.open_table(BUCKETS)?);
    for (key, tally) in &fold.dedup.buckets {
        buckets
            .get_mut()?
            .insert(*key, encode_tally(tally).as_slice())?;
    }
    let mut marks = Leak::new(txn.open_table(MARKS)?);
    let empty = encode(&());
    for uuid in &fold.dedup.marks {
        marks.get_mut()?.insert(uuid.as_str(), empty.as_slice())?;
    }
    // The row counts the next open checks against the meta record.
    let counts = (
        keys.get()?.len()?,
        buckets.get()?.len()?,
        marks.get()?.len()?,
    );
    let s = &fold.summary;
    if counts != (s.keys, s.buckets, s.marks) {
        return Err(redb::Error::Corrupted(
            "the row counts disagree with the fold".to_owned(),
        ));
    }
    let mut meta = Leak::new(txn.open_table(META)?);
    meta.get_mut()?
        .insert(FORMAT_KEY, FORMAT_VERSION.to_le_bytes().as_slice())?;
    let record = Meta {
        parser: PARSER_VERSION,
        transcript: source.path_bytes(),
        format: source.format,
        max_line: options.max_line as u64,
        coverage: *coverage,
        summary: fold.summary.clone(),
    };
    meta.get_mut()?
        .insert(META_KEY, encode(&record).as_slice())?;
    Ok(())
}
