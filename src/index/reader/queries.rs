//! [`Index`]'s queries: boundaries, totals, events by offset, seq or type, and invalid lines,
//! answered from the last commit's rows and the in-memory tail.

use std::fs::File;

use redb::ReadableTable;

use super::Index;
use crate::event::{GenerationStart, LineProblem, Totals};
use crate::index::IndexError;
use crate::index::blocks::{BlockReader, DecodedBlock, Entry, ReadError};
use crate::index::rows::problem_from_code;
use crate::index::schema::{self, BOUNDARIES, EventRow, INVALID, SEQ_RUNS, TYPE_BLOCKS};
use crate::index::seq_runs;

impl Index {
    /// Every boundary in file order (the start of generations 1, 2, ...): O(generations).
    pub fn boundaries(&self) -> Result<Vec<GenerationStart>, IndexError> {
        let count = self.view.meta.fold.boundaries;
        let mut out = self.read(|txn| {
            let table = txn
                .open_table(BOUNDARIES)
                .map_err(|e| IndexError::redb_failure(&self.paths.index, e))?;
            let mut out = Vec::new();
            for entry in table
                .range(1..=count)
                .map_err(|e| IndexError::redb_failure(&self.paths.index, e))?
            {
                let (_, row) = entry.map_err(|e| IndexError::redb_failure(&self.paths.index, e))?;
                out.push(
                    schema::decode::<GenerationStart>(row.value())
                        .ok_or_else(|| self.damaged("a boundary row fails its checksum"))?,
                );
            }
            Ok(out)
        })?;
        if out.len() as u64 != count {
            return Err(self.damaged("boundary rows are missing"));
        }
        out.extend(self.view.tail.boundaries.iter().cloned());
        Ok(out)
    }

    /// Runs `f` over the blocks of the last commit, inside one read transaction. A damaged or
    /// contradictory row is reported as damage (see [`Index::read`]).
    fn with_blocks<T>(
        &self,
        f: impl FnOnce(&redb::ReadTransaction, &mut BlockReader) -> Result<T, ReadError>,
    ) -> Result<T, IndexError> {
        self.read(|txn| {
            let mut blocks = BlockReader::open(txn)
                .map_err(|e| IndexError::redb_failure(&self.paths.index, e))?;
            f(txn, &mut blocks).map_err(|e| match e {
                ReadError::Redb(e) => IndexError::redb_failure(&self.paths.index, e),
                ReadError::Damaged(detail) => IndexError::storage(&self.paths.index, detail),
            })
        })
    }

    /// Totals of the token events strictly before `offset`: one block read.
    pub fn totals_before(&self, offset: u64) -> Result<Totals, IndexError> {
        if let Some((_, totals)) = self
            .view
            .tail
            .prefix
            .iter()
            .rev()
            .find(|(at, _)| *at < offset)
        {
            return Ok(*totals);
        }
        let end = offset.min(self.view.meta.watermark());
        self.with_blocks(|_, blocks| {
            Ok(blocks
                .block_before(end)?
                .map_or_else(Totals::default, |block| block.totals_before(end)))
        })
    }

    /// Totals of the token events in `[from, to)`: two block reads.
    pub fn totals_between(&self, from: u64, to: u64) -> Result<Totals, IndexError> {
        Ok(self.totals_before(to)?.since(&self.totals_before(from)?))
    }

    /// The stored row of the event line at `offset`, if it is an indexed event.
    pub fn event_at(&self, offset: u64) -> Result<Option<EventRow>, IndexError> {
        if offset >= self.view.meta.watermark() {
            return Ok(None);
        }
        self.with_blocks(|_, blocks| {
            Ok(blocks
                .block_at(offset)?
                .and_then(|block| block.at_offset(offset))
                .map(|entry| entry.row.clone()))
        })
    }

    /// The offset of the (first) event with `seq`, among indexed events.
    pub fn offset_of_seq(&self, seq: u64) -> Result<Option<u64>, IndexError> {
        Ok(self
            .seq_offsets(seq, seq)?
            .first()
            .map(|&(_, offset)| offset))
    }

    /// (seq, offset) of the indexed events with `from <= seq <= to`, in seq order: a range
    /// read of the seq runs and the blocks they point into.
    pub fn seq_offsets(&self, from: u64, to: u64) -> Result<Vec<(u64, u64)>, IndexError> {
        let mut out = Vec::new();
        self.for_seqs(from, to, |entry| out.push((entry.row.seq, entry.offset)))?;
        Ok(out)
    }

    /// Calls `f` on each indexed event with `from <= seq <= to`, in seq order, inside one read
    /// transaction. Each run's events are checked to hold the seqs it maps to them.
    fn for_seqs(&self, from: u64, to: u64, mut f: impl FnMut(&Entry)) -> Result<(), IndexError> {
        if from > to {
            return Ok(());
        }
        self.with_blocks(|txn, blocks| {
            let runs = txn.open_table(SEQ_RUNS)?;
            for run in seq_runs::runs_within(&runs, from, to)? {
                for i in 0..run.len {
                    let seq = run.start + i;
                    let damaged = || ReadError::Damaged(format!("the event of seq {seq} is not"));
                    let ordinal = run.event.checked_add(i).ok_or_else(damaged)?;
                    match blocks.event(ordinal)? {
                        Some(entry) if entry.row.seq == seq => f(entry),
                        _ => return Err(damaged()),
                    }
                }
            }
            Ok(())
        })
    }

    /// (seq, offset, line) of the indexed events with `from <= seq <= to`, in seq order, in one
    /// read transaction (each line read back from the log).
    pub fn lines_for_seqs(
        &self,
        from: u64,
        to: u64,
    ) -> Result<Vec<(u64, u64, Vec<u8>)>, IndexError> {
        let mut rows = Vec::new();
        self.for_seqs(from, to, |entry| {
            rows.push((entry.row.seq, entry.offset, entry.row.len));
        })?;
        rows.into_iter()
            .map(|(seq, offset, len)| Ok((seq, offset, self.read_line(offset, len)?)))
            .collect()
    }

    /// (offset, line) of the indexed events at `offsets`, in one read transaction; offsets
    /// that are not indexed events are left out.
    pub fn lines_at(&self, offsets: &[u64]) -> Result<Vec<(u64, Vec<u8>)>, IndexError> {
        let watermark = self.view.meta.watermark();
        let rows = self.with_blocks(|_, blocks| {
            let mut rows = Vec::new();
            for &offset in offsets.iter().filter(|o| **o < watermark) {
                if let Some(entry) = blocks.block_at(offset)?.and_then(|b| b.at_offset(offset)) {
                    rows.push((offset, entry.row.len));
                }
            }
            Ok(rows)
        })?;
        self.read_lines(rows)
    }

    /// Each (offset, length) read back from the log as (offset, line).
    fn read_lines(&self, rows: Vec<(u64, u64)>) -> Result<Vec<(u64, Vec<u8>)>, IndexError> {
        rows.into_iter()
            .map(|(offset, len)| Ok((offset, self.read_line(offset, len)?)))
            .collect()
    }

    fn read_line(&self, offset: u64, len: u64) -> Result<Vec<u8>, IndexError> {
        let mut line = vec![0; usize::try_from(len).unwrap_or(0)];
        let complete = crate::log::read_exact_at(&self.log, &mut line, offset)
            .map_err(|e| IndexError::log_read(&self.paths.log, e))?;
        if !complete {
            return Err(IndexError::LogChanged {
                path: self.paths.index.clone(),
            });
        }
        Ok(line)
    }

    /// The bytes (without `\n`) of the indexed event line at `offset`, read back from the log.
    pub fn line_at(&self, offset: u64) -> Result<Option<Vec<u8>>, IndexError> {
        match self.event_at(offset)? {
            Some(row) => self.read_line(offset, row.len).map(Some),
            None => Ok(None),
        }
    }

    /// The log file this index was validated against.
    pub fn log_file(&self) -> &File {
        &self.log
    }

    /// The offset of the last indexed event of type `name`.
    pub fn last_offset_of_type(&self, name: &str) -> Result<Option<u64>, IndexError> {
        let Some(id) = self.view.types.get(name) else {
            return Ok(None);
        };
        self.with_blocks(|txn, blocks| {
            let table = txn.open_table(TYPE_BLOCKS)?;
            let Some(row) = table.range((id, 0)..=(id, u64::MAX))?.next_back() else {
                return Ok(None);
            };
            let (key, mask) = row?;
            let (number, mask) = (key.value().1, mask.value());
            let block = typed_block(blocks, id, number, mask)?;
            let slot = 63 - mask.leading_zeros() as usize;
            Ok(block.entries.get(slot).map(|entry| entry.offset))
        })
    }

    /// The last indexed event strictly before `offset`, with its row.
    pub fn last_event_before(&self, offset: u64) -> Result<Option<(u64, EventRow)>, IndexError> {
        let end = offset.min(self.view.meta.watermark());
        self.with_blocks(|_, blocks| {
            Ok(blocks.block_before(end)?.and_then(|block| {
                block
                    .entries
                    .iter()
                    .rev()
                    .find(|entry| entry.offset < end)
                    .map(|entry| (entry.offset, entry.row.clone()))
            }))
        })
    }

    /// Offsets of indexed events of type `name`, in file order, starting at `from`, at most
    /// `limit` of them: the type's block masks, and only the blocks they name.
    pub fn offsets_of_type(
        &self,
        name: &str,
        from: u64,
        limit: usize,
    ) -> Result<Vec<u64>, IndexError> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.for_type(name, from, u64::MAX, |entry| {
            out.push(entry.offset);
            out.len() < limit
        })?;
        Ok(out)
    }

    /// (offset, line) of the indexed events of type `name` before offset `end`, in file
    /// order, each line read back from the log: what [`Index::offsets_of_type`] and
    /// [`Index::lines_at`] give together, reading each block once.
    pub fn lines_of_type(&self, name: &str, end: u64) -> Result<Vec<(u64, Vec<u8>)>, IndexError> {
        let mut rows = Vec::new();
        let end = end.min(self.view.meta.watermark());
        self.for_type(name, 0, end, |entry| {
            rows.push((entry.offset, entry.row.len));
            true
        })?;
        self.read_lines(rows)
    }

    /// Calls `f` on each indexed event of type `name` with `from <= offset < end`, in file
    /// order, until it returns false: the type's block masks, and only the blocks they name.
    fn for_type(
        &self,
        name: &str,
        from: u64,
        end: u64,
        mut f: impl FnMut(&Entry) -> bool,
    ) -> Result<(), IndexError> {
        let Some(id) = self.view.types.get(name) else {
            return Ok(());
        };
        self.with_blocks(|txn, blocks| {
            let first_block = blocks.block_at(from)?.map_or(0, DecodedBlock::number);
            let table = txn.open_table(TYPE_BLOCKS)?;
            // Keys carry no crc: a damaged one could name a block twice or out of order.
            let mut last_block = None;
            for row in table.range((id, first_block)..=(id, u64::MAX))? {
                let (key, mask) = row?;
                let (number, mut mask) = (key.value().1, mask.value());
                if last_block.is_some_and(|last| number <= last) {
                    return Err(ReadError::Damaged(format!(
                        "the type masks name block {number} out of order"
                    )));
                }
                last_block = Some(number);
                let block = typed_block(blocks, id, number, mask)?;
                while mask != 0 {
                    let slot = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    let Some(entry) = block.entries.get(slot) else {
                        continue;
                    };
                    if entry.offset >= end {
                        return Ok(());
                    }
                    if entry.offset >= from && !f(entry) {
                        return Ok(());
                    }
                }
            }
            Ok(())
        })
    }

    /// The name of a type id found in an [`EventRow`].
    pub fn type_name(&self, id: u32) -> Option<&str> {
        self.view.types.name(id)
    }

    /// Every invalid line (offset and problem) of the indexed prefix.
    pub fn invalid_lines(&self) -> Result<Vec<(u64, LineProblem)>, IndexError> {
        self.read(|txn| {
            let table = txn
                .open_table(INVALID)
                .map_err(|e| IndexError::redb_failure(&self.paths.index, e))?;
            let mut out = Vec::new();
            for entry in table
                .iter()
                .map_err(|e| IndexError::redb_failure(&self.paths.index, e))?
            {
                let (offset, code) =
                    entry.map_err(|e| IndexError::redb_failure(&self.paths.index, e))?;
                let problem = problem_from_code(code.value())
                    .ok_or_else(|| self.damaged("an invalid-line row has an unknown code"))?;
                out.push((offset.value(), problem));
            }
            Ok(out)
        })
    }
}

/// Block `number`, checked to hold an event of type `id` at every bit of `mask` (a row of
/// [`TYPE_BLOCKS`]). Only its events up to the last `mask` names may be decoded: read nothing
/// else of it.
fn typed_block(
    blocks: &mut BlockReader,
    id: u32,
    number: u64,
    mask: u64,
) -> Result<&DecodedBlock, ReadError> {
    let damaged = || ReadError::Damaged(format!("the type mask of block {number} is wrong"));
    if mask == 0 {
        return Err(damaged());
    }
    let slots = u64::from(u64::BITS - mask.leading_zeros());
    let block = blocks.block_prefix(number, slots)?.ok_or_else(damaged)?;
    let mut bits = mask;
    while bits != 0 {
        let slot = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        if block.entries.get(slot).is_none_or(|e| e.row.type_id != id) {
            return Err(damaged());
        }
    }
    Ok(block)
}
