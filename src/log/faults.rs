//! Injected I/O failures, for the tests that check what happens when a disk fails: short
//! writes, a full disk, I/O errors, on the log and on the index.
//!
//! A [`Faults`] handle is shared (`Arc`) between a test and the writers it arms, so a test can
//! make the disk fail while a writer runs. Production code never creates one; without it the
//! writers take no extra step.

use std::io;
use std::sync::{Mutex, PoisonError};

/// Which error an injected failure reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FaultKind {
    /// The disk is full (ENOSPC).
    #[default]
    NoSpace,
    /// An I/O error (EIO).
    Io,
    /// Index writes and syncs panic instead of failing, as redb does on some damaged files,
    /// so tests can check that a panic inside redb is contained (log operations fail with EIO).
    Panic,
}

impl FaultKind {
    /// An index operation failing this way: an error, or for [`FaultKind::Panic`] a panic
    /// (tests only: production code never arms a fault).
    #[expect(
        clippy::panic,
        reason = "FaultKind::Panic exists to panic inside redb's calls"
    )]
    fn fail(self) -> io::Result<()> {
        match self {
            FaultKind::Panic => {
                panic!("injected panic inside the index's storage (FaultKind::Panic)")
            }
            FaultKind::NoSpace | FaultKind::Io => Err(self.error()),
        }
    }

    fn error(self) -> io::Error {
        match self {
            // Raw OS errors, so messages and kinds are what a real disk would give.
            FaultKind::NoSpace => io::Error::from_raw_os_error(28),
            FaultKind::Io | FaultKind::Panic => io::Error::from_raw_os_error(5),
        }
    }
}

/// What is armed.
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// Bytes the log may still write; the write that crosses the limit writes what fits (a
    /// short write) and fails.
    pub log_write_budget: Option<u64>,
    /// Log syncs fail.
    pub log_sync_fails: bool,
    /// Truncating the log (the rollback of a failed write) fails.
    pub log_truncate_fails: bool,
    /// Index write calls that may still succeed; later ones fail.
    pub index_write_budget: Option<u64>,
    /// Index syncs fail.
    pub index_sync_fails: bool,
    /// The error failing operations report.
    pub kind: FaultKind,
}

/// A shared, adjustable [`FaultPlan`].
#[derive(Debug, Default)]
pub struct Faults {
    plan: Mutex<FaultPlan>,
}

impl Faults {
    /// A handle with `plan` armed.
    pub fn new(plan: FaultPlan) -> Faults {
        Faults {
            plan: Mutex::new(plan),
        }
    }

    /// Changes what is armed.
    pub fn set(&self, change: impl FnOnce(&mut FaultPlan)) {
        change(&mut self.plan.lock().unwrap_or_else(PoisonError::into_inner));
    }

    fn with<T>(&self, f: impl FnOnce(&mut FaultPlan) -> T) -> T {
        f(&mut self.plan.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// For a log write of `len` bytes: `Ok(())` to write it all, or how many bytes to write
    /// before failing with the returned error.
    pub(crate) fn log_write(&self, len: usize) -> Result<(), (usize, io::Error)> {
        self.with(|plan| match plan.log_write_budget {
            Some(budget) if (len as u64) > budget => {
                plan.log_write_budget = Some(0);
                Err((usize::try_from(budget).unwrap_or(0), plan.kind.error()))
            }
            Some(budget) => {
                plan.log_write_budget = Some(budget - len as u64);
                Ok(())
            }
            None => Ok(()),
        })
    }

    pub(crate) fn log_sync(&self) -> io::Result<()> {
        self.log_fails_if(|plan| plan.log_sync_fails)
    }

    pub(crate) fn log_truncate(&self) -> io::Result<()> {
        self.log_fails_if(|plan| plan.log_truncate_fails)
    }

    /// The armed error for a log operation that `armed` says fails (a log operation fails
    /// with an error, never the index's injected panic).
    fn log_fails_if(&self, armed: impl FnOnce(&FaultPlan) -> bool) -> io::Result<()> {
        self.with(|plan| {
            if armed(plan) {
                Err(plan.kind.error())
            } else {
                Ok(())
            }
        })
    }

    /// For one index write call.
    pub fn index_write(&self) -> io::Result<()> {
        self.with(|plan| match plan.index_write_budget {
            Some(0) => plan.kind.fail(),
            Some(n) => {
                plan.index_write_budget = Some(n - 1);
                Ok(())
            }
            None => Ok(()),
        })
    }

    /// For one index sync.
    pub fn index_sync(&self) -> io::Result<()> {
        self.with(|plan| {
            if plan.index_sync_fails {
                plan.kind.fail()
            } else {
                Ok(())
            }
        })
    }
}
