//! The open sequence every index follows ([`open`]): look at the last commit read-only and
//! answer from it when that is all it takes; otherwise hold the index for writing and bring it
//! up to date (catch up, build or rebuild); and when it cannot be written, step aside
//! ([`step_aside`]): answer from the last commit plus a fold in memory of what follows it.
//!
//! A kind of index supplies its checks ([`Checks`]) and its answers ([`Derived`]); the order,
//! the read-only shortcut, the markers found on a writable open ([`open_for_writing`]) and the
//! typed [`IndexOutcome`](super::outcome::IndexOutcome) are the same for all.

use std::path::Path;

use redb::{Database, ReadOnlyDatabase};

use super::cause::Cause;
use super::contain::Held;
use super::files::{CommitMarker, remove_index};
use super::outcome::{ReadOnlyReason, StaleReason};
use super::storage::{self, OpenFailure, Opened, Settings};
use super::unsynced;
use super::validate::{Checks, Commit, Unread, Validity, validate};

/// Why an index was not brought up to date by a holder of its write lock.
#[derive(Debug)]
pub(crate) enum Unwritable<E> {
    /// Another process holds it for writing.
    Busy,
    /// It cannot be written here.
    NotWritable(Cause),
    /// Any other failure.
    Failed(E),
}

impl<E> From<E> for Unwritable<E> {
    fn from(e: E) -> Unwritable<E> {
        Unwritable::Failed(e)
    }
}

/// A usable last commit, found read-only.
pub(crate) struct Found<C: Checks> {
    pub(crate) db: Held<ReadOnlyDatabase>,
    pub(crate) commit: Commit<C>,
}

/// Why there is no usable last commit.
pub(crate) enum NoCommit {
    /// There is one, and it must not be used.
    Stale(StaleReason),
    /// There is none to look at: no file, an empty index, a file needing repair or unreadable.
    Unavailable(Cause),
}

/// Where an index is, how one open may use it, and how it is checked.
pub(crate) struct Target<'a, C> {
    /// The kind's checks, bound to the source.
    pub(crate) checks: &'a C,
    /// The index file.
    pub(crate) index: &'a Path,
    /// How the file is kept.
    pub(crate) settings: Settings<'a>,
    /// Whether the caller asked never to write the index.
    pub(crate) read_only: bool,
    /// The longest tail after a commit that is folded in memory rather than committed.
    pub(crate) max_memory_tail: u64,
}

/// One kind of derived index, opened for one source: its checks and its answers.
pub(crate) trait Derived {
    /// Its open-time checks.
    type Checks: Checks;
    /// What an open answers.
    type Answer;
    /// What an open fails with.
    type Error;

    /// Where the index is, how this open may use it, and its checks.
    fn target(&self) -> Target<'_, Self::Checks>;
    /// A failure to read the source.
    fn source_error(&self, e: std::io::Error) -> Self::Error;

    /// The answer from a commit that covers the whole source.
    ///
    /// # Errors
    ///
    /// As the kind's answers fail.
    fn fresh(&mut self, found: Found<Self::Checks>) -> Result<Self::Answer, Self::Error>;

    /// The answer from a commit plus a fold in memory of the source after it, without writing.
    ///
    /// # Errors
    ///
    /// As the kind's answers fail.
    fn with_tail(
        &mut self,
        found: Found<Self::Checks>,
        why: ReadOnlyReason,
    ) -> Result<Self::Answer, Self::Error>;

    /// The answer when no commit can be used and the index cannot be written.
    ///
    /// # Errors
    ///
    /// As the kind's answers fail (the agent log's index has no answer without a commit).
    fn without_commit(
        &mut self,
        why: ReadOnlyReason,
        found: NoCommit,
    ) -> Result<Self::Answer, Self::Error>;

    /// Makes the index writable (a directory to create); a cause if it cannot be.
    ///
    /// # Errors
    ///
    /// Why the index cannot be written.
    fn prepare(&mut self) -> Result<(), Cause> {
        Ok(())
    }

    /// Brings the index held for writing up to date and answers.
    ///
    /// # Errors
    ///
    /// Busy or not writable after all (the sequence steps aside), or failed.
    fn write(&mut self, opened: Opened) -> Result<Self::Answer, Unwritable<Self::Error>>;
}

/// What a read-only look at the index's last commit found.
pub(crate) enum Look<C: Checks> {
    /// A commit to answer from.
    Usable(Found<C>),
    /// None, and why.
    Not(NoCommit),
}

/// Opens the index read-only and checks its last commit against the source. Takes no write
/// lock and writes nothing.
///
/// # Errors
///
/// The source could not be read.
pub(crate) fn look<D: Derived>(d: &D) -> Result<Look<D::Checks>, D::Error> {
    let unavailable = |cause| Ok(Look::Not(NoCommit::Unavailable(cause)));
    let target = d.target();
    let db = match storage::open_read_only(target.index, &target.settings) {
        Ok(Some(db)) => db,
        Ok(None) => return unavailable(Cause::described("there is no index")),
        Err(cause) => return unavailable(cause),
    };
    match validate(target.checks, &db) {
        Ok(Validity::Usable(commit)) => Ok(Look::Usable(Found { db, commit })),
        Ok(Validity::Stale(reason)) => Ok(Look::Not(NoCommit::Stale(reason))),
        Ok(Validity::Empty) => unavailable(Cause::described("the index holds no commit yet")),
        Err(Unread::Index(e)) => unavailable(Cause::error(e)),
        Err(Unread::Panicked(panicked)) => unavailable(Cause::described(panicked)),
        Err(Unread::Source(e)) => Err(d.source_error(e)),
    }
}

/// Opens `d`'s index: validate, then answer from the last commit, catch up, build or rebuild,
/// or step aside. See the module docs.
///
/// # Errors
///
/// As `d`'s answers fail.
pub(crate) fn open<D: Derived>(d: &mut D) -> Result<D::Answer, D::Error> {
    let (read_only, max_memory_tail) = {
        let target = d.target();
        (target.read_only, target.max_memory_tail)
    };
    // Most opens find the index current, or only a small tail behind it: a read-only handle
    // answers them and writes nothing (a writable open and close cost redb several syncs).
    match look(d)? {
        Look::Usable(found) if read_only => {
            return d.with_tail(found, ReadOnlyReason::Requested);
        }
        Look::Usable(found) if found.commit.behind == 0 => return d.fresh(found),
        Look::Usable(found) if found.commit.behind <= max_memory_tail => {
            return d.with_tail(found, ReadOnlyReason::SmallTail);
        }
        Look::Not(not) if read_only => {
            return d.without_commit(ReadOnlyReason::Requested, not);
        }
        Look::Usable(_) | Look::Not(_) => {}
    }
    let why = match writable(d) {
        Ok(opened) => match d.write(opened) {
            Ok(answer) => return Ok(answer),
            Err(Unwritable::Failed(e)) => return Err(e),
            Err(Unwritable::Busy) => ReadOnlyReason::HeldByAnotherProcess,
            Err(Unwritable::NotWritable(cause)) => not_writable(cause),
        },
        Err(why) => why,
    };
    step_aside(d, why)
}

/// Opens `d`'s index for writing, or says why it cannot be written here.
fn writable<D: Derived>(d: &mut D) -> Result<Opened, ReadOnlyReason> {
    d.prepare().map_err(not_writable)?;
    let target = d.target();
    open_for_writing(target.index, &target.settings).map_err(|failure| match failure {
        OpenFailure::Busy => ReadOnlyReason::HeldByAnotherProcess,
        // Even a new file could not be opened as an index: it cannot be written here.
        OpenFailure::NotWritable(cause) | OpenFailure::Damaged(cause) => not_writable(cause),
    })
}

fn not_writable(cause: Cause) -> ReadOnlyReason {
    ReadOnlyReason::NotWritable(cause.detail)
}

/// The answer without writing, for `why`: from the last commit and a fold of what follows,
/// or, without a usable commit, as the kind answers then.
///
/// # Errors
///
/// As `d`'s answers fail.
pub(crate) fn step_aside<D: Derived>(
    d: &mut D,
    why: ReadOnlyReason,
) -> Result<D::Answer, D::Error> {
    match look(d)? {
        Look::Usable(found) => d.with_tail(found, why),
        Look::Not(not) => d.without_commit(why, not),
    }
}

/// What a holder of the write lock does with the index it opened.
pub(crate) enum Plan<C: Checks> {
    /// Build from the first line into the file as it is (new, or just replaced: `reason`
    /// says why the old one was not used).
    Build(Option<StaleReason>),
    /// Rebuild from the first line into a new file in place of this one: it must not be used,
    /// and may hide damage redb has not met yet, which a build in place would inherit.
    Rebuild(StaleReason),
    /// Catch up on what follows the last commit (nothing, if it covers the source).
    Update(Commit<C>),
}

/// Decides what to do with the index `db` held for writing (`replaced`: the file was just
/// replaced, for that reason). A read of the index that fails for damage (a redb error other
/// than the disk's, or a panic) means a rebuild.
///
/// # Errors
///
/// The disk failed reading the index (the file is kept), or the source could not be read.
pub(crate) fn plan<C: Checks>(
    checks: &C,
    db: &Held<Database>,
    replaced: Option<StaleReason>,
) -> Result<Plan<C>, Unread> {
    if replaced.is_some() {
        return Ok(Plan::Build(replaced));
    }
    Ok(match validate(checks, db) {
        Ok(Validity::Empty) => Plan::Build(None),
        Ok(Validity::Stale(reason)) => Plan::Rebuild(reason),
        Ok(Validity::Usable(commit)) => Plan::Update(commit),
        Err(
            e @ (Unread::Source(_) | Unread::Index(redb::Error::Io(_) | redb::Error::PreviousIo)),
        ) => {
            return Err(e);
        }
        Err(Unread::Index(e)) => Plan::Rebuild(StaleReason::Unreadable {
            detail: e.to_string(),
        }),
        Err(Unread::Panicked(detail)) => Plan::Rebuild(StaleReason::Unreadable { detail }),
    })
}

/// Opens the index for writing. A marker left behind ([`CommitMarker`], or an unsynced
/// session's marker that is not this open's) means a process died committing, or wrote
/// without syncs and never synced: the file may have made redb abort, or a power cut may have
/// torn it, so it is never written again; a file redb refuses is damaged. Either way a new
/// file replaces it, and [`Opened::replaced`] says why.
///
/// # Errors
///
/// The index is busy or cannot be written, or even a new file is refused.
pub(crate) fn open_for_writing(
    index: &Path,
    settings: &Settings<'_>,
) -> Result<Opened, OpenFailure> {
    match storage::open_writable(index, settings) {
        Ok(opened) if left_behind(index, &opened) => {
            tracing::warn!(index = %index.display(), "a write to the index never finished; rebuilding it");
            // Closing it writes to it: give the handle up (its file is unlinked just below).
            opened.db.abandon();
            replace(index, settings, StaleReason::CommitInterrupted)
        }
        Ok(opened) => Ok(opened),
        Err(OpenFailure::Damaged(cause)) => {
            let reason = StaleReason::Unreadable {
                detail: cause.detail,
            };
            replace(index, settings, reason)
        }
        Err(other) => Err(other),
    }
}

/// Whether a marker beside the index was left behind by another process. Only the holder of
/// the write lock can tell: no live process is writing then. An unsynced session's marker
/// that this open made is its own (it never makes one over another). A commit marker beside a
/// file this open created can only be left from a file removed before it.
fn left_behind(index: &Path, opened: &Opened) -> bool {
    let own = opened.unsynced.as_ref().is_some_and(|u| u.is_deferring());
    (!opened.new_file && CommitMarker::left_behind(index)) || (!own && unsynced::left_behind(index))
}

/// Removes the index file (with its markers and sidecars) and opens a new one in its place.
///
/// # Errors
///
/// The old file cannot be removed (not writable), or the new one not opened.
pub(crate) fn replace(
    index: &Path,
    settings: &Settings<'_>,
    reason: StaleReason,
) -> Result<Opened, OpenFailure> {
    remove_index(index, settings.sidecars).map_err(OpenFailure::NotWritable)?;
    let mut opened = storage::open_writable(index, settings)?;
    opened.replaced = Some(reason);
    Ok(opened)
}
