//! Opening the redb file: classify what went wrong into "busy", "not writable" or "damaged",
//! bound the time redb may spend repairing after a crash, and never let a damaged file panic
//! through to the caller.
//!
//! Every process opens the index in redb's `SingleWriter` mode: one process (normally the
//! agent's writer) commits, and any number of processes read its commits at the same time.

use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::ops::Bound;

use redb::backends::FileBackend;
use redb::{
    BackendError, Builder, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase,
    StorageBackend, StorageError,
};

use super::error::Cause;
use crate::log::Faults;

/// How long redb may spend repairing the index after an unclean shutdown before we give up
/// and rebuild it from the log instead.
pub const DEFAULT_REPAIR_BUDGET: Duration = Duration::from_secs(2);

/// redb's page cache. Builds only append at the right edge of each B-tree and queries read a
/// handful of pages, so a small cache costs them nothing and keeps a build's memory flat in
/// the log's size (docs/DECISIONS.md, "Build memory is bounded").
const CACHE_BYTES: usize = 16 << 20;

/// Why a writable open did not give us a database.
#[derive(Debug)]
pub(crate) enum WritableOpenError {
    /// Another process holds it for writing.
    Busy,
    /// The file or directory cannot be written (permissions, read-only file system, a
    /// directory in the way). Nothing should be deleted.
    NotWritable(Cause),
    /// The file is not a usable index; it may be deleted and rebuilt.
    Damaged(Cause),
}

/// Whether the last open had to repair the file (an unclean shutdown).
#[derive(Clone, Default)]
pub(crate) struct RepairFlag(Arc<AtomicBool>);

impl RepairFlag {
    pub(crate) fn happened(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

fn builder(repair: &RepairFlag, budget: Duration) -> Builder {
    let mut builder = Builder::new();
    builder
        .set_concurrency_mode(ConcurrencyMode::SingleWriter)
        .set_cache_size(CACHE_BYTES);
    let flag = Arc::clone(&repair.0);
    let started: Mutex<Option<Instant>> = Mutex::new(None);
    builder.set_repair_callback(move |session| {
        flag.store(true, Ordering::Relaxed);
        let mut started = started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let since = *started.get_or_insert_with(Instant::now);
        if since.elapsed() > budget {
            session.abort();
        }
    });
    builder
}

/// Runs a redb call that only reads, turning a panic on a damaged file into an error. (Writes
/// need more care: see `commit.rs`.)
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|panic| format!("{what} panicked: {}", panic_message(&*panic)))
}

/// The message of a caught panic.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// A writable database, and the unsynced build it starts with, if any.
pub(crate) struct Opened {
    /// The database.
    pub(crate) db: Database,
    /// Set when the file was new and syncs are deferred ([`UnsyncedBuild`]).
    pub(crate) unsynced: Option<Arc<UnsyncedBuild>>,
}

/// Opens (creating if absent) the index for writing. With `defer_syncs`, a file that is new
/// (empty) is built without syncs until [`UnsyncedBuild::finish`] (see there).
pub(crate) fn open_writable(
    path: &Path,
    repair: &RepairFlag,
    budget: Duration,
    faults: Option<&Arc<Faults>>,
    defer_syncs: bool,
) -> Result<Opened, WritableOpenError> {
    if path.is_dir() {
        return Err(WritableOpenError::NotWritable(Cause::described(format!(
            "{} is a directory",
            path.display()
        ))));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| classify(DatabaseError::Storage(StorageError::Io(e))))?;
    let unsynced = match file.metadata() {
        Ok(meta) if defer_syncs && meta.len() == 0 => UnsyncedBuild::new(path, &file),
        _ => None,
    };
    let opened = guarded("opening the index", || {
        let backend = IndexBackend {
            inner: FileBackend::new(file)?,
            faults: faults.cloned(),
            unsynced: unsynced.clone(),
        };
        builder(repair, budget).create_with_backend(backend)
    })
    .map_err(|panic| WritableOpenError::Damaged(Cause::described(panic)))?;
    match opened {
        Ok(db) => Ok(Opened { db, unsynced }),
        Err(e) => Err(classify(e)),
    }
}

/// A new index file being built without syncs.
///
/// A build from scratch of a small log is quick, and redb's commit protocol would spend most of
/// it in `fdatasync`s (creating the file, growing it, committing, closing). Until [`UnsyncedBuild::finish`], the index's syncs
/// are skipped; `finish` then syncs the file once. The page cache sees every write in order, so
/// readers and a later writer in a running system see exactly what redb wrote; only a power
/// loss could leave a torn file, and that is what the marker is for.
///
/// The marker, `<index>.unsynced`, is created and made durable (a sync of the directory, which
/// also makes the index file's own name durable) at redb's first write, which comes after redb
/// took the file's writer lock (so a process that loses the race for a new file never leaves a
/// marker), and only if the file is still empty then; it is removed only after `finish` has
/// synced the file. A marker found by the next process to hold the index for writing means the
/// file may be torn: it is rebuilt. A read-only open refuses to use a file with a marker
/// beside it.
#[derive(Debug)]
pub(crate) struct UnsyncedBuild {
    /// Whether syncs are being skipped: from the marker's creation to `finish` or `abandon`.
    deferring: AtomicBool,
    /// Runs the first write's check: create the marker, or build with synced commits.
    begun: std::sync::Once,
    /// The index file (a second handle), for the one sync that ends the build.
    file: File,
    marker: PathBuf,
}

impl UnsyncedBuild {
    fn marker(index: &Path) -> PathBuf {
        let mut name = index.as_os_str().to_owned();
        name.push(".unsynced");
        PathBuf::from(name)
    }

    /// Whether an unsynced build of this index never finished (or is running now, in another
    /// process: only a process holding the index for writing can tell the two apart).
    pub(crate) fn left_behind(index: &Path) -> bool {
        UnsyncedBuild::marker(index).exists()
    }

    /// Removes a marker left behind, once the file it guarded is gone.
    pub(crate) fn remove_marker(index: &Path) {
        let _ = std::fs::remove_file(UnsyncedBuild::marker(index));
    }

    /// A build that will skip syncs once [`UnsyncedBuild::begin`] has made its marker durable.
    /// `None` (ordinary synced commits) if the file cannot be reopened for the final sync.
    fn new(index: &Path, file: &File) -> Option<Arc<UnsyncedBuild>> {
        let file = file.try_clone().ok()?;
        Some(Arc::new(UnsyncedBuild {
            deferring: AtomicBool::new(false),
            begun: std::sync::Once::new(),
            file,
            marker: UnsyncedBuild::marker(index),
        }))
    }

    /// Called before every write (only the first one acts): if the file is still empty,
    /// creates the durable marker and starts skipping syncs; otherwise (another process wrote
    /// it first, or the marker cannot be made durable) every sync stays.
    fn begin(&self) {
        self.begun.call_once(|| {
            if !self.file.metadata().is_ok_and(|m| m.len() == 0) {
                return;
            }
            match File::create(&self.marker).and_then(|_| sync_parent(&self.marker)) {
                Ok(()) => self.deferring.store(true, Ordering::SeqCst),
                Err(e) => {
                    tracing::debug!(marker = %self.marker.display(), error = %e, "cannot make the unsynced-build marker durable; building with synced commits");
                    let _ = std::fs::remove_file(&self.marker);
                }
            }
        });
    }

    /// Whether syncs are being skipped now.
    pub(crate) fn is_deferring(&self) -> bool {
        self.deferring.load(Ordering::SeqCst)
    }

    /// Ends the build: later syncs go to the disk, this one syncs everything written so far,
    /// and the marker goes. On error the marker stays, so the next open rebuilds the file.
    /// Idempotent.
    pub(crate) fn finish(&self, faults: Option<&Arc<Faults>>) -> std::io::Result<()> {
        if !self.deferring.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        if let Some(faults) = faults {
            faults.index_sync()?;
        }
        self.file.sync_data()?;
        match std::fs::remove_file(&self.marker) {
            // Gone with its file (a handle leaked after a panic unlinks both).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Stops skipping syncs without syncing or removing the marker: for a file about to be
    /// unlinked, whose marker goes with it.
    pub(crate) fn abandon(&self) {
        self.begun.call_once(|| {});
        self.deferring.store(false, Ordering::SeqCst);
    }
}

/// Makes the names in `path`'s directory durable (`path` itself and its siblings).
fn sync_parent(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// redb's file backend, with the syncs of an [`UnsyncedBuild`] skipped and, in tests, injected
/// write and sync failures ([`Faults`]). Locking is delegated untouched, so concurrency works
/// as with the plain file.
#[derive(Debug)]
struct IndexBackend {
    inner: FileBackend,
    faults: Option<Arc<Faults>>,
    unsynced: Option<Arc<UnsyncedBuild>>,
}

impl StorageBackend for IndexBackend {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        if let Some(faults) = &self.faults {
            faults.index_write()?;
        }
        if let Some(unsynced) = &self.unsynced {
            unsynced.begin();
        }
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        // A skipped sync never reaches the disk, so an injected disk fault cannot hit it.
        if self.unsynced.as_ref().is_some_and(|u| u.is_deferring()) {
            return Ok(());
        }
        if let Some(faults) = &self.faults {
            faults.index_sync()?;
        }
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        if let Some(faults) = &self.faults {
            faults.index_write()?;
        }
        if let Some(unsynced) = &self.unsynced {
            unsynced.begin();
        }
        self.inner.write(offset, data)
    }

    fn close(&self) -> Result<(), std::io::Error> {
        // Still holding the file's locks: no other process can open it for writing and find
        // the marker of a build that is about to finish.
        let finished = match &self.unsynced {
            Some(unsynced) => unsynced.finish(self.faults.as_ref()),
            None => Ok(()),
        };
        // redb calls close exactly once and relies on it to release the locks.
        let closed = self.inner.close();
        finished.and(closed)
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}

/// Opens an existing index read-only. `None` if there is no index file.
pub(crate) fn open_read_only(path: &Path) -> Result<Option<ReadOnlyDatabase>, Cause> {
    if !path.exists() {
        return Ok(None);
    }
    if UnsyncedBuild::left_behind(path) {
        // Being built right now by another process, or torn by a power cut during a build:
        // only the process that holds it for writing can tell, so never believe it here.
        return Err(Cause::described(
            "the index was built without syncs and not yet synced (a build in progress, or one a power cut interrupted)",
        ));
    }
    let repair = RepairFlag::default();
    let opened = guarded("opening the index", || {
        builder(&repair, Duration::ZERO).open_read_only(path)
    })
    .map_err(Cause::described)?;
    opened.map(Some).map_err(|e| match e {
        DatabaseError::RepairAborted => Cause {
            detail: "the index needs a repair after a crash, which only its writer can do"
                .to_owned(),
            source: Some(e.into()),
        },
        other => Cause::error(other),
    })
}

fn classify(error: DatabaseError) -> WritableOpenError {
    match error {
        DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch => {
            WritableOpenError::Busy
        }
        DatabaseError::Storage(StorageError::Io(io)) => match io.kind() {
            // A file too short to hold redb's header reads as an early end of file.
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData => {
                WritableOpenError::Damaged(Cause::error(io))
            }
            // No permission, a read-only or full file system, a missing file, and the rest.
            _ => WritableOpenError::NotWritable(Cause::error(io)),
        },
        other => WritableOpenError::Damaged(Cause::error(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a file still empty at the first write is built unsynced; a file someone else wrote
    /// first keeps every sync and gets no marker.
    #[test]
    fn an_unsynced_build_begins_only_on_an_empty_file() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("events.index.redb");
        let marker = UnsyncedBuild::marker(&index);

        let file = File::create(&index).unwrap();
        let build = UnsyncedBuild::new(&index, &file).unwrap();
        assert!(
            !build.is_deferring() && !marker.exists(),
            "nothing before a write"
        );
        build.begin();
        assert!(build.is_deferring() && marker.exists());
        build.finish(None).unwrap();
        assert!(!build.is_deferring() && !marker.exists());
        build.begin();
        assert!(!build.is_deferring(), "begins once");

        std::fs::write(&index, b"written by another process").unwrap();
        let build = UnsyncedBuild::new(&index, &file).unwrap();
        build.begin();
        assert!(!build.is_deferring() && !marker.exists());

        std::fs::write(&index, b"").unwrap();
        let build = UnsyncedBuild::new(&index, &file).unwrap();
        build.abandon();
        build.begin();
        assert!(
            !build.is_deferring() && !marker.exists(),
            "abandoned before it began"
        );
    }
}
