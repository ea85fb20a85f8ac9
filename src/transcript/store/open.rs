//! Open = validate, then catch up or rebuild; or, when the index need not or cannot be
//! written, answer from its last commit and a fold of what follows (or from a fold of the
//! whole transcript).

use std::path::Path;

use redb::Database;

use super::answer::{fresh, from_scratch, memory_tail, not_writable, read_only};
use super::db::{self, Held, OpenFailure};
use super::source::Source;
use super::validate::{Validity, unreadable, validate};
use super::write::{build, catch_up};
use super::{OpenOptions, Transcript};
use crate::index::{ReadOnlyReason, StaleReason};
use crate::log::CoverageCheck;
use crate::transcript::cache::{default_index_dir, ensure_private_dir, index_file};
use crate::transcript::error::TranscriptError;

/// Reads a transcript through its index: validates the index, then catches it up, rebuilds
/// it, or steps around it, and answers. Only a problem with the transcript itself is an error.
pub fn open(path: &Path, options: &OpenOptions) -> Result<Transcript, TranscriptError> {
    let source = Source::open(path, options.format)?;
    let Some(dir) = options.index_dir.clone().or_else(default_index_dir) else {
        return from_scratch(&source, None, options, not_writable("no cache directory"));
    };
    let index = index_file(&dir, &source.path);
    // Most opens find the index current: a read-only handle answers them and writes nothing
    // (a writable open and close alone cost redb several syncs).
    if let Some(answer) = without_writing(&source, &index, options)? {
        answer.outcome.trace(&index);
        return Ok(answer);
    }
    if let Err(e) = ensure_private_dir(&dir) {
        let why = not_writable(&format!("cannot create {}: {e}", dir.display()));
        return read_only(&source, &index, options, why);
    }
    let mut interrupted = None;
    if db::Unsynced::torn(&index) {
        // Written without syncs before the machine restarted, never synced: maybe torn.
        let _ = std::fs::remove_file(&index);
        db::Unsynced::remove_marker(&index);
        interrupted = Some(true);
    } else if db::Unsynced::left_behind(&index) {
        // A session is running, or its process died (then possibly on a file that made redb
        // abort): once this process holds the file for writing, it is the latter.
        interrupted = Some(false);
    }
    let answer = match db::open_writable(&index, options.repair_budget) {
        Ok(db) => match interrupted {
            Some(removed) => {
                let reason = Some(StaleReason::CommitInterrupted);
                build(&source, &index, db, options, reason, removed)?
            }
            None => writable(&source, &index, db, options)?,
        },
        Err(OpenFailure::Busy) => {
            let why = ReadOnlyReason::HeldByAnotherProcess;
            return read_only(&source, &index, options, why);
        }
        Err(OpenFailure::NotWritable(detail)) => {
            return read_only(&source, &index, options, not_writable(&detail));
        }
        Err(OpenFailure::Damaged(detail)) => {
            // Not an index (random bytes, another program's file, torn beyond repair): a
            // fresh file replaces it.
            let _ = std::fs::remove_file(&index);
            match db::open_writable(&index, options.repair_budget) {
                Ok(db) => build(&source, &index, db, options, Some(unreadable(detail)), true)?,
                Err(e) => {
                    let why = match e {
                        OpenFailure::Busy => ReadOnlyReason::HeldByAnotherProcess,
                        OpenFailure::NotWritable(d) | OpenFailure::Damaged(d) => not_writable(&d),
                    };
                    return from_scratch(&source, Some(&index), options, why);
                }
            }
        }
    };
    answer.outcome.trace(&index);
    Ok(answer)
}

/// The answer through a read-only handle, when that is all it takes: the index is current;
/// or only a small tail (or, read-only as asked, any tail) follows it. `None` when the index
/// must be written (built, caught up, rebuilt).
fn without_writing(
    source: &Source,
    index: &Path,
    options: &OpenOptions,
) -> Result<Option<Transcript>, TranscriptError> {
    let requested = ReadOnlyReason::Requested;
    let Some(db) = db::open_read_only(index) else {
        return if options.read_only {
            from_scratch(source, Some(index), options, requested).map(Some)
        } else {
            Ok(None)
        };
    };
    match validate(&db, source, options)? {
        Validity::Usable(meta, CoverageCheck::Current { .. }, rows) => {
            Ok(Some(fresh(source, index, *meta, rows)))
        }
        Validity::Usable(meta, _, rows) if options.read_only => {
            memory_tail(source, index, &db, options, (*meta, rows), requested).map(Some)
        }
        Validity::Usable(meta, check, rows)
            if check.log_len() - meta.coverage.end <= options.max_memory_tail =>
        {
            let why = ReadOnlyReason::SmallTail;
            memory_tail(source, index, &db, options, (*meta, rows), why).map(Some)
        }
        _ if options.read_only => from_scratch(source, Some(index), options, requested).map(Some),
        _ => Ok(None),
    }
}

/// The answer through an index this process holds for writing.
fn writable(
    source: &Source,
    index: &Path,
    db: Held<Database>,
    options: &OpenOptions,
) -> Result<Transcript, TranscriptError> {
    match validate(&db, source, options)? {
        Validity::Empty => build(source, index, db, options, None, true),
        Validity::Stale(reason) => build(source, index, db, options, Some(reason), false),
        Validity::Usable(meta, CoverageCheck::Current { .. }, rows) => {
            Ok(fresh(source, index, *meta, rows))
        }
        Validity::Usable(meta, _, rows) => catch_up(source, index, db, options, (*meta, rows)),
    }
}
