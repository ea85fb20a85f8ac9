//! The on-disk schema of a transcript index (see docs/TRANSCRIPTS.md, "The index"): the meta
//! table every index has, and the rows a transcript's fold leaves.
//!
//! Every value is postcard followed by a little-endian crc32 of the postcard bytes, so a
//! damaged row is detected rather than believed (the core's encoding).

use redb::TableDefinition;
use serde::{Deserialize, Serialize};

pub(crate) use crate::index::derived::record::{decode, encoded as encode};

use crate::log::Coverage;
use crate::transcript::fold::{Message, Summary};
use crate::transcript::format::Format;
use crate::transcript::tally::Tally;

/// Bumped whenever the tables or their encodings change; an index of another format is rebuilt.
pub(crate) const FORMAT_VERSION: u32 = 5;

/// Bumped whenever a reader could give a different answer for the same bytes.
pub(crate) const PARSER_VERSION: u32 = 2;

/// Dedup keys: a Claude Code `message.id` → its messages (`Vec<Message>`); a pi entry id →
/// its [`Entry`](crate::transcript::fold::Entry).
pub(crate) const KEYS: TableDefinition<&str, &[u8]> = TableDefinition::new("keys");
/// (quarter-hours since the epoch, model number) → [`Tally`].
pub(crate) const BUCKETS: TableDefinition<(i64, u32), &[u8]> = TableDefinition::new("buckets");
/// Quarter-hours since the epoch → the [`Span`](crate::transcript::fold::Span) of the usage
/// lines' times in it (billing blocks exact to the millisecond).
pub(crate) const SPANS: TableDefinition<i64, &[u8]> = TableDefinition::new("spans");
/// Claude Code boundary and summary line uuids seen → an empty value: a replayed boundary is
/// recognized by its uuid. Kept out of the meta record, which every open reads.
pub(crate) const MARKS: TableDefinition<&str, &[u8]> = TableDefinition::new("marks");

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
        assert_eq!(decode::<Tally>(&encode_tally(&tally)), Some(tally));
        crate::index::derived::record::assert_round_trips(&tally);
    }
}
