//! The snapshot's file: a header (magic, version, payload length and crc) and the payload,
//! read back only when whole, ours and well formed, and written under a temporary name then
//! renamed.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{SEVERAL, Snapshot};
use crate::transcript::cache::{ensure_private_dir, open_private_file};
use crate::transcript::fold::UNKNOWN_MODEL;

/// The first bytes of a snapshot file.
const MAGIC: &[u8; 8] = b"AGLUSNAP";
/// The snapshot layout; another one is rebuilt.
const VERSION: u32 = 5;
/// Magic, version, payload length, payload crc.
const HEADER: usize = 8 + 4 + 8 + 4;

/// The snapshot in `path`, if it is whole, ours, of this request and holds together.
pub(super) fn read_snapshot(path: &Path, request: &[u8]) -> Result<Snapshot, String> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("no snapshot yet".to_owned());
        }
        Err(e) => return Err(format!("cannot read the snapshot: {e}")),
    };
    let snapshot = decode(&bytes)?;
    if snapshot.request != request {
        return Err("the snapshot is of another request".to_owned());
    }
    Ok(snapshot)
}

/// Decodes a snapshot file's bytes, checking its header, its checksum and its shape.
pub(super) fn decode(bytes: &[u8]) -> Result<Snapshot, String> {
    let damaged = |what: &str| Err(format!("the snapshot is damaged: {what}"));
    let (Some(magic), Some(version), Some(len), Some(crc), Some(payload)) = (
        bytes.get(0..8),
        bytes.get(8..12),
        bytes.get(12..20),
        bytes.get(20..24),
        bytes.get(HEADER..),
    ) else {
        return damaged("shorter than its header");
    };
    if magic != MAGIC {
        return damaged("not a snapshot");
    }
    let version = u32::from_le_bytes(version.try_into().unwrap_or_default());
    if version != VERSION {
        return Err(format!("the snapshot's layout {version} is not {VERSION}"));
    }
    let len = u64::from_le_bytes(len.try_into().unwrap_or_default());
    if len != payload.len() as u64 {
        return damaged("its length");
    }
    if crc32fast::hash(payload) != u32::from_le_bytes(crc.try_into().unwrap_or_default()) {
        return damaged("its checksum");
    }
    let snapshot: Snapshot = match postcard::from_bytes(payload) {
        Ok(s) => s,
        Err(e) => return damaged(&e.to_string()),
    };
    if !well_formed(&snapshot) {
        return damaged("it does not hold together");
    }
    Ok(snapshot)
}

/// The order files are listed in: [`Path`]'s, component by component, as the discovery sorts
/// them (not the bytes': `a/b.jsonl` sorts after `a/b/c.jsonl`, a subagent's file after its
/// session's folder).
pub(super) fn path_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    let path = |p: &[u8]| Path::new(std::ffi::OsStr::from_bytes(p)).to_path_buf();
    path(a).cmp(&path(b))
}

/// Whether a decoded snapshot holds together: files and skipped files sorted and apart, keys
/// sorted and each filed under a file that exists, coverages and model numbers in range.
fn well_formed(s: &Snapshot) -> bool {
    let n = s.files.len();
    let models = s.models.len();
    let model_ok = |m: u32| m == UNKNOWN_MODEL || (m as usize) < models;
    let files_sorted = s.files.windows(2).all(|w| match w {
        [a, b] => path_order(&a.path, &b.path).is_lt(),
        _ => true,
    });
    let skipped_sorted = s.skipped.windows(2).all(|w| match w {
        [a, b] => path_order(a, b).is_lt(),
        _ => true,
    });
    let apart = s.skipped.iter().all(|p| {
        s.files
            .binary_search_by(|f| path_order(&f.path, p))
            .is_err()
    });
    let keys_sorted = s.keys.windows(2).all(|w| match w {
        [a, b] => a.0 < b.0,
        _ => true,
    });
    let holders = s
        .keys
        .iter()
        .all(|&(_, h)| h == SEVERAL || (h as usize) < n);
    let entries = s.files.iter().all(|f| {
        f.coverage.is_well_formed()
            && f.own.iter().all(|((_, m), _)| model_ok(*m))
            && f.correction.iter().all(|((_, m), _)| model_ok(*m))
    });
    files_sorted && skipped_sorted && apart && keys_sorted && holders && entries
}

pub(super) fn encode(snapshot: &Snapshot) -> Result<Vec<u8>, String> {
    let payload = postcard::to_stdvec(snapshot).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Writes the snapshot under a temporary name (mode 0600), then renames it over `path`: a
/// reader sees the old file or the new one, and a torn one fails its checksum.
pub(super) fn write_snapshot(dir: &Path, path: &Path, snapshot: &Snapshot) -> std::io::Result<()> {
    let bytes = encode(snapshot).map_err(std::io::Error::other)?;
    ensure_private_dir(dir)?;
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    let _ = std::fs::remove_file(&temp);
    let written = (|| {
        let mut file = open_private_file(&temp)?;
        file.set_len(0)?;
        file.write_all(&bytes)?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
