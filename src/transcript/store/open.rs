//! Open = validate, then catch up or rebuild; or, when the index need not or cannot be
//! written, answer from its last commit and a fold of what follows (or from a fold of the
//! whole transcript): the core's sequence (`index/derived/sequence.rs`) with a transcript's
//! answers.

use std::path::{Path, PathBuf};

use super::answer::{fresh, from_scratch, memory_tail, not_writable};
use super::document;
use super::source::Source;
use super::validate::SourceChecks;
use super::write::writable;
use super::{OpenOptions, Transcript, UNINDEXED_FILE, settings};
use crate::index::ReadOnlyReason;
use crate::index::derived::cause::Cause;
use crate::index::derived::sequence::{self, Derived, Found, NoCommit, Target, Unwritable};
use crate::index::derived::storage::Opened;
use crate::transcript::cache::{default_index_dir, ensure_private_dir, index_file};
use crate::transcript::error::TranscriptError;

/// Reads a transcript through its index: validates the index, then catches it up, rebuilds
/// it, or steps around it, and answers. Only a problem with the transcript itself is an error.
pub(crate) fn open(path: &Path, options: &OpenOptions) -> Result<Transcript, TranscriptError> {
    if document::is_document(path, options.format) {
        return document::open(path, options);
    }
    let source = Source::open(path, options.format)?;
    let Some(dir) = options.index_dir.clone().or_else(default_index_dir) else {
        return from_scratch(&source, None, options, not_writable("no cache directory"));
    };
    let index = index_file(&dir, &source.path);
    if source.len <= options.max_unindexed_file.unwrap_or(0) && !index.exists() {
        let why = if source.len <= UNINDEXED_FILE {
            ReadOnlyReason::SmallFile
        } else {
            ReadOnlyReason::NotGrown
        };
        return from_scratch(&source, None, options, why);
    }
    let answer = sequence::open(&mut Opening {
        checks: SourceChecks {
            source: &source,
            options,
        },
        index: index.clone(),
        dir,
    })?;
    answer.outcome.trace(&index);
    Ok(answer)
}

/// One open of one transcript's index.
struct Opening<'a> {
    checks: SourceChecks<'a>,
    index: PathBuf,
    /// The cache directory the index goes in.
    dir: PathBuf,
}

impl<'a> Derived for Opening<'a> {
    type Checks = SourceChecks<'a>;
    type Answer = Transcript;
    type Error = TranscriptError;

    fn target(&self) -> Target<'_, SourceChecks<'a>> {
        let options = self.checks.options;
        Target {
            checks: &self.checks,
            index: &self.index,
            settings: settings(options),
            read_only: options.read_only,
            max_memory_tail: options.max_memory_tail,
        }
    }

    fn source_error(&self, e: std::io::Error) -> TranscriptError {
        TranscriptError::io("read", &self.checks.source.path, e)
    }

    fn fresh(&mut self, found: Found<SourceChecks<'a>>) -> Result<Transcript, TranscriptError> {
        let commit = found.commit;
        Ok(fresh(
            self.checks.source,
            &self.index,
            *commit.meta,
            commit.loaded,
        ))
    }

    fn with_tail(
        &mut self,
        found: Found<SourceChecks<'a>>,
        why: ReadOnlyReason,
    ) -> Result<Transcript, TranscriptError> {
        let SourceChecks { source, options } = self.checks;
        let commit = found.commit;
        let last = (*commit.meta, commit.loaded);
        if commit.behind == 0 {
            // Read-only as asked, of a commit that covers the transcript: nothing to fold.
            return Ok(fresh(source, &self.index, last.0, last.1));
        }
        memory_tail(source, &self.index, &found.db, options, last, why)
    }

    fn without_commit(
        &mut self,
        why: ReadOnlyReason,
        _: NoCommit,
    ) -> Result<Transcript, TranscriptError> {
        let SourceChecks { source, options } = self.checks;
        from_scratch(source, Some(&self.index), options, why)
    }

    fn prepare(&mut self) -> Result<(), Cause> {
        ensure_private_dir(&self.dir)
            .map_err(|e| Cause::described(format!("cannot create {}: {e}", self.dir.display())))
    }

    fn write(&mut self, opened: Opened) -> Result<Transcript, Unwritable<TranscriptError>> {
        let SourceChecks { source, options } = self.checks;
        Ok(writable(source, &self.index, opened, options)?)
    }
}
