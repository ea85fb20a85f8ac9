//! A file's stamp: what `stat` says of it, and when that alone may be trusted to show a change
//! (the session store's source cache and the search indexes decide by it).

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a file must have been left alone before its stamp alone is trusted to show any
/// change: well above the coarsest timestamp granularity of the usual filesystems.
pub const SETTLED: Duration = Duration::from_secs(2);

/// A file's identity and state as `stat` shows it. A write changes its length or its ctime,
/// which no program can set back; a replacement changes its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Length in bytes.
    pub size: u64,
    /// Last modification, ns since the epoch.
    pub mtime: i64,
    /// Last status change, ns since the epoch.
    pub ctime: i64,
}

impl Stamp {
    /// The stamp of `metadata`.
    pub fn of(metadata: &Metadata) -> Stamp {
        Stamp {
            dev: metadata.dev(),
            ino: metadata.ino(),
            size: metadata.size(),
            mtime: metadata
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(metadata.mtime_nsec()),
            ctime: metadata
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(metadata.ctime_nsec()),
        }
    }

    /// Whether, at `taken_at` (read before the `stat`), the file had been left alone for
    /// `settled`, so that any later change must show in the stamp. Never for a change dated
    /// before the epoch or after `taken_at`.
    pub fn settled_at(&self, taken_at: SystemTime, settled: Duration) -> bool {
        let last = self.mtime.max(self.ctime);
        let Ok(now) = taken_at.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let now = i64::try_from(now.as_nanos()).unwrap_or(i64::MAX);
        last >= 0
            && now.saturating_sub(last) >= i64::try_from(settled.as_nanos()).unwrap_or(i64::MAX)
    }

    /// Whether `other` is the same file (device and inode).
    pub fn same_file(&self, other: &Stamp) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}
