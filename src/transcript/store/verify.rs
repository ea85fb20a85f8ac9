//! A deep check of a transcript's index, for audits and tests: the running crc of every
//! covered byte, and the index's summary and rows against a fold from the first line.

use std::path::{Path, PathBuf};

use redb::ReadableDatabase;

use super::recall::load_all;
use super::scan::{FoldFailure, fold_until};
use super::source::Source;
use super::validate::{SourceChecks, unreadable};
use super::{OpenOptions, settings};
use crate::index::StaleReason;
use crate::index::derived::contain::Leak;
use crate::index::derived::storage;
use crate::index::derived::validate::{Unread, Validity, validate};
use crate::log::{CoverageBuilder, CoverageCheck};
use crate::transcript::cache::{default_index_dir, index_file};
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::{Fold, Nothing, keys_messages};

/// What a deep check of a transcript's index found. The index is not changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Verification {
    /// The index file looked at.
    pub index: Option<PathBuf>,
    /// Why the index cannot be used, if it cannot (no index is `Unreadable`).
    pub stale: Option<StaleReason>,
    /// The deep check of what the index covers against the transcript now.
    pub coverage: Option<CoverageCheck>,
    /// Whether the index's summary, keys and buckets equal a fold of the covered bytes from
    /// the first line.
    pub agrees: bool,
}

impl Verification {
    /// Whether the index is usable, covers intact bytes, and holds what a fold of them gives.
    pub fn is_valid(&self) -> bool {
        self.stale.is_none() && self.coverage.is_some_and(|c| c.is_intact()) && self.agrees
    }
}

/// Checks a transcript's index deeply (O(transcript)) without changing it.
pub(crate) fn verify(path: &Path, options: &OpenOptions) -> Result<Verification, TranscriptError> {
    let source = Source::open(path, options.format)?;
    let index = options
        .index_dir
        .clone()
        .or_else(default_index_dir)
        .map(|dir| index_file(&dir, &source.path));
    let mut found = Verification {
        index: index.clone(),
        stale: None,
        coverage: None,
        agrees: false,
    };
    let opened = index
        .as_deref()
        .and_then(|index| storage::open_read_only(index, &settings(options)).ok())
        .flatten();
    let Some(db) = opened else {
        found.stale = Some(StaleReason::Unreadable {
            detail: "no index, or it cannot be opened read-only now".to_owned(),
        });
        return Ok(found);
    };
    let checks = SourceChecks {
        source: &source,
        options,
    };
    let meta = match validate(&checks, &db) {
        Ok(Validity::Usable(commit)) => {
            let deep = commit.meta.coverage.check_deep(&source.file);
            found.coverage = Some(deep.map_err(|e| TranscriptError::io("read", &source.path, e))?);
            commit.meta
        }
        Ok(Validity::Stale(reason)) => {
            found.stale = Some(reason);
            return Ok(found);
        }
        Ok(Validity::Empty) => {
            found.stale = Some(StaleReason::Unreadable {
                detail: "an index without a commit".to_owned(),
            });
            return Ok(found);
        }
        Err(Unread::Source(e)) => return Err(TranscriptError::io("read", &source.path, e)),
        Err(Unread::Index(e)) => {
            found.stale = Some(unreadable(e.to_string()));
            return Ok(found);
        }
        Err(Unread::Panicked(detail)) => {
            found.stale = Some(unreadable(detail));
            return Ok(found);
        }
    };
    let mut fold = Fold::new(source.format);
    let mut builder = CoverageBuilder::new();
    match fold_until(
        &source,
        meta.coverage.end,
        &mut builder,
        &mut fold,
        &mut Nothing,
        options,
    ) {
        Ok(_) => {}
        Err(FoldFailure::Read(e)) => return Err(TranscriptError::io("read", &source.path, e)),
        Err(FoldFailure::Recall(_)) => return Ok(found),
    }
    let claude = keys_messages(source.format);
    let counts = (meta.summary.keys, meta.summary.buckets, meta.summary.marks);
    let rows = db.run("reading the index", |db| -> Result<_, redb::Error> {
        let txn = Leak::new(db.begin_read()?);
        Ok(load_all(txn.get()?, claude, counts))
    });
    found.agrees = builder.coverage() == meta.coverage
        && fold.summary == meta.summary
        && matches!(rows, Ok(Ok(Ok(rows))) if rows == fold.dedup);
    Ok(found)
}
