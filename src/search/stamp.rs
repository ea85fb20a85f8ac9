//! What the search index covers of one log, and the O(1) check against the file now.
//!
//! Two tiers, as the per-session source cache does: the log's stamp (device, inode, length,
//! mtime, ctime), which costs one `stat`, and the head and tail windows of the covered bytes
//! (the core index's checksums), which cost two reads of at most 64 KiB. A stamp equal to the
//! one recorded is trusted only if it was recorded once the log had been left alone for
//! [`SETTLED`]: a change within the filesystem's timestamp granularity could leave it equal.
//! Otherwise the windows decide whether the covered bytes are still there.
//!
//! This is the minimal equivalent of the shared `log::coverage` helper being written for
//! transcripts; the two are meant to become one.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::log::WindowSum;

/// How long a log must have been left alone before its stamp alone is trusted.
pub const SETTLED: Duration = Duration::from_secs(2);

/// A log file's identity and state as `stat` shows it.
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

    /// The stamp of a `stat` result.
    #[allow(
        clippy::unnecessary_cast,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap
    )] // the field types differ between architectures
    pub fn of_stat(stat: &rustix::fs::Stat) -> Stamp {
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Stamp {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            size: stat.st_size as u64,
            mtime: ns(stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            ctime: ns(stat.st_ctime as i64, stat.st_ctime_nsec as i64),
        }
    }

    /// Whether, at `taken_at` (read before the `stat`), the log had been left alone long
    /// enough that any later change must show in the stamp.
    pub fn settled_at(&self, taken_at: SystemTime, settled: Duration) -> bool {
        let now = taken_at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let last = self.mtime.max(self.ctime);
        now.saturating_sub(last) >= i64::try_from(settled.as_nanos()).unwrap_or(i64::MAX)
    }

    /// Whether `other` is the same file (device and inode).
    pub fn same_file(&self, other: &Stamp) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// The bytes `[0, covered)` of a log that the index holds, with their window checksums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Coverage {
    /// End of the covered bytes (just after a `\n`).
    pub covered: u64,
    /// crc32 of the first bytes.
    pub head: WindowSum,
    /// crc32 of the last bytes before `covered`.
    pub tail: WindowSum,
}

impl Coverage {
    /// The coverage of `[0, covered)` of `file`; `None` if the file is shorter.
    pub fn of(file: &File, covered: u64) -> io::Result<Option<Coverage>> {
        let (Some(head), Some(tail)) = (
            WindowSum::head(file, covered)?,
            WindowSum::tail(file, covered)?,
        ) else {
            return Ok(None);
        };
        Ok(Some(Coverage {
            covered,
            head,
            tail,
        }))
    }

    /// Whether `file` still holds the covered bytes, as far as the windows tell.
    pub fn holds(&self, file: &File) -> io::Result<bool> {
        Ok(self.head.matches(file)? && self.tail.matches(file)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn windows_see_a_rewrite_and_stamps_settle() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        let c = Coverage::of(f.as_file(), 16).unwrap().unwrap();
        assert!(c.holds(f.as_file()).unwrap());
        f.write_all(b"{\"c\":3}\n").unwrap();
        assert!(
            c.holds(f.as_file()).unwrap(),
            "growth keeps the covered bytes"
        );
        f.as_file().set_len(8).unwrap();
        assert!(!c.holds(f.as_file()).unwrap());
        assert!(Coverage::of(f.as_file(), 16).unwrap().is_none());
        let stamp = Stamp::of(&f.as_file().metadata().unwrap());
        let stat = rustix::fs::stat(f.path()).unwrap();
        assert_eq!(Stamp::of_stat(&stat), stamp, "stat and metadata agree");
        assert!(!stamp.settled_at(SystemTime::now(), SETTLED));
        assert!(stamp.settled_at(SystemTime::now() + SETTLED * 2, SETTLED));
    }
}
