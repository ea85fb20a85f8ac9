//! A block's bytes: encoding events into one block value and decoding them back, field by
//! field, with every field checked against the others.

use std::ops::{BitAnd, BitOrAssign, Shl, ShrAssign};

use crate::event::{MAX_TOKEN_VALUE, Timestamp, Totals};
#[cfg(test)]
use crate::index::schema::Block;
use crate::index::schema::BlockEntry;
use crate::index::schema::{self, BLOCK_EVENTS, EventRow, flags};

/// One event, as queued for a commit and as decoded from a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// 0-based ordinal among the log's events (file order; the header is not an event).
    pub(crate) ordinal: u64,
    /// Offset of the event's line.
    pub(crate) offset: u64,
    /// What the index keeps of the event.
    pub(crate) row: EventRow,
    /// A token event's counts after coercion (input, output, cached, thinking); zeros for
    /// other events.
    pub(crate) tokens: [u64; 4],
}

impl Entry {
    /// The offset just after the line's `\n`.
    pub(super) fn end(&self) -> u64 {
        self.offset.saturating_add(self.row.len).saturating_add(1)
    }

    pub(super) fn is_token(&self) -> bool {
        self.row.flags & flags::TOKEN != 0
    }

    pub(super) fn is_boundary(&self) -> bool {
        self.row.flags & flags::BOUNDARY != 0
    }
}

/// A block read back: its events with their offsets, seqs, generations and token counts.
#[derive(Clone, Debug)]
pub(crate) struct DecodedBlock {
    /// Totals of the token events before the block.
    pub(super) totals_before: Totals,
    /// Boundaries before the block.
    pub(super) boundaries_before: u64,
    /// At least one event: all the block's events, or the first ones of a prefix decoded by
    /// [`BlockReader::block_prefix`].
    pub(crate) entries: Vec<Entry>,
    /// How many events the block holds.
    count: u64,
}

impl DecodedBlock {
    /// Whether `entries` holds every event of the block (every method but `number` needs it).
    pub(super) fn complete(&self) -> bool {
        self.entries.len() as u64 == self.count
    }

    /// The block number.
    pub(crate) fn number(&self) -> u64 {
        self.entries.first().map_or(0, |e| e.ordinal / BLOCK_EVENTS)
    }

    /// Totals of the token events strictly before `offset`, counting from this block's start.
    pub(crate) fn totals_before(&self, offset: u64) -> Totals {
        let mut totals = self.totals_before;
        for entry in self.entries.iter().take_while(|e| e.offset < offset) {
            if entry.is_token() {
                totals.add_counts(&entry.tokens);
            }
        }
        totals
    }

    /// Totals of the token events up to and including the block's last event.
    pub(crate) fn totals_after(&self) -> Totals {
        self.totals_before(u64::MAX)
    }

    /// Boundaries up to and including the block's last event.
    pub(crate) fn boundaries_after(&self) -> u64 {
        self.entries
            .last()
            .map_or(self.boundaries_before, |e| e.row.generation)
    }

    /// The offset of the first event's line.
    pub(crate) fn first_offset(&self) -> u64 {
        self.entries.first().map_or(0, |e| e.offset)
    }

    /// The offset just after the last event's line.
    pub(crate) fn end(&self) -> u64 {
        self.entries.last().map_or(0, Entry::end)
    }

    /// The event at `offset`, if one of this block's.
    pub(crate) fn at_offset(&self, offset: u64) -> Option<&Entry> {
        self.entries
            .binary_search_by_key(&offset, |e| e.offset)
            .ok()
            .and_then(|i| self.entries.get(i))
    }
}

/// Builds the [`Block`] of the events `entries` (ascending, consecutive ordinals, all in one
/// block), given the totals and boundaries before the first one: the definition that
/// [`encode_into`] writes without building it, kept to test that the two agree. `None` if they are not in
/// file order or their generations do not follow the boundaries (a bug upstream: never
/// stored).
#[cfg(test)]
pub(super) fn encode(
    entries: &[Entry],
    totals_before: Totals,
    boundaries_before: u64,
) -> Option<Block> {
    let first = entries.first()?;
    let mut deltas = Deltas::new(first.offset, boundaries_before);
    let stored = entries
        .iter()
        .map(|entry| deltas.next(entry))
        .collect::<Option<Vec<_>>>()?;
    Some(Block {
        first_offset: first.offset,
        boundaries_before,
        totals_before,
        entries: stored,
    })
}

/// Decodes block `number`'s stored value; `None` if it is damaged: a failed checksum, or
/// fields that contradict each other (too many or no events, unknown flags, token counts on an
/// event that is not a token event, offsets or timestamps out of range).
///
/// The value is a postcard [`Block`] plus its crc ([`schema::encode`]); it is read field by
/// field straight into entries, accepting exactly what `postcard::from_bytes` accepts (a test
/// compares the two on arbitrary bytes), because a point read decodes a whole block.
pub(crate) fn decode(number: u64, bytes: &[u8]) -> Option<DecodedBlock> {
    decode_prefix(number, bytes, BLOCK_EVENTS)
}

/// [`decode`] of the block's first `slots` events only (all of them if it holds fewer). The
/// whole block's checksum is still checked.
pub(super) fn decode_prefix(number: u64, bytes: &[u8], slots: u64) -> Option<DecodedBlock> {
    let mut input = Postcard(schema::checked_body(bytes)?);
    let first_offset = input.u64()?;
    let boundaries_before = input.u64()?;
    let totals_before = Totals {
        input_tokens: input.u128()?,
        output_tokens: input.u128()?,
        cached_tokens: input.u128()?,
        thinking_tokens: input.u128()?,
        api_calls: input.u64()?,
    };
    let count = input.u64()?;
    if count == 0 || count > BLOCK_EVENTS {
        return None;
    }
    let first_ordinal = number.checked_mul(BLOCK_EVENTS)?;
    let mut previous_end = first_offset;
    let mut previous_seq = u64::MAX;
    let mut previous_time = 0i64;
    let mut generation = boundaries_before;
    // The totals after every event must be representable, so sums over a decoded block never
    // overflow (each count is at most 2^53, but `totals_before` is as stored).
    let mut totals = totals_before;
    let decoded = count.min(slots);
    let mut entries = Vec::with_capacity(usize::try_from(decoded).unwrap_or(0));
    for i in 0..decoded {
        let gap = input.u64()?;
        let len = input.u64()?;
        let seq_delta = input.i64()?;
        let time_delta = if input.tag()? {
            Some(input.i64()?)
        } else {
            None
        };
        let type_id = input.u32()?;
        let flags = input.byte()?;
        let token = flags & flags::TOKEN != 0;
        let boundary = flags & flags::BOUNDARY != 0;
        let tokens = if input.tag()? {
            Some([input.u64()?, input.u64()?, input.u64()?, input.u64()?])
        } else {
            None
        };
        if flags & !flags::ALL != 0 || (token && boundary) {
            return None;
        }
        let tokens = match (token, tokens) {
            (true, Some(tokens)) if tokens.iter().all(|&t| t <= MAX_TOKEN_VALUE) => tokens,
            (false, None) => [0; 4],
            _ => return None,
        };
        if i == 0 && gap != 0 {
            return None;
        }
        let offset = previous_end.checked_add(gap)?;
        let seq = previous_seq
            .wrapping_add(1)
            .wrapping_add(seq_delta.cast_unsigned());
        let time = match time_delta {
            Some(delta) => {
                previous_time = previous_time.wrapping_add(delta);
                Some(Timestamp::from_micros(previous_time)?)
            }
            None => None,
        };
        generation = generation.checked_add(u64::from(boundary))?;
        if token {
            totals = checked_plus(&totals, &tokens)?;
        }
        entries.push(Entry {
            ordinal: first_ordinal.checked_add(i)?,
            offset,
            row: EventRow {
                len,
                seq,
                time,
                type_id,
                generation,
                flags,
            },
            tokens,
        });
        previous_end = offset.checked_add(len)?.checked_add(1)?;
        previous_seq = seq;
    }
    Some(DecodedBlock {
        totals_before,
        boundaries_before,
        entries,
        count,
    })
}

/// Reads postcard's encodings off the front of a slice, as `postcard::from_bytes` does:
/// varints of at most as many bytes as the type needs, the last of them within range
/// (overlong encodings are accepted, as postcard accepts them), zigzag for signed values, one
/// byte 0 or 1 for an option.
struct Postcard<'a>(&'a [u8]);

impl Postcard<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(first)
    }

    /// A varint of a type of `bits` bits, accumulated in `T` (at least that wide): one body
    /// for the `u128` sums and, monomorphized, `u64` arithmetic for the fields read per event.
    fn varint<T>(&mut self, bits: u32) -> Option<T>
    where
        T: Default + From<u8> + Shl<u32, Output = T> + BitOrAssign,
    {
        let max_bytes = bits.div_ceil(7);
        let max_last = (1u8 << (bits % 7)) - 1;
        let mut out = T::default();
        for i in 0..max_bytes {
            let byte = self.byte()?;
            out |= T::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return (i < max_bytes - 1 || byte <= max_last).then_some(out);
            }
        }
        None
    }

    /// [`Postcard::varint`] for a type of `bits` bits, 8 to 64, with a way round for one byte:
    /// readers decode up to a whole block per event they read, and most fields are one byte.
    fn varint64(&mut self, bits: u32) -> Option<u64> {
        let (&first, rest) = self.0.split_first()?;
        if first & 0x80 == 0 {
            // One byte: at most 7 bits, within range of any such type.
            self.0 = rest;
            return Some(u64::from(first));
        }
        self.varint(bits)
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.varint64(32)?).ok()
    }

    fn u64(&mut self) -> Option<u64> {
        self.varint64(64)
    }

    fn u128(&mut self) -> Option<u128> {
        self.varint::<u128>(128)
    }

    fn i64(&mut self) -> Option<i64> {
        let n = self.u64()?;
        Some((n >> 1).cast_signed() ^ -(n & 1).cast_signed())
    }

    /// An option's tag: whether a value follows.
    fn tag(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

/// `totals` plus one token event's `counts`, if nothing overflows.
fn checked_plus(totals: &Totals, counts: &[u64; 4]) -> Option<Totals> {
    let [input, output, cached, thinking] = counts.map(u128::from);
    Some(Totals {
        input_tokens: totals.input_tokens.checked_add(input)?,
        output_tokens: totals.output_tokens.checked_add(output)?,
        cached_tokens: totals.cached_tokens.checked_add(cached)?,
        thinking_tokens: totals.thinking_tokens.checked_add(thinking)?,
        api_calls: totals.api_calls.checked_add(1)?,
    })
}

/// A block's events as it stores them, one after another: each as deltas from the one
/// before it.
struct Deltas {
    /// Where the previous event's line ended (after its `\n`).
    previous_end: u64,
    /// The previous event's seq (`u64::MAX` before the first, so that its delta is its seq).
    previous_seq: u64,
    /// The previous readable timestamp, microseconds (0 before the first).
    previous_time: i64,
    /// The generation of the previous event.
    generation: u64,
}

impl Deltas {
    /// Before the first event of a block, at `first_offset`, after `boundaries_before`
    /// boundaries.
    fn new(first_offset: u64, boundaries_before: u64) -> Deltas {
        Deltas {
            previous_end: first_offset,
            previous_seq: u64::MAX,
            previous_time: 0,
            generation: boundaries_before,
        }
    }

    /// `entry` as stored; `None` if it is not after the previous one in the file, if its
    /// generation does not follow the boundaries, or if it has unknown flags (a bug upstream:
    /// never stored).
    fn next(&mut self, entry: &Entry) -> Option<BlockEntry> {
        self.generation = self
            .generation
            .checked_add(u64::from(entry.is_boundary()))?;
        if entry.row.generation != self.generation || entry.row.flags & !flags::ALL != 0 {
            return None;
        }
        let gap = entry.offset.checked_sub(self.previous_end)?;
        self.previous_end = entry.end();
        let seq_delta = entry
            .row
            .seq
            .wrapping_sub(self.previous_seq.wrapping_add(1))
            .cast_signed();
        self.previous_seq = entry.row.seq;
        let time_delta = entry.row.time.map(|t| {
            let delta = t.micros().wrapping_sub(self.previous_time);
            self.previous_time = t.micros();
            delta
        });
        Some(BlockEntry {
            gap,
            len: entry.row.len,
            seq_delta,
            time_delta,
            type_id: entry.row.type_id,
            flags: entry.row.flags,
            tokens: entry.is_token().then_some(entry.tokens),
        })
    }
}

pub(super) fn damaged(detail: impl Into<String>) -> redb::Error {
    redb::Error::Corrupted(detail.into())
}

/// Encodes `entries` as block `number` into `scratch`: the postcard bytes of the [`Block`]
/// that [`encode`] would build, then their crc, as [`schema::encode`] stores every value.
/// Written field by field, without building the block first (a build encodes one block per 64
/// lines; serde's way cost about as much again). Checks that the events are that block's.
pub(super) fn encode_into(
    number: u64,
    entries: &[Entry],
    (totals_before, boundaries_before): (Totals, u64),
    scratch: &mut Vec<u8>,
) -> Result<(), redb::Error> {
    let first_ordinal = number.checked_mul(BLOCK_EVENTS);
    let in_order = entries.iter().enumerate().all(|(i, entry)| {
        first_ordinal.and_then(|f| f.checked_add(i as u64)) == Some(entry.ordinal)
    });
    let Some(first) = entries.first().filter(|_| in_order) else {
        return Err(damaged("events queued out of order"));
    };
    let out = scratch;
    out.clear();
    varint(out, first.offset);
    varint(out, boundaries_before);
    let totals = &totals_before;
    for sum in [
        totals.input_tokens,
        totals.output_tokens,
        totals.cached_tokens,
        totals.thinking_tokens,
    ] {
        varint(out, sum);
    }
    varint(out, totals.api_calls);
    varint(out, entries.len() as u64);
    let mut deltas = Deltas::new(first.offset, boundaries_before);
    for entry in entries {
        let Some(stored) = deltas.next(entry) else {
            return Err(damaged("events queued out of file order"));
        };
        varint(out, stored.gap);
        varint(out, stored.len);
        varint(out, zigzag(stored.seq_delta));
        match stored.time_delta {
            Some(delta) => {
                out.push(1);
                varint(out, zigzag(delta));
            }
            None => out.push(0),
        }
        varint(out, stored.type_id);
        out.push(stored.flags);
        match stored.tokens {
            Some(tokens) => {
                out.push(1);
                for count in tokens {
                    varint(out, count);
                }
            }
            None => out.push(0),
        }
    }
    schema::seal(out);
    Ok(())
}

/// Appends `value` as postcard does: 7 bits a byte, low bits first, the top bit set on all
/// but the last byte. Generic, so that a `u64` is written in `u64` arithmetic.
fn varint<T>(out: &mut Vec<u8>, mut value: T)
where
    T: Copy + PartialOrd + From<u8> + BitAnd<Output = T> + ShrAssign<u32> + TryInto<u8>,
{
    // The low 7 bits always fit a byte.
    let low = |v: T| (v & T::from(0x7f)).try_into().unwrap_or(0);
    while value >= T::from(0x80) {
        out.push(low(value) | 0x80);
        value >>= 7;
    }
    out.push(low(value));
}

/// A signed value as postcard stores it before its varint: 0, -1, 1, -2, ... as 0, 1, 2, 3.
fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)).cast_unsigned()
}
