//! `agentlog archive --verify`: every record and every frame read and checked, the index's
//! damaged stretches and the frames nothing names reported.

use std::path::PathBuf;

use serde::Serialize;

use super::error::ArchiveError;
use super::files::FRAMES_HEADER;
use super::reader::{Archive, ArchiveDamage, path_of};

/// A stretch of the index file holding no valid record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct IndexDamage {
    /// Where it starts in the index file.
    pub offset: u64,
    /// Its length.
    pub len: u64,
}

/// What verifying found: `agentlog archive --verify --json` prints it.
#[derive(Debug, Serialize)]
pub struct ArchiveVerification {
    /// The archive directory.
    pub archive: PathBuf,
    /// Whether everything checked: no damaged record, frame or missing range.
    pub ok: bool,
    /// Sources.
    pub sources: u64,
    /// Versions.
    pub versions: u64,
    /// Valid records (one per frame).
    pub records: u64,
    /// Bytes the good frames hold.
    pub bytes: u64,
    /// Damaged stretches of the index.
    pub damaged_records: Vec<IndexDamage>,
    /// Frames that cannot be read back, and ranges no record holds.
    pub damaged_frames: Vec<ArchiveDamage>,
    /// Bytes an interrupted run left at the end of the index (the next run removes them).
    pub torn_index_bytes: u64,
    /// Bytes of the frames file that no record names: an interrupted run's (the next run
    /// removes them), or a damaged record's.
    pub unnamed_frame_bytes: u64,
}

/// Reads every frame of the archive in `dir` and checks it.
pub fn verify(dir: &std::path::Path) -> Result<ArchiveVerification, ArchiveError> {
    let archive = Archive::open(dir)?;
    let catalog = &archive.catalog;
    let mut report = ArchiveVerification {
        archive: dir.to_path_buf(),
        ok: true,
        sources: catalog.sources.len() as u64,
        versions: catalog.sources.values().map(|v| v.len() as u64).sum(),
        records: catalog.records.len() as u64,
        bytes: 0,
        damaged_records: catalog
            .damaged
            .iter()
            .map(|g| IndexDamage {
                offset: g.offset,
                len: g.len,
            })
            .collect(),
        damaged_frames: Vec::new(),
        torn_index_bytes: catalog.torn.map_or(0, |t| t.len),
        unnamed_frame_bytes: 0,
    };
    let mut named: Vec<(u64, u64)> = Vec::new();
    for (key, versions) in &catalog.sources {
        for v in versions {
            let read = archive.read_version(&path_of(key), v);
            report.bytes += read.bytes.len() as u64;
            report.damaged_frames.extend(read.damage);
            named.extend(
                v.records
                    .iter()
                    .filter_map(|&i| catalog.record(i))
                    .map(|r| (r.frame_offset, r.frame_offset.saturating_add(r.frame_len))),
            );
        }
    }
    named.sort_unstable();
    let mut at = FRAMES_HEADER.len() as u64;
    let frames_len = archive.frames_len.max(at);
    for (start, end) in named {
        if start > at {
            report.unnamed_frame_bytes += start - at;
        }
        at = at.max(end);
    }
    report.unnamed_frame_bytes += frames_len.saturating_sub(at);
    report.ok = report.damaged_records.is_empty() && report.damaged_frames.is_empty();
    Ok(report)
}
