//! The index file's records: one per frame, saying which source, version and byte range of it
//! the frame holds, each framed with a length and a checksum. The layout is in docs/FORMAT.md,
//! "The archive".

use serde::{Deserialize, Serialize};

/// The first bytes of every record.
pub(crate) const RECORD_MAGIC: [u8; 4] = *b"ALIR";
/// A record's framing: magic, payload length, payload CRC-32.
pub(crate) const RECORD_HEADER: usize = 12;
/// The longest payload a record may have (a path is at most 4 KiB on Linux).
pub(crate) const MAX_RECORD: u32 = 64 * 1024;

/// A checksum of a window of a source's bytes: its length and CRC-32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Window {
    /// Bytes covered.
    pub(crate) len: u32,
    /// Their CRC-32.
    pub(crate) crc: u32,
}

/// What the source file looked like when it was archived, for the no-op pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Seen {
    /// Its size.
    pub(crate) size: u64,
    /// Its modification time, nanoseconds since the epoch.
    pub(crate) mtime_ns: i64,
    /// Its device.
    pub(crate) dev: u64,
    /// Its inode.
    pub(crate) ino: u64,
}

/// One index record: a frame holding bytes `start..end` of `version` of the source at `path`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The original path's bytes.
    pub(crate) path: Vec<u8>,
    /// The agent format's name (`claude-code`, `codex`, `pi`) or `unknown`.
    pub(crate) agent: String,
    /// The session id.
    pub(crate) session: String,
    /// The project.
    pub(crate) project: String,
    /// The version, from 1: a new one starts when the source was rewritten.
    pub(crate) version: u32,
    /// The version's head: its first bytes (up to 4 KiB).
    pub(crate) head: Window,
    /// The source offset of the frame's first byte.
    pub(crate) start: u64,
    /// The source offset after its last byte: the version's archived length.
    pub(crate) end: u64,
    /// The window of bytes just before `end` (up to 4 KiB).
    pub(crate) tail: Window,
    /// Where the frame starts in the frames file.
    pub(crate) frame_offset: u64,
    /// The frame's length, header included.
    pub(crate) frame_len: u64,
    /// The frame's raw length (`end - start`) and CRC-32.
    pub(crate) raw: Window,
    /// Complete lines in the frame.
    pub(crate) lines: u64,
    /// The first and last `timestamp` found in the frame's lines.
    pub(crate) first_time: Option<String>,
    /// See `first_time`.
    pub(crate) last_time: Option<String>,
    /// The source as it was stat'ed before this frame was read.
    pub(crate) seen: Seen,
    /// When the record was written, milliseconds since the epoch.
    pub(crate) archived_at_ms: i64,
}

/// Frames a record for the index file.
pub(crate) fn encode(record: &Record) -> Vec<u8> {
    // Serializing plain fields into a Vec cannot fail.
    let payload = postcard::to_stdvec(record).unwrap_or_default();
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(RECORD_HEADER + payload.len());
    out.extend_from_slice(&RECORD_MAGIC);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// A stretch of the index file that holds no valid record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gap {
    /// Where it starts.
    pub(crate) offset: u64,
    /// Its length.
    pub(crate) len: u64,
}

/// What scanning an index file's bytes found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The valid records, in file order, each with its offset.
    pub(crate) records: Vec<(u64, Record)>,
    /// Damaged stretches followed by a valid record (never a run's torn end).
    pub(crate) damaged: Vec<Gap>,
    /// A torn end: an incomplete record left by an interrupted run (or damage at the very end,
    /// which cannot be told apart), removed by the next writer.
    pub(crate) torn: Option<Gap>,
}

/// Scans `bytes` (an index file after its header, which starts at file offset `base`): each
/// valid record, and the stretches that hold none. After a bad record the scan looks for the
/// next magic whose record checks, so damage costs only the records it touches.
pub(crate) fn scan(bytes: &[u8], base: u64) -> Scan {
    let mut out = Scan::default();
    let mut at = 0usize;
    let mut bad_from: Option<usize> = None;
    while at < bytes.len() {
        if let Some((record, len)) = parse_at(bytes, at) {
            if let Some(from) = bad_from.take() {
                out.damaged.push(Gap {
                    offset: base + from as u64,
                    len: (at - from) as u64,
                });
            }
            out.records.push((base + at as u64, record));
            at += len;
        } else {
            bad_from.get_or_insert(at);
            at = bytes
                .get(at + 1..)
                .and_then(|rest| memchr::memmem::find(rest, &RECORD_MAGIC))
                .map_or(bytes.len(), |i| at + 1 + i);
        }
    }
    if let Some(from) = bad_from {
        out.torn = Some(Gap {
            offset: base + from as u64,
            len: (bytes.len() - from) as u64,
        });
    }
    out
}

/// The record at `at` and its framed length, if one is there and checks.
fn parse_at(bytes: &[u8], at: usize) -> Option<(Record, usize)> {
    let head = bytes.get(at..at + RECORD_HEADER)?;
    if head.get(0..4)? != RECORD_MAGIC {
        return None;
    }
    let len = u32::from_le_bytes(head.get(4..8)?.try_into().ok()?);
    let crc = u32::from_le_bytes(head.get(8..12)?.try_into().ok()?);
    if len > MAX_RECORD {
        return None;
    }
    let payload = bytes.get(at + RECORD_HEADER..at + RECORD_HEADER + len as usize)?;
    if crc32fast::hash(payload) != crc {
        return None;
    }
    let record: Record = postcard::from_bytes(payload).ok()?;
    Some((record, RECORD_HEADER + len as usize))
}

#[cfg(test)]
pub(crate) fn sample(path: &str, version: u32, start: u64, end: u64) -> Record {
    Record {
        path: path.as_bytes().to_vec(),
        agent: "claude-code".into(),
        session: "s".into(),
        project: "p".into(),
        version,
        head: Window::default(),
        start,
        end,
        tail: Window::default(),
        frame_offset: 8,
        frame_len: 30,
        raw: Window::default(),
        lines: 1,
        first_time: None,
        last_time: Some("2026-01-01T00:00:00Z".into()),
        seen: Seen::default(),
        archived_at_ms: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damage_costs_only_the_records_it_touches() {
        let records: Vec<Record> = (0..4)
            .map(|i| sample("/a", 1, i * 10, i * 10 + 10))
            .collect();
        let mut bytes: Vec<u8> = records.iter().flat_map(encode).collect();
        let one = encode(&records[0]).len();
        let whole = scan(&bytes, 8);
        assert_eq!(whole.records.len(), 4);
        assert!(whole.damaged.is_empty() && whole.torn.is_none());
        // A flipped byte inside the second record: the others survive, the gap is named.
        bytes[one + 20] ^= 0x40;
        let hurt = scan(&bytes, 8);
        let starts: Vec<u64> = hurt.records.iter().map(|(_, r)| r.start).collect();
        assert_eq!(starts, [0, 20, 30]);
        assert_eq!(
            hurt.damaged,
            [Gap {
                offset: 8 + one as u64,
                len: one as u64
            }]
        );
        // A cut inside the last record is a torn end, not damage.
        let cut = scan(&bytes[..bytes.len() - 3], 8);
        assert_eq!(cut.records.len(), 2);
        assert_eq!(cut.torn.map(|g| g.offset), Some(8 + 3 * one as u64));
    }
}
