//! Turning folded lines into index rows, and writing them. The catch-up path writes rows as it
//! scans; the live writer queues them and writes them at its next commit. Both go through
//! [`RowBuffer`], so there is one definition of what a row is and how it is stored (events go
//! to [`blocks`](super::blocks), their seqs to [`seq_runs`](super::seq_runs)).

use std::collections::HashMap;

use redb::{ReadableTable, Table, WriteTransaction};

use super::blocks::{self, Entry};
use super::derived::record::write_meta;
use super::schema::{
    self, BOUNDARIES, EventRow, INVALID, MAX_TYPES, Meta, OTHER_TYPE, SEQ_RUNS, TYPES, TypesSum,
    flags,
};
use super::seq_runs;
use crate::event::{EventKind, FoldState, Folded, FoldedEvent, GenerationStart, LineProblem};

/// A row to store for one line.
#[derive(Clone, Debug)]
pub(crate) enum Row {
    /// An invalid line (blank lines are only counted).
    Invalid { offset: u64, problem: LineProblem },
    /// An event line.
    Event {
        entry: Entry,
        /// The generation a boundary starts.
        boundary: Option<Box<GenerationStart>>,
    },
}

impl Row {
    /// The row for a folded line, given the fold state right after it.
    pub(crate) fn from_folded(
        folded: &Folded<'_>,
        offset: u64,
        state: &FoldState,
        types: &mut TypeMap,
    ) -> Option<Row> {
        match folded {
            Folded::Skipped(LineProblem::Blank) | Folded::Header => None,
            Folded::Skipped(problem) => Some(Row::Invalid {
                offset,
                problem: *problem,
            }),
            Folded::Event(event) => Some(Row::event(event, state, types)),
        }
    }

    fn event(event: &FoldedEvent<'_>, state: &FoldState, types: &mut TypeMap) -> Row {
        let mut bits = 0;
        if event.explicit_seq {
            bits |= flags::EXPLICIT_SEQ;
        }
        let boundary = match event.kind {
            EventKind::Token => {
                bits |= flags::TOKEN;
                None
            }
            EventKind::Boundary => {
                bits |= flags::BOUNDARY;
                state.latest.clone().map(Box::new)
            }
            EventKind::Header | EventKind::Other => None,
        };
        Row::Event {
            entry: Entry {
                // The state counts this event already.
                ordinal: state.events.saturating_sub(1),
                offset: event.offset,
                row: EventRow {
                    len: event.len,
                    seq: event.seq,
                    time: event.time,
                    type_id: types.id(event.type_name.as_deref()),
                    generation: event.generation,
                    flags: bits,
                },
                tokens: event.tokens,
            },
            boundary,
        }
    }
}

/// Problem codes stored in the `invalid` table.
pub(crate) fn problem_code(problem: LineProblem) -> u8 {
    match problem {
        LineProblem::Blank => 0,
        LineProblem::NotUtf8 => 1,
        LineProblem::NotJson => 2,
        LineProblem::NotAnObject => 3,
        LineProblem::TooLong => 4,
    }
}

/// The inverse of [`problem_code`].
pub(crate) fn problem_from_code(code: u8) -> Option<LineProblem> {
    Some(match code {
        0 => LineProblem::Blank,
        1 => LineProblem::NotUtf8,
        2 => LineProblem::NotJson,
        3 => LineProblem::NotAnObject,
        4 => LineProblem::TooLong,
        _ => return None,
    })
}

/// Event type names and their ids. New names get ids at once; they are stored at the next
/// commit.
#[derive(Clone, Debug, Default)]
pub(crate) struct TypeMap {
    ids: HashMap<String, u32>,
    /// The first few names and their ids, compared before hashing: a log has a handful of
    /// common types, and comparing a short name with each costs less than hashing it (the map
    /// keeps `SipHash`: a log crafted to collide must not make a build quadratic).
    first: Vec<(Box<str>, u32)>,
    /// Names given an id since the last commit, with their ids.
    pub(crate) unsaved: Vec<(u32, String)>,
    /// The sum of every name here, stored or not: what the table holds after they are saved.
    sum: TypesSum,
}

/// How many names [`TypeMap::first`] holds.
const FIRST_TYPES: usize = 8;

impl TypeMap {
    pub(crate) fn load(txn: &redb::ReadTransaction) -> Result<TypeMap, redb::Error> {
        let mut map = TypeMap::default();
        let table = match txn.open_table(TYPES) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(map),
            Err(e) => return Err(e.into()),
        };
        for entry in table.iter()? {
            let (id, name) = entry?;
            map.insert(name.value(), id.value());
        }
        Ok(map)
    }

    /// The sum of every name here, in id order: right after [`TypeMap::load`], the stored
    /// table's, to compare with the meta record's.
    pub(crate) fn sum(&self) -> TypesSum {
        self.sum
    }

    /// Takes the names not yet stored, for a commit that stores them, and records in `meta`
    /// the sum the table will have once they are.
    pub(crate) fn take_unsaved(&mut self, meta: &mut Meta) -> Vec<(u32, String)> {
        meta.types = self.sum;
        std::mem::take(&mut self.unsaved)
    }

    fn insert(&mut self, name: &str, id: u32) {
        self.sum = self.sum.with(id, name);
        if self.first.len() < FIRST_TYPES {
            self.first.push((name.into(), id));
        }
        self.ids.insert(name.to_owned(), id);
    }

    /// The id of a type name, assigning one if new.
    pub(crate) fn id(&mut self, name: Option<&str>) -> u32 {
        let Some(name) = name else {
            return OTHER_TYPE;
        };
        // The first byte settles most mismatches without a call to memcmp.
        let first_byte = name.as_bytes().first();
        if let Some((_, id)) = self
            .first
            .iter()
            .find(|(known, _)| known.as_bytes().first() == first_byte && **known == *name)
        {
            return *id;
        }
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let next = u32::try_from(self.ids.len()).unwrap_or(MAX_TYPES);
        if next >= MAX_TYPES {
            return OTHER_TYPE;
        }
        self.insert(name, next);
        self.unsaved.push((next, name.to_owned()));
        next
    }

    /// The id of a known type name (for queries).
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The name of a type id (for queries); linear, but type lists are short.
    pub(crate) fn name(&self, id: u32) -> Option<&str> {
        self.ids
            .iter()
            .find(|(_, v)| **v == id)
            .map(|(k, _)| k.as_str())
    }
}

/// Rows buffered for one commit. Events are encoded only when written, so a build's encoding
/// work falls on the thread that writes (see `WritableIndex::catch_up`).
#[derive(Default)]
pub(crate) struct RowBuffer {
    /// Events in file order (consecutive ordinals).
    events: Vec<Entry>,
    /// (ordinal, generation start) of boundaries, ascending.
    boundaries: Vec<(u64, GenerationStart)>,
    invalid: Vec<(u64, u8)>,
    scratch: Vec<u8>,
}

impl RowBuffer {
    /// Queues one row.
    pub(crate) fn push(&mut self, row: Row) {
        match row {
            Row::Invalid { offset, problem } => self.invalid.push((offset, problem_code(problem))),
            Row::Event { entry, boundary } => {
                self.events.push(entry);
                if let Some(start) = boundary {
                    self.boundaries.push((start.ordinal, *start));
                }
            }
        }
    }

    /// Rows queued (events and invalid lines).
    pub(crate) fn len(&self) -> usize {
        self.events.len() + self.invalid.len()
    }

    /// Drops every queued row.
    pub(crate) fn clear(&mut self) {
        self.events.clear();
        self.boundaries.clear();
        self.invalid.clear();
    }

    /// Writes every queued row, the new type names (drained from `new_types`) and the meta
    /// record into `txn`, and empties the buffer. Every table is opened, so an index holds all
    /// of them from its first commit.
    pub(crate) fn write(
        &mut self,
        txn: &WriteTransaction,
        new_types: &mut Vec<(u32, String)>,
        meta: &mut Meta,
    ) -> Result<(), redb::Error> {
        let scratch = &mut self.scratch;
        blocks::write(txn, &self.events, scratch)?;
        seq_runs::write(
            &mut txn.open_table(SEQ_RUNS)?,
            self.events.iter().map(|e| (e.row.seq, e.ordinal)),
            &mut meta.seqs,
        )?;
        append_sorted(&mut txn.open_table(BOUNDARIES)?, &self.boundaries, scratch)?;
        let mut invalid = txn.open_table(INVALID)?;
        for (offset, code) in &self.invalid {
            invalid.insert(offset, code)?;
        }
        let mut names = txn.open_table(TYPES)?;
        for (id, name) in new_types.drain(..) {
            names.insert(id, name.as_str())?;
        }
        drop(names);
        write_meta(txn, schema::FORMAT_VERSION, &*meta, &mut self.scratch)?;
        self.clear();
        Ok(())
    }
}

/// Encodes the values and inserts them, keys ascending, at the table's end through a cursor;
/// a key that is not above everything stored (never the case for a valid index) falls back to
/// a plain insert.
fn append_sorted<V: serde::Serialize>(
    table: &mut Table<'_, u64, &'static [u8]>,
    rows: &[(u64, V)],
    scratch: &mut Vec<u8>,
) -> Result<(), redb::Error> {
    let mut rest = rows;
    while !rest.is_empty() {
        let mut cursor = table.upper_bound_mut(std::ops::Bound::<u64>::Unbounded)?;
        let mut done = 0;
        for (key, value) in rest {
            schema::encode(value, scratch);
            match cursor.insert_before(key, scratch.as_slice()) {
                Ok(()) => done += 1,
                Err(redb::CursorError::UnorderedKey) => break,
                Err(redb::CursorError::Storage(e)) => return Err(e.into()),
                Err(e) => return Err(redb::Error::Corrupted(e.to_string())),
            }
        }
        cursor.close()?;
        if let Some((key, value)) = rest.get(done) {
            schema::encode(value, scratch);
            table.insert(key, scratch.as_slice())?;
            done += 1;
        }
        rest = &rest[done..];
    }
    Ok(())
}
