//! Opening a transcript's index file: classify what went wrong into "busy", "not writable" or
//! "damaged", bound the time redb may spend repairing after a crash, and never let a damaged
//! file panic through to the caller.
//!
//! Every process opens an index in redb's `SingleWriter` mode: one process at a time holds it
//! for writing (the others are told at once, never made to wait), and any number of processes
//! read its commits meanwhile.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redb::backends::FileBackend;
use redb::{Builder, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase, StorageError};

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
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        format!("{what} panicked: {message}")
    })
}

/// Opens (creating, 0600, if absent) the index for writing.
pub(crate) fn open_writable(path: &Path, budget: Duration) -> Result<Database, OpenFailure> {
    if path.is_dir() {
        return Err(OpenFailure::NotWritable(format!(
            "{} is a directory",
            path.display()
        )));
    }
    let file = open_private_file(path)
        .map_err(|e| classify(DatabaseError::Storage(StorageError::Io(e))))?;
    let opened = guarded("opening the index", || {
        FileBackend::new(file).and_then(|backend| builder(budget).create_with_backend(backend))
    })
    .map_err(OpenFailure::Damaged)?;
    opened.map_err(classify)
}

/// Opens an existing index read-only (beside a writer in another process). `None` if there is
/// no index file or it cannot be opened now (a repair pending, a file being created).
pub(crate) fn open_read_only(path: &Path) -> Option<ReadOnlyDatabase> {
    if !path.is_file() {
        return None;
    }
    guarded("opening the index read-only", || {
        builder(Duration::ZERO).open_read_only(path)
    })
    .ok()?
    .ok()
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
