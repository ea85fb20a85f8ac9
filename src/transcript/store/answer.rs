//! Answers that write nothing: from a commit that covers every complete line, from the last
//! commit and a fold in memory of the lines after it, or from a fold of the whole transcript.
//! Opening and writing both end here.

use std::path::Path;

use redb::ReadableDatabase;

use super::recall::Tables;
use super::scan::{FoldFailure, fold_rest, fold_whole, read_error};
use super::schema::Meta;
use super::source::Source;
use super::{OpenOptions, Transcript};
use crate::index::derived::contain::{Close, Held, Leak};
use crate::index::{IndexOutcome, ReadOnlyReason};
use crate::log::{Coverage, CoverageBuilder};
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::{Dedup, Fold, Summary, widen_span};

pub(super) fn not_writable(detail: &str) -> ReadOnlyReason {
    ReadOnlyReason::NotWritable(detail.to_owned())
}

/// Answers from a commit that covers every complete line.
pub(super) fn fresh(source: &Source, index: &Path, meta: Meta, rows: Option<Dedup>) -> Transcript {
    let covered = Covered {
        coverage: meta.coverage,
        summary: meta.summary,
        dedup: rows,
    };
    answer(source, Some(index), covered, IndexOutcome::Fresh)
}

/// The answer from a commit (its rows, if loaded) and `fold`, which continued it up to
/// `coverage`.
pub(super) fn after_commit(
    source: &Source,
    index: &Path,
    fold: Fold,
    coverage: Coverage,
    rows: Option<Dedup>,
    outcome: IndexOutcome,
) -> Transcript {
    let dedup = overlay(rows, &fold.dedup);
    answer(source, Some(index), covered(fold, coverage, dedup), outcome)
}

/// Every row of the index with a fold's touched entries laid over them.
fn overlay(rows: Option<Dedup>, touched: &Dedup) -> Option<Dedup> {
    let mut rows = rows?;
    let touched = touched.clone();
    rows.messages.extend(touched.messages);
    rows.entries.extend(touched.entries);
    rows.buckets.extend(touched.buckets);
    rows.marks.extend(touched.marks);
    // A catch-up noted the new lines' times only: widened, not replaced.
    for (quarter, span) in touched.spans {
        widen_span(&mut rows.spans, quarter, span);
    }
    Some(rows)
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
        let mut tables = Leak::new(Tables::read(txn.get()?)?);
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
    Ok(after_commit(source, index, fold, coverage, rows, outcome))
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
    Ok(answer(
        source,
        index,
        folded(fold, coverage, options),
        outcome,
    ))
}

/// What an answer covers of a transcript, and what that adds up to.
pub(super) struct Covered {
    pub(super) coverage: Coverage,
    pub(super) summary: Summary,
    pub(super) dedup: Option<Dedup>,
}

/// What a fold of the whole transcript answers for `coverage`: its own rows, if asked for
/// (moved, not copied: they can be most of a large transcript's memory).
pub(super) fn folded(fold: Fold, coverage: Coverage, options: &OpenOptions) -> Covered {
    Covered {
        coverage,
        summary: fold.summary,
        dedup: options.wants_rows().then_some(fold.dedup),
    }
}

/// What `fold` answers for `coverage`, with `dedup` as the rows asked for.
pub(super) fn covered(fold: Fold, coverage: Coverage, dedup: Option<Dedup>) -> Covered {
    Covered {
        coverage,
        summary: fold.summary,
        dedup,
    }
}

/// The answer as the caller sees it.
pub(super) fn answer(
    source: &Source,
    index: Option<&Path>,
    covered: Covered,
    outcome: IndexOutcome,
) -> Transcript {
    Transcript {
        path: source.path.clone(),
        format: source.format,
        index: index.map(Path::to_path_buf),
        coverage: covered.coverage,
        summary: covered.summary,
        outcome,
        dedup: covered.dedup,
        opened: source.opened,
    }
}
