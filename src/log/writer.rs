//! The appender: one writer per log (an OS lock), whole lines with `O_APPEND`, and a durability
//! policy that decides when an appended event counts as acknowledged.

use std::fs::{File, TryLockError};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::LogError;
use super::faults::Faults;
use super::file::open_for_append;
use super::lines::read_exact_at;

/// When an appended event is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// `fdatasync` after every append call, before it returns: an acknowledged event survives
    /// power loss.
    Fsync,
    /// Group commit: a background thread syncs at this interval; an event is acknowledged once
    /// [`LogWriter::durable_len`] covers it (see [`LogWriter::wait_durable`]).
    Interval(Duration),
    /// Flush only: written to the operating system (survives a crash of this process, not
    /// power loss); never synced unless [`LogWriter::sync`] is called.
    None,
}

impl SyncPolicy {
    /// The default group-commit interval: 50 ms.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(50);
}

/// Where an append landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// Offset of the first appended byte.
    pub start: u64,
    /// Offset just after the last appended byte.
    pub end: u64,
    /// Where this writer believed the log ended before the append. If `start` is larger,
    /// another program appended in between; if smaller, the log was truncated under us.
    pub previous_end: u64,
}

#[derive(Default)]
struct SyncState {
    written: u64,
    durable: u64,
    stop: bool,
    /// The group commit's last failed sync, reported to every later `wait_durable`.
    failure: Option<Arc<std::io::Error>>,
}

#[derive(Default)]
struct SyncShared {
    state: Mutex<SyncState>,
    /// Wakes the group-commit thread early (on stop).
    wake: Condvar,
    /// Wakes callers of `wait_durable`.
    synced: Condvar,
}

impl SyncShared {
    fn lock(&self) -> MutexGuard<'_, SyncState> {
        // A panic while holding this lock cannot leave the counters inconsistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn mark_durable(&self, end: u64) {
        let mut state = self.lock();
        state.durable = state.durable.max(end);
        self.synced.notify_all();
    }
}

/// The single writer of one log file.
pub struct LogWriter {
    path: PathBuf,
    file: File,
    end: u64,
    policy: SyncPolicy,
    shared: Arc<SyncShared>,
    syncer: Option<JoinHandle<()>>,
    /// A failed write left bytes we could not remove: terminate them before the next event.
    torn: bool,
    terminated_fragment: bool,
    /// Injected failures (tests only).
    faults: Option<Arc<Faults>>,
}

/// How long a busy writer lock is retried before the log counts as held by another writer.
const LOCK_GRACE: Duration = Duration::from_millis(100);

/// Takes the one-writer lock on the log. A lock is held by an open file description, which a
/// process spawning a child duplicates until the child execs: closing a writer and reopening
/// it while any thread spawns a process can find the old lock still held for a moment. So a
/// busy lock is retried for [`LOCK_GRACE`]; a real second writer holds it far longer.
fn lock_for_writing(file: &File, path: &Path) -> Result<(), LogError> {
    let deadline = Instant::now() + LOCK_GRACE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(LogError::Locked {
                    path: path.to_path_buf(),
                });
            }
            Err(TryLockError::Error(e)) => return Err(LogError::io("lock", path, e)),
        }
    }
}

impl LogWriter {
    /// Opens `path` for appending (creating it and its directory if needed) and takes the
    /// writer lock. If the file does not end with `\n`, the torn fragment is terminated first,
    /// so it can never merge with the next event.
    pub fn open(path: &Path, policy: SyncPolicy) -> Result<LogWriter, LogError> {
        LogWriter::open_with(path, policy, None)
    }

    /// [`LogWriter::open`] with injected I/O failures, for tests.
    #[cfg(feature = "testing")]
    pub fn open_with_faults(
        path: &Path,
        policy: SyncPolicy,
        faults: Option<Arc<Faults>>,
    ) -> Result<LogWriter, LogError> {
        LogWriter::open_with(path, policy, faults)
    }

    /// [`LogWriter::open`], with the failures `faults` injects (none in production).
    pub(crate) fn open_with(
        path: &Path,
        policy: SyncPolicy,
        faults: Option<Arc<Faults>>,
    ) -> Result<LogWriter, LogError> {
        let mut file = open_for_append(path)?;
        lock_for_writing(&file, path)?;
        let len = file
            .metadata()
            .map_err(|e| LogError::io("inspect", path, e))?
            .len();
        let mut terminated_fragment = false;
        if len > 0 {
            let mut last = [0u8];
            let complete = read_exact_at(&file, &mut last, len - 1)
                .map_err(|e| LogError::io("read", path, e))?;
            if complete && last[0] != b'\n' {
                file.write_all(b"\n")
                    .map_err(|e| LogError::io("terminate torn line in", path, e))?;
                file.sync_data()
                    .map_err(|e| LogError::io("sync", path, e))?;
                terminated_fragment = true;
                tracing::warn!(log = %path.display(), offset = len, "terminated a torn final line before appending");
            }
        }
        let end = file
            .stream_position()
            .map_err(|e| LogError::io("seek", path, e))?
            .max(len + u64::from(terminated_fragment));
        let shared = Arc::new(SyncShared::default());
        {
            let mut state = shared.lock();
            state.written = end;
            state.durable = end;
        }
        let syncer = match policy {
            SyncPolicy::Interval(every) => {
                let file = file
                    .try_clone()
                    .map_err(|e| LogError::io("duplicate handle of", path, e))?;
                let shared = Arc::clone(&shared);
                Some(std::thread::spawn(move || {
                    group_commit(&file, &shared, every);
                }))
            }
            SyncPolicy::Fsync | SyncPolicy::None => None,
        };
        Ok(LogWriter {
            path: path.to_path_buf(),
            file,
            end,
            policy,
            shared,
            syncer,
            torn: false,
            terminated_fragment,
            faults,
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file handle (for reading back what was written).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Where the log ends, as far as this writer knows.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The durability policy.
    pub fn policy(&self) -> SyncPolicy {
        self.policy
    }

    /// Whether `open` had to terminate a torn final line.
    pub fn terminated_fragment(&self) -> bool {
        self.terminated_fragment
    }

    /// Appends `lines`: one or more complete lines, each ending with `\n`, written in one
    /// call. Under [`SyncPolicy::Fsync`] they are on disk when this returns.
    ///
    /// # Errors
    ///
    /// A failed or short write, or a failed fsync, is [`LogError::Write`]: the bytes are
    /// removed again when possible (`rolled_back`), so an error means "not written"; when they
    /// cannot be removed, the next append terminates them first.
    pub fn append(&mut self, lines: &[u8]) -> Result<Appended, LogError> {
        if lines.last() != Some(&b'\n') {
            return Err(LogError::InvalidEvent {
                index: 0,
                reason: "appended bytes must end with a newline".to_owned(),
                source: None,
            });
        }
        if self.torn {
            self.write_or_roll_back(b"\n")?;
            self.torn = false;
        }
        let previous_end = self.end;
        self.write_or_roll_back(lines)?;
        // With O_APPEND the position after the write is the true end of our bytes, even if
        // another program appended before us.
        let end = self
            .file
            .stream_position()
            .map_err(|e| LogError::io("seek", &self.path, e))?;
        let start = end.saturating_sub(lines.len() as u64);
        match self.policy {
            SyncPolicy::Fsync => {
                if let Err(source) = self.sync_file() {
                    // Unacknowledged and of unknown durability: take it back.
                    let rolled_back = self.roll_back(previous_end);
                    return Err(LogError::Write {
                        path: self.path.clone(),
                        source,
                        rolled_back,
                    });
                }
                self.end = end;
                self.mark_durable(end);
            }
            SyncPolicy::Interval(_) => {
                self.end = end;
                self.shared.lock().written = end;
            }
            SyncPolicy::None => self.end = end,
        }
        Ok(Appended {
            start,
            end,
            previous_end,
        })
    }

    fn write_or_roll_back(&mut self, bytes: &[u8]) -> Result<(), LogError> {
        let written = match self.faults.as_ref().map(|f| f.log_write(bytes.len())) {
            Some(Err((fits, injected))) => {
                // A short write: what fits reaches the file, then the disk fails.
                let _ = self.file.write_all(&bytes[..fits.min(bytes.len())]);
                Err(injected)
            }
            Some(Ok(())) | None => self.file.write_all(bytes),
        };
        let Err(source) = written else {
            return Ok(());
        };
        let end = self.end;
        let rolled_back = self.roll_back(end);
        tracing::error!(log = %self.path.display(), error = %source, rolled_back, "append failed");
        Err(LogError::Write {
            path: self.path.clone(),
            source,
            rolled_back,
        })
    }

    /// Truncates what a failed append left after `to`. Under the writer lock those bytes are
    /// ours. Returns whether the log is back at `to`; if not, the next append terminates them.
    fn roll_back(&mut self, to: u64) -> bool {
        let len = self.file.metadata().map_or(u64::MAX, |m| m.len());
        if len <= to {
            return true;
        }
        let truncated = match self.faults.as_ref().map(|f| f.log_truncate()) {
            Some(Err(_)) => false,
            Some(Ok(())) | None => self.file.set_len(to).is_ok(),
        };
        self.torn = !truncated;
        if !truncated {
            // The bytes stay: our view of the end must include them.
            self.end = len;
        }
        truncated
    }

    fn sync_file(&self) -> std::io::Result<()> {
        sync_data(&self.file, self.faults.as_deref())
    }

    fn mark_durable(&self, end: u64) {
        self.shared.mark_durable(end);
    }

    /// Forces everything written so far to disk.
    pub fn sync(&self) -> Result<(), LogError> {
        self.sync_file()
            .map_err(|e| LogError::io("sync", &self.path, e))?;
        self.mark_durable(self.end);
        Ok(())
    }

    /// A second handle on this log for syncing it from another thread (the index's background
    /// commits); what it syncs counts toward [`LogWriter::durable_len`].
    pub(crate) fn sync_handle(&self) -> Result<LogSync, LogError> {
        Ok(LogSync {
            file: self
                .file
                .try_clone()
                .map_err(|e| LogError::io("duplicate handle of", &self.path, e))?,
            path: self.path.clone(),
            shared: Arc::clone(&self.shared),
            faults: self.faults.clone(),
        })
    }

    /// The offset up to which the log is known to be on disk.
    pub fn durable_len(&self) -> u64 {
        self.shared.lock().durable
    }

    /// Blocks until the log is durable up to `end` (under [`SyncPolicy::Interval`], the next
    /// group commit; under the other policies it syncs now if needed).
    pub fn wait_durable(&self, end: u64) -> Result<(), LogError> {
        if self.syncer.is_none() {
            return if self.durable_len() >= end {
                Ok(())
            } else {
                self.sync()
            };
        }
        let mut state = self.shared.lock();
        while state.durable < end {
            if let Some(failure) = &state.failure {
                return Err(LogError::io(
                    "sync",
                    &self.path,
                    std::io::Error::new(failure.kind(), Arc::clone(failure)),
                ));
            }
            state = self
                .shared
                .synced
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        Ok(())
    }

    /// Stops the group-commit thread and syncs what is left (except under
    /// [`SyncPolicy::None`]). Dropping the writer does the same but cannot report errors.
    pub fn close(mut self) -> Result<(), LogError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), LogError> {
        let Some(handle) = self.syncer.take() else {
            return Ok(());
        };
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        // The thread only syncs; a panic there is not ours to propagate.
        let _ = handle.join();
        self.sync()
    }
}

/// A handle for syncing a [`LogWriter`]'s log from another thread, and reading it back.
pub(crate) struct LogSync {
    file: File,
    path: PathBuf,
    shared: Arc<SyncShared>,
    faults: Option<Arc<Faults>>,
}

impl LogSync {
    /// The log file, for reading.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Forces the log to disk. `written` is how far the writer had written before this call:
    /// the log is then durable at least that far.
    pub(crate) fn sync(&self, written: u64) -> Result<(), LogError> {
        sync_data(&self.file, self.faults.as_deref())
            .map_err(|e| LogError::io("sync", &self.path, e))?;
        self.shared.mark_durable(written);
        Ok(())
    }
}

fn sync_data(file: &File, faults: Option<&Faults>) -> std::io::Result<()> {
    if let Some(faults) = faults {
        faults.log_sync()?;
    }
    file.sync_data()
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::error!(error = %e, "final sync of the log failed");
        }
    }
}

fn group_commit(file: &File, shared: &SyncShared, every: Duration) {
    let mut state = shared.lock();
    loop {
        if !state.stop {
            state = shared
                .wake
                .wait_timeout(state, every)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let target = state.written;
        if target > state.durable {
            drop(state);
            let result = file.sync_data();
            state = shared.lock();
            match result {
                Ok(()) => state.durable = state.durable.max(target),
                Err(e) => state.failure = Some(Arc::new(e)),
            }
            shared.synced.notify_all();
        }
        if state.stop {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_is_refused_with_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/events.jsonl");
        let _first = LogWriter::open(&path, SyncPolicy::None).unwrap();
        let second = LogWriter::open(&path, SyncPolicy::None);
        assert!(
            matches!(second, Err(LogError::Locked { .. })),
            "{:?}",
            second.err()
        );
    }

    #[test]
    fn torn_fragment_is_terminated_before_the_first_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n{\"torn\":").unwrap();
        let mut w = LogWriter::open(&path, SyncPolicy::Fsync).unwrap();
        assert!(w.terminated_fragment());
        let at = w.append(b"{\"b\":2}\n").unwrap();
        assert_eq!(at.start, 17);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"{\"a\":1}\n{\"torn\":\n{\"b\":2}\n"
        );
    }

    #[test]
    fn offsets_account_for_foreign_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut w = LogWriter::open(&path, SyncPolicy::None).unwrap();
        assert_eq!(w.append(b"{}\n").unwrap().start, 0);
        let mut other = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        other.write_all(b"{\"x\":1}\n").unwrap();
        let at = w.append(b"{}\n").unwrap();
        assert_eq!((at.previous_end, at.start, at.end), (3, 11, 14));
    }

    #[test]
    fn interval_policy_acknowledges_after_group_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut w = LogWriter::open(&path, SyncPolicy::Interval(Duration::from_millis(5))).unwrap();
        let at = w.append(b"{}\n").unwrap();
        w.wait_durable(at.end).unwrap();
        assert!(w.durable_len() >= at.end);
        w.close().unwrap();
    }

    #[test]
    fn appended_bytes_must_end_with_newline() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::open(&dir.path().join("e.jsonl"), SyncPolicy::None).unwrap();
        assert!(matches!(
            w.append(b"{}"),
            Err(LogError::InvalidEvent { .. })
        ));
        assert_eq!(w.end(), 0);
    }
}
