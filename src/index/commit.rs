//! One commit to the agent log's index, and its close, on the core's contained handle
//! (`derived/contain.rs`): a panic inside redb leaves the handle unusable and its file given
//! up, and the index is rebuilt from the log. Every commit also writes the status file.

use std::fs::File;
use std::path::Path;

use redb::Database;

use super::IndexError;
use super::derived::contain::{CloseError, Held, Txn, WriteError};
use super::derived::files;
use super::error::{Cause, Unwritable};
use super::rows::RowBuffer;
use super::schema::Meta;
use super::status_file;
use crate::log::WindowSum;

/// Why [`commit_rows`] failed.
pub(super) enum CommitError {
    /// An error to report; the database handle is still usable (or at least closable).
    Failed(IndexError),
    /// redb panicked: the handle is unusable and its file given up; the index is rebuilt.
    Panicked(IndexError),
}

impl From<IndexError> for CommitError {
    fn from(e: IndexError) -> CommitError {
        CommitError::Failed(e)
    }
}

/// Writes `rows`, `new_types` and `meta` in one durable commit, containing a panic in redb.
pub(super) fn commit_rows(
    database: &Held<Database>,
    path: &Path,
    rows: &mut RowBuffer,
    new_types: &mut Vec<(u32, String)>,
    meta: &mut Meta,
) -> Result<(), CommitError> {
    let written = database.write("committing to the index", |txn| {
        rows.write(txn, new_types, meta).map(Txn::Commit)
    });
    match written {
        Ok(()) => {
            // Every commit, of builds, catch-ups and the writer's, lands here.
            if let Err(e) = status_file::write(path, meta) {
                tracing::warn!(index = %path.display(), error = %e, "cannot write the status file");
            }
            Ok(())
        }
        Err(WriteError::Storage(e)) => Err(CommitError::Failed(IndexError::redb_failure(path, e))),
        Err(WriteError::Panicked(detail)) => {
            rows.clear();
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

/// Removes the index file, its markers and its status file.
pub(super) fn remove_index(path: &Path) -> Result<(), Unwritable> {
    files::remove_index(path, status_file::remove).map_err(Unwritable::NotWritable)
}

/// Closes a writable database, containing a panic inside redb (a damaged file can make saving
/// its allocator state panic); the file is given up then.
pub(super) fn close_contained(db: Held<Database>, path: &Path) -> Result<(), IndexError> {
    match db.close() {
        Ok(()) => Ok(()),
        Err(CloseError::Failed(e)) => Err(IndexError::redb_failure(path, e)),
        Err(CloseError::Panicked(detail)) => Err(IndexError::damaged(path, detail)),
    }
}

/// The cause of a fresh index file that cannot be opened: the storage engine's.
pub(super) fn fresh_failed(path: &Path, cause: Cause) -> IndexError {
    IndexError::storage(path, cause.into_source())
}
