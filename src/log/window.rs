//! Window checksums: how an index recognises "its" log in time independent of the log's size.
//!
//! The index remembers the crc32 of the log's first bytes (the head window) and of the bytes
//! just before its watermark (the tail window). If either differs, the log was replaced or
//! rewritten. Growth alone proves nothing: a log truncated and rewritten longer is caught by
//! the tail window.

use std::cell::RefCell;
use std::fs::File;
use std::io;

use serde::{Deserialize, Serialize};

use super::lines::read_exact_at;

/// The size of the head and tail windows: 64 KiB.
pub const WINDOW_BYTES: u64 = 64 << 10;

/// The crc32 of the byte range `[start, start + len)` of a log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowSum {
    /// First byte of the window.
    pub start: u64,
    /// Length of the window.
    pub len: u64,
    /// crc32 of the window's bytes.
    pub crc: u32,
}

impl WindowSum {
    /// The head window of a log whose first `end` bytes are indexed.
    pub fn head(file: &File, end: u64) -> io::Result<Option<WindowSum>> {
        WindowSum::of(file, 0, end.min(WINDOW_BYTES))
    }

    /// The tail window ending at `end`.
    pub fn tail(file: &File, end: u64) -> io::Result<Option<WindowSum>> {
        let len = end.min(WINDOW_BYTES);
        WindowSum::of(file, end - len, len)
    }

    /// Checksums `[start, start + len)`; `None` if the file is shorter than that. Reads in
    /// fixed-size chunks, so any `len` is safe.
    pub fn of(file: &File, start: u64, len: u64) -> io::Result<Option<WindowSum>> {
        let Some(end) = start.checked_add(len) else {
            return Ok(None);
        };
        let mut hasher = crc32fast::Hasher::new();
        let whole = read_chunks(file, start, end, |chunk| hasher.update(chunk))?;
        Ok(whole.then(|| WindowSum {
            start,
            len,
            crc: hasher.finalize(),
        }))
    }

    /// Whether `file` still holds the same bytes in this window.
    pub fn matches(&self, file: &File) -> io::Result<bool> {
        Ok(WindowSum::of(file, self.start, self.len)?.as_ref() == Some(self))
    }
}

/// Reads `file`'s bytes `[start, end)` a window-sized chunk at a time, giving each to `each`;
/// `Ok(false)` if the file is shorter than `end`.
pub(crate) fn read_chunks(
    file: &File,
    start: u64,
    end: u64,
    mut each: impl FnMut(&[u8]),
) -> io::Result<bool> {
    with_buffer(|buf| {
        let mut at = start;
        while at < end {
            let n = usize::try_from((end - at).min(WINDOW_BYTES)).unwrap_or(0);
            let Some(chunk) = buf.get_mut(..n) else {
                return Ok(false);
            };
            if !read_exact_at(file, chunk, at)? {
                return Ok(false);
            }
            each(chunk);
            at += n as u64;
        }
        Ok(true)
    })
}

thread_local! {
    /// One window-sized read buffer per thread: zeroing a fresh 64 KiB buffer for each window
    /// was most of the instructions of a warm status call.
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on a zeroed-once buffer of [`WINDOW_BYTES`] bytes (a fresh one if this thread's
/// is in use).
fn with_buffer<T>(f: impl FnOnce(&mut [u8]) -> T) -> T {
    let size = usize::try_from(WINDOW_BYTES).unwrap_or(usize::MAX);
    BUFFER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < size {
                buf.resize(size, 0);
            }
            f(&mut buf)
        }
        Err(_) => f(&mut vec![0; size]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn windows_detect_changed_bytes_and_short_files() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"hello\nworld\n").unwrap();
        let tail = WindowSum::tail(&f, 12).unwrap().unwrap();
        assert_eq!((tail.start, tail.len), (0, 12));
        assert!(tail.matches(&f).unwrap());
        f.set_len(6).unwrap();
        assert!(!tail.matches(&f).unwrap());
        f.write_all(b"w0rld\n").unwrap();
        assert!(!tail.matches(&f).unwrap());
    }
}
