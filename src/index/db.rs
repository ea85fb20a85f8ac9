//! Opening the redb file: classify what went wrong into "busy", "not writable" or "damaged",
//! bound the time redb may spend repairing after a crash, and never let a damaged file panic
//! through to the caller.
//!
//! Every process opens the index in redb's `SingleWriter` mode: one process (normally the
//! agent's writer) commits, and any number of processes read its commits at the same time.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::ops::Bound;

use redb::backends::FileBackend;
use redb::{
    BackendError, Builder, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase,
    StorageBackend, StorageError,
};

use crate::log::Faults;

/// How long redb may spend repairing the index after an unclean shutdown before we give up
/// and rebuild it from the log instead.
pub const DEFAULT_REPAIR_BUDGET: Duration = Duration::from_secs(2);

/// redb's page cache. Builds only append at the right edge of each B-tree and queries read a
/// handful of pages, so a small cache costs nothing measurable and keeps a build's memory flat
/// in the log's size (28 MB peak for a 112 MB log, 32 MB for 1.1 GB).
const CACHE_BYTES: usize = 16 << 20;

/// Why a writable open did not give us a database.
#[derive(Debug)]
pub(crate) enum WritableOpenError {
    /// Another process holds it for writing.
    Busy,
    /// The file or directory cannot be written (permissions, read-only file system, a
    /// directory in the way). Nothing should be deleted.
    NotWritable(String),
    /// The file is not a usable index; it may be deleted and rebuilt.
    Damaged(String),
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
/// need more care: see `maintain`.)
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

/// Opens (creating if absent) the index for writing.
pub(crate) fn open_writable(
    path: &Path,
    repair: &RepairFlag,
    budget: Duration,
    faults: Option<&Arc<Faults>>,
) -> Result<Database, WritableOpenError> {
    if path.is_dir() {
        return Err(WritableOpenError::NotWritable(format!(
            "{} is a directory",
            path.display()
        )));
    }
    let opened = guarded("opening the index", || match faults {
        None => builder(repair, budget).create(path),
        Some(faults) => {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)?;
            let backend = FaultyBackend {
                inner: FileBackend::new(file)?,
                faults: Arc::clone(faults),
            };
            builder(repair, budget).create_with_backend(backend)
        }
    })
    .map_err(WritableOpenError::Damaged)?;
    opened.map_err(classify)
}

/// redb's file backend with injected write and sync failures (tests only; see
/// [`Faults`]). Locking is delegated untouched, so concurrency works as with the plain file.
#[derive(Debug)]
struct FaultyBackend {
    inner: FileBackend,
    faults: Arc<Faults>,
}

impl StorageBackend for FaultyBackend {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.faults.index_write()?;
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.faults.index_sync()?;
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        self.faults.index_write()?;
        self.inner.write(offset, data)
    }

    fn close(&self) -> Result<(), std::io::Error> {
        self.inner.close()
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
pub(crate) fn open_read_only(path: &Path) -> Result<Option<ReadOnlyDatabase>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let repair = RepairFlag::default();
    let opened = guarded("opening the index", || {
        builder(&repair, Duration::ZERO).open_read_only(path)
    })?;
    opened.map(Some).map_err(|e| match e {
        DatabaseError::RepairAborted => {
            "the index needs a repair after a crash, which only its writer can do".to_owned()
        }
        other => other.to_string(),
    })
}

fn classify(error: DatabaseError) -> WritableOpenError {
    match error {
        DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch => {
            WritableOpenError::Busy
        }
        DatabaseError::Storage(StorageError::Io(io)) => match io.kind() {
            std::io::ErrorKind::PermissionDenied
            | std::io::ErrorKind::ReadOnlyFilesystem
            | std::io::ErrorKind::IsADirectory
            | std::io::ErrorKind::NotFound
            | std::io::ErrorKind::StorageFull
            | std::io::ErrorKind::QuotaExceeded => WritableOpenError::NotWritable(io.to_string()),
            // A file too short to hold redb's header reads as an early end of file.
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData => {
                WritableOpenError::Damaged(io.to_string())
            }
            _ => WritableOpenError::NotWritable(io.to_string()),
        },
        other => WritableOpenError::Damaged(other.to_string()),
    }
}
