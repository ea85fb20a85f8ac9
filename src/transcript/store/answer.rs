//! Answers that write nothing: from a commit that covers every complete line, from the last
//! commit and a fold in memory of the lines after it, or from a fold of the whole transcript.
//! Opening and writing both end here.

use std::path::Path;

use redb::ReadableDatabase;

use super::db::{self, Close, Held, Leak};
use super::recall::Tables;
use super::scan::{FoldFailure, fold_rest, fold_whole, read_error};
use super::schema::{BUCKETS, KEYS, MARKS, Meta};
use super::source::Source;
use super::validate::{Validity, validate};
use super::{OpenOptions, Transcript};
use crate::index::{IndexOutcome, ReadOnlyReason};
use crate::log::{Coverage, CoverageBuilder, CoverageCheck};
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::{Dedup, Fold, Summary};

pub(super) fn not_writable(detail: &str) -> ReadOnlyReason {
    ReadOnlyReason::NotWritable(detail.to_owned())
}

/// Answers from a commit that covers every complete line.
pub(super) fn fresh(source: &Source, index: &Path, meta: Meta, rows: Option<Dedup>) -> Transcript {
    answer(
        source,
        Some(index),
        meta.coverage,
        meta.summary,
        IndexOutcome::Fresh,
        rows,
    )
}

/// Every row of the index with a fold's touched entries laid over them.
pub(super) fn overlay(mut rows: Dedup, touched: Dedup) -> Dedup {
    rows.messages.extend(touched.messages);
    rows.entries.extend(touched.entries);
    rows.buckets.extend(touched.buckets);
    rows.marks.extend(touched.marks);
    rows
}

/// Answers from the index's last commit and a fold, in memory, of the lines after it.
pub(super) fn memory_tail<D: ReadableDatabase + Close>(
    source: &Source,
    index: &Path,
    db: &Held<D>,
    options: &OpenOptions,
    (meta, rows): (Meta, Option<Dedup>),
    why: ReadOnlyReason,
) -> Result<Transcript, TranscriptError> {
    let Some(mut builder) =
        CoverageBuilder::resume(&meta.coverage, &source.file).map_err(|e| read_error(source, e))?
    else {
        return from_scratch(source, Some(index), options, why);
    };
    let start = meta.coverage.end;
    let mut fold = Fold::resume(meta.summary.clone());
    let folded = db.run("reading the index", |db| -> Result<_, redb::Error> {
        let txn = Leak::new(db.begin_read()?);
        let mut tables = Leak::new(Tables {
            keys: txn.get()?.open_table(KEYS)?,
            buckets: txn.get()?.open_table(BUCKETS)?,
            marks: txn.get()?.open_table(MARKS)?,
        });
        Ok(fold_rest(
            source,
            &mut builder,
            &mut fold,
            tables.get_mut()?,
            options,
        ))
    });
    let lines = match folded {
        Ok(Ok(Ok(lines))) => lines,
        Ok(Ok(Err(FoldFailure::Read(e)))) => return Err(read_error(source, e)),
        _ => return from_scratch(source, Some(index), options, why),
    };
    if lines == 0 {
        return Ok(fresh(source, index, meta, rows));
    }
    let coverage = builder.coverage();
    let outcome = IndexOutcome::ReadOnly {
        why,
        tail_bytes: coverage.end - start,
        tail_events: lines,
    };
    let dedup = rows.map(|rows| overlay(rows, fold.dedup.clone()));
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
pub(super) fn read_only(
    source: &Source,
    index: &Path,
    options: &OpenOptions,
    why: ReadOnlyReason,
) -> Result<Transcript, TranscriptError> {
    let Some(db) = db::open_read_only(index) else {
        return from_scratch(source, Some(index), options, why);
    };
    match validate(&db, source, options)? {
        Validity::Usable(meta, CoverageCheck::Current { .. }, rows) => {
            Ok(fresh(source, index, *meta, rows))
        }
        Validity::Usable(meta, _, rows) => {
            memory_tail(source, index, &db, options, (*meta, rows), why)
        }
        Validity::Empty | Validity::Stale(_) => from_scratch(source, Some(index), options, why),
    }
}

/// The answer from a fold of the whole transcript, in memory.
pub(super) fn from_scratch(
    source: &Source,
    index: Option<&Path>,
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
    if let Some(index) = index {
        outcome.trace(index);
    }
    let dedup = options.wants_rows().then(|| fold.dedup.clone());
    Ok(answer(
        source,
        index,
        coverage,
        fold.summary,
        outcome,
        dedup,
    ))
}

/// The answer as the caller sees it.
pub(super) fn answer(
    source: &Source,
    index: Option<&Path>,
    coverage: Coverage,
    summary: Summary,
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
