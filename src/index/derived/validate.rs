//! The open-time checks of an index, in one order for every kind: the format version, the
//! meta record's versions and identity, the tables against the meta record, then the source
//! against what the last commit covers. Each kind says what its checks are ([`Checks`]); each
//! is O(1) in the source's size.
//!
//! The source check is where a kind of source plugs in ([`Checks::check_source`]). An
//! append-only file of lines compares its length and its head and tail windows with the
//! commit's [`Coverage`] ([`check_lines`]): it may have grown, and then only the new bytes are
//! read. A source rewritten whole (a JSON document) or a database (SQLite with its WAL)
//! brings its own cheap identity check, stored in its meta record (its size, modification
//! time and a checksum; a database's change counter and WAL salts), and answers
//! [`SourceCheck::Current`] or [`SourceCheck::Changed`], never [`SourceCheck::Grew`]: the
//! sequence then never catches it up, it rebuilds it.

use std::fs::File;
use std::io;

use redb::{ReadTransaction, ReadableDatabase};
use serde::de::DeserializeOwned;

use super::contain::{Close, Held, Leak};
use super::outcome::StaleReason;
use super::record::{self, MetaRead};
use crate::log::{Coverage, CoverageCheck};

/// What one kind of index checks on open. See the module docs.
pub(crate) trait Checks {
    /// The meta record: versions, what the index is of, what it covers, and the fold there.
    type Meta: DeserializeOwned;
    /// What a usable commit is read with (from the same snapshot as its meta record).
    type Loaded;
    /// The format version of the tables and their encodings.
    const FORMAT_VERSION: u32;

    /// The meta record alone: versions, what it was built with, whether it holds together.
    fn check_meta(&self, meta: &Self::Meta) -> Option<StaleReason>;

    /// The tables against the meta record (counts, last rows): cheap self-consistency.
    ///
    /// # Errors
    ///
    /// redb could not read them.
    fn check_tables(
        &self,
        txn: &ReadTransaction,
        meta: &Self::Meta,
    ) -> Result<Option<StaleReason>, redb::Error>;

    /// The source now against what the meta record covers.
    ///
    /// # Errors
    ///
    /// The source could not be read.
    fn check_source(&self, meta: &Self::Meta) -> io::Result<SourceCheck>;

    /// What a commit that passed every check is read with; a reason if it does not hold.
    ///
    /// # Errors
    ///
    /// redb could not read it.
    fn load(
        &self,
        txn: &ReadTransaction,
        meta: &Self::Meta,
    ) -> Result<Result<Self::Loaded, StaleReason>, redb::Error>;
}

/// How a source relates to what a commit covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SourceCheck {
    /// It holds exactly what the commit covers.
    Current,
    /// What the commit covers is intact and this many bytes follow (complete lines, or a
    /// torn one).
    Grew {
        /// Bytes after the commit.
        bytes: u64,
    },
    /// The commit must not be used.
    Changed(StaleReason),
}

/// The source check of an append-only file of lines: its length, then the head and tail
/// windows of what `coverage` covers. Reads at most 128 KiB whatever the file's size.
pub(crate) fn check_lines(coverage: &Coverage, file: &File) -> io::Result<SourceCheck> {
    Ok(match coverage.check(file)? {
        CoverageCheck::Current { .. } => SourceCheck::Current,
        CoverageCheck::Grew { len } => SourceCheck::Grew {
            bytes: len - coverage.end,
        },
        CoverageCheck::Truncated { len } => SourceCheck::Changed(StaleReason::LogTruncated {
            indexed: coverage.end,
            len,
        }),
        CoverageCheck::HeadChanged { .. } => SourceCheck::Changed(StaleReason::HeadChanged),
        CoverageCheck::TailChanged { .. } | CoverageCheck::BodyChanged { .. } => {
            SourceCheck::Changed(StaleReason::TailChanged)
        }
    })
}

/// A commit that passed every check.
pub(crate) struct Commit<C: Checks> {
    pub(crate) meta: Box<C::Meta>,
    pub(crate) loaded: C::Loaded,
    /// Bytes of the source after it (0: it covers the source).
    pub(crate) behind: u64,
}

/// What checking an index found.
pub(crate) enum Validity<C: Checks> {
    /// No commit yet.
    Empty,
    /// It must not be used.
    Stale(StaleReason),
    /// Its last commit can be used.
    Usable(Commit<C>),
}

/// Why the checks could not be made.
#[derive(Debug)]
pub(crate) enum Unread {
    /// redb failed reading the index.
    Index(redb::Error),
    /// redb panicked reading the index.
    Panicked(String),
    /// The source could not be read.
    Source(io::Error),
}

/// Reads the last commit of `db` and checks it as `checks` says, all in one snapshot. The
/// source is checked after the snapshot is taken: a writer commits only after the bytes it
/// covers are written, so the source is then at least as long as the commit says.
pub(crate) fn validate<C: Checks, D: ReadableDatabase + Close>(
    checks: &C,
    db: &Held<D>,
) -> Result<Validity<C>, Unread> {
    let checked = db.run("reading the index", |db| {
        let txn = Leak::new(db.begin_read()?);
        check_snapshot(checks, txn.get()?)
    });
    match checked {
        Err(panicked) => Err(Unread::Panicked(panicked)),
        Ok(Err(e)) => Err(Unread::Index(e)),
        Ok(Ok(Err(e))) => Err(Unread::Source(e)),
        Ok(Ok(Ok(validity))) => Ok(validity),
    }
}

type Checked<C> = Result<Result<Validity<C>, io::Error>, redb::Error>;

fn check_snapshot<C: Checks>(checks: &C, txn: &ReadTransaction) -> Checked<C> {
    let stale = |reason| Ok(Ok(Validity::Stale(reason)));
    let meta = match record::read_meta::<C::Meta>(txn, C::FORMAT_VERSION)? {
        MetaRead::Empty => return Ok(Ok(Validity::Empty)),
        MetaRead::Stale(reason) => return stale(reason),
        MetaRead::Found(meta) => meta,
    };
    if let Some(reason) = checks.check_meta(&meta) {
        return stale(reason);
    }
    if let Some(reason) = checks.check_tables(txn, &meta)? {
        return stale(reason);
    }
    let behind = match checks.check_source(&meta) {
        Err(e) => return Ok(Err(e)),
        Ok(SourceCheck::Changed(reason)) => return stale(reason),
        Ok(SourceCheck::Current) => 0,
        Ok(SourceCheck::Grew { bytes }) => bytes,
    };
    Ok(Ok(match checks.load(txn, &meta)? {
        Ok(loaded) => Validity::Usable(Commit {
            meta,
            loaded,
            behind,
        }),
        Err(reason) => Validity::Stale(reason),
    }))
}
