//! What a derived structure covers of a log, and the O(1) check of that against the file now.
//!
//! A derived structure (a transcript index, a search index, an export) folds a log's complete
//! lines and remembers how far it got. [`Coverage`] is that memory: the end offset (always just
//! after a `\n`), the crc32 of the head window (the first bytes), of the tail window (the bytes
//! just before the end) and of everything before the end. [`Coverage::check`] compares it with
//! the file as it is now, reading two windows whatever the log's size; a deep check also
//! recomputes the running crc. [`CoverageBuilder`] makes a coverage from the bytes as they are
//! folded, so it describes exactly what was read, never what the file held a moment later.
//!
//! Growth alone proves nothing: a log truncated and rewritten longer is caught by the tail
//! window, a log replaced by another by the head window.

use std::fs::File;
use std::io;

use serde::{Deserialize, Serialize};

use super::lines::{Line, LineScanner, Run, read_exact_at};
use super::window::{WINDOW_BYTES, WindowSum, read_chunks};

/// What a derived structure covers of a log: its first `end` bytes, which end with a `\n`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coverage {
    /// Bytes covered: the offset just after the last complete line folded (0 for none).
    pub end: u64,
    /// The head window: `[0, min(end, 64 KiB))`.
    pub head: WindowSum,
    /// The tail window: the (up to) 64 KiB ending at `end`.
    pub tail: WindowSum,
    /// crc32 of `[0, end)`.
    pub crc: u32,
}

/// How a log relates to a [`Coverage`] of it, with the log's length when checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CoverageCheck {
    /// The log holds exactly the covered bytes.
    Current {
        /// The log's length.
        len: u64,
    },
    /// The covered bytes are intact and more follow (complete lines or a torn tail).
    Grew {
        /// The log's length.
        len: u64,
    },
    /// The log is shorter than the covered bytes.
    Truncated {
        /// The log's length.
        len: u64,
    },
    /// The head window differs: another log, or this one replaced.
    HeadChanged {
        /// The log's length.
        len: u64,
    },
    /// The tail window differs: rewritten in place, or truncated and written again.
    TailChanged {
        /// The log's length.
        len: u64,
    },
    /// Both windows match but the running crc does not: bytes between them were rewritten.
    /// Only [`Coverage::check_deep`] can tell.
    BodyChanged {
        /// The log's length.
        len: u64,
    },
}

impl CoverageCheck {
    /// The log's length when it was checked.
    pub fn log_len(&self) -> u64 {
        match *self {
            CoverageCheck::Current { len }
            | CoverageCheck::Grew { len }
            | CoverageCheck::Truncated { len }
            | CoverageCheck::HeadChanged { len }
            | CoverageCheck::TailChanged { len }
            | CoverageCheck::BodyChanged { len } => len,
        }
    }

    /// Whether the covered bytes are still the log's first bytes (current or grown).
    pub fn is_intact(&self) -> bool {
        matches!(
            self,
            CoverageCheck::Current { .. } | CoverageCheck::Grew { .. }
        )
    }
}

impl Coverage {
    /// The coverage of nothing: an empty log, or one whose first line is not complete yet.
    pub fn empty() -> Coverage {
        Coverage::default()
    }

    /// The coverage of `[0, end)` of `file` with the windows read from the file, for a fold
    /// that checksummed the bytes itself (`crc`, their running crc); `None` if the file is
    /// shorter than `end`. A [`CoverageBuilder`] needs no reads and describes exactly the bytes
    /// pushed; this describes the file as it is when measured.
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

    /// Whether the windows have the shape `end` implies (a coverage read back from a damaged
    /// file may not).
    pub fn is_well_formed(&self) -> bool {
        let window = self.end.min(WINDOW_BYTES);
        self.head.start == 0
            && self.head.len == window
            && self.tail.len == window
            && self.tail.start == self.end - window
            && (self.end > 0 || (self.head.crc == 0 && self.tail.crc == 0 && self.crc == 0))
    }

    /// Compares the coverage with `file` now: its length, then the head and tail windows.
    /// Reads at most 128 KiB whatever the log's size.
    pub fn check(&self, file: &File) -> io::Result<CoverageCheck> {
        let len = file.metadata()?.len();
        if len < self.end {
            return Ok(CoverageCheck::Truncated { len });
        }
        if !self.head.matches(file)? {
            return Ok(CoverageCheck::HeadChanged { len });
        }
        if !self.tail.matches(file)? {
            return Ok(CoverageCheck::TailChanged { len });
        }
        Ok(if len > self.end {
            CoverageCheck::Grew { len }
        } else {
            CoverageCheck::Current { len }
        })
    }

    /// [`Coverage::check`], then the running crc of every covered byte: O(end), for audits.
    pub fn check_deep(&self, file: &File) -> io::Result<CoverageCheck> {
        let check = self.check(file)?;
        if !check.is_intact() {
            return Ok(check);
        }
        match WindowSum::of(file, 0, self.end)? {
            Some(sum) if sum.crc == self.crc => Ok(check),
            _ => Ok(CoverageCheck::BodyChanged {
                len: check.log_len(),
            }),
        }
    }
}

/// Bytes pushed that do not end a line: a coverage always ends just after a `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("bytes pushed to a coverage must end with a newline")]
pub struct NotLineEnd;

/// Builds a [`Coverage`] from the bytes of complete lines, pushed in file order.
#[derive(Clone)]
pub struct CoverageBuilder {
    end: u64,
    crc: crc32fast::Hasher,
    head: crc32fast::Hasher,
    head_len: u64,
    /// The last bytes pushed: at least the last `WINDOW_BYTES` (or all), at most twice that.
    recent: Vec<u8>,
}

impl Default for CoverageBuilder {
    fn default() -> CoverageBuilder {
        CoverageBuilder::new()
    }
}

impl CoverageBuilder {
    /// A builder at offset 0.
    pub fn new() -> CoverageBuilder {
        CoverageBuilder {
            end: 0,
            crc: crc32fast::Hasher::new(),
            head: crc32fast::Hasher::new(),
            head_len: 0,
            recent: Vec::new(),
        }
    }

    /// Continues `coverage` of `file`: reads its tail window back (the bytes a later tail
    /// window may need) and checks them. `None` if the file no longer holds them.
    pub fn resume(coverage: &Coverage, file: &File) -> io::Result<Option<CoverageBuilder>> {
        if !coverage.is_well_formed() {
            return Ok(None);
        }
        let mut recent = vec![0; usize::try_from(coverage.tail.len).unwrap_or(0)];
        if !read_exact_at(file, &mut recent, coverage.tail.start)?
            || crc32fast::hash(&recent) != coverage.tail.crc
        {
            return Ok(None);
        }
        Ok(Some(CoverageBuilder {
            end: coverage.end,
            crc: crc32fast::Hasher::new_with_initial(coverage.crc),
            head: crc32fast::Hasher::new_with_initial(coverage.head.crc),
            head_len: coverage.head.len,
            recent,
        }))
    }

    /// The offset just after the last byte pushed.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Pushes one complete line given without its `\n`.
    pub fn push_line(&mut self, line: &[u8]) {
        self.feed(line);
        self.feed(b"\n");
    }

    /// Pushes the bytes of complete lines, each with its `\n`.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), NotLineEnd> {
        match bytes.last() {
            None => Ok(()),
            Some(b'\n') => {
                self.feed(bytes);
                Ok(())
            }
            Some(_) => Err(NotLineEnd),
        }
    }

    /// Pushes a complete line of `len` bytes (its `\n` included) read back from `file` at the
    /// builder's end, in fixed-size chunks: for lines too long to hold in memory. `Ok(false)`,
    /// with nothing pushed, if the file no longer holds such a line there.
    pub fn push_from_file(&mut self, file: &File, len: u64) -> io::Result<bool> {
        let mut copy = self.clone();
        let mut last = None;
        let whole = read_chunks(file, self.end, self.end.saturating_add(len), |chunk| {
            copy.feed(chunk);
            last = chunk.last().copied();
        })?;
        if !whole || last != Some(b'\n') {
            return Ok(false);
        }
        *self = copy;
        Ok(true)
    }

    /// The coverage of everything pushed so far.
    pub fn coverage(&self) -> Coverage {
        let window = self.end.min(WINDOW_BYTES);
        let keep = usize::try_from(window).unwrap_or(0);
        let recent = self
            .recent
            .get(self.recent.len().saturating_sub(keep)..)
            .unwrap_or_default();
        Coverage {
            end: self.end,
            head: WindowSum {
                start: 0,
                len: self.head_len,
                crc: self.head.clone().finalize(),
            },
            tail: WindowSum {
                start: self.end - window,
                len: window,
                crc: crc32fast::hash(recent),
            },
            crc: self.crc.clone().finalize(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
        if self.head_len < WINDOW_BYTES {
            let room = usize::try_from(WINDOW_BYTES - self.head_len).unwrap_or(0);
            let part = &bytes[..room.min(bytes.len())];
            self.head.update(part);
            self.head_len += part.len() as u64;
        }
        let window = usize::try_from(WINDOW_BYTES).unwrap_or(usize::MAX);
        if bytes.len() >= window {
            self.recent.clear();
            self.recent
                .extend_from_slice(&bytes[bytes.len() - window..]);
        } else {
            if self.recent.len() + bytes.len() > 2 * window {
                let drop = self.recent.len() + bytes.len() - window;
                self.recent.drain(..drop.min(self.recent.len()));
            }
            self.recent.extend_from_slice(bytes);
        }
        self.end += bytes.len() as u64;
    }
}

/// Feeds the complete lines of `file` from the builder's end up to `limit` (normally the
/// file's length when it was checked) to `fold` and to the builder, in file order. A line
/// longer than `max_line` is handed over as [`Line::TooLong`] and hashed from the file in
/// chunks. A torn last line is neither folded nor covered: the next scan starts at it.
pub fn scan_lines<E: From<io::Error>>(
    file: &File,
    builder: &mut CoverageBuilder,
    limit: u64,
    max_line: usize,
    mut fold: impl FnMut(Line<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let start = builder.end();
    // The builder hashes what it is fed: the scanner need not.
    let mut scanner = LineScanner::new(file, start, limit, max_line, 0).unhashed();
    // A buffer's lines go to the builder as one run, so that it copies only the run's last
    // window of bytes, not every line (the caller drops the builder if a fold fails).
    while let Some(run) = scanner.next_run(usize::MAX)? {
        match run {
            Run::Lines {
                offset,
                bytes,
                ends,
            } => {
                builder.feed(bytes);
                let mut from = 0;
                for &end in ends {
                    let line = bytes.get(from..end - 1).unwrap_or_default();
                    fold(Line::Complete {
                        offset: offset + from as u64,
                        bytes: line,
                    })?;
                    from = end;
                }
            }
            Run::TooLong { offset, len } => {
                if !builder.push_from_file(file, len + 1)? {
                    // The line changed under us: stop before it, as at a torn tail.
                    return Ok(());
                }
                fold(Line::TooLong { offset, len })?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
