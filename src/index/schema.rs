//! The on-disk schema of the index (see docs/FORMAT.md, which must change with this file).
//!
//! Every value that is not a plain integer is postcard followed by a little-endian crc32 of
//! the postcard bytes, so a damaged row is detected rather than believed. Events are stored in
//! blocks of [`BLOCK_EVENTS`] (like Kafka's sparse offset index, a row per block rather than
//! per line): a build writes about one redb row per 50 lines instead of three per line.

use redb::TableDefinition;
use serde::{Deserialize, Serialize};

/// The meta table (`"format"` → u32 LE; `"meta"` → [`Meta`]), its keys, and the encoding of
/// every value, shared by every index (`src/index/derived/record.rs`).
#[cfg(feature = "testing")]
pub use super::derived::record::FORMAT_KEY;
pub use super::derived::record::{META, META_KEY, decode, encode};
pub(crate) use super::derived::record::{checked_body, seal};
use crate::event::{EventKind, FoldState, GenerationStart, Timestamp, Totals};
use crate::log::{Coverage, WindowSum};

/// Bumped whenever the tables or their encodings change; an index of another format is rebuilt.
pub const FORMAT_VERSION: u32 = 4;

/// Bumped whenever extraction or the fold could give a different answer for the same bytes.
pub const PARSER_VERSION: u32 = 2;

/// Events per block: the events with ordinals `64 b .. 64 b + 64` (0-based, in file order)
/// are block `b`. 64 makes a block's events of one type one `u64` mask ([`TYPE_BLOCKS`]).
pub const BLOCK_EVENTS: u64 = 64;

/// Block number → [`Block`]. Every block but the last holds [`BLOCK_EVENTS`] events.
pub const BLOCKS: TableDefinition<u64, &[u8]> = TableDefinition::new("blocks");
/// Offset of each block's first event → its block number.
pub const BLOCK_STARTS: TableDefinition<u64, u64> = TableDefinition::new("block_starts");
/// First seq of a run → (ordinal of the event with that seq, run length): seqs
/// `s .. s + len` are the events `e .. e + len`. Runs never overlap: the first event with a
/// seq keeps it, and later ones are counted in [`SeqState::duplicates`].
pub const SEQ_RUNS: TableDefinition<u64, (u64, u64)> = TableDefinition::new("seq_runs");
/// Boundary ordinal (1-based, file order) → [`GenerationStart`].
pub const BOUNDARIES: TableDefinition<u64, &[u8]> = TableDefinition::new("boundaries");
/// Type id → type name.
pub const TYPES: TableDefinition<u32, &str> = TableDefinition::new("types");
/// (type id, block number) → bit `i` set if the block's event `i` has that type. Only pairs
/// with at least one such event have a row.
pub const TYPE_BLOCKS: TableDefinition<(u32, u64), u64> = TableDefinition::new("type_blocks");
/// Offset of each invalid line → its problem code.
pub const INVALID: TableDefinition<u64, u8> = TableDefinition::new("invalid");

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
    /// Where the seq runs stand, so the next commit continues them as a rebuild would.
    pub seqs: SeqState,
    /// The checksum of the [`TYPES`] table, whose names carry no crc of their own: a name
    /// read wrong would turn a type filter's answer into another type's events.
    pub types: TypesSum,
}

/// A checksum of the [`TYPES`] table: how many names it holds, and a crc32 over each id and
/// name in id order (the order in which ids are given, so each new name extends it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypesSum {
    /// How many names.
    pub count: u32,
    /// crc32 of each name's id (u32 LE), byte length (u64 LE) and bytes, in id order.
    pub crc: u32,
}

impl TypesSum {
    /// The sum of the table with `(id, name)` added after the names already summed.
    #[must_use]
    pub fn with(self, id: u32, name: &str) -> TypesSum {
        let mut hasher = crc32fast::Hasher::new_with_initial(self.crc);
        hasher.update(&id.to_le_bytes());
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        TypesSum {
            count: self.count.saturating_add(1),
            crc: hasher.finalize(),
        }
    }
}

impl Meta {
    /// The watermark: bytes of the log that are indexed, always just after a `\n`.
    pub fn watermark(&self) -> u64 {
        self.fold.end
    }

    /// What the index covers of the log: the watermark, the two windows, the running crc.
    pub fn coverage(&self) -> Coverage {
        Coverage {
            end: self.fold.end,
            head: self.head,
            tail: self.tail,
            crc: self.running_crc,
        }
    }
}

/// One run of [`SEQ_RUNS`]: seqs `start .. start + len` are the events `event .. event + len`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeqRun {
    /// The first seq.
    pub start: u64,
    /// The ordinal of the event with that seq.
    pub event: u64,
    /// How many seqs (and events); at least 1.
    pub len: u64,
}

impl SeqRun {
    /// Whether the run holds `seq`.
    pub fn covers(&self, seq: u64) -> bool {
        seq >= self.start && seq - self.start < self.len
    }
}

/// The seq runs' state at the watermark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeqState {
    /// Events whose seq repeated an earlier one (the earlier one keeps the seq).
    pub duplicates: u64,
    /// The largest seq any event has had.
    pub max: Option<u64>,
    /// The run that holds the last event, if that event kept its seq: the next event extends
    /// it when its seq is the next one.
    pub open: Option<SeqRun>,
}

/// Flags of an event (see [`EventRow`]).
pub mod flags {
    /// The seq came from the line.
    pub const EXPLICIT_SEQ: u8 = 1;
    /// A token event.
    pub const TOKEN: u8 = 2;
    /// A boundary event.
    pub const BOUNDARY: u8 = 4;
    /// Every flag a stored event may have.
    pub const ALL: u8 = EXPLICIT_SEQ | TOKEN | BOUNDARY;
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
    /// Type id; [`Index::type_name`](crate::index::Index::type_name) gives its name.
    pub type_id: u32,
    /// Generation ordinal (0 before the first boundary).
    pub generation: u64,
    /// Bit flags: 1, the seq came from the line; 2, a token event; 4, a boundary (see
    /// [`EventRow::kind`]).
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

/// A block of consecutive events as stored in [`BLOCKS`]. Each event is stored relative to
/// the one before it, so most of its fields take a byte or two.
// The format's definition: the block codec writes and reads it field by field, and its tests
// check the two agree, so only tests and the `testing` surface build one.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Offset of the first event's line.
    pub first_offset: u64,
    /// Boundaries before the first event.
    pub boundaries_before: u64,
    /// Totals of the token events before the first event.
    pub totals_before: Totals,
    /// The events, in file order.
    pub entries: Vec<BlockEntry>,
}

/// One event of a [`Block`].
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockEntry {
    /// Bytes from the end of the previous event's line (after its `\n`) to this line: blank
    /// and invalid lines. 0 for the first event of a block.
    pub gap: u64,
    /// Line length without the `\n`.
    pub len: u64,
    /// `seq - (previous seq + 1)`, wrapping (for the first event of a block, `seq`).
    pub seq_delta: i64,
    /// Microseconds since the previous readable timestamp in the block (for the first one,
    /// since the epoch); `None` if the event's is not readable.
    pub time_delta: Option<i64>,
    /// Type id (see [`TYPES`]).
    pub type_id: u32,
    /// See [`flags`].
    pub flags: u8,
    /// A token event's counts after coercion (input, output, cached, thinking).
    pub tokens: Option<[u64; 4]>,
}

/// Type aliases kept for readers of the schema.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub type BoundaryRow = GenerationStart;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_damage_is_detected() {
        let block = Block {
            first_offset: 1000,
            boundaries_before: 2,
            totals_before: Totals {
                input_tokens: 5,
                api_calls: 1,
                ..Totals::default()
            },
            entries: vec![BlockEntry {
                gap: 0,
                len: 10,
                seq_delta: 3,
                time_delta: Some(1_500_000),
                type_id: 2,
                flags: flags::TOKEN,
                tokens: Some([1, 2, 3, 4]),
            }],
        };
        crate::index::derived::record::assert_round_trips(&block);
    }

    #[test]
    fn a_run_covers_its_seqs_only() {
        let run = SeqRun {
            start: u64::MAX - 1,
            event: 0,
            len: 2,
        };
        assert!(run.covers(u64::MAX - 1) && run.covers(u64::MAX));
        assert!(!run.covers(u64::MAX - 2) && !run.covers(0));
    }
}
