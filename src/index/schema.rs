//! The on-disk schema of the index (see docs/FORMAT.md, which must change with this file).
//!
//! Every value is postcard followed by a little-endian crc32 of the postcard bytes, so a
//! damaged row is detected rather than believed.

use redb::TableDefinition;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::event::{EventKind, FoldState, GenerationStart, Timestamp, Totals};
use crate::log::WindowSum;

/// Bumped whenever the tables or their encodings change; an index of another format is rebuilt.
pub const FORMAT_VERSION: u32 = 2;

/// Bumped whenever extraction or the fold could give a different answer for the same bytes.
pub const PARSER_VERSION: u32 = 1;

/// `"format"` → u32 LE; `"meta"` → [`Meta`].
pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Offset of each event line → [`EventRow`].
pub const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
/// seq → offset (the first line with that seq wins).
pub const SEQS: TableDefinition<u64, u64> = TableDefinition::new("seqs");
/// Boundary ordinal (1-based, file order) → [`GenerationStart`].
pub const BOUNDARIES: TableDefinition<u64, &[u8]> = TableDefinition::new("boundaries");
/// Offset of each token event → [`Totals`] including that event (prefix sums).
pub const PREFIX: TableDefinition<u64, &[u8]> = TableDefinition::new("prefix");
/// Type id → type name.
pub const TYPES: TableDefinition<u32, &str> = TableDefinition::new("types");
/// (type id, offset) → (): the events of each type, in file order.
pub const TYPE_EVENTS: TableDefinition<(u32, u64), ()> = TableDefinition::new("type_events");
/// Offset of each invalid line → its problem code.
pub const INVALID: TableDefinition<u64, u8> = TableDefinition::new("invalid");

/// The key of the format version in [`META`].
pub const FORMAT_KEY: &str = "format";
/// The key of [`Meta`] in [`META`].
pub const META_KEY: &str = "meta";

/// How many distinct event types get an id; later new types share [`OTHER_TYPE`].
pub const MAX_TYPES: u32 = 65_536;
/// The type id of events without a type, or past [`MAX_TYPES`].
pub const OTHER_TYPE: u32 = u32::MAX;

/// The facts of the whole index, read on open: versions, log identity, and the fold at the
/// watermark.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// [`PARSER_VERSION`] of the writer.
    pub parser: u32,
    /// The fingerprint of the profile and line validator (`IndexOptions::fingerprint`).
    pub profile: u32,
    /// The maximum line size the index was built with (it decides which lines are valid).
    pub max_line: u64,
    /// crc32 of the first bytes of the log.
    pub head: WindowSum,
    /// crc32 of the bytes just before the watermark.
    pub tail: WindowSum,
    /// crc32 of the whole indexed prefix `[0, watermark)`.
    pub running_crc: u32,
    /// The fold at the watermark; `fold.end` is the watermark W.
    pub fold: FoldState,
    /// Events whose explicit seq repeated an earlier one (the earlier one keeps the seq).
    pub duplicate_seqs: u64,
}

impl Meta {
    /// The watermark: bytes of the log that are indexed, always just after a `\n`.
    pub fn watermark(&self) -> u64 {
        self.fold.end
    }
}

/// Flags of an [`EventRow`].
pub mod flags {
    /// The seq came from the line.
    pub const EXPLICIT_SEQ: u8 = 1;
    /// A token event.
    pub const TOKEN: u8 = 2;
    /// A boundary event.
    pub const BOUNDARY: u8 = 4;
}

/// What the index keeps of each event line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRow {
    /// Line length without the `\n`.
    pub len: u64,
    /// Explicit seq or the line ordinal.
    pub seq: u64,
    /// Timestamp in microseconds, if readable.
    pub time: Option<Timestamp>,
    /// Type id (see [`TYPES`]).
    pub type_id: u32,
    /// Generation ordinal (0 before the first boundary).
    pub generation: u64,
    /// See [`flags`].
    pub flags: u8,
}

impl EventRow {
    /// The kind encoded in the flags.
    pub fn kind(&self) -> EventKind {
        if self.flags & flags::TOKEN != 0 {
            EventKind::Token
        } else if self.flags & flags::BOUNDARY != 0 {
            EventKind::Boundary
        } else {
            EventKind::Other
        }
    }
}

/// Type aliases kept for readers of the schema.
pub type BoundaryRow = GenerationStart;
/// See [`PREFIX`].
pub type PrefixRow = Totals;

/// Encodes a value as postcard plus crc32, appending to `out`.
pub fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) {
    out.clear();
    // Serializing plain structs into a Vec cannot fail; an empty value would fail its crc
    // check on read and so be treated as damage, never believed.
    if let Ok(bytes) = postcard::to_extend(value, std::mem::take(out)) {
        *out = bytes;
    }
    let crc = crc32fast::hash(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Decodes a value written by [`encode`]; `None` if the checksum or the encoding is wrong.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let split = bytes.len().checked_sub(4)?;
    let (body, crc) = bytes.split_at(split);
    let crc = u32::from_le_bytes(crc.try_into().ok()?);
    if crc32fast::hash(body) != crc {
        return None;
    }
    postcard::from_bytes(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_damage_is_detected() {
        let row = EventRow {
            len: 10,
            seq: 3,
            time: Timestamp::from_seconds(1.5),
            type_id: 2,
            generation: 1,
            flags: flags::TOKEN,
        };
        let mut buf = Vec::new();
        encode(&row, &mut buf);
        assert_eq!(decode::<EventRow>(&buf), Some(row));
        for i in 0..buf.len() {
            let mut damaged = buf.clone();
            damaged[i] ^= 0x40;
            assert_eq!(decode::<EventRow>(&damaged), None, "flip at {i}");
        }
        assert_eq!(decode::<EventRow>(&buf[..3]), None);
    }
}
