//! The redb file of an index: opened read-only or for writing, what went wrong classified into
//! "busy", "not writable" or "damaged", the time redb may spend repairing after a crash
//! bounded, and the file's syncs skipped behind a marker when asked ([`Syncs`]).
//!
//! Every process opens an index in redb's `SingleWriter` mode: one process at a time holds it
//! for writing (the others are told at once, never made to wait), and any number of processes
//! read its commits meanwhile.

use std::fs::OpenOptions;
use std::ops::Bound;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redb::backends::FileBackend;
use redb::{
    BackendError, Builder, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase,
    StorageBackend, StorageError,
};

use super::cause::Cause;
use super::contain::{Held, guarded};
use super::files::IndexFile;
use super::outcome::StaleReason;
use super::unsynced::{self, Syncs, Unsynced};
use crate::log::Faults;

/// How one kind of index keeps its file.
#[derive(Clone, Copy)]
pub(crate) struct Settings<'a> {
    /// redb's page cache.
    pub(crate) cache_bytes: usize,
    /// How long redb may repair the file after a crash before it is rebuilt instead.
    pub(crate) repair_budget: Duration,
    /// Which syncs a writable open skips.
    pub(crate) syncs: Syncs,
    /// The mode of new files (before the umask): `0o600` for a private cache.
    pub(crate) mode: u32,
    /// Injected write and sync failures (tests only).
    pub(crate) faults: Option<&'a Arc<Faults>>,
    /// Removes what the index keeps beside its file, when the file is removed.
    pub(crate) sidecars: fn(&Path),
}

/// Why a writable open did not give us a database.
#[derive(Debug)]
pub(crate) enum OpenFailure {
    /// Another process holds it for writing.
    Busy,
    /// The file or its directory cannot be written (permissions, a read-only or full file
    /// system, a directory in the way); nothing should be deleted.
    NotWritable(Cause),
    /// The file is not a usable index; it may be deleted and rebuilt.
    Damaged(Cause),
}

/// A database open for writing.
pub(crate) struct Opened {
    pub(crate) db: Held<Database>,
    /// The write session's skipped syncs, if it skips them.
    pub(crate) unsynced: Option<Arc<Unsynced>>,
    /// Whether redb had to repair the file (an unclean shutdown).
    pub(crate) repaired: bool,
    /// Whether the file was empty when opened (created by this open, or by one that died
    /// before writing).
    pub(crate) new_file: bool,
    /// Set when the file found was replaced by a new one before it was read: why.
    pub(crate) replaced: Option<StaleReason>,
}

fn builder(cache_bytes: usize, budget: Duration, repaired: &Arc<AtomicBool>) -> Builder {
    let mut builder = Builder::new();
    builder
        .set_concurrency_mode(ConcurrencyMode::SingleWriter)
        .set_cache_size(cache_bytes);
    let flag = Arc::clone(repaired);
    let started: Mutex<Option<Instant>> = Mutex::new(None);
    builder.set_repair_callback(move |session| {
        flag.store(true, Ordering::Relaxed);
        let mut started = started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if started.get_or_insert_with(Instant::now).elapsed() > budget {
            session.abort();
        }
    });
    builder
}

/// Opens (creating, with `settings.mode`, if absent) the index for writing. A file whose
/// marker says it may be torn ([`unsynced::torn`]) gets no repair: it is rebuilt anyway.
pub(crate) fn open_writable(path: &Path, settings: &Settings<'_>) -> Result<Opened, OpenFailure> {
    if path.is_dir() {
        return Err(OpenFailure::NotWritable(Cause::described(format!(
            "{} is a directory",
            path.display()
        ))));
    }
    let io = |e| classify(DatabaseError::Storage(StorageError::Io(e)));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(settings.mode)
        .open(path)
        .map_err(io)?;
    let new_file = file.metadata().map_err(io)?.len() == 0;
    let own = IndexFile::of(path, &file, settings.sidecars).map_err(io)?;
    let unsynced = Unsynced::new(path, &file, settings.syncs, settings.mode);
    let budget = if unsynced::torn(path) {
        Duration::ZERO
    } else {
        settings.repair_budget
    };
    let repaired = Arc::new(AtomicBool::new(false));
    let opened = guarded("opening the index", || {
        let backend = IndexBackend {
            inner: FileBackend::new(file)?,
            faults: settings.faults.cloned(),
            unsynced: unsynced.clone(),
        };
        builder(settings.cache_bytes, budget, &repaired).create_with_backend(backend)
    })
    .map_err(|panic| OpenFailure::Damaged(Cause::described(panic)))?;
    match opened {
        Ok(db) => Ok(Opened {
            db: Held::new(db, Some(own)),
            unsynced,
            repaired: repaired.load(Ordering::Relaxed),
            new_file,
            replaced: None,
        }),
        Err(e) => Err(classify(e)),
    }
}

/// Opens an existing index read-only (beside a writer in another process, if any). `None` if
/// there is no index file; an error if it cannot be used now: its marker says it may be torn
/// (see [`unsynced`]), a repair is pending (only its writer may do it), or redb refuses it.
pub(crate) fn open_read_only(
    path: &Path,
    settings: &Settings<'_>,
) -> Result<Option<Held<ReadOnlyDatabase>>, Cause> {
    if !path.exists() {
        return Ok(None);
    }
    if unsynced::torn(path) {
        return Err(Cause::described(
            "the index was written without syncs and never synced (during an earlier boot, or its final sync failed): a power cut may have torn it",
        ));
    }
    let repaired = Arc::new(AtomicBool::new(false));
    let opened = guarded("opening the index", || {
        builder(settings.cache_bytes, Duration::ZERO, &repaired).open_read_only(path)
    })
    .map_err(Cause::described)?;
    match opened {
        Ok(db) => Ok(Some(Held::new(db, None))),
        Err(e @ DatabaseError::RepairAborted) => Err(Cause {
            detail: "the index needs a repair after a crash, which only its writer can do"
                .to_owned(),
            source: Some(e.into()),
        }),
        Err(other) => Err(Cause::error(other)),
    }
}

fn classify(error: DatabaseError) -> OpenFailure {
    match error {
        DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch => {
            OpenFailure::Busy
        }
        DatabaseError::Storage(StorageError::Io(io)) => match io.kind() {
            // A file too short to hold redb's header reads as an early end of file.
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData => {
                OpenFailure::Damaged(Cause::error(io))
            }
            // No permission, a read-only or full file system, a missing file, and the rest.
            _ => OpenFailure::NotWritable(Cause::error(io)),
        },
        other => OpenFailure::Damaged(Cause::error(other)),
    }
}

/// redb's file backend, with the syncs of an [`Unsynced`] session skipped and, in tests,
/// injected write and sync failures ([`Faults`]). Locking is delegated untouched, so
/// concurrency works as with the plain file.
#[derive(Debug)]
struct IndexBackend {
    inner: FileBackend,
    faults: Option<Arc<Faults>>,
    unsynced: Option<Arc<Unsynced>>,
}

impl IndexBackend {
    /// Before every write: an injected failure, or the session's first write.
    fn before_write(&self) -> Result<(), std::io::Error> {
        if let Some(faults) = &self.faults {
            faults.index_write()?;
        }
        if let Some(unsynced) = &self.unsynced {
            unsynced.begin();
        }
        Ok(())
    }
}

impl StorageBackend for IndexBackend {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.before_write()?;
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
        self.before_write()?;
        self.inner.write(offset, data)
    }

    fn close(&self) -> Result<(), std::io::Error> {
        // Still holding the file's locks: no other process can open it for writing and find
        // the marker of a session that is about to finish.
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
