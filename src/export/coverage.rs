//! What an export covers of a log, and the O(1) check of that against the file now: the same
//! validation the index runs on open (length, head and tail windows), plus the running crc of
//! the covered bytes.
//!
//! A minimal stand-in for the shared `log` coverage that derived structures (transcript
//! indexes, search, export) are to use; it moves there when that lands.

use std::fs::File;
use std::io;

use serde::{Deserialize, Serialize};

use crate::log::{WINDOW_BYTES, WindowSum};

/// The covered prefix `[0, end)` of a log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coverage {
    /// Bytes covered; always just after a `\n` (or 0).
    pub end: u64,
    /// crc32 of the log's first bytes (up to 64 KiB).
    pub head: WindowSum,
    /// crc32 of the bytes just before `end` (up to 64 KiB).
    pub tail: WindowSum,
    /// crc32 of all of `[0, end)`.
    pub crc: u32,
}

/// How a log stands against what an export covered of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// The log is exactly the covered bytes.
    Current,
    /// The log is longer and its covered windows are unchanged: only new bytes to export.
    Grew,
    /// The log is shorter than what was covered.
    Truncated,
    /// A window of the covered bytes changed: the log was replaced or rewritten.
    Rewritten,
}

impl Coverage {
    /// The coverage of `[0, end)` of `file`, whose running crc is `crc`; `None` if the file is
    /// shorter than `end`.
    pub fn measure(file: &File, end: u64, crc: u32) -> io::Result<Option<Coverage>> {
        let (Some(head), Some(tail)) = (WindowSum::head(file, end)?, WindowSum::tail(file, end)?)
        else {
            return Ok(None);
        };
        Ok(Some(Coverage {
            end,
            head,
            tail,
            crc,
        }))
    }

    /// Whether the windows have the shape `measure` gives for `end` (a decoded state must).
    pub fn is_well_formed(&self) -> bool {
        let len = self.end.min(WINDOW_BYTES);
        self.head.start == 0
            && self.head.len == len
            && self.tail.len == len
            && self.tail.start.checked_add(len) == Some(self.end)
            && (self.end > 0 || self.crc == 0)
    }

    /// Compares the file now with what was covered: O(1), two window reads.
    pub fn check(&self, file: &File) -> io::Result<Check> {
        let len = file.metadata()?.len();
        if len < self.end {
            return Ok(Check::Truncated);
        }
        if !self.head.matches(file)? || !self.tail.matches(file)? {
            return Ok(Check::Rewritten);
        }
        Ok(if len == self.end {
            Check::Current
        } else {
            Check::Grew
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    #[test]
    fn growth_truncation_and_rewrites_are_told_apart() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"{\"a\":1}\n{\"a\":2}\n").unwrap();
        let crc = crc32fast::hash(b"{\"a\":1}\n{\"a\":2}\n");
        let covered = Coverage::measure(&f, 16, crc).unwrap().unwrap();
        assert!(covered.is_well_formed());
        assert_eq!(covered.check(&f).unwrap(), Check::Current);
        f.write_all(b"{\"a\":3}\n").unwrap();
        assert_eq!(covered.check(&f).unwrap(), Check::Grew);
        f.set_len(8).unwrap();
        assert_eq!(covered.check(&f).unwrap(), Check::Truncated);
        f.write_all_at(b"{\"a\":9}\n{\"a\":2}\n", 0).unwrap();
        assert_eq!(covered.check(&f).unwrap(), Check::Rewritten);
        assert_eq!(Coverage::measure(&f, 99, 0).unwrap(), None);
    }
}
