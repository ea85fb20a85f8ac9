//! Framing: complete lines from a byte range of the log, with a running checksum.
//!
//! Only lines that end in `\n` exist for us: a final fragment without one is a torn tail or a
//! write in progress, and is never returned. Lines of any length are handled; those longer than
//! the configured maximum are reported as too long and skipped without being buffered, so a
//! multi-hundred-megabyte line cannot exhaust memory.
//!
//! We read with `pread` into a buffer rather than memory-mapping the file: a log truncated by
//! another process under a mapping would kill the reader with SIGBUS, while `pread` just sees a
//! shorter file.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The default maximum line size: 64 MiB (real Claude Code lines reach ~1 MB).
pub const DEFAULT_MAX_LINE: usize = 64 << 20;

const CHUNK: usize = 256 << 10;

/// One line found by a [`LineScanner`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'b> {
    /// A complete line; `bytes` excludes the `\n`.
    Complete {
        /// Byte offset of the line's first byte.
        offset: u64,
        /// The line without its `\n`.
        bytes: &'b [u8],
    },
    /// A complete line longer than the maximum line size; its bytes were not kept.
    TooLong {
        /// Byte offset of the line's first byte.
        offset: u64,
        /// Length without the `\n`.
        len: u64,
    },
}

/// Complete lines found by [`LineScanner::next_run`], many at a time.
#[derive(Debug, PartialEq, Eq)]
pub enum Run<'b> {
    /// Consecutive complete lines, each within the maximum line size.
    Lines {
        /// Byte offset of the first line.
        offset: u64,
        /// The lines back to back, each with its `\n`.
        bytes: &'b [u8],
        /// For each line, the position in `bytes` just after its `\n`.
        ends: &'b [usize],
    },
    /// A complete line longer than the maximum line size; its bytes were not kept.
    TooLong {
        /// Byte offset of the line's first byte.
        offset: u64,
        /// Length without the `\n`.
        len: u64,
    },
}

/// Where [`LineScanner::advance_run`] found a run: [`LineScanner::run`] lends it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoundRun {
    /// Complete lines at `start..end` of the buffer.
    Lines {
        /// Where the run starts in the buffer.
        start: usize,
        /// Where it ends.
        end: usize,
    },
    /// As [`Run::TooLong`].
    TooLong {
        /// Byte offset of the line's first byte.
        offset: u64,
        /// Length without the `\n`.
        len: u64,
    },
}

/// The next stretch of a log, read by another thread for [`LineScanner::adopt`].
#[derive(Debug)]
pub struct ReadAhead {
    /// The scanner's unreturned bytes, then the bytes read after them.
    buf: Vec<u8>,
    filled: usize,
    /// File offset of `buf[0]`.
    start: u64,
    /// The crc32 of the returned bytes that were not yet in the scanner's running crc.
    returned: crc32fast::Hasher,
    /// The scanner's `(buf_start, cursor, filled)` it was made from.
    after: (u64, usize, usize),
}

/// Reads complete lines of a file from `start` up to `limit`, keeping a crc32 of the bytes of
/// the complete lines it returned (including their `\n`), unless made
/// [`unhashed`](LineScanner::unhashed).
pub struct LineScanner<'f> {
    file: &'f File,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    buf_start: u64,
    filled: usize,
    /// Start of the next unreturned line in `buf`.
    cursor: usize,
    /// `buf[..hashed]` is already in `crc`.
    hashed: usize,
    limit: u64,
    max_line: usize,
    crc: crc32fast::Hasher,
    /// False when the caller hashes the bytes itself ([`LineScanner::unhashed`]).
    hashing: bool,
    /// After a too-long torn tail nothing more can be returned.
    exhausted: bool,
    /// Line ends of the last [`Run::Lines`].
    ends: Vec<usize>,
}

impl<'f> LineScanner<'f> {
    /// Scans `file` from `start` (which must be a line start) up to `limit` bytes into the file.
    /// `crc_so_far` is the crc32 of the bytes before `start`, so the running checksum continues.
    pub fn new(
        file: &'f File,
        start: u64,
        limit: u64,
        max_line: usize,
        crc_so_far: u32,
    ) -> LineScanner<'f> {
        LineScanner::with_buffer(file, start, limit, max_line, crc_so_far, CHUNK)
    }

    /// [`LineScanner::new`] reading up to `buffer` bytes at a time (more for a longer line):
    /// a build reads in large runs ([`LineScanner::next_run`]) to hand to two threads.
    pub fn with_buffer(
        file: &'f File,
        start: u64,
        limit: u64,
        max_line: usize,
        crc_so_far: u32,
        buffer: usize,
    ) -> LineScanner<'f> {
        // No bigger than the bytes to scan: a reader folding a tail of a few lines should not
        // pay for a 256 KiB buffer (a fresh mapping, zeroed page by page). Long lines grow it.
        let span = usize::try_from(limit.saturating_sub(start)).unwrap_or(usize::MAX);
        let len = buffer
            .min(max_line.saturating_add(1))
            .min(span.saturating_add(1))
            .max(4096);
        LineScanner {
            file,
            buf: vec![0; len],
            buf_start: start,
            filled: 0,
            cursor: 0,
            hashed: 0,
            limit,
            max_line: max_line.max(1),
            crc: crc32fast::Hasher::new_with_initial(crc_so_far),
            hashing: true,
            exhausted: false,
            ends: Vec::new(),
        }
    }

    /// The scanner without its crc, for a caller that hashes every byte it is given anyway:
    /// [`crc`](Self::crc) then stays at `crc_so_far`.
    #[must_use]
    pub fn unhashed(mut self) -> LineScanner<'f> {
        self.hashing = false;
        self
    }

    /// The offset just after the last complete line returned (the start if none).
    pub fn end(&self) -> u64 {
        self.buf_start + self.cursor as u64
    }

    /// The crc32 of everything from offset 0 (given `crc_so_far`) to [`end`](Self::end).
    pub fn crc(&mut self) -> u32 {
        self.hash_consumed();
        self.crc.clone().finalize()
    }

    /// The next complete line, or `None` at the limit, at the end of the file, or before a
    /// torn tail.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        if self.exhausted {
            return Ok(None);
        }
        loop {
            let pending = &self.buf[self.cursor..self.filled];
            if let Some(i) = memchr::memchr(b'\n', pending) {
                let start = self.cursor;
                self.cursor += i + 1;
                let offset = self.buf_start + start as u64;
                if i > self.max_line {
                    return Ok(Some(Line::TooLong {
                        offset,
                        len: i as u64,
                    }));
                }
                return Ok(Some(Line::Complete {
                    offset,
                    bytes: &self.buf[start..start + i],
                }));
            }
            if pending.len() > self.max_line {
                let skipped = self.skip_too_long()?;
                return Ok(skipped.map(|(offset, len)| Line::TooLong { offset, len }));
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }

    /// The complete lines buffered now, as one run, reading more first if none is: lines
    /// until one ends at or past `max_bytes` bytes into the run (at least one line). A line
    /// longer than the maximum line size is returned on its own, as by
    /// [`LineScanner::next_line`]. `None` at the limit, at the end of the file, or before a
    /// torn tail.
    pub fn next_run(&mut self, max_bytes: usize) -> io::Result<Option<Run<'_>>> {
        Ok(self.advance_run(max_bytes)?.map(|found| self.run(found)))
    }

    /// [`LineScanner::next_run`] in two steps: this one moves past the run and says where it
    /// is; [`LineScanner::run`] then lends it out without holding the scanner mutably, so
    /// another thread can [`read_ahead`](LineScanner::read_ahead) meanwhile.
    pub fn advance_run(&mut self, max_bytes: usize) -> io::Result<Option<FoundRun>> {
        if self.exhausted {
            return Ok(None);
        }
        let max_bytes = max_bytes.max(1);
        loop {
            self.ends.clear();
            let start = self.cursor;
            let mut at = start;
            let mut too_long = None;
            while at - start < max_bytes {
                let Some(i) = memchr::memchr(b'\n', &self.buf[at..self.filled]) else {
                    break;
                };
                if i > self.max_line {
                    too_long = Some(i);
                    break;
                }
                at += i + 1;
                self.ends.push(at - start);
            }
            if at > start {
                self.cursor = at;
                return Ok(Some(FoundRun::Lines { start, end: at }));
            }
            if let Some(len) = too_long {
                self.cursor += len + 1;
                return Ok(Some(FoundRun::TooLong {
                    offset: self.buf_start + start as u64,
                    len: len as u64,
                }));
            }
            if self.filled - self.cursor > self.max_line {
                let skipped = self.skip_too_long()?;
                return Ok(skipped.map(|(offset, len)| FoundRun::TooLong { offset, len }));
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }

    /// The run that [`LineScanner::advance_run`] just moved past.
    pub fn run(&self, found: FoundRun) -> Run<'_> {
        match found {
            FoundRun::Lines { start, end } => Run::Lines {
                offset: self.buf_start + start as u64,
                bytes: self.buf.get(start..end).unwrap_or_default(),
                ends: &self.ends,
            },
            FoundRun::TooLong { offset, len } => Run::TooLong { offset, len },
        }
    }

    /// Reads the bytes that follow the buffer into `spare` (after a copy of what is still
    /// unreturned; `spare` is taken only when something was read), and checksums the returned bytes not yet in the running crc, without
    /// changing the scanner: another thread does this while the last run is being read, and
    /// [`LineScanner::adopt`] then takes the result instead of reading itself. `None` if
    /// there is nothing to read ahead, or the read failed (the scanner's own read will meet
    /// the error again and report it).
    pub fn read_ahead(&self, spare: &mut Vec<u8>) -> Option<ReadAhead> {
        if self.exhausted {
            return None;
        }
        let pending = self.buf.get(self.cursor..self.filled)?;
        spare.resize(self.buf.len(), 0);
        let (kept, room) = spare.split_at_mut_checked(pending.len())?;
        kept.copy_from_slice(pending);
        let pos = self.buf_start + self.filled as u64;
        let read = read_capped(self.file, self.limit, room, pos).ok()?;
        if read == 0 {
            return None;
        }
        let mut returned = crc32fast::Hasher::new();
        if self.hashing {
            returned.update(self.buf.get(self.hashed..self.cursor)?);
        }
        Some(ReadAhead {
            filled: pending.len() + read,
            buf: std::mem::take(spare),
            start: self.buf_start + self.cursor as u64,
            returned,
            after: (self.buf_start, self.cursor, self.filled),
        })
    }

    /// Continues from `ahead`, which [`LineScanner::read_ahead`] made of this scanner as it is
    /// now: its buffer becomes this scanner's, as if this scanner had refilled itself then.
    /// Returns the buffer given up, for the next read-ahead. An `ahead` made of an earlier
    /// state is ignored (and handed back).
    pub fn adopt(&mut self, ahead: ReadAhead) -> Vec<u8> {
        if ahead.after != (self.buf_start, self.cursor, self.filled) || self.exhausted {
            return ahead.buf;
        }
        self.crc.combine(&ahead.returned);
        self.buf_start = ahead.start;
        self.filled = ahead.filled;
        self.cursor = 0;
        self.hashed = 0;
        std::mem::replace(&mut self.buf, ahead.buf)
    }

    fn hash_consumed(&mut self) {
        if self.hashing && self.hashed < self.cursor {
            self.crc.update(&self.buf[self.hashed..self.cursor]);
            self.hashed = self.cursor;
        }
    }

    /// Moves unreturned bytes to the front and reads more. False when nothing more can be read.
    fn refill(&mut self) -> io::Result<bool> {
        self.hash_consumed();
        self.buf.copy_within(self.cursor..self.filled, 0);
        self.buf_start += self.cursor as u64;
        self.filled -= self.cursor;
        self.cursor = 0;
        self.hashed = 0;
        if self.filled == self.buf.len() {
            // A long line: grow, but never beyond what deciding "too long" needs.
            let cap = self.max_line.saturating_add(1);
            let grown = self
                .buf
                .len()
                .saturating_mul(2)
                .min(cap)
                .max(self.filled + 1);
            self.buf.resize(grown, 0);
        }
        self.read_more()
    }

    fn read_more(&mut self) -> io::Result<bool> {
        let pos = self.buf_start + self.filled as u64;
        let room = self.buf.get_mut(self.filled..).unwrap_or_default();
        let n = read_capped(self.file, self.limit, room, pos)?;
        self.filled += n;
        // Zero bytes: the file ends before `limit` (it may have been truncated under us).
        Ok(n > 0)
    }

    /// Skips the too-long line starting at `cursor`, hashing it only once its `\n` is seen,
    /// so a torn too-long tail leaves `end` and the checksum at the last complete line.
    /// Returns the line's offset and length (without the `\n`).
    fn skip_too_long(&mut self) -> io::Result<Option<(u64, u64)>> {
        self.hash_consumed();
        let offset = self.buf_start + self.cursor as u64;
        let mut line_crc = self.crc.clone();
        loop {
            let pending = &self.buf[self.cursor..self.filled];
            if let Some(i) = memchr::memchr(b'\n', pending) {
                if self.hashing {
                    line_crc.update(&pending[..=i]);
                }
                self.crc = line_crc;
                self.cursor += i + 1;
                self.hashed = self.cursor;
                let len = self.buf_start + self.cursor as u64 - 1 - offset;
                return Ok(Some((offset, len)));
            }
            if self.hashing {
                line_crc.update(pending);
            }
            // Drop the bytes but remember where they were.
            self.buf_start += self.filled as u64;
            self.filled = 0;
            self.cursor = 0;
            self.hashed = 0;
            if !self.read_more()? {
                // Torn too-long tail: rewind `end` to the line start.
                self.buf_start = offset;
                self.exhausted = true;
                return Ok(None);
            }
        }
    }
}

/// Reads into `into` from offset `pos`, never past `limit`: 0 at the limit or the end of the
/// file.
fn read_capped(file: &File, limit: u64, into: &mut [u8], pos: u64) -> io::Result<usize> {
    let left = usize::try_from(limit.saturating_sub(pos)).unwrap_or(usize::MAX);
    match into.get_mut(..left.min(into.len())) {
        Some(into) if !into.is_empty() => read_at_retrying(file, into, pos),
        _ => Ok(0),
    }
}

/// `pread` that retries on `Interrupted`; returns 0 at end of file (and past the largest
/// offset a file can have, where the OS would refuse the call).
pub fn read_at_retrying(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    if offset > i64::MAX as u64 {
        return Ok(0);
    }
    loop {
        match file.read_at(buf, offset) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads exactly `buf.len()` bytes at `offset`; `Ok(false)` if the file is shorter.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<bool> {
    let mut done = 0;
    while done < buf.len() {
        let n = read_at_retrying(file, &mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Ok(false);
        }
        done += n;
    }
    Ok(true)
}

/// Whether the file's bytes `[from, to)` still have the crc32 computed over them as they were
/// read (`crc_to`, continuing `crc_from`): `Ok(false)` if they differ or the file is now
/// shorter. A log rewritten in place while it was read, against its append-only contract, can
/// hand a reader lines stitched from two versions; reading the bytes again is how a fold
/// tells. Who reads again, and who does not:
/// docs/DECISIONS.md, "What was folded is read again where that is cheap".
pub(crate) fn bytes_unchanged(
    file: &File,
    (from, crc_from): (u64, u32),
    to: u64,
    crc_to: u32,
) -> io::Result<bool> {
    let mut hasher = crc32fast::Hasher::new_with_initial(crc_from);
    let mut buf = vec![0; usize::try_from(to.saturating_sub(from).min(64 << 10)).unwrap_or(0)];
    let mut at = from;
    while at < to {
        let n = usize::try_from(to - at).map_or(buf.len(), |left| left.min(buf.len()));
        let Some(chunk) = buf.get_mut(..n) else {
            break;
        };
        if !read_exact_at(file, chunk, at)? {
            return Ok(false);
        }
        hasher.update(chunk);
        at += n as u64;
    }
    Ok(hasher.finalize() == crc_to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn bytes_unchanged_sees_a_rewrite_in_place_and_a_truncation() {
        use std::os::unix::fs::FileExt;
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let f = file_with(&bytes);
        let head = crc32fast::hash(&bytes[..1000]);
        let whole = crc32fast::hash(&bytes);
        assert!(bytes_unchanged(&f, (0, 0), bytes.len() as u64, whole).unwrap());
        // Continuing a crc from the middle, as a catch-up does.
        assert!(bytes_unchanged(&f, (1000, head), bytes.len() as u64, whole).unwrap());
        // One byte rewritten in place, past the first 64 KiB read.
        f.write_at(&[bytes[150_000] ^ 1], 150_000).unwrap();
        assert!(!bytes_unchanged(&f, (0, 0), bytes.len() as u64, whole).unwrap());
        f.write_at(&bytes[150_000..150_001], 150_000).unwrap();
        assert!(bytes_unchanged(&f, (0, 0), bytes.len() as u64, whole).unwrap());
        // Shorter than the bytes that were read.
        f.set_len(100_000).unwrap();
        assert!(!bytes_unchanged(&f, (0, 0), bytes.len() as u64, whole).unwrap());
    }

    /// (offset, bytes or None when too long) of each line, the end, and the crc.
    type Scanned = (Vec<(u64, Option<Vec<u8>>)>, u64, u32);

    fn collect(file: &File, max_line: usize) -> Scanned {
        let mut scanner = LineScanner::new(file, 0, u64::MAX, max_line, 0);
        let mut out = Vec::new();
        while let Some(line) = scanner.next_line().unwrap() {
            out.push(match line {
                Line::Complete { offset, bytes } => (offset, Some(bytes.to_vec())),
                Line::TooLong { offset, .. } => (offset, None),
            });
        }
        let end = scanner.end();
        (out, end, scanner.crc())
    }

    #[test]
    fn torn_tail_is_never_returned() {
        let f = file_with(b"a\nbb\ncc");
        let (lines, end, crc) = collect(&f, 100);
        assert_eq!(
            lines,
            vec![(0, Some(b"a".to_vec())), (2, Some(b"bb".to_vec()))]
        );
        assert_eq!(end, 5);
        assert_eq!(crc, crc32fast::hash(b"a\nbb\n"));
    }

    #[test]
    fn lines_longer_than_the_buffer_are_whole() {
        let long = vec![b'x'; 3 * CHUNK + 17];
        let mut bytes = long.clone();
        bytes.extend_from_slice(b"\nz\n");
        let f = file_with(&bytes);
        let (lines, end, crc) = collect(&f, DEFAULT_MAX_LINE);
        assert_eq!(lines[0], (0, Some(long)));
        assert_eq!(lines[1].0, 3 * CHUNK as u64 + 18);
        assert_eq!(end, bytes.len() as u64);
        assert_eq!(crc, crc32fast::hash(&bytes));
    }

    #[test]
    fn too_long_lines_are_skipped_but_hashed() {
        let mut bytes = b"ok\n".to_vec();
        bytes.extend(vec![b'y'; 10_000]);
        bytes.extend_from_slice(b"\nafter\n");
        let f = file_with(&bytes);
        let (lines, end, crc) = collect(&f, 100);
        assert_eq!(
            lines,
            vec![
                (0, Some(b"ok".to_vec())),
                (3, None),
                (10_004, Some(b"after".to_vec()))
            ]
        );
        assert_eq!(end, bytes.len() as u64);
        assert_eq!(crc, crc32fast::hash(&bytes));
    }

    #[test]
    fn torn_too_long_tail_leaves_end_at_last_line() {
        let mut bytes = b"ok\n".to_vec();
        bytes.extend(vec![b'y'; 600_000]);
        let f = file_with(&bytes);
        let (lines, end, crc) = collect(&f, 100);
        assert_eq!(lines, vec![(0, Some(b"ok".to_vec()))]);
        assert_eq!(end, 3);
        assert_eq!(crc, crc32fast::hash(b"ok\n"));
    }

    /// What [`collect`] gives, read run by run with at most `max_bytes` per run; with
    /// `read_ahead`, the bytes after each run are read ahead and adopted, as a build's helper
    /// does.
    fn collect_runs(
        file: &File,
        limit: u64,
        (max_line, buffer, max_bytes): (usize, usize, usize),
        read_ahead: bool,
    ) -> Scanned {
        let mut scanner = LineScanner::with_buffer(file, 0, limit, max_line, 0, buffer);
        let mut out = Vec::new();
        let mut spare = Vec::new();
        while let Some(found) = scanner.advance_run(max_bytes).unwrap() {
            let ahead = read_ahead.then(|| scanner.read_ahead(&mut spare)).flatten();
            match scanner.run(found) {
                Run::Lines {
                    offset,
                    bytes,
                    ends,
                } => {
                    assert!(!ends.is_empty());
                    assert_eq!(ends.last(), Some(&bytes.len()));
                    let mut start = 0;
                    for &end in ends {
                        assert_eq!(bytes[end - 1], b'\n');
                        // A run stops at the first line that reaches `max_bytes`.
                        assert!(start < max_bytes.max(1));
                        out.push((offset + start as u64, Some(bytes[start..end - 1].to_vec())));
                        start = end;
                    }
                }
                Run::TooLong { offset, .. } => out.push((offset, None)),
            }
            if let Some(ahead) = ahead {
                spare = scanner.adopt(ahead);
            }
        }
        let end = scanner.end();
        (out, end, scanner.crc())
    }

    #[test]
    fn an_unhashed_scanner_returns_the_same_lines_and_its_crc_stays_as_given() {
        let mut bytes = Vec::new();
        for i in 0..300 {
            bytes.extend(vec![b'a' + u8::try_from(i % 26).unwrap(); (i * 53) % 700]);
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(b"torn");
        let f = file_with(&bytes);
        let lines = |scanner: &mut LineScanner<'_>| {
            let mut out = Vec::new();
            while let Some(line) = scanner.next_line().unwrap() {
                out.push(match line {
                    Line::Complete { offset, bytes } => (offset, Some(bytes.to_vec())),
                    Line::TooLong { offset, len } => (offset, Some(len.to_le_bytes().to_vec())),
                });
            }
            out
        };
        let mut hashed = LineScanner::with_buffer(&f, 0, u64::MAX, 500, 7, 4096);
        let mut unhashed = LineScanner::with_buffer(&f, 0, u64::MAX, 500, 7, 4096).unhashed();
        assert_eq!(lines(&mut unhashed), lines(&mut hashed));
        assert_eq!(unhashed.end(), hashed.end());
        assert_ne!(hashed.crc(), 7);
        assert_eq!(unhashed.crc(), 7);
    }

    #[test]
    fn runs_hold_the_same_lines_as_next_line() {
        let mut bytes = Vec::new();
        for i in 0..500 {
            bytes.extend(vec![b'a' + u8::try_from(i % 26).unwrap(); (i * 37) % 300]);
            bytes.push(b'\n');
            if i % 97 == 0 {
                bytes.extend(vec![b'y'; 5000]);
                bytes.push(b'\n');
            }
        }
        bytes.extend_from_slice(b"torn");
        let f = file_with(&bytes);
        for max_line in [100, 400, 10_000] {
            let expected = collect(&f, max_line);
            for (buffer, max_bytes) in [(4096, 1), (4096, 700), (8192, usize::MAX), (1 << 20, 5000)]
            {
                for read_ahead in [false, true] {
                    assert_eq!(
                        collect_runs(&f, u64::MAX, (max_line, buffer, max_bytes), read_ahead),
                        expected,
                        "max_line {max_line}, buffer {buffer}, max_bytes {max_bytes}, read ahead {read_ahead}"
                    );
                }
            }
            // A limit inside a line: neither way reads past it.
            let limit = 20_011;
            let mut first = LineScanner::new(&f, 0, limit, max_line, 0);
            let mut expected = Vec::new();
            while let Some(line) = first.next_line().unwrap() {
                expected.push(match line {
                    Line::Complete { offset, bytes } => (offset, Some(bytes.to_vec())),
                    Line::TooLong { offset, .. } => (offset, None),
                });
            }
            let expected = (expected, first.end(), first.crc());
            for read_ahead in [false, true] {
                let got = collect_runs(&f, limit, (max_line, 4096, 300), read_ahead);
                assert_eq!(got, expected, "limit, read ahead {read_ahead}");
            }
        }
        // A torn too-long tail after the runs.
        let mut torn = b"ok\n".to_vec();
        torn.extend(vec![b'y'; 600_000]);
        let f = file_with(&torn);
        for read_ahead in [false, true] {
            let got = collect_runs(&f, u64::MAX, (100, 4096, 10), read_ahead);
            assert_eq!(got, collect(&f, 100));
        }
    }

    #[test]
    fn a_read_ahead_of_an_earlier_state_is_ignored_and_later_bytes_are_still_read() {
        let f = file_with(b"a\nbb\nccc\n");
        let mut appender = f.try_clone().unwrap();
        let mut scanner = LineScanner::with_buffer(&f, 0, u64::MAX, 100, 0, 4096);
        let first = scanner.advance_run(1).unwrap();
        assert_eq!(first, Some(FoundRun::Lines { start: 0, end: 2 }));
        let stale = scanner.read_ahead(&mut Vec::new());
        // Nothing past the buffer yet: the whole file is in it.
        assert!(stale.is_none());
        appender.write_all(b"dddd\n").unwrap();
        let ahead = scanner
            .read_ahead(&mut Vec::new())
            .expect("the appended line");
        assert!(scanner.advance_run(1).unwrap().is_some());
        // The scanner moved on: the read-ahead no longer fits and is handed back.
        let handed_back = scanner.adopt(ahead);
        assert!(!handed_back.is_empty());
        let mut rest = Vec::new();
        while let Some(found) = scanner.advance_run(usize::MAX).unwrap() {
            if let Run::Lines { offset, bytes, .. } = scanner.run(found) {
                rest.push((offset, bytes.to_vec()));
            }
        }
        let expected = vec![(5, b"ccc\n".to_vec()), (9, b"dddd\n".to_vec())];
        assert_eq!(rest, expected);
        assert_eq!(scanner.end(), 14);
        assert_eq!(scanner.crc(), crc32fast::hash(b"a\nbb\nccc\ndddd\n"));
    }

    #[test]
    fn limit_stops_the_scan_and_crc_continues() {
        let f = file_with(b"a\nb\nc\n");
        let mut first = LineScanner::new(&f, 0, 4, 100, 0);
        while first.next_line().unwrap().is_some() {}
        assert_eq!(first.end(), 4);
        let crc = first.crc();
        let mut rest = LineScanner::new(&f, 4, u64::MAX, 100, crc);
        while rest.next_line().unwrap().is_some() {}
        assert_eq!(rest.crc(), crc32fast::hash(b"a\nb\nc\n"));
    }
}
