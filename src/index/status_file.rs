//! The status file: a checksummed copy of the index's meta record beside the index
//! (`<stem>.index.status`), so that the index tier's answer for a log the index covers exactly
//! costs one open and one read, with no lock and no redb (docs/FORMAT.md, "The status file").
//!
//! It is derived like the index and trusted no more: it is used only when it is whole, of this
//! layout, index format and parser, built with the same profile and line limit, and the log
//! passes the meta record's own checks (head and tail windows) and is exactly as long as its
//! watermark. Anything else, or no file, falls through to the index, whose next commit writes
//! the file again.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::IndexOptions;
use super::derived::validate::SourceCheck;
use super::schema::{FORMAT_VERSION, Meta};
use super::validate::{self, Expected};
use crate::event::FoldState;
use crate::log::LogPaths;

/// The first bytes of a status file.
pub const MAGIC: &[u8; 8] = b"AGLSTATS";
/// The layout of the file (header and body); a file of another layout is not used.
pub const STATUS_VERSION: u32 = 1;
/// Magic, layout version, body length (u32 LE), body crc32 (u32 LE).
pub const HEADER_BYTES: usize = 8 + 4 + 4 + 4;
/// The largest status file read or written: a hostile file cannot make a reader allocate more.
pub const MAX_STATUS_BYTES: usize = 64 << 10;

/// The body: postcard of the index format the meta record belongs to, and the record itself.
#[derive(Serialize, Deserialize)]
struct Body {
    index_format: u32,
    meta: Meta,
}

/// Why a status file's bytes are not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Shorter than its header, or than the body its header announces.
    Short,
    /// Longer than [`MAX_STATUS_BYTES`], or than the body its header announces.
    TooLong,
    /// Not a status file.
    Magic,
    /// Another layout ([`STATUS_VERSION`]).
    Layout(u32),
    /// The body fails its checksum.
    Checksum,
    /// The body does not decode.
    Encoding,
    /// The meta record of another index format.
    IndexFormat(u32),
}

/// The status file of the index at `index`: the same name with the extension `status`.
pub fn status_path(index: &Path) -> PathBuf {
    index.with_extension("status")
}

/// The file's bytes for `meta`; `None` if they would exceed [`MAX_STATUS_BYTES`] (a boundary
/// with a huge initiator, say): such a log is answered by the index.
pub fn encode(meta: &Meta) -> Option<Vec<u8>> {
    let body = postcard::to_stdvec(&Body {
        index_format: FORMAT_VERSION,
        meta: meta.clone(),
    })
    .ok()?;
    let len = u32::try_from(body.len()).ok()?;
    if HEADER_BYTES + body.len() > MAX_STATUS_BYTES {
        return None;
    }
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&STATUS_VERSION.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&body);
    Some(out)
}

/// The meta record in a status file's bytes, if they are whole and of this layout and index
/// format. The record still has to be validated against the log.
///
/// # Errors
///
/// Why the bytes are not used.
pub fn decode(bytes: &[u8]) -> Result<Meta, Refused> {
    if bytes.len() > MAX_STATUS_BYTES {
        return Err(Refused::TooLong);
    }
    let (Some(magic), Some(version), Some(len), Some(crc), Some(body)) = (
        bytes.get(0..8),
        bytes.get(8..12).and_then(le_u32),
        bytes.get(12..16).and_then(le_u32),
        bytes.get(16..20).and_then(le_u32),
        bytes.get(HEADER_BYTES..),
    ) else {
        return Err(Refused::Short);
    };
    if magic != MAGIC {
        return Err(Refused::Magic);
    }
    if version != STATUS_VERSION {
        return Err(Refused::Layout(version));
    }
    let announced = usize::try_from(len).map_err(|_| Refused::TooLong)?;
    if body.len() < announced {
        return Err(Refused::Short);
    }
    if body.len() > announced {
        return Err(Refused::TooLong);
    }
    if crc32fast::hash(body) != crc {
        return Err(Refused::Checksum);
    }
    let decoded: Body = match postcard::take_from_bytes(body) {
        // Trailing bytes under a right checksum are not ours either.
        Ok((decoded, [])) => decoded,
        _ => return Err(Refused::Encoding),
    };
    if decoded.index_format != FORMAT_VERSION {
        return Err(Refused::IndexFormat(decoded.index_format));
    }
    Ok(decoded.meta)
}

fn le_u32(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// What the status file answers for a log its index covers exactly.
pub(crate) struct StatusAnswer {
    /// The fold at the watermark, which is the log's length.
    pub(crate) state: FoldState,
    /// The log bytes validation read: the two windows, as the index's fresh open counts them.
    pub(crate) bytes_read: u64,
}

/// The fold of the log at `paths` from its status file, if the file can be used and the log
/// passes the same checks the index's meta record would, and its length is the watermark.
/// `None` in every other case (the index answers then); never an error.
pub(crate) fn answer(paths: &LogPaths, options: &IndexOptions) -> Option<StatusAnswer> {
    // A read-only open and injected faults change what the index path reports or does.
    if options.read_only || options.faults().is_some() {
        return None;
    }
    let meta = read(&status_path(&paths.index))?;
    let log = open_regular(&paths.log)?;
    match validate::check(&meta, &Expected::of(options), &log) {
        Ok(SourceCheck::Current) => {}
        Ok(SourceCheck::Grew { .. } | SourceCheck::Changed(_)) | Err(_) => return None,
    }
    Some(StatusAnswer {
        bytes_read: meta.head.len + meta.tail.len,
        state: meta.fold,
    })
}

/// The meta record in the status file at `path`, if there is one that decodes.
fn read(path: &Path) -> Option<Meta> {
    let mut file = open_regular(path)?;
    let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
    if len > MAX_STATUS_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(len);
    // The file is only ever replaced by a rename, so the open one keeps the size just read.
    (&mut file).take(len as u64).read_to_end(&mut bytes).ok()?;
    match decode(&bytes) {
        Ok(meta) => Some(meta),
        Err(why) => {
            tracing::debug!(status = %path.display(), ?why, "status file not used");
            None
        }
    }
}

/// Opens a regular file for reading; never blocks on a FIFO planted at the path.
fn open_regular(path: &Path) -> Option<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// Writes the status file of the index at `index` for its commit `meta`, under a temporary
/// name in the same folder then renamed over the old one. The caller logs a failure and goes
/// on: a stale or missing file is simply not used.
pub(crate) fn write(index: &Path, meta: &Meta) -> std::io::Result<()> {
    // Temporary names differ between processes and between threads of one process.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let path = status_path(index);
    let Some(bytes) = encode(meta) else {
        tracing::debug!(status = %path.display(), "status too large for its file; removed");
        remove(index);
        return Ok(());
    };
    // No fsync: the file is derived, and a torn or lost one fails its checks and is not used.
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let temp = PathBuf::from(temp);
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(&bytes)?;
        drop(file);
        std::fs::rename(&temp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Removes the status file of the index at `index`, if any (the index is being replaced).
pub(crate) fn remove(index: &Path) {
    match std::fs::remove_file(status_path(index)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(index = %index.display(), error = %e, "cannot remove the status file");
        }
    }
}

#[cfg(test)]
mod tests;
