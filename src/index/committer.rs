//! The writer's background commits: a helper thread that syncs the log, checksums the
//! validation windows and commits queued rows to redb, so an appending thread hands the rows
//! over and goes on instead of waiting for two `fdatasync`s and the B-tree writes.
//!
//! One commit at a time. The database handle travels to the thread with the rows and comes
//! back when the commit lands; [`WritableIndex`](super::open::WritableIndex) lands the
//! previous commit before anything else touches the database, so no two threads ever use it.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use redb::Database;

use super::IndexError;
use super::commit::{CommitError, commit_rows, windows};
use super::derived::contain::{Held, panic_message};
use super::rows::RowBuffer;
use super::schema::Meta;
use crate::log::{LogSync, LogWriter};

/// One commit's worth of work, and the database to do it in.
pub(crate) struct Job {
    pub(crate) db: Held<Database>,
    pub(crate) rows: RowBuffer,
    pub(crate) new_types: Vec<(u32, String)>,
    /// The meta record to commit; its windows are computed on the thread.
    pub(crate) meta: Meta,
    /// Whether the log must be synced before the index may cover it (it already is under
    /// [`SyncPolicy::Fsync`](crate::log::SyncPolicy::Fsync)).
    pub(crate) sync_log: bool,
}

/// A commit that finished: the database handle (`None` if redb panicked in it),
/// the emptied row buffer for reuse, and the meta record as committed.
pub(crate) struct Landed {
    pub(crate) db: Option<Held<Database>>,
    pub(crate) rows: RowBuffer,
    pub(crate) meta: Meta,
    pub(crate) result: Result<(), IndexError>,
}

/// The helper thread, started on the first background commit.
#[derive(Default)]
pub(crate) struct Committer {
    thread: Option<Running>,
    /// A job was sent and its [`Landed`] not yet received.
    in_flight: bool,
}

struct Running {
    jobs: Option<SyncSender<Job>>,
    landed: Receiver<Landed>,
    handle: Option<JoinHandle<()>>,
}

impl Committer {
    /// Hands `job` to the thread, starting it if it is not running. Gives the job back if
    /// there is no thread to take it: then commit on this thread.
    pub(crate) fn send(
        &mut self,
        job: Job,
        log: &LogWriter,
        index: &Path,
        log_path: &Path,
    ) -> Result<(), Box<Job>> {
        if self.thread.is_none() {
            let started = log
                .sync_handle()
                .map_err(|e| e.to_string())
                .and_then(|log| {
                    Running::start(log, index.to_path_buf(), log_path.to_path_buf())
                        .map_err(|e| e.to_string())
                });
            match started {
                Ok(running) => self.thread = Some(running),
                Err(error) => {
                    tracing::debug!(index = %index.display(), %error, "cannot start the index commit thread; committing on this one");
                    return Err(Box::new(job));
                }
            }
        }
        let Some(jobs) = self.thread.as_ref().and_then(|t| t.jobs.as_ref()) else {
            return Err(Box::new(job));
        };
        match jobs.send(job) {
            Ok(()) => {
                self.in_flight = true;
                Ok(())
            }
            // The thread is gone (it only stops when told to, or by a bug); keep its job.
            Err(returned) => {
                self.thread = None;
                Err(Box::new(returned.0))
            }
        }
    }

    /// Waits for the commit on the thread, if any. `Err` only if the thread died holding it
    /// (a bug: every redb call on it is contained), in which case the database is gone.
    pub(crate) fn land(&mut self) -> Option<Result<Landed, String>> {
        if !self.in_flight {
            return None;
        }
        self.in_flight = false;
        let received = self.thread.as_ref().map(|t| t.landed.recv());
        if let Some(Ok(landed)) = received {
            return Some(Ok(landed));
        }
        let why = self
            .thread
            .take()
            .and_then(Running::stop)
            .unwrap_or_else(|| "the index commit thread stopped".to_owned());
        Some(Err(why))
    }
}

impl Running {
    fn start(log: LogSync, index: PathBuf, log_path: PathBuf) -> std::io::Result<Running> {
        // Rendezvous for jobs and room for one result: the thread never waits to hand back.
        let (jobs, inbox) = sync_channel::<Job>(0);
        let (outbox, landed) = sync_channel::<Landed>(1);
        let handle = std::thread::Builder::new()
            .name("agentlog-index-commit".to_owned())
            .spawn(move || {
                for job in inbox {
                    if outbox.send(run(job, &log, &index, &log_path)).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Running {
            jobs: Some(jobs),
            landed,
            handle: Some(handle),
        })
    }

    /// Stops the thread and says why it died, if it panicked.
    fn stop(mut self) -> Option<String> {
        self.jobs = None;
        let handle = self.handle.take()?;
        handle.join().err().map(|panic| {
            format!(
                "the index commit thread panicked: {}",
                panic_message(&*panic)
            )
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Closing the job channel ends the thread's loop; a panic there was reported by `land`.
        self.jobs = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

fn run(job: Job, log: &LogSync, index: &Path, log_path: &Path) -> Landed {
    let Job {
        db,
        mut rows,
        mut new_types,
        mut meta,
        sync_log,
    } = job;
    let prepared = (|| {
        // The index must never cover bytes a power loss could take away.
        if sync_log {
            log.sync(meta.watermark())?;
        }
        windows(&mut meta, log.file(), index, log_path)
    })();
    let committed = match prepared {
        Ok(()) => commit_rows(&db, index, &mut rows, &mut new_types, &mut meta),
        Err(e) => Err(CommitError::Failed(e)),
    };
    let (db, result) = match committed {
        Ok(()) => (Some(db), Ok(())),
        Err(CommitError::Failed(e)) => (Some(db), Err(e)),
        // The handle redb panicked in forgets its database when dropped.
        Err(CommitError::Panicked(e)) => (None, Err(e)),
    };
    rows.clear();
    Landed {
        db,
        rows,
        meta,
        result,
    }
}
