//! What `stat` said of a file, and when: the cache's proof that a file it answered from is
//! unchanged without reading it (the usage snapshot's files, the `OpenCode` usage memo's
//! databases), trusted only when the file had settled before the stat was taken.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// What `stat` said of a file, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stat {
    dev: u64,
    ino: u64,
    pub(crate) len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    /// When it was taken (seconds and nanoseconds since the epoch).
    taken: (i64, i64),
}

/// How long before a stat was taken the file must have last changed for the stat to be
/// trusted: a later change within the file system's timestamp granularity could otherwise
/// leave mtime and ctime as they were (the rule git calls "racy").
const SETTLED_SECONDS: i64 = 2;

impl Stat {
    /// The stat `meta`, taken at `taken` (a time read before `meta` was).
    pub(crate) fn of(meta: &std::fs::Metadata, taken: std::time::SystemTime) -> Stat {
        use std::os::unix::fs::MetadataExt;
        let since = taken
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Stat {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            taken: (
                i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
                i64::from(since.subsec_nanos()),
            ),
        }
    }

    /// When the file was last modified (before the epoch: the epoch).
    pub(crate) fn modified(&self) -> std::time::SystemTime {
        let (secs, nanos) = self.mtime;
        let since = std::time::Duration::new(
            u64::try_from(secs).unwrap_or_default(),
            u32::try_from(nanos).unwrap_or_default(),
        );
        std::time::UNIX_EPOCH
            .checked_add(since)
            .unwrap_or(std::time::UNIX_EPOCH)
    }

    /// Whether the file had not changed for a while when this was taken.
    pub(crate) fn settled(&self) -> bool {
        let before = |t: (i64, i64)| t.0.saturating_add(SETTLED_SECONDS) < self.taken.0;
        before(self.mtime) && before(self.ctime)
    }

    /// Whether `now` says the file is the one this stat saw.
    pub(crate) fn same_file(&self, now: &Stat) -> bool {
        (self.dev, self.ino, self.len, self.mtime, self.ctime)
            == (now.dev, now.ino, now.len, now.mtime, now.ctime)
    }
}
/// The `stat` a run took of each file it checked, by path: a later look at the same files in
/// the same run (the archive's check for old unarchived ones) uses it instead of another.
#[derive(Debug, Default)]
pub(crate) struct StatsTaken(HashMap<Vec<u8>, Stat>);

impl StatsTaken {
    /// Notes the `stat` of the file at `path` (its bytes).
    pub(crate) fn note(&mut self, path: &[u8], stat: Stat) {
        self.0.insert(path.to_vec(), stat);
    }

    /// The `stat` noted of `path`.
    pub(crate) fn get(&self, path: &Path) -> Option<&Stat> {
        self.0.get(path.as_os_str().as_bytes())
    }
}
