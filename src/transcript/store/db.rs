//! Opening a transcript's index file: classify what went wrong into "busy", "not writable" or
//! "damaged", bound the time redb may spend repairing after a crash, and never let a damaged
//! file panic through to the caller.
//!
//! Every process opens an index in redb's `SingleWriter` mode: one process at a time holds it
//! for writing (the others are told at once, never made to wait), and any number of processes
//! read its commits meanwhile.
//!
//! A write session skips redb's syncs behind a marker, `<index>.unsynced`, holding the boot
//! id: made durable before the first write, removed after one sync at the end of the session. A marker found from an earlier
//! boot means a power cut may have torn the file: it is rebuilt. A marker from this boot means
//! only that a process died mid-session: the page cache holds exactly what redb wrote, and
//! redb's own repair applies. See [`Unsynced`].

use std::fs::File;
use std::io::Write;
use std::ops::Bound;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use redb::backends::FileBackend;
use redb::{
    BackendError, Builder, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase,
    StorageBackend, StorageError,
};

use crate::transcript::cache::open_private_file;

/// redb's page cache: a transcript index is small, and an open reads a handful of pages.
const CACHE_BYTES: usize = 4 << 20;

/// Why a writable open did not give us a database.
#[derive(Debug)]
pub(crate) enum OpenFailure {
    /// Another process holds it for writing.
    Busy,
    /// The file or its directory cannot be written; nothing should be deleted.
    NotWritable(String),
    /// The file is not a usable index; it may be deleted and rebuilt.
    Damaged(String),
}

fn builder(budget: Duration) -> Builder {
    let mut builder = Builder::new();
    builder
        .set_concurrency_mode(ConcurrencyMode::SingleWriter)
        .set_cache_size(CACHE_BYTES);
    let started: Mutex<Option<Instant>> = Mutex::new(None);
    builder.set_repair_callback(move |session| {
        let mut started = started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if started.get_or_insert_with(Instant::now).elapsed() > budget {
            session.abort();
        }
    });
    builder
}

/// Runs a redb call, turning a panic on a damaged file into an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        format!("{what} panicked: {message}")
    })
}

/// A redb handle whose calls run under [`Held::run`]. Once redb panicked in it, it is never
/// used or dropped again: its drop locks mutexes the panic poisoned and would panic in turn
/// The file is then replaced.
pub(crate) struct Held<D: Close> {
    db: Option<D>,
    poisoned: std::cell::Cell<bool>,
    /// The file of a writable handle: removed if redb panics while closing it (the close may
    /// have left it half written).
    file: Option<PathBuf>,
}

impl<D: Close> Held<D> {
    fn new(db: D, file: Option<PathBuf>) -> Held<D> {
        Held {
            db: Some(db),
            poisoned: std::cell::Cell::new(false),
            file,
        }
    }

    /// Runs `f` on the handle, turning a panic into an error (and the handle unusable).
    pub(crate) fn run<T>(&self, what: &str, f: impl FnOnce(&D) -> T) -> Result<T, String> {
        let Some(db) = self.db.as_ref().filter(|_| !self.poisoned.get()) else {
            return Err(format!(
                "{what}: the index handle is unusable after a panic"
            ));
        };
        let result = guarded(what, || f(db));
        if result.is_err() {
            self.poisoned.set(true);
        }
        result
    }
}

/// A redb handle that is closed explicitly, so a panic in the close can be caught.
pub(crate) trait Close {
    fn close_now(self) -> Result<(), DatabaseError>;
}

impl Close for Database {
    fn close_now(self) -> Result<(), DatabaseError> {
        self.close()
    }
}

impl Close for ReadOnlyDatabase {
    fn close_now(self) -> Result<(), DatabaseError> {
        self.close()
    }
}

impl<D: Close> Held<D> {
    /// Gives the handle up without closing it (its file is about to be replaced): a close
    /// writes to the file, and on a damaged one redb can panic twice doing so, which aborts.
    /// Nothing went wrong in this process, so the drop that follows logs nothing.
    pub(crate) fn abandon(mut self) {
        if let Some(db) = self.db.take() {
            std::mem::forget(db);
        }
    }

    /// Closes the handle now. Closing writes the shutdown header; on a damaged file redb can
    /// panic doing so, and the file is then in no known state: it is removed (the next open
    /// builds a new one) and the error returned.
    pub(crate) fn close(mut self) -> Result<(), String> {
        self.close_inner()
    }

    fn close_inner(&mut self) -> Result<(), String> {
        let Some(db) = self.db.take() else {
            return Ok(());
        };
        if self.poisoned.get() {
            std::mem::forget(db);
            return Err("the index handle is unusable after a panic".to_owned());
        }
        match guarded("closing the index", || db.close_now()) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(panicked) => {
                if let Some(file) = &self.file {
                    let _ = std::fs::remove_file(file);
                    Unsynced::remove_marker(file);
                }
                Err(panicked)
            }
        }
    }
}

impl<D: Close> Drop for Held<D> {
    fn drop(&mut self) {
        if let Err(e) = self.close_inner() {
            tracing::warn!(error = %e, "closing a transcript index failed");
        }
    }
}

/// A redb transaction or table that is not dropped while a panic unwinds through it (its drop
/// would lock a poisoned mutex and panic again, which aborts the process): it is leaked then,
/// along with the handle it came from ([`Held`]).
pub(crate) struct Leak<T>(Option<T>);

impl<T> Leak<T> {
    pub(crate) fn new(value: T) -> Leak<T> {
        Leak(Some(value))
    }

    pub(crate) fn get(&self) -> Result<&T, redb::Error> {
        self.0.as_ref().ok_or_else(gone)
    }

    pub(crate) fn get_mut(&mut self) -> Result<&mut T, redb::Error> {
        self.0.as_mut().ok_or_else(gone)
    }

    pub(crate) fn take(mut self) -> Result<T, redb::Error> {
        self.0.take().ok_or_else(gone)
    }
}

fn gone() -> redb::Error {
    redb::Error::Corrupted("a transaction used after it ended".to_owned())
}

impl<T> Drop for Leak<T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            std::mem::forget(self.0.take());
        }
    }
}

/// Opens (creating, 0600, if absent) the index for writing.
pub(crate) fn open_writable(path: &Path, budget: Duration) -> Result<Held<Database>, OpenFailure> {
    if path.is_dir() {
        return Err(OpenFailure::NotWritable(format!(
            "{} is a directory",
            path.display()
        )));
    }
    let file = open_private_file(path)
        .map_err(|e| classify(DatabaseError::Storage(StorageError::Io(e))))?;
    let unsynced = Unsynced::new(path, &file);
    let opened = guarded("opening the index", || {
        FileBackend::new(file).and_then(|inner| {
            builder(budget).create_with_backend(CacheBackend {
                inner,
                unsynced: unsynced.clone(),
            })
        })
    })
    .map_err(OpenFailure::Damaged)?;
    opened
        .map(|db| Held::new(db, Some(path.to_path_buf())))
        .map_err(classify)
}

/// Opens an existing index read-only (beside a writer in another process). `None` if there is
/// no index file, it may have been torn by a power cut ([`Unsynced::torn`]), or it cannot be
/// opened now (a repair pending, a file being created).
pub(crate) fn open_read_only(path: &Path) -> Option<Held<ReadOnlyDatabase>> {
    if !path.is_file() || Unsynced::torn(path) {
        return None;
    }
    guarded("opening the index read-only", || {
        builder(Duration::ZERO).open_read_only(path)
    })
    .ok()?
    .ok()
    .map(|db| Held::new(db, None))
}

/// The id of this boot of the machine, if the system says (Linux).
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// A write session whose syncs are skipped behind a durable marker.
///
/// The marker `<index>.unsynced` holds the boot id. It is created, and its name made durable
/// (a sync of the directory), at the session's first write, which comes after redb took the
/// file's writer lock; it is removed after [`CacheBackend::close`] synced the file once. Until
/// then every sync redb asks for is skipped: the page cache sees each write in order, so
/// readers and later writers in a running system see exactly what redb wrote; only a power
/// cut could leave a torn file, and then the boot id in the marker differs from the next
/// boot's. Without a boot id (not Linux) nothing is skipped.
#[derive(Debug)]
pub(crate) struct Unsynced {
    boot: String,
    marker: PathBuf,
    /// The index file (a second handle), for the one sync that ends the session.
    file: File,
    begun: Once,
    deferring: AtomicBool,
}

impl Unsynced {
    fn marker(index: &Path) -> PathBuf {
        let mut name = index.as_os_str().to_owned();
        name.push(".unsynced");
        PathBuf::from(name)
    }

    fn new(index: &Path, file: &File) -> Option<Arc<Unsynced>> {
        Some(Arc::new(Unsynced {
            boot: boot_id()?,
            marker: Unsynced::marker(index),
            file: file.try_clone().ok()?,
            begun: Once::new(),
            deferring: AtomicBool::new(false),
        }))
    }

    /// Whether the index was written without syncs during an earlier boot and never synced
    /// after: a power cut may have torn it. (A marker of this boot is a session running now,
    /// or one whose process died: the file is as redb left it.)
    pub(crate) fn torn(index: &Path) -> bool {
        match std::fs::read_to_string(Unsynced::marker(index)) {
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
            Ok(boot) => Some(boot.trim().to_owned()) != boot_id(),
        }
    }

    /// Whether a marker is there: a session running now, or one whose process died. (Only a
    /// process that then holds the index for writing knows it is the latter.)
    pub(crate) fn left_behind(index: &Path) -> bool {
        Unsynced::marker(index).exists()
    }

    /// Removes a marker, once the file it guarded is gone.
    pub(crate) fn remove_marker(index: &Path) {
        let _ = std::fs::remove_file(Unsynced::marker(index));
    }

    /// Called before every write (only the first acts): makes the marker durable, then skips
    /// syncs. If the marker cannot be made durable, every sync stays.
    fn begin(&self) {
        self.begun.call_once(|| {
            let made = File::create(&self.marker)
                .and_then(|mut f| f.write_all(self.boot.as_bytes()))
                .and_then(|()| sync_parent(&self.marker));
            match made {
                Ok(()) => self.deferring.store(true, Ordering::SeqCst),
                Err(e) => {
                    tracing::debug!(marker = %self.marker.display(), error = %e, "cannot make the unsynced-session marker durable; writing with synced commits");
                    let _ = std::fs::remove_file(&self.marker);
                }
            }
        });
    }

    fn deferring(&self) -> bool {
        self.deferring.load(Ordering::SeqCst)
    }

    /// Ends the session: one sync of everything written, then the marker goes. On error the
    /// marker stays (the next boot rebuilds the file).
    fn finish(&self) -> std::io::Result<()> {
        if !self.deferring.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        self.file.sync_data()?;
        match std::fs::remove_file(&self.marker) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

/// Makes the names in `path`'s directory durable.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// redb's file backend with the syncs of an [`Unsynced`] session skipped. Locking is
/// delegated untouched, so concurrency works as with the plain file.
#[derive(Debug)]
struct CacheBackend {
    inner: FileBackend,
    unsynced: Option<Arc<Unsynced>>,
}

impl StorageBackend for CacheBackend {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        if let Some(unsynced) = &self.unsynced {
            unsynced.begin();
        }
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        if self.unsynced.as_ref().is_some_and(|u| u.deferring()) {
            return Ok(());
        }
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        if let Some(unsynced) = &self.unsynced {
            unsynced.begin();
        }
        self.inner.write(offset, data)
    }

    fn close(&self) -> Result<(), std::io::Error> {
        // Still holding the file's locks: no other process writes it before the sync.
        let finished = match &self.unsynced {
            Some(unsynced) => unsynced.finish(),
            None => Ok(()),
        };
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

fn classify(error: DatabaseError) -> OpenFailure {
    match error {
        DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch => {
            OpenFailure::Busy
        }
        DatabaseError::Storage(StorageError::Io(io)) => match io.kind() {
            // A file too short to hold redb's header reads as an early end of file.
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData => {
                OpenFailure::Damaged(io.to_string())
            }
            _ => OpenFailure::NotWritable(io.to_string()),
        },
        other => OpenFailure::Damaged(other.to_string()),
    }
}
