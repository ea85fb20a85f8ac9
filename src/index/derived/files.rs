//! The files of one index: the redb file, the markers beside it (a commit in progress, a
//! write without syncs), and what the index keeps beside it of its own (the agent log's
//! status file); removing them together, in an order a crash cannot turn into a suspect file
//! without its marker.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::cause::Cause;
use super::unsynced;

/// Removes the index file, then its markers, then its sidecar files (`sidecars`, the
/// index's own). In that order, so a crash in between leaves a marker without a file, never a
/// suspect file without one. `Err` only if the file is there and cannot be removed.
pub(crate) fn remove_index(index: &Path, sidecars: fn(&Path)) -> Result<(), Cause> {
    match std::fs::remove_file(index) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Cause {
                detail: format!("cannot remove the stale index: {e}"),
                source: Some(e.into()),
            });
        }
    }
    let _ = std::fs::remove_file(CommitMarker::path(index));
    unsynced::remove_marker(index);
    sidecars(index);
    Ok(())
}

/// An index file as a writable handle opened it: its path, which file that was (device and
/// inode), and its sidecars. A handle that must give its file up (redb panicked in it) unlinks
/// it only while the path still names that file, never a newer one built in its place.
#[derive(Debug)]
pub(crate) struct IndexFile {
    pub(crate) path: PathBuf,
    id: (u64, u64),
    sidecars: fn(&Path),
}

impl IndexFile {
    /// The file at `path`, open as `file`.
    pub(crate) fn of(path: &Path, file: &File, sidecars: fn(&Path)) -> std::io::Result<IndexFile> {
        let meta = file.metadata()?;
        Ok(IndexFile {
            path: path.to_path_buf(),
            id: (meta.dev(), meta.ino()),
            sidecars,
        })
    }

    /// Removes the file and its markers if the path still names it. The handle that gave it up
    /// keeps it locked for the rest of this process, so an open of the same path would wait
    /// on it and time out as busy; with the path free, the next open builds a fresh index, as
    /// the rebuild that follows would anyway.
    pub(crate) fn unlink(&self) {
        let same = std::fs::metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.id);
        if !same {
            return;
        }
        if let Err(why) = remove_index(&self.path, self.sidecars) {
            tracing::warn!(index = %self.path.display(), %why, "cannot unlink an index whose handle was given up");
        }
    }
}

/// A file beside the index (`<index>.committing`) that exists while this process writes to
/// the index and commits, or closes it. It is removed when the commit returns or unwinds (a
/// panic caught and handled); only a dead process leaves it behind. Some damage makes redb
/// panic twice inside one commit (a drop while unwinding), which aborts the process whatever
/// we catch: the marker left behind makes the next process rebuild the file instead of
/// aborting the same way (found by the `index_file` fuzzer). Not synced: lost in a power cut,
/// it only means redb's own recovery is trusted, as after any unclean shutdown.
pub(crate) struct CommitMarker(PathBuf);

impl CommitMarker {
    fn path(index: &Path) -> PathBuf {
        let mut name = index.as_os_str().to_owned();
        name.push(".committing");
        PathBuf::from(name)
    }

    /// Creates the marker. Best effort: an index that can be committed to sits in a writable
    /// directory, and a missing marker only means a lost chance to skip a damaged file.
    pub(crate) fn begin(index: &Path) -> CommitMarker {
        let path = CommitMarker::path(index);
        if let Err(e) = File::create(&path) {
            tracing::debug!(marker = %path.display(), error = %e, "cannot create the commit marker");
        }
        CommitMarker(path)
    }

    /// Whether a marker exists. Call it only while holding the index for writing: then no
    /// live process can be committing.
    pub(crate) fn left_behind(index: &Path) -> bool {
        CommitMarker::path(index).exists()
    }
}

impl Drop for CommitMarker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
