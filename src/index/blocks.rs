//! Events stored in blocks ([`BLOCKS`], [`BLOCK_STARTS`], [`TYPE_BLOCKS`]): the one owner of
//! how events are encoded into blocks of [`BLOCK_EVENTS`], written, and read back.
//!
//! Block `b` holds the events with ordinals `64 b .. 64 b + 64`. A commit whose first event
//! falls inside the last stored block rewrites that block with the new events appended, so an
//! index caught up commit by commit holds exactly the rows a rebuild would (what
//! `verify --deep` compares). Decoding checks every field against the others, so a damaged
//! block is reported, never believed.

mod codec;
#[cfg(test)]
mod tests;

use std::ops::Bound;

use redb::{ReadOnlyTable, ReadTransaction, ReadableTable, Table, WriteTransaction};

use super::schema::{BLOCK_EVENTS, BLOCK_STARTS, BLOCKS, OTHER_TYPE, TYPE_BLOCKS};
use crate::event::Totals;
pub(crate) use codec::{DecodedBlock, Entry, decode};
use codec::{damaged, decode_prefix, encode_into};

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
        for block in rest.chunks(usize::try_from(BLOCK_EVENTS).unwrap_or(usize::MAX)) {
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
