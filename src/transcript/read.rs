//! Feeding a transcript's complete lines to a [`Fold`]: each line goes to its format's reader,
//! which counts it with the fold's rules (kept apart from the fold so the readers depend on it
//! and not the other way round).

use super::fold::{At, Fold, Nothing, Recall, RecallError};
use super::format::Format;
use super::reader::Step;
use super::readers::reader;

impl Fold {
    /// Folds one complete line (without its `\n`) that starts at `offset`.
    pub fn line(&mut self, offset: u64, bytes: &[u8]) {
        // Recalling nothing cannot fail.
        let _ = self.line_with(offset, bytes, &mut Nothing);
    }

    /// Folds every complete line of `bytes`, which start at offset `start`; a torn last line
    /// is left out. Returns the offset after the last complete line.
    pub fn lines(&mut self, start: u64, bytes: &[u8]) -> u64 {
        let mut at = 0;
        while let Some(i) = bytes.get(at..).and_then(|rest| memchr::memchr(b'\n', rest)) {
            let body = bytes.get(at..at + i).unwrap_or_default();
            self.line(start + at as u64, body);
            at += i + 1;
        }
        start + at as u64
    }

    /// [`Fold::line`] with entries recalled from an index.
    pub(crate) fn line_with(
        &mut self,
        offset: u64,
        bytes: &[u8],
        recall: &mut dyn Recall,
    ) -> Result<(), RecallError> {
        self.summary.lines += 1;
        let at = At {
            offset,
            line: self.summary.lines,
        };
        let step = Step {
            fold: self,
            at,
            recall,
        };
        reader(step.fold.summary.format).fold_line(step, bytes)
    }
}

/// Folds the complete lines of a whole transcript held in memory (a torn last line is left
/// out): the one-shot answer an index must agree with.
pub fn fold_bytes(format: Format, bytes: &[u8]) -> Fold {
    let mut fold = Fold::new(format);
    fold.lines(0, bytes);
    fold
}
