//! Panic containment: a damaged index file can make redb panic, on reads, writes and closes,
//! and never may that panic reach the caller or abort the process.
//!
//! * [`guarded`] turns a panic into an error.
//! * [`Held`] is a database handle whose every call is guarded. Once redb panicked in it, it
//!   is never used or dropped again (its drop would lock mutexes the panic poisoned and panic
//!   in turn, which aborts), and a writable handle gives its file up at once ([`IndexFile`]).
//! * [`Leak`] keeps a transaction or table from being dropped while a panic unwinds.
//! * [`Held::write`] and [`Held::close`] on a writable handle run with a [`CommitMarker`]
//!   beside the file, for the damage that aborts whatever we catch.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

use redb::{Database, DatabaseError, ReadOnlyDatabase, WriteTransaction};

use super::files::{CommitMarker, IndexFile};

/// Runs `f`, turning a panic into an error that says what was being done.
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

/// A redb handle that is closed explicitly, so a panic in the close can be caught.
pub(crate) trait Close {
    /// Closes the handle now.
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

/// A redb handle whose calls run under [`Held::run`]. See the module docs.
pub(crate) struct Held<D: Close> {
    db: Option<D>,
    poisoned: AtomicBool,
    /// The file of a writable handle: given up if redb panics in the handle.
    file: Option<IndexFile>,
}

/// Why [`Held::write`] committed nothing.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// redb failed (the transaction, if begun, was aborted).
    Storage(redb::Error),
    /// redb panicked: the handle is unusable and its file given up.
    Panicked(String),
}

/// Why [`Held::close`] failed.
#[derive(Debug)]
pub(crate) enum CloseError {
    /// redb reported an error (damage it met saving its state, or the disk's).
    Failed(DatabaseError),
    /// redb panicked, or had panicked earlier in this handle: the file is in no known state.
    Panicked(String),
}

impl std::fmt::Display for CloseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseError::Failed(e) => e.fmt(f),
            CloseError::Panicked(detail) => f.write_str(detail),
        }
    }
}

/// What a write transaction does once the caller's part succeeded.
pub(crate) enum Txn<T> {
    /// Commit it durably (unless syncs are skipped), then answer `T`.
    Commit(T),
    /// Abort it (nothing to write), then answer `T`.
    Abort(T),
}

impl<D: Close> Held<D> {
    /// Holds `db`; `file` for a writable handle.
    pub(crate) fn new(db: D, file: Option<IndexFile>) -> Held<D> {
        Held {
            db: Some(db),
            poisoned: AtomicBool::new(false),
            file,
        }
    }

    /// Runs `f` on the handle, turning a panic into an error (and the handle unusable).
    pub(crate) fn run<T>(&self, what: &str, f: impl FnOnce(&D) -> T) -> Result<T, String> {
        let Some(db) = self.db.as_ref().filter(|_| !self.is_poisoned()) else {
            return Err(format!(
                "{what}: the index handle is unusable after a panic"
            ));
        };
        let result = guarded(what, || f(db));
        if result.is_err() {
            self.poisoned.store(true, Ordering::SeqCst);
            if let Some(file) = &self.file {
                file.unlink();
            }
        }
        result
    }

    fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// Gives the handle up without closing it (its file is about to be replaced): a close
    /// writes to the file, and on a damaged one redb can panic twice doing so, which aborts.
    pub(crate) fn abandon(mut self) {
        if let Some(db) = self.db.take() {
            std::mem::forget(db);
        }
    }

    /// Closes the handle now. Closing a writable handle writes its shutdown state; on a damaged
    /// file redb can panic doing so, and the file is then in no known state: it is given up
    /// (the next open builds a new one) and the error returned.
    pub(crate) fn close(mut self) -> Result<(), CloseError> {
        self.close_inner()
    }

    fn close_inner(&mut self) -> Result<(), CloseError> {
        let Some(db) = self.db.take() else {
            return Ok(());
        };
        if self.is_poisoned() {
            std::mem::forget(db);
            return Err(CloseError::Panicked(
                "the index handle is unusable after a panic".to_owned(),
            ));
        }
        let _marker = self.file.as_ref().map(|f| CommitMarker::begin(&f.path));
        match guarded("closing the index", || db.close_now()) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(CloseError::Failed(e)),
            Err(panicked) => {
                if let Some(file) = &self.file {
                    file.unlink();
                }
                Err(CloseError::Panicked(panicked))
            }
        }
    }
}

impl Held<Database> {
    /// Runs `f` in a write transaction, then commits it (saving redb's allocator state, so
    /// recovery after a crash is almost instant) or aborts it as `f` says. From before the
    /// first write to the end, a [`CommitMarker`] stands beside the file: damage in redb's
    /// allocator can make it panic twice while rows are inserted (a table dropped while
    /// unwinding), which aborts the process.
    pub(crate) fn write<T>(
        &self,
        what: &str,
        f: impl FnOnce(&WriteTransaction) -> Result<Txn<T>, redb::Error>,
    ) -> Result<T, WriteError> {
        let _marker = self.file.as_ref().map(|f| CommitMarker::begin(&f.path));
        let ran = self.run(what, |db| -> Result<T, redb::Error> {
            let txn = Leak::new(db.begin_write()?);
            match f(txn.get()?)? {
                Txn::Commit(answer) => {
                    let mut txn = txn.take()?;
                    txn.set_quick_repair(true);
                    txn.commit()?;
                    Ok(answer)
                }
                Txn::Abort(answer) => {
                    txn.take()?.abort()?;
                    Ok(answer)
                }
            }
        });
        match ran {
            Ok(result) => result.map_err(WriteError::Storage),
            Err(panicked) => Err(WriteError::Panicked(panicked)),
        }
    }
}

impl<D: Close> Drop for Held<D> {
    fn drop(&mut self) {
        if self.is_poisoned() {
            // The panic was reported where it happened.
            if let Some(db) = self.db.take() {
                std::mem::forget(db);
            }
            return;
        }
        if let Err(e) = self.close_inner() {
            tracing::warn!(error = %e, "closing an index failed");
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
