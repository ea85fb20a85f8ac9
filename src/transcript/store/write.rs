//! Writing the index, held for writing: a build from the first line, or a catch-up of the
//! lines after what it covers, each in one write transaction of the core's contained handle
//! (`index/derived/contain.rs`). A file redb panics in is replaced by a new one.

use std::collections::HashMap;
use std::path::Path;

use redb::{Database, ReadableTable, ReadableTableMetadata, WriteTransaction};

use super::answer::{after_commit, answer, folded, fresh, memory_tail, not_writable};
use super::recall::Tables;
use super::scan::{FoldFailure, fold_rest, fold_whole, read_error};
use super::schema::{
    BUCKETS, FORMAT_VERSION, KEYS, MARKS, Meta, PARSER_VERSION, SPANS, decode, encode,
    encode_messages, encode_tally,
};
use super::source::Source;
use super::validate::{SourceChecks, unreadable};
use super::{OpenOptions, Transcript, settings};
use crate::index::derived::contain::{Held, Leak, Txn, WriteError};
use crate::index::derived::record::{META, write_meta};
use crate::index::derived::sequence::{Plan, plan, replace};
use crate::index::derived::storage::{OpenFailure, Opened};
use crate::index::derived::validate::Unread;
use crate::index::{IndexOutcome, ReadOnlyReason, StaleReason};
use crate::log::{Coverage, CoverageBuilder};
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::{Dedup, Fold, Span};

/// The answer through an index this process holds for writing: catch it up, build it, or
/// rebuild it.
pub(super) fn writable(
    source: &Source,
    index: &Path,
    opened: Opened,
    options: &OpenOptions,
) -> Result<Transcript, TranscriptError> {
    let checks = SourceChecks { source, options };
    let (db, new_file, reason) = match plan(&checks, &opened.db, opened.replaced) {
        Ok(Plan::Build(reason)) => (opened.db, true, reason),
        Ok(Plan::Rebuild(reason)) => (opened.db, false, Some(reason)),
        Ok(Plan::Update(commit)) if commit.behind == 0 => {
            return Ok(fresh(source, index, *commit.meta, commit.loaded));
        }
        Ok(Plan::Update(commit)) => {
            let last = (*commit.meta, commit.loaded);
            return catch_up(source, index, opened.db, options, last);
        }
        Err(Unread::Source(e)) => return Err(read_error(source, e)),
        // The index could not be read (a failing disk): rebuilt, in a new file.
        Err(Unread::Index(e)) => (opened.db, false, Some(unreadable(e.to_string()))),
        Err(Unread::Panicked(detail)) => (opened.db, false, Some(unreadable(detail))),
    };
    build(source, index, db, options, reason, new_file)
}

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
        let why = reason.clone().unwrap_or_else(|| unreadable(detail.clone()));
        reason = Some(why.clone());
        written = replace_file(index, options, why)
            .map_err(Failed::Io)
            .and_then(|db| commit_and_close(db, source, options, &fold, &coverage));
    }
    let written = written.map_err(Failed::detail);
    let outcome = match written {
        Ok(()) => IndexOutcome::built(reason, bytes, events),
        Err(detail) => IndexOutcome::ReadOnly {
            why: not_writable(&detail),
            tail_bytes: bytes,
            tail_events: events,
        },
    };
    Ok(answer(
        source,
        Some(index),
        folded(fold, coverage, options),
        outcome,
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
    let written = db.write("writing the index", |txn| {
        write_rows(txn, source, options, fold, coverage, true).map(Txn::Commit)
    });
    let committed = written.map_err(Failed::of);
    let closed = db.close().map_err(|e| Failed::Damaged(e.to_string()));
    committed.and(closed)
}

/// Removes an index file that cannot be used and opens a new one in its place.
fn replace_file(
    index: &Path,
    options: &OpenOptions,
    reason: StaleReason,
) -> Result<Held<Database>, String> {
    match replace(index, &settings(options), reason) {
        Ok(opened) => Ok(opened.db),
        Err(OpenFailure::Busy) => Err("another process holds the index for writing".to_owned()),
        Err(OpenFailure::NotWritable(cause) | OpenFailure::Damaged(cause)) => Err(cause.detail),
    }
}

/// Why a commit failed.
enum Failed {
    /// The file cannot be written now (I/O, a full disk): the index stays behind.
    Io(String),
    /// The file is damaged (redb panicked, or refused its own structures).
    Damaged(String),
}

impl Failed {
    fn of(e: WriteError) -> Failed {
        match e {
            WriteError::Storage(e @ redb::Error::Io(_)) => Failed::Io(e.to_string()),
            WriteError::Storage(other) => Failed::Damaged(other.to_string()),
            WriteError::Panicked(detail) => Failed::Damaged(detail),
        }
    }

    fn detail(self) -> String {
        match self {
            Failed::Io(detail) | Failed::Damaged(detail) => detail,
        }
    }
}

/// How a catch-up's write transaction ended, once it did not fail.
enum Step {
    /// New lines folded and committed.
    Committed,
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
        let reason = Some(StaleReason::TailChanged);
        return build(source, index, db, options, reason, false);
    };
    let start = meta.coverage.end;
    let mut fold = Fold::resume(meta.summary.clone());
    // The lines folded, also when the commit fails.
    let mut folded_lines = 0;
    let stepped = db.write("catching up the index", |txn| {
        let mut tables = Leak::new(Tables::write(txn)?);
        let folded = fold_rest(source, &mut builder, &mut fold, tables.get_mut()?, options);
        drop(tables);
        Ok(match folded {
            Ok(0) => Txn::Abort(Step::Nothing),
            Ok(lines) => {
                folded_lines = lines;
                write_rows(txn, source, options, &fold, &builder.coverage(), false)?;
                Txn::Commit(Step::Committed)
            }
            Err(failure) => Txn::Abort(Step::Failed(failure)),
        })
    });
    let after = match stepped {
        Ok(Step::Committed) => Ok(None),
        // Only a torn tail after the covered lines: nothing new to count yet.
        Ok(Step::Nothing) => return Ok(fresh(source, index, meta, rows)),
        Ok(Step::Failed(FoldFailure::Read(e))) => return Err(read_error(source, e)),
        Ok(Step::Failed(FoldFailure::Recall(e))) => Err(StaleReason::Inconsistent { detail: e.0 }),
        // Nothing was folded: the transaction or its tables could not be had.
        Err(e) if folded_lines == 0 => Err(unreadable(Failed::of(e).detail())),
        Err(e) => match Failed::of(e) {
            // The answer stands; the index stays behind.
            Failed::Io(detail) => Ok(Some(detail)),
            // Damage redb reported, or a panic it raised: a new file takes this one's place.
            Failed::Damaged(detail) => Err(unreadable(detail)),
        },
    };
    let (lines, mut unwritten) = match after {
        Ok(unwritten) => (folded_lines, unwritten),
        Err(reason) => return build(source, index, db, options, Some(reason), false),
    };
    if unwritten.is_none()
        && let Err(detail) = db.close()
    {
        // The commit stands only if the file closed cleanly: build it again, in a new file.
        let reason = unreadable(detail.to_string());
        match replace_file(index, options, reason.clone()) {
            Ok(db) => return build(source, index, db, options, Some(reason), true),
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
    Ok(after_commit(source, index, fold, coverage, rows, outcome))
}

/// Writes the spans a fold noted, each widened with the one the index holds (a catch-up notes
/// the new lines' times only). A row that fails its checksum is replaced.
fn write_spans(txn: &WriteTransaction, noted: &HashMap<i64, Span>) -> Result<(), redb::Error> {
    let mut table = Leak::new(txn.open_table(SPANS)?);
    let table = table.get_mut()?;
    for (&quarter, &span) in noted {
        let mut span = span;
        if let Some(old) = table
            .get(quarter)?
            .and_then(|row| decode::<Span>(row.value()))
        {
            span.widen(old);
        }
        table.insert(quarter, encode(&span).as_slice())?;
    }
    Ok(())
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
        txn.delete_table(SPANS)?;
        txn.delete_table(META)?;
    }
    let mut tables = Leak::new(Tables::write(txn)?);
    let Tables {
        keys,
        buckets,
        marks,
    } = tables.get_mut()?;
    for (id, messages) in &fold.dedup.messages {
        keys.insert(id.as_str(), encode_messages(messages).as_slice())?;
    }
    for (id, entry) in &fold.dedup.entries {
        keys.insert(id.as_str(), encode(entry).as_slice())?;
    }
    for (key, tally) in &fold.dedup.buckets {
        buckets.insert(*key, encode_tally(tally).as_slice())?;
    }
    let empty = encode(&());
    for uuid in &fold.dedup.marks {
        marks.insert(uuid.as_str(), empty.as_slice())?;
    }
    // The row counts the next open checks against the meta record.
    let counts = (keys.len()?, buckets.len()?, marks.len()?);
    let s = &fold.summary;
    if counts != (s.keys, s.buckets, s.marks) {
        return Err(redb::Error::Corrupted(
            "the row counts disagree with the fold".to_owned(),
        ));
    }
    drop(tables);
    write_spans(txn, &fold.dedup.spans)?;
    let record = Meta {
        parser: PARSER_VERSION,
        transcript: source.path_bytes(),
        format: source.format,
        max_line: options.max_line as u64,
        coverage: *coverage,
        summary: fold.summary.clone(),
    };
    write_meta(txn, FORMAT_VERSION, &record, &mut Vec::new())
}
