//! A log's stamp ([`Stamp`], shared with the session store's source cache) as the indexes
//! keep it in their file rows.
//!
//! Two tiers, as the per-session source cache does: the log's stamp (device, inode, length,
//! mtime, ctime), which costs one `stat`, and the head and tail windows of the covered bytes
//! (a [`Coverage`](crate::log::Coverage)), which cost two reads of at most 64 KiB. A stamp equal
//! to the one recorded is trusted only if it was recorded once the log had been left alone for
//! [`SETTLED`]: a change within the filesystem's timestamp granularity could leave it equal.
//! Otherwise the windows decide whether the covered bytes are still there.

use crate::log::{Coverage, WindowSum};
pub(crate) use crate::log::{SETTLED, Stamp};

impl Stamp {
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
}

/// The columns a file row of an index keeps of its stamp, whether it had settled, and its
/// coverage, in this order (the store's `sessions` table and the transcripts' `files` table).
pub(crate) const FILE_COLUMNS: [&str; 13] = [
    "dev",
    "ino",
    "size",
    "mtime",
    "ctime",
    "settled",
    "covered",
    "head_len",
    "head_crc",
    "tail_start",
    "tail_len",
    "tail_crc",
    "crc",
];

/// The values of [`FILE_COLUMNS`] (SQLite keeps integers as `i64`, so the unsigned ones are
/// stored by their bits).
pub(crate) fn file_values(stamp: &Stamp, settled: bool, coverage: &Coverage) -> [i64; 13] {
    [
        stamp.dev.cast_signed(),
        stamp.ino.cast_signed(),
        stamp.size.cast_signed(),
        stamp.mtime,
        stamp.ctime,
        i64::from(settled),
        coverage.end.cast_signed(),
        coverage.head.len.cast_signed(),
        i64::from(coverage.head.crc),
        coverage.tail.start.cast_signed(),
        coverage.tail.len.cast_signed(),
        i64::from(coverage.tail.crc),
        i64::from(coverage.crc),
    ]
}

impl Stamp {
    /// The stamp in the first five of [`FILE_COLUMNS`], read from column `first` on.
    pub(crate) fn from_row(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Stamp> {
        let u = |i: usize| r.get::<_, i64>(first + i).map(i64::cast_unsigned);
        Ok(Stamp {
            dev: u(0)?,
            ino: u(1)?,
            size: u(2)?,
            mtime: r.get(first + 3)?,
            ctime: r.get(first + 4)?,
        })
    }
}

/// The stamp and the coverage in [`FILE_COLUMNS`], read from column `first` on.
pub(crate) fn stamp_and_coverage(
    r: &rusqlite::Row<'_>,
    first: usize,
) -> rusqlite::Result<(Stamp, Coverage)> {
    let u = |i: usize| r.get::<_, i64>(first + i).map(i64::cast_unsigned);
    let coverage = Coverage {
        end: u(6)?,
        head: WindowSum {
            start: 0,
            len: u(7)?,
            crc: r.get(first + 8)?,
        },
        tail: WindowSum {
            start: u(9)?,
            len: u(10)?,
            crc: r.get(first + 11)?,
        },
        crc: r.get(first + 12)?,
    };
    Ok((Stamp::from_row(r, first)?, coverage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::SystemTime;

    #[test]
    fn stat_and_metadata_agree_and_stamps_settle() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"{\"a\":1}\n").unwrap();
        let stamp = Stamp::of(&f.as_file().metadata().unwrap());
        assert_eq!(stamp.size, 8);
        let stat = rustix::fs::stat(f.path()).unwrap();
        assert_eq!(Stamp::of_stat(&stat), stamp, "stat and metadata agree");
        assert!(stamp.same_file(&Stamp::of_stat(&stat)));
        assert!(!stamp.settled_at(SystemTime::now(), SETTLED));
        assert!(stamp.settled_at(SystemTime::now() + SETTLED * 2, SETTLED));
    }
}
