//! Events stored in blocks ([`BLOCKS`], [`BLOCK_STARTS`], [`TYPE_BLOCKS`]): the one owner of
//! how events are encoded into blocks of [`BLOCK_EVENTS`], written, and read back.
//!
//! Block `b` holds the events with ordinals `64 b .. 64 b + 64`. A commit whose first event
//! falls inside the last stored block rewrites that block with the new events appended, so an
//! index caught up commit by commit holds exactly the rows a rebuild would (what
//! `verify --deep` compares). Decoding checks every field against the others, so a damaged
//! block is reported, never believed.

use std::ops::Bound;

use redb::{ReadOnlyTable, ReadTransaction, ReadableTable, Table, WriteTransaction};

use super::schema::{
    self, BLOCK_EVENTS, BLOCK_STARTS, BLOCKS, EventRow, OTHER_TYPE, TYPE_BLOCKS, flags,
};
#[cfg(test)]
use super::schema::{Block, BlockEntry};
use crate::event::{MAX_TOKEN_VALUE, Timestamp, Totals};

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
    fn end(&self) -> u64 {
        self.offset.saturating_add(self.row.len).saturating_add(1)
    }

    fn is_token(&self) -> bool {
        self.row.flags & flags::TOKEN != 0
    }

    fn is_boundary(&self) -> bool {
        self.row.flags & flags::BOUNDARY != 0
    }
}

/// A block read back: its events with their offsets, seqs, generations and token counts.
#[derive(Clone, Debug)]
pub(crate) struct DecodedBlock {
    /// Totals of the token events before the block.
    totals_before: Totals,
    /// Boundaries before the block.
    boundaries_before: u64,
    /// At least one event: all the block's events, or the first ones of a prefix decoded by
    /// [`BlockReader::block_prefix`].
    pub(crate) entries: Vec<Entry>,
    /// How many events the block holds.
    count: u64,
}

impl DecodedBlock {
    /// Whether `entries` holds every event of the block (every method but `number` needs it).
    fn complete(&self) -> bool {
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
fn encode(entries: &[Entry], totals_before: Totals, boundaries_before: u64) -> Option<Block> {
    let first = entries.first()?;
    let mut previous_end = first.offset;
    let mut previous_seq = u64::MAX;
    let mut previous_time = 0i64;
    let mut generation = boundaries_before;
    let mut stored = Vec::with_capacity(entries.len());
    for entry in entries {
        generation += u64::from(entry.is_boundary());
        if entry.row.generation != generation || entry.row.flags & !flags::ALL != 0 {
            return None;
        }
        let gap = entry.offset.checked_sub(previous_end)?;
        previous_end = entry.end();
        let seq_delta = entry.row.seq.wrapping_sub(previous_seq.wrapping_add(1)) as i64;
        previous_seq = entry.row.seq;
        let time_delta = entry.row.time.map(|t| {
            let delta = t.micros().wrapping_sub(previous_time);
            previous_time = t.micros();
            delta
        });
        stored.push(BlockEntry {
            gap,
            len: entry.row.len,
            seq_delta,
            time_delta,
            type_id: entry.row.type_id,
            flags: entry.row.flags,
            tokens: entry.is_token().then_some(entry.tokens),
        });
    }
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
fn decode_prefix(number: u64, bytes: &[u8], slots: u64) -> Option<DecodedBlock> {
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
    let mut entries = Vec::with_capacity(decoded as usize);
    for i in 0..decoded {
        let gap = input.u64()?;
        let len = input.u64()?;
        let seq_delta = input.i64()?;
        let time_delta = match input.tag()? {
            true => Some(input.i64()?),
            false => None,
        };
        let type_id = input.u32()?;
        let flags = input.byte()?;
        let token = flags & flags::TOKEN != 0;
        let boundary = flags & flags::BOUNDARY != 0;
        let tokens = match input.tag()? {
            true => Some([input.u64()?, input.u64()?, input.u64()?, input.u64()?]),
            false => None,
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
        let seq = previous_seq.wrapping_add(1).wrapping_add(seq_delta as u64);
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

    /// A varint of a type of `bits` bits.
    fn varint(&mut self, bits: u32) -> Option<u128> {
        let max_bytes = bits.div_ceil(7);
        let max_last = (1u8 << (bits % 7)) - 1;
        let mut out = 0u128;
        for i in 0..max_bytes {
            let byte = self.byte()?;
            out |= u128::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return (i < max_bytes - 1 || byte <= max_last).then_some(out);
            }
        }
        None
    }

    /// [`Postcard::varint`] for a type of `bits` bits, 8 to 64, in `u64` arithmetic: readers
    /// decode up to a whole block per event they read, and most fields are one byte.
    fn varint64(&mut self, bits: u32) -> Option<u64> {
        let (&first, rest) = self.0.split_first()?;
        if first & 0x80 == 0 {
            // One byte: at most 7 bits, within range of any such type.
            self.0 = rest;
            return Some(u64::from(first));
        }
        let max_bytes = bits.div_ceil(7);
        let max_last = (1u8 << (bits % 7)) - 1;
        let mut out = 0u64;
        for i in 0..max_bytes {
            let byte = self.byte()?;
            out |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return (i < max_bytes - 1 || byte <= max_last).then_some(out);
            }
        }
        None
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.varint64(32)?).ok()
    }

    fn u64(&mut self) -> Option<u64> {
        self.varint64(64)
    }

    fn u128(&mut self) -> Option<u128> {
        self.varint(128)
    }

    fn i64(&mut self) -> Option<i64> {
        let n = self.u64()?;
        Some(((n >> 1) as i64) ^ -((n & 1) as i64))
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

fn damaged(detail: impl Into<String>) -> redb::Error {
    redb::Error::Corrupted(detail.into())
}

/// Writes `entries`, the events after those already stored (ascending, consecutive ordinals),
/// into [`BLOCKS`], [`BLOCK_STARTS`] and [`TYPE_BLOCKS`]. A last stored block that is not
/// full is rewritten with the new events appended; every table is opened (so it exists) even
/// when there is nothing to write. New rows go in through cursors at each table's end (or at
/// the end of a type's rows), which redb appends several times faster than single inserts.
pub(crate) fn write(
    txn: &WriteTransaction,
    entries: &[Entry],
    scratch: &mut Vec<u8>,
) -> Result<(), redb::Error> {
    let mut blocks = txn.open_table(BLOCKS)?;
    let mut starts = txn.open_table(BLOCK_STARTS)?;
    let mut types = txn.open_table(TYPE_BLOCKS)?;
    let Some(first) = entries.first() else {
        return Ok(());
    };
    let mut number = first.ordinal / BLOCK_EVENTS;
    let in_block = first.ordinal % BLOCK_EVENTS;
    let mut type_rows = Vec::new();
    let mut rest = entries;
    // The totals and boundaries before block `number`.
    let (mut totals, mut boundaries) = if in_block > 0 {
        // The last stored block is not full: it is rewritten with the first new events (its
        // start stays as stored).
        let stored = stored_block(&blocks, number)?;
        if stored.entries.len() as u64 != in_block {
            return Err(damaged(format!(
                "block {number} holds {} events where {in_block} were expected",
                stored.entries.len()
            )));
        }
        let room = usize::try_from(BLOCK_EVENTS - in_block).unwrap_or(usize::MAX);
        let (head, tail) = rest.split_at(room.min(rest.len()));
        let mut merged = stored.entries;
        merged.extend_from_slice(head);
        let before = (stored.totals_before, stored.boundaries_before);
        encode_into(number, &merged, before, scratch)?;
        blocks.insert(number, scratch.as_slice())?;
        push_masks(number, &merged, &mut type_rows);
        rest = tail;
        number += 1;
        advance(before, &merged)
    } else if number > 0 {
        let previous = stored_block(&blocks, number - 1)?;
        if previous.entries.len() as u64 != BLOCK_EVENTS {
            return Err(damaged(format!("block {} is not full", number - 1)));
        }
        (previous.totals_after(), previous.boundaries_after())
    } else {
        (Totals::default(), 0)
    };
    if !rest.is_empty() {
        let mut block_cursor = blocks.upper_bound_mut(Bound::<u64>::Unbounded)?;
        let mut start_cursor = starts.upper_bound_mut(Bound::<u64>::Unbounded)?;
        for block in rest.chunks(BLOCK_EVENTS as usize) {
            let before = (totals, boundaries);
            encode_into(number, block, before, scratch)?;
            block_cursor
                .insert_before(number, scratch.as_slice())
                .map_err(|e| appended("blocks", e))?;
            if let Some(first) = block.first() {
                start_cursor
                    .insert_before(first.offset, number)
                    .map_err(|e| appended("block starts", e))?;
            }
            push_masks(number, block, &mut type_rows);
            (totals, boundaries) = advance(before, block);
            number += 1;
        }
        block_cursor.close()?;
        start_cursor.close()?;
    }
    write_masks(&mut types, type_rows)
}

/// A failed append through a cursor: a key that is not above every stored one means the
/// table holds rows it should not (damage: the index is rebuilt).
fn appended(table: &str, e: redb::CursorError) -> redb::Error {
    match e {
        redb::CursorError::Storage(e) => e.into(),
        redb::CursorError::UnorderedKey => {
            damaged(format!("the {table} table holds rows past the new ones"))
        }
        other => damaged(other.to_string()),
    }
}

/// The totals and boundaries after `entries`, given those before them.
fn advance((mut totals, boundaries): (Totals, u64), entries: &[Entry]) -> (Totals, u64) {
    for entry in entries.iter().filter(|e| e.is_token()) {
        totals.add_counts(&entry.tokens);
    }
    (
        totals,
        entries.last().map_or(boundaries, |e| e.row.generation),
    )
}

/// Encodes `entries` as block `number` into `scratch`: the postcard bytes of the [`Block`]
/// that [`encode`] would build, then their crc, as [`schema::encode`] stores every value.
/// Written field by field, without building the block first (a build encodes one block per 64
/// lines; serde's way cost about as much again). Checks that the events are that block's.
fn encode_into(
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
        varint_u128(out, sum);
    }
    varint(out, totals.api_calls);
    varint(out, entries.len() as u64);
    let mut previous_end = first.offset;
    let mut previous_seq = u64::MAX;
    let mut previous_time = 0i64;
    let mut generation = boundaries_before;
    for entry in entries {
        let next = generation.checked_add(u64::from(entry.is_boundary()));
        let gap = entry.offset.checked_sub(previous_end);
        let (Some(gap), Some(next)) = (gap, next) else {
            return Err(damaged("events queued out of file order"));
        };
        generation = next;
        if entry.row.generation != generation || entry.row.flags & !flags::ALL != 0 {
            return Err(damaged("events queued out of file order"));
        };
        previous_end = entry.end();
        varint(out, gap);
        varint(out, entry.row.len);
        let seq_delta = entry.row.seq.wrapping_sub(previous_seq.wrapping_add(1)) as i64;
        previous_seq = entry.row.seq;
        varint(out, zigzag(seq_delta));
        match entry.row.time {
            Some(time) => {
                let delta = time.micros().wrapping_sub(previous_time);
                previous_time = time.micros();
                out.push(1);
                varint(out, zigzag(delta));
            }
            None => out.push(0),
        }
        varint(out, u64::from(entry.row.type_id));
        out.push(entry.row.flags);
        if entry.is_token() {
            out.push(1);
            for count in entry.tokens {
                varint(out, count);
            }
        } else {
            out.push(0);
        }
    }
    schema::seal(out);
    Ok(())
}

/// Appends `value` as postcard does: 7 bits a byte, low bits first, the top bit set on all
/// but the last byte.
fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// [`varint`] for a `u128`.
fn varint_u128(out: &mut Vec<u8>, mut value: u128) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A signed value as postcard stores it before its varint: 0, -1, 1, -2, ... as 0, 1, 2, 3.
fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Queues block `number`'s type masks: one per type among its events.
fn push_masks(number: u64, entries: &[Entry], type_rows: &mut Vec<((u32, u64), u64)>) {
    let first = type_rows.len();
    for (i, entry) in entries.iter().enumerate() {
        let type_id = entry.row.type_id;
        if type_id == OTHER_TYPE {
            continue;
        }
        match type_rows
            .get_mut(first..)
            .and_then(|rows| rows.iter_mut().find(|((id, _), _)| *id == type_id))
        {
            Some((_, mask)) => *mask |= 1 << i,
            None => type_rows.push(((type_id, number), 1 << i)),
        }
    }
}

/// Writes type masks, sorted by (type, block): each type's new rows go through a cursor at
/// the end of that type's rows; a row that exists (a rewritten last block) is overwritten.
fn write_masks(
    table: &mut Table<'_, (u32, u64), u64>,
    mut rows: Vec<((u32, u64), u64)>,
) -> Result<(), redb::Error> {
    rows.sort_unstable_by_key(|&(key, _)| key);
    for run in rows.chunk_by(|a, b| a.0.0 == b.0.0) {
        let Some(&((type_id, _), _)) = run.first() else {
            continue;
        };
        let end = match type_id.checked_add(1) {
            Some(next) => Bound::Excluded((next, 0)),
            None => Bound::Unbounded,
        };
        let mut rest = run;
        while !rest.is_empty() {
            let mut cursor = table.upper_bound_mut(end)?;
            let mut done = 0;
            for &(key, mask) in rest {
                match cursor.insert_before(key, mask) {
                    Ok(()) => done += 1,
                    Err(redb::CursorError::UnorderedKey) => break,
                    Err(e) => return Err(appended("type masks", e)),
                }
            }
            cursor.close()?;
            if let Some(&(key, mask)) = rest.get(done) {
                table.insert(key, mask)?;
                done += 1;
            }
            rest = rest.get(done..).unwrap_or(&[]);
        }
    }
    Ok(())
}

fn stored_block(
    blocks: &Table<'_, u64, &'static [u8]>,
    number: u64,
) -> Result<DecodedBlock, redb::Error> {
    let value = blocks
        .get(number)?
        .ok_or_else(|| damaged(format!("block {number} is missing")))?;
    decode(number, value.value()).ok_or_else(|| damaged(format!("block {number} is damaged")))
}

/// Why a block could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// redb failed.
    Redb(redb::Error),
    /// A row is damaged or contradicts another; the detail says which.
    Damaged(String),
}

impl<E: Into<redb::Error>> From<E> for ReadError {
    fn from(e: E) -> ReadError {
        ReadError::Redb(e.into())
    }
}

/// Reads blocks inside one read transaction, keeping the last one decoded: queries read
/// neighbouring events, which mostly share a block.
pub(crate) struct BlockReader {
    blocks: ReadOnlyTable<u64, &'static [u8]>,
    starts: ReadOnlyTable<u64, u64>,
    cached: Option<DecodedBlock>,
}

impl BlockReader {
    pub(crate) fn open(txn: &ReadTransaction) -> Result<BlockReader, redb::Error> {
        Ok(BlockReader {
            blocks: txn.open_table(BLOCKS)?,
            starts: txn.open_table(BLOCK_STARTS)?,
            cached: None,
        })
    }

    /// Block `number`, if stored.
    pub(crate) fn block(&mut self, number: u64) -> Result<Option<&DecodedBlock>, ReadError> {
        // `BLOCK_EVENTS` slots are every event a block can hold: this decodes it whole.
        self.block_prefix(number, BLOCK_EVENTS)?;
        Ok(self.complete_cached())
    }

    /// Block `number`, if stored, with at least its first `slots` events decoded (all of them
    /// if it holds fewer): a type filter needs those up to the last its mask names, and
    /// decoding is most of its cost.
    pub(crate) fn block_prefix(
        &mut self,
        number: u64,
        slots: u64,
    ) -> Result<Option<&DecodedBlock>, ReadError> {
        let covered = |b: &DecodedBlock| {
            b.number() == number && (b.complete() || b.entries.len() as u64 >= slots)
        };
        if !self.cached.as_ref().is_some_and(covered) {
            self.cached = None;
            let Some(value) = self.blocks.get(number)? else {
                return Ok(None);
            };
            let block = decode_prefix(number, value.value(), slots)
                .ok_or_else(|| ReadError::Damaged(format!("block {number} is damaged")))?;
            self.cached = Some(block);
        }
        Ok(self.cached.as_ref())
    }

    /// The cached block, if it is complete.
    fn complete_cached(&self) -> Option<&DecodedBlock> {
        self.cached.as_ref().filter(|b| b.complete())
    }

    /// The event with `ordinal`, if stored.
    pub(crate) fn event(&mut self, ordinal: u64) -> Result<Option<&Entry>, ReadError> {
        let number = ordinal / BLOCK_EVENTS;
        let slot = (ordinal % BLOCK_EVENTS) as usize;
        Ok(self
            .block(number)?
            .and_then(|block| block.entries.get(slot)))
    }

    /// The last block whose first event is at or before `offset` (the one that holds the
    /// event at `offset`, if any).
    pub(crate) fn block_at(&mut self, offset: u64) -> Result<Option<&DecodedBlock>, ReadError> {
        // The next block starts at or after the cached one's end.
        if self
            .complete_cached()
            .is_some_and(|b| b.first_offset() <= offset && offset < b.end())
        {
            return Ok(self.complete_cached());
        }
        self.block_starting_in(..=offset)
    }

    /// The last block whose first event is before `end`.
    pub(crate) fn block_before(&mut self, end: u64) -> Result<Option<&DecodedBlock>, ReadError> {
        if self
            .complete_cached()
            .is_some_and(|b| b.first_offset() < end && end <= b.end())
        {
            return Ok(self.complete_cached());
        }
        self.block_starting_in(..end)
    }

    fn block_starting_in(
        &mut self,
        range: impl std::ops::RangeBounds<u64>,
    ) -> Result<Option<&DecodedBlock>, ReadError> {
        let found = match self.starts.range(range)?.next_back() {
            None => return Ok(None),
            Some(entry) => {
                let (start, number) = entry?;
                (start.value(), number.value())
            }
        };
        let (start, number) = found;
        match self.block(number)? {
            Some(block) if block.entries.first().is_some_and(|e| e.offset == start) => {
                Ok(Some(block))
            }
            _ => Err(ReadError::Damaged(format!(
                "the block said to start at offset {start} does not"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ordinal: u64, offset: u64, seq: u64, flags: u8) -> Entry {
        Entry {
            ordinal,
            offset,
            row: EventRow {
                len: 9,
                seq,
                time: Timestamp::from_micros(1_786_000_000_000_000 + ordinal as i64 * 7),
                type_id: (ordinal % 3) as u32,
                generation: 0,
                flags,
            },
            tokens: if flags & flags::TOKEN != 0 {
                [ordinal, 1, 2, 3]
            } else {
                [0; 4]
            },
        }
    }

    #[test]
    fn a_block_decodes_to_what_was_encoded() {
        let mut entries = Vec::new();
        let mut offset = 40;
        for i in 0..BLOCK_EVENTS {
            let flags = match i % 5 {
                0 => flags::TOKEN,
                1 => flags::BOUNDARY | flags::EXPLICIT_SEQ,
                _ => 0,
            };
            let mut e = entry(64 + i, offset, if i == 7 { 3 } else { 100 + i }, flags);
            if i == 9 {
                e.row.time = None;
            }
            offset = e.end() + (i % 2) * 11;
            entries.push(e);
        }
        let boundaries_before = 4;
        let mut generation = boundaries_before;
        for e in &mut entries {
            generation += u64::from(e.is_boundary());
            e.row.generation = generation;
        }
        let totals = Totals {
            input_tokens: 10,
            api_calls: 2,
            ..Totals::default()
        };
        let block = encode(&entries, totals, boundaries_before).unwrap();
        let mut bytes = Vec::new();
        schema::encode(&block, &mut bytes);
        let decoded = decode(1, &bytes).unwrap();
        assert_eq!(decoded.entries, entries);
        let tokens: u64 = entries
            .iter()
            .filter(|e| e.is_token())
            .map(|e| e.tokens[0])
            .sum();
        assert_eq!(decoded.totals_after().input_tokens, 10 + u128::from(tokens));
        assert_eq!(decoded.totals_before(entries[0].offset), totals);
        // The same bytes read as another block number give other ordinals.
        assert_ne!(decode(2, &bytes).unwrap().entries, entries);
    }

    #[test]
    fn blocks_are_written_as_postcard_writes_them() {
        let mut offset = 0;
        let mut entries = Vec::new();
        for i in 0..BLOCK_EVENTS {
            let flags = [flags::TOKEN, 0, flags::EXPLICIT_SEQ][i as usize % 3];
            // Seqs far apart (wrapping deltas), times before the epoch, and large counts.
            let seq = if i % 7 == 3 { u64::MAX - i } else { i * 1000 };
            let mut e = entry(128 + i, offset, seq, flags);
            e.row.time = match i % 4 {
                0 => None,
                1 => Timestamp::from_micros(-62_135_596_800_000_000 + i as i64),
                _ => Timestamp::from_micros(253_402_300_799_000_000 - i as i64 * 999_999),
            };
            e.row.type_id = [0, 127, 128, 16_383, 16_384, u32::MAX][i as usize % 6];
            if e.is_token() {
                e.tokens = [0, 127, 1 << 53, i];
            }
            e.row.len = [0, 127, 128, 1 << 40][i as usize % 4];
            offset = e.end() + i * i;
            entries.push(e);
        }
        for (count, totals) in [
            (1, Totals::default()),
            (
                BLOCK_EVENTS as usize,
                Totals {
                    input_tokens: u128::MAX >> 1,
                    output_tokens: 1 << 70,
                    cached_tokens: 300,
                    thinking_tokens: 0,
                    api_calls: u64::MAX / 3,
                },
            ),
        ] {
            let part = &entries[..count];
            let mut expected = Vec::new();
            schema::encode(&encode(part, totals, 0).unwrap(), &mut expected);
            let mut written = Vec::new();
            encode_into(2, part, (totals, 0), &mut written).unwrap();
            assert_eq!(written, expected, "{count} events");
            assert_eq!(decode(2, &written).unwrap().entries, part);
        }
        // Not that block's events, or out of file order: refused.
        let mut written = Vec::new();
        assert!(encode_into(1, &entries, (Totals::default(), 0), &mut written).is_err());
        let mut swapped = entries[..2].to_vec();
        swapped.swap(0, 1);
        (swapped[0].ordinal, swapped[1].ordinal) = (128, 129);
        assert!(encode_into(2, &swapped, (Totals::default(), 0), &mut written).is_err());
    }

    /// The checks [`decode`] makes, applied to postcard's own reading of the bytes: the
    /// reference the field-by-field reader must agree with.
    fn decode_with_postcard(number: u64, bytes: &[u8]) -> Option<Vec<Entry>> {
        let block: Block = schema::decode(bytes)?;
        let mut rebuilt = Vec::new();
        schema::encode(&block, &mut rebuilt);
        decode(number, &rebuilt).map(|b| b.entries)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]

        /// On any bytes with a valid crc, the field-by-field reader accepts exactly what
        /// postcard accepts and reads the same block.
        #[test]
        fn blocks_are_read_as_postcard_reads_them(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            number in 0u64..4,
        ) {
            let mut bytes = body.clone();
            bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
            let ours = decode(number, &bytes).map(|b| b.entries);
            let theirs = decode_with_postcard(number, &bytes);
            proptest::prop_assert_eq!(ours, theirs);
        }

        /// And on mostly valid blocks (the arbitrary bytes above rarely are one).
        #[test]
        fn edited_blocks_are_read_as_postcard_reads_them(
            count in 1usize..=64,
            edits in proptest::collection::vec((proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()), 0..3),
        ) {
            let mut entries = Vec::new();
            let mut offset = 7;
            for i in 0..count as u64 {
                let e = entry(i, offset, i * 3, [flags::TOKEN, 0][i as usize % 2]);
                offset = e.end();
                entries.push(e);
            }
            let mut bytes = Vec::new();
            encode_into(0, &entries, (Totals::default(), 0), &mut bytes).unwrap();
            let mut body = bytes[..bytes.len() - 4].to_vec();
            for (at, byte) in &edits {
                let i = at.index(body.len());
                body[i] = *byte;
            }
            let mut edited = body.clone();
            edited.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
            let ours = decode(0, &edited).map(|b| b.entries);
            proptest::prop_assert_eq!(&ours, &decode_with_postcard(0, &edited));
            if edits.is_empty() {
                proptest::prop_assert_eq!(ours, Some(entries));
            }
        }
    }

    #[test]
    fn varints_are_bounded_as_postcard_bounds_them() {
        let mut bytes = Vec::new();
        encode_into(0, &[entry(0, 0, 0, 0)], (Totals::default(), 0), &mut bytes).unwrap();
        // The first field, the block's first offset (0), is the byte 0x00: write it longer.
        let with_first = |varint: &[u8]| {
            let mut body = varint.to_vec();
            body.extend_from_slice(&bytes[1..bytes.len() - 4]);
            let crc = crc32fast::hash(&body);
            body.extend_from_slice(&crc.to_le_bytes());
            body
        };
        // Overlong but in range: both read 0.
        let overlong = with_first(&[0x80, 0x80, 0x00]);
        assert!(decode(0, &overlong).is_some());
        assert_eq!(
            decode(0, &overlong).map(|b| b.entries),
            decode_with_postcard(0, &overlong)
        );
        // Ten bytes whose last one carries more than a u64's 64th bit: both refuse.
        let mut too_big = vec![0x80; 9];
        too_big.push(0x02);
        let too_big = with_first(&too_big);
        assert!(decode(0, &too_big).is_none());
        assert!(decode_with_postcard(0, &too_big).is_none());
        // Eleven bytes: both refuse.
        let mut too_long = vec![0x80; 10];
        too_long.push(0x00);
        let too_long = with_first(&too_long);
        assert!(decode(0, &too_long).is_none());
        assert!(decode_with_postcard(0, &too_long).is_none());
        // A u128 (the third field, the totals' input tokens, also 0x00): 19 bytes whose last
        // one carries bits past the 128th, which a shift would drop: both refuse.
        assert_eq!(&bytes[..3], &[0, 0, 0]);
        let mut body = vec![0, 0];
        body.extend(vec![0x80; 18]);
        body.push(0x04);
        body.extend_from_slice(&bytes[3..bytes.len() - 4]);
        let crc = crc32fast::hash(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        assert!(decode_with_postcard(0, &body).is_none());
        assert!(decode(0, &body).is_none());
    }

    #[test]
    fn a_prefix_is_the_first_events_and_never_served_as_the_whole_block() {
        use redb::ReadableDatabase;
        let entries: Vec<Entry> = (0..BLOCK_EVENTS)
            .map(|i| entry(i, i * 10, i, [0, flags::TOKEN][i as usize % 2]))
            .collect();
        let backend = redb::backends::InMemoryBackend::new();
        let db = redb::Database::builder()
            .create_with_backend(backend)
            .unwrap();
        let txn = db.begin_write().unwrap();
        write(&txn, &entries, &mut Vec::new()).unwrap();
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        let whole = |block: Option<&DecodedBlock>| block.map(|b| b.entries.clone());
        for slots in [1, 5, 63, 64, 100] {
            let mut reader = BlockReader::open(&read).unwrap();
            let prefix = reader.block_prefix(0, slots).unwrap().unwrap();
            assert_eq!(prefix.entries, entries[..slots.min(BLOCK_EVENTS) as usize]);
            // A longer prefix than the cached one decodes again; a shorter one is served.
            let longer = reader.block_prefix(0, slots + 1).unwrap().unwrap();
            assert_eq!(
                longer.entries,
                entries[..(slots + 1).min(BLOCK_EVENTS) as usize]
            );
            let shorter = reader.block_prefix(0, slots).unwrap().unwrap();
            assert_eq!(shorter.entries.len() as u64, (slots + 1).min(BLOCK_EVENTS));
            // Whole-block reads never see a prefix, even for events inside it.
            assert_eq!(
                whole(reader.block_at(entries[0].offset).unwrap()),
                Some(entries.clone())
            );
            reader.block_prefix(0, slots).unwrap();
            assert_eq!(
                whole(reader.block_before(entries[0].offset + 1).unwrap()),
                Some(entries.clone())
            );
            reader.block_prefix(0, slots).unwrap();
            assert_eq!(whole(reader.block(0).unwrap()), Some(entries.clone()));
            reader.block_prefix(0, slots).unwrap();
            let last = reader.event(BLOCK_EVENTS - 1).unwrap().cloned();
            assert_eq!(last.as_ref(), entries.last());
            assert!(reader.block_prefix(1, 3).unwrap().is_none());
        }
    }

    #[test]
    fn contradictory_blocks_are_damaged() {
        let good = encode(&[entry(0, 0, 0, flags::TOKEN)], Totals::default(), 0).unwrap();
        let check = |block: &Block| {
            let mut bytes = Vec::new();
            schema::encode(block, &mut bytes);
            decode(0, &bytes).is_some()
        };
        assert!(check(&good));
        let mut bad = good.clone();
        bad.entries[0].tokens = None;
        assert!(!check(&bad), "a token event without counts");
        let mut bad = good.clone();
        bad.entries[0].flags = flags::TOKEN | flags::BOUNDARY;
        assert!(!check(&bad), "both kinds");
        let mut bad = good.clone();
        bad.entries[0].flags |= 0x40;
        assert!(!check(&bad), "an unknown flag");
        let mut bad = good.clone();
        bad.entries[0].gap = 1;
        assert!(!check(&bad), "a first event away from the block's start");
        let mut bad = good.clone();
        bad.entries[0].time_delta = Some(i64::MAX);
        assert!(!check(&bad), "a timestamp out of range");
        let mut bad = good.clone();
        bad.entries.clear();
        assert!(!check(&bad), "an empty block");
        let mut bad = good;
        bad.entries = vec![bad.entries[0].clone(); 65];
        assert!(!check(&bad), "too many events");
    }
}
