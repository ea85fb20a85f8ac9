//! Folding a transcript's complete lines, from a coverage's end, into a fold and a coverage.

use crate::log::{CoverageBuilder, Line, scan_lines};
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::{Fold, Nothing, Recall, RecallError};

use super::OpenOptions;
use super::source::Source;

/// Why a fold stopped.
pub(super) enum FoldFailure {
    /// Reading the transcript failed.
    Read(std::io::Error),
    /// Reading the index's dedup state failed: it cannot be trusted.
    Recall(RecallError),
}

impl From<std::io::Error> for FoldFailure {
    fn from(e: std::io::Error) -> FoldFailure {
        FoldFailure::Read(e)
    }
}

pub(super) fn read_error(source: &Source, e: std::io::Error) -> TranscriptError {
    TranscriptError::io("read", &source.path, e)
}

/// Folds the complete lines after the builder's end up to `limit` bytes into the transcript.
/// Returns the number of lines folded.
pub(super) fn fold_until(
    source: &Source,
    limit: u64,
    builder: &mut CoverageBuilder,
    fold: &mut Fold,
    recall: &mut dyn Recall,
    options: &OpenOptions,
) -> Result<u64, FoldFailure> {
    let before = fold.summary.lines;
    scan_lines(
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
    )?;
    Ok(fold.summary.lines - before)
}

/// [`fold_until`] the length the transcript had when it was opened.
pub(super) fn fold_rest(
    source: &Source,
    builder: &mut CoverageBuilder,
    fold: &mut Fold,
    recall: &mut dyn Recall,
    options: &OpenOptions,
) -> Result<u64, FoldFailure> {
    fold_until(source, source.len, builder, fold, recall, options)
}

/// Folds the whole transcript in memory.
pub(super) fn fold_whole(
    source: &Source,
    options: &OpenOptions,
) -> Result<(Fold, CoverageBuilder), TranscriptError> {
    let mut fold = Fold::new(source.format);
    let mut builder = CoverageBuilder::new();
    match fold_rest(source, &mut builder, &mut fold, &mut Nothing, options) {
        Err(FoldFailure::Read(e)) => Err(read_error(source, e)),
        // Recalling nothing never fails.
        Ok(_) | Err(FoldFailure::Recall(_)) => Ok((fold, builder)),
    }
}
