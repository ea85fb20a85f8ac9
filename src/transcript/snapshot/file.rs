//! The snapshot's files ([`Kind`]: header, checksum, payload), read back only when whole,
//! ours, of this request and well formed: the snapshot (postcard), and beside it its merge
//! keys, which only a run that catches a grown file up reads (a warm run that finds nothing
//! grown reads a third of the bytes).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{SEVERAL, Snapshot};
use crate::transcript::checked_file::Kind;
use crate::transcript::fold::UNKNOWN_MODEL;
use crate::transcript::path_order;

/// The snapshot file: `AGLUSNAP`, layout 6 (another one is rebuilt).
const SNAPSHOT: Kind = Kind {
    name: "the snapshot",
    magic: b"AGLUSNAP",
    version: 6,
};

/// The keys file: `AGLUKEYS`, layout 1; its payload is one 12-byte record per key (the hash,
/// then the holder, little-endian), sorted by hash.
const KEYS: Kind = Kind {
    name: "the snapshot's keys",
    magic: b"AGLUKEYS",
    version: 1,
};
const KEY_RECORD: usize = 12;

/// What a snapshot records of the keys file written with it: a keys file with another count
/// or checksum is not its own (a run stopped between the two writes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct KeysSeal {
    count: u64,
    crc: u32,
}

/// The keys file of the snapshot in `path`.
pub(super) fn keys_file(path: &Path) -> PathBuf {
    path.with_extension("keys")
}

/// The payload of a keys file, and its seal.
fn encode_keys(keys: &[(u64, u32)]) -> (Vec<u8>, KeysSeal) {
    let mut payload = Vec::with_capacity(keys.len() * KEY_RECORD);
    for (hash, holder) in keys {
        payload.extend_from_slice(&hash.to_le_bytes());
        payload.extend_from_slice(&holder.to_le_bytes());
    }
    let seal = KeysSeal {
        count: keys.len() as u64,
        crc: crc32fast::hash(&payload),
    };
    (payload, seal)
}

/// The keys of the snapshot sealed with `seal` over `files` files, read from `path`, if the
/// file is whole, the snapshot's own, sorted, and each key filed under a file that exists.
pub(super) fn read_keys(
    path: &Path,
    seal: KeysSeal,
    files: usize,
) -> Result<Vec<(u64, u32)>, String> {
    let bytes = KEYS.read_bytes(path)?;
    decode_keys(&bytes, seal, files)
}

/// [`read_keys`] of a keys file's bytes.
pub(super) fn decode_keys(
    bytes: &[u8],
    seal: KeysSeal,
    files: usize,
) -> Result<Vec<(u64, u32)>, String> {
    let payload = KEYS.decode_raw(bytes)?;
    if payload.len() as u64 != seal.count.saturating_mul(KEY_RECORD as u64)
        || crc32fast::hash(payload) != seal.crc
    {
        return Err("the snapshot's keys are another snapshot's".to_owned());
    }
    let keys: Vec<(u64, u32)> = payload
        .chunks_exact(KEY_RECORD)
        .map(|r| {
            let (hash, holder) = r.split_at(8);
            (
                u64::from_le_bytes(hash.try_into().unwrap_or_default()),
                u32::from_le_bytes(holder.try_into().unwrap_or_default()),
            )
        })
        .collect();
    let sorted = keys.windows(2).all(|w| match w {
        [a, b] => a.0 < b.0,
        _ => true,
    });
    let held = keys
        .iter()
        .all(|&(_, h)| h == SEVERAL || (h as usize) < files);
    if sorted && held {
        Ok(keys)
    } else {
        Err("the snapshot's keys are damaged: they do not hold together".to_owned())
    }
}

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

/// Whether a decoded snapshot holds together: files and skipped files sorted and apart,
/// coverages and model numbers in range (its keys are checked when they are read).
fn well_formed(s: &Snapshot) -> bool {
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
    let entries = s.files.iter().all(|f| {
        f.coverage.is_well_formed()
            && f.own.iter().all(|((_, m), _)| model_ok(*m))
            && f.correction.iter().all(|((_, m), _)| model_ok(*m))
    });
    files_sorted && skipped_sorted && apart && entries
}

/// A snapshot file's bytes.
#[cfg(test)]
pub(super) fn encode(snapshot: &Snapshot) -> Result<Vec<u8>, String> {
    SNAPSHOT.encode(snapshot)
}

/// Writes the snapshot under a temporary name, then renames it over `path`; with `keys`, the
/// keys file first, and the snapshot sealed with it.
pub(super) fn write_snapshot(
    dir: &Path,
    path: &Path,
    snapshot: &mut Snapshot,
    keys: Option<&[(u64, u32)]>,
) -> std::io::Result<()> {
    if let Some(keys) = keys {
        let (payload, seal) = encode_keys(keys);
        KEYS.write_raw(dir, &keys_file(path), &payload)?;
        snapshot.keys = seal;
    }
    SNAPSHOT.write(dir, path, snapshot)
}

/// A keys file's bytes and the seal of its keys.
#[cfg(test)]
pub(super) fn encode_keys_file(keys: &[(u64, u32)]) -> (Vec<u8>, KeysSeal) {
    let (payload, seal) = encode_keys(keys);
    (KEYS.encode_raw(&payload), seal)
}
