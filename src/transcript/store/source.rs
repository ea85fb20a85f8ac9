//! The transcript being read: opened read-only, its canonical path, its length when checked,
//! its format.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::log::{LogError, open_for_read_inspected, read_exact_at};
use crate::transcript::error::TranscriptError;
use crate::transcript::format::Format;
use crate::transcript::readers::detect_format;
use crate::transcript::stat::Stat;

/// How much of a transcript's start format detection reads first, and at most.
const DETECT_FIRST: u64 = 64 << 10;
const DETECT_BYTES: u64 = 1 << 20;

/// A transcript opened for reading.
pub(crate) struct Source {
    /// The canonical path (symlinks resolved): the index is keyed by it.
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    /// The length when it was opened: a fold never reads past it.
    pub(crate) len: u64,
    pub(crate) format: Format,
    /// Its `stat` when it was opened, before anything was read.
    pub(crate) opened: Stat,
}

impl Source {
    /// Opens `path`, and detects its format unless one is given.
    pub(crate) fn open(path: &Path, format: Option<Format>) -> Result<Source, TranscriptError> {
        let (canonical, file, opened) = open_read_only(path)?;
        let len = opened.len;
        let mut format = format;
        let mut complete = false;
        for window in [DETECT_FIRST, DETECT_BYTES] {
            let head = read_head(&file, len.min(window))
                .map_err(|e| TranscriptError::io("read", &canonical, e))?;
            let lines = || {
                head.split_inclusive(|&b| b == b'\n')
                    .filter_map(|line| line.strip_suffix(b"\n"))
            };
            complete = memchr::memchr(b'\n', &head).is_some();
            if format.is_none() {
                format = detect_format(lines());
            }
            if (complete && format.is_some()) || len <= window {
                break;
            }
        }
        if !complete && len <= DETECT_BYTES {
            return Err(TranscriptError::Empty { path: canonical });
        }
        let format = format.ok_or_else(|| TranscriptError::UnknownFormat {
            path: canonical.clone(),
        })?;
        Ok(Source {
            path: canonical,
            file,
            len,
            format,
            opened,
        })
    }

    /// Opens `path` as a document of `format`: read whole, so nothing is detected from lines.
    pub(crate) fn document(path: &Path, format: Format) -> Result<Source, TranscriptError> {
        let (path, file, opened) = open_read_only(path)?;
        Ok(Source {
            path,
            file,
            len: opened.len,
            format,
            opened,
        })
    }

    /// The canonical path as bytes, as the index stores it.
    pub(crate) fn path_bytes(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        self.path.as_os_str().as_bytes().to_vec()
    }
}

/// The canonical path, the file opened read-only, and its `stat` (its length with it).
fn open_read_only(path: &Path) -> Result<(PathBuf, File, Stat), TranscriptError> {
    // Taken before the file's stat, and so before it is read: a change after it changes mtime
    // or ctime.
    let taken = std::time::SystemTime::now();
    let (file, meta) = open_for_read_inspected(path).map_err(|e| match e {
        LogError::NotFound { path } => TranscriptError::NotFound { path },
        LogError::NotAFile { path, kind } => TranscriptError::NotAFile { path, kind },
        LogError::Io { op, path, source } => TranscriptError::Io { op, path, source },
        other => TranscriptError::io("open", path, io::Error::other(other.to_string())),
    })?;
    let canonical = match opened_path(&file) {
        Some(canonical) => canonical,
        None => std::fs::canonicalize(path).map_err(|e| TranscriptError::at("resolve", path, e))?,
    };
    Ok((canonical, file, Stat::of(&meta, taken)))
}

/// The canonical path of an open file, as the kernel names it (`/proc/self/fd/N` on Linux):
/// one `readlink` where resolving the path walks it again with one per component (a large
/// part of reading thousands of small transcripts). `None` where there is no such link, or
/// the file was unlinked since (its link then ends in " (deleted)").
fn opened_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let link = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    let named = link.is_absolute() && !link.as_os_str().as_bytes().ends_with(b" (deleted)");
    named.then_some(link)
}

fn read_head(file: &File, len: u64) -> io::Result<Vec<u8>> {
    let mut head = vec![0; usize::try_from(len).unwrap_or(0)];
    if !read_exact_at(file, &mut head, 0)? {
        // Shorter than it was a moment ago: detect from what there is.
        head.clear();
    }
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opened_path_is_the_canonical_one_through_links_and_dots() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("s.jsonl"), b"{}\n").unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let through = dir.path().join("link/../link/./s.jsonl");
        let (path, _, stat) = open_read_only(&through).unwrap();
        assert_eq!(path, std::fs::canonicalize(&through).unwrap());
        assert_eq!(stat.len, 3);
        // An unlinked file is not named by its link: the caller resolves the path instead.
        let file = File::open(real.join("s.jsonl")).unwrap();
        assert_eq!(
            opened_path(&file),
            Some(std::fs::canonicalize(real.join("s.jsonl")).unwrap())
        );
        std::fs::remove_file(real.join("s.jsonl")).unwrap();
        assert_eq!(opened_path(&file), None);
        assert!(matches!(
            open_read_only(&through),
            Err(TranscriptError::NotFound { .. })
        ));
    }
}
