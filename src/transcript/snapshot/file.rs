//! The snapshot's file ([`Kind`]: header, checksum, postcard payload), read back only when
//! whole, ours, of this request and well formed.

use std::path::Path;

use super::{SEVERAL, Snapshot};
use crate::transcript::checked_file::Kind;
use crate::transcript::fold::UNKNOWN_MODEL;
use crate::transcript::path_order;

/// The snapshot file: `AGLUSNAP`, layout 5 (another one is rebuilt).
const SNAPSHOT: Kind = Kind {
    name: "the snapshot",
    magic: b"AGLUSNAP",
    version: 5,
};

/// The snapshot in `path`, if it is whole, ours, of this request and holds together.
pub(super) fn read_snapshot(path: &Path, request: &[u8]) -> Result<Snapshot, String> {
    let snapshot = SNAPSHOT.read(path).and_then(checked)?;
    if snapshot.request != request {
        return Err("the snapshot is of another request".to_owned());
    }
    Ok(snapshot)
}

/// Decodes a snapshot file's bytes, checking its header, its checksum and its shape.
#[cfg(test)]
pub(super) fn decode(bytes: &[u8]) -> Result<Snapshot, String> {
    SNAPSHOT.decode(bytes).and_then(checked)
}

/// The snapshot if it holds together.
fn checked(snapshot: Snapshot) -> Result<Snapshot, String> {
    if well_formed(&snapshot) {
        Ok(snapshot)
    } else {
        Err("the snapshot is damaged: it does not hold together".to_owned())
    }
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

/// A snapshot file's bytes.
#[cfg(test)]
pub(super) fn encode(snapshot: &Snapshot) -> Result<Vec<u8>, String> {
    SNAPSHOT.encode(snapshot)
}

/// Writes the snapshot under a temporary name, then renames it over `path`.
pub(super) fn write_snapshot(dir: &Path, path: &Path, snapshot: &Snapshot) -> std::io::Result<()> {
    SNAPSHOT.write(dir, path, snapshot)
}
