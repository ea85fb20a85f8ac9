//! The on-disk schema of a transcript index (see docs/TRANSCRIPTS.md, "The index").
//!
//! Every value is postcard followed by a little-endian crc32 of the postcard bytes, so a
//! damaged row is detected rather than believed.

use redb::TableDefinition;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::log::Coverage;
use crate::transcript::fold::{Message, Summary};
use crate::transcript::format::Format;
use crate::transcript::tally::Tally;

/// Bumped whenever the tables or their encodings change; an index of another format is rebuilt.
pub(crate) const FORMAT_VERSION: u32 = 3;

/// Bumped whenever a reader could give a different answer for the same bytes.
pub(crate) const PARSER_VERSION: u32 = 2;

/// `"format"` → u32 LE; `"meta"` → [`Meta`].
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Dedup keys: a Claude Code `message.id` → its messages (`Vec<Message>`); a pi entry id →
/// its [`Entry`](crate::transcript::fold::Entry).
pub(crate) const KEYS: TableDefinition<&str, &[u8]> = TableDefinition::new("keys");
/// (quarter-hours since the epoch, model number) → [`Tally`].
pub(crate) const BUCKETS: TableDefinition<(i64, u32), &[u8]> = TableDefinition::new("buckets");
/// Claude Code boundary and summary line uuids seen → an empty value: a replayed boundary is
/// recognized by its uuid. Kept out of the meta record, which every open reads.
pub(crate) const MARKS: TableDefinition<&str, &[u8]> = TableDefinition::new("marks");

/// The key of the format version in [`META`].
pub(crate) const FORMAT_KEY: &str = "format";
/// The key of [`Meta`] in [`META`].
pub(crate) const META_KEY: &str = "meta";

/// What the index is of and what it covers: read and checked on every open.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Meta {
    /// [`PARSER_VERSION`] of the writer.
    pub(crate) parser: u32,
    /// The transcript's canonical path, as bytes.
    pub(crate) transcript: Vec<u8>,
    /// The format it was read as.
    pub(crate) format: Format,
    /// The maximum line size it was read with.
    pub(crate) max_line: u64,
    /// What it covers of the transcript.
    pub(crate) coverage: Coverage,
    /// What the covered lines add up to.
    pub(crate) summary: Summary,
}

/// postcard, then the crc32 of the postcard bytes.
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = postcard::to_stdvec(value).unwrap_or_default();
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

/// The value if its crc holds and it decodes.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let split = bytes.len().checked_sub(4)?;
    let (body, crc) = bytes.split_at(split);
    let crc = u32::from_le_bytes(crc.try_into().ok()?);
    if crc32fast::hash(body) != crc {
        return None;
    }
    postcard::from_bytes(body).ok()
}

/// The value stored under a Claude Code message id.
pub(crate) fn encode_messages(messages: &[Message]) -> Vec<u8> {
    encode(&messages)
}

/// The value stored for a bucket.
pub(crate) fn encode_tally(tally: &Tally) -> Vec<u8> {
    encode(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_damage_is_detected() {
        let usage = crate::transcript::tokens::Usage {
            input: 1,
            output: 2,
            cache_creation: 3,
            cache_read: 4,
            reasoning: 1,
            cache_creation_1h: 2,
        };
        let tally = Tally::message(usage, crate::transcript::tally::Money::from_picodollars(25));
        let bytes = encode_tally(&tally);
        assert_eq!(decode::<Tally>(&bytes), Some(tally));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert_eq!(decode::<Tally>(&bad), None, "byte {i}");
        }
        assert_eq!(decode::<Tally>(&bytes[..3]), None);
    }
}
