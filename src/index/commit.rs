//! One commit to the index, with redb's panics contained.
//!
//! A damaged index file can make redb panic, on reads and on writes. Reads are guarded by
//! `catch_unwind`; writes too, and after a panic inside redb the `Database` is leaked instead
//! of dropped (dropping it can panic again while unwinding, which aborts the process; the
//! fuzzer found such a file). A damaged index is then rebuilt from the log.
//!
//! Some damage makes redb panic twice inside one commit (a drop while unwinding), which
//! aborts the process whatever we catch. To stop such a file from killing every process
//! that opens it, a marker file sits beside the index while a commit or close is in
//! progress ([`CommitMarker`]); a writable open that finds one left behind never writes to
//! that file again and rebuilds the index from the log.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use redb::Database;

use super::IndexError;
use super::db::{UnsyncedBuild, panic_message};
use super::error::{Cause, Unwritable};
use super::rows::RowBuffer;
use super::schema::Meta;
use super::status_file;
use crate::log::WindowSum;

/// Why [`commit_rows`] failed.
pub(super) enum CommitError {
    /// An error to report; the database handle is still usable (or at least closable).
    Failed(IndexError),
    /// redb panicked: the database must be leaked, never dropped (see the module docs).
    Panicked(IndexError),
}

impl From<IndexError> for CommitError {
    fn from(e: IndexError) -> CommitError {
        CommitError::Failed(e)
    }
}

/// Writes `rows`, `new_types` and `meta` in one durable commit, containing a panic in redb.
pub(super) fn commit_rows(
    database: &Database,
    path: &Path,
    rows: &mut RowBuffer,
    new_types: &mut Vec<(u32, String)>,
    meta: &mut Meta,
) -> Result<(), CommitError> {
    // From the first row written, not only around redb's commit: damage in redb's allocator
    // can make it panic twice while rows are inserted (a table dropped while unwinding),
    // which aborts the process; the marker left behind makes the next one rebuild instead of
    // aborting the same way (found by the `index_file` fuzzer).
    let _marker = CommitMarker::begin(path);
    let attempt = catch_unwind(AssertUnwindSafe(|| {
        // Not dropped if redb panics: its drop could panic again while unwinding.
        let txn = ManuallyDrop::new(
            database
                .begin_write()
                .map_err(|e| IndexError::redb_failure(path, e))?,
        );
        match rows.write(&txn, new_types, meta) {
            Ok(()) => commit(ManuallyDrop::into_inner(txn), path),
            Err(e) => {
                drop(ManuallyDrop::into_inner(txn));
                Err(IndexError::redb_failure(path, e))
            }
        }
    }));
    match attempt {
        Ok(result) => {
            result?;
            // Every commit, of builds, catch-ups and the writer's, lands here.
            if let Err(e) = status_file::write(path, meta) {
                tracing::warn!(index = %path.display(), error = %e, "cannot write the status file");
            }
            Ok(())
        }
        Err(panic) => {
            rows.clear();
            let detail = format!("redb panicked while committing: {}", panic_message(&*panic));
            tracing::error!(index = %path.display(), %detail, "index damaged");
            Err(CommitError::Panicked(IndexError::damaged(path, detail)))
        }
    }
}

/// Recomputes `meta`'s head and tail windows at its watermark.
pub(super) fn windows(
    meta: &mut Meta,
    log: &File,
    index: &Path,
    log_path: &Path,
) -> Result<(), IndexError> {
    let end = meta.watermark();
    let changed = || IndexError::LogChanged {
        path: index.to_path_buf(),
    };
    let read = |e: std::io::Error| IndexError::log_read(log_path, e);
    meta.head = WindowSum::head(log, end)
        .map_err(read)?
        .ok_or_else(changed)?;
    meta.tail = WindowSum::tail(log, end)
        .map_err(read)?
        .ok_or_else(changed)?;
    Ok(())
}

/// Forgets a database that redb panicked in (dropping it could panic again and abort), and
/// unlinks its file.
pub(super) fn leak(db: &mut Option<Database>, path: &Path) {
    if let Some(leaked) = db.take() {
        std::mem::forget(leaked);
    }
    unlink_leaked(path);
}

/// Unlinks the file of a leaked database handle. The handle keeps the file locked for the
/// rest of this process, so an open of the same path would wait on it and time out as busy
/// (a writer dropped right after a panic on its commit thread did); with the path free, the
/// next open builds a fresh index, as the rebuild that follows a leak would anyway.
pub(super) fn unlink_leaked(path: &Path) {
    // Not being able to remove it is `remove_index`'s only error.
    if let Err(Unwritable::NotWritable(why)) = remove_index(path) {
        tracing::warn!(index = %path.display(), %why, "cannot unlink an index whose handle was leaked");
    }
}

fn commit(mut txn: redb::WriteTransaction, path: &Path) -> Result<(), IndexError> {
    // Saving allocator state makes recovery after a crash almost instant (no full repair).
    txn.set_quick_repair(true);
    txn.commit().map_err(|e| IndexError::redb_failure(path, e))
}

/// A file beside the index (`<index>.committing`) that exists while this process writes rows
/// to the index and commits them, or closes it. It is removed when the commit returns or
/// unwinds (a panic caught and handled); only a dead process leaves it behind. Not synced: lost in a power cut, it
/// only means redb's own recovery is trusted, as it is after any unclean shutdown; left by
/// one, it costs one rebuild.
pub(super) struct CommitMarker(PathBuf);

impl CommitMarker {
    fn path(index: &Path) -> PathBuf {
        let mut name = index.as_os_str().to_owned();
        name.push(".committing");
        PathBuf::from(name)
    }

    /// Creates the marker. Best effort: an index that can be committed to sits in a writable
    /// directory, and a missing marker only means a lost chance to skip a damaged file.
    fn begin(index: &Path) -> CommitMarker {
        let path = CommitMarker::path(index);
        if let Err(e) = File::create(&path) {
            tracing::debug!(marker = %path.display(), error = %e, "cannot create the commit marker");
        }
        CommitMarker(path)
    }

    /// Whether a marker exists. Call it only while holding the index for writing: then no
    /// live process can be committing.
    pub(super) fn left_behind(index: &Path) -> bool {
        CommitMarker::path(index).exists()
    }
}

impl Drop for CommitMarker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Removes the index file, then the commit marker of the file it replaces (in that order, so
/// a crash in between leaves a marker without a file, never a suspect file without one).
pub(super) fn remove_index(path: &Path) -> Result<(), Unwritable> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Unwritable::NotWritable(Cause {
                detail: format!("cannot remove the stale index: {e}"),
                source: Some(e.into()),
            }));
        }
    }
    let _ = std::fs::remove_file(CommitMarker::path(path));
    UnsyncedBuild::remove_marker(path);
    status_file::remove(path);
    Ok(())
}

/// Closes a writable database, containing a panic inside redb (a damaged file can make saving
/// its allocator state panic). Closing explicitly matters: `close` marks the database closed
/// before it works, so its `Drop` does not try again while a panic unwinds (which would abort);
/// an implicit drop has no such guard.
pub(super) fn close_contained(db: Database, path: &Path) -> Result<(), IndexError> {
    let _marker = CommitMarker::begin(path);
    match catch_unwind(AssertUnwindSafe(|| db.close())) {
        Ok(result) => result.map_err(|e| IndexError::redb_failure(path, e)),
        Err(panic) => Err(IndexError::damaged(
            path,
            format!("redb panicked while closing: {}", panic_message(&*panic)),
        )),
    }
}
