//! Turning folded lines into index rows, and writing them. The catch-up path writes rows as it
//! scans; the live writer queues them and writes them at its next commit. Both go through
//! [`RowSink`], so there is one definition of what a row is.

use std::collections::HashMap;

use redb::{ReadableTable, Table, WriteTransaction};

use super::schema::{
    self, BOUNDARIES, EVENTS, EventRow, INVALID, MAX_TYPES, META, META_KEY, Meta, OTHER_TYPE,
    PREFIX, SEQS, TYPE_EVENTS, TYPES, flags,
};
use crate::event::{
    EventKind, FoldState, Folded, FoldedEvent, GenerationStart, LineProblem, Totals,
};

/// A row to store for one line.
#[derive(Clone, Debug)]
pub(crate) enum Row {
    /// An invalid line (blank lines are only counted).
    Invalid { offset: u64, problem: LineProblem },
    /// An event line.
    Event {
        offset: u64,
        row: EventRow,
        /// Prefix totals after a token event.
        totals_after: Option<Totals>,
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
        let (totals_after, boundary) = match event.kind {
            EventKind::Token => {
                bits |= flags::TOKEN;
                (Some(state.totals), None)
            }
            EventKind::Boundary => {
                bits |= flags::BOUNDARY;
                (None, state.latest.clone().map(Box::new))
            }
            EventKind::Header | EventKind::Other => (None, None),
        };
        Row::Event {
            offset: event.offset,
            row: EventRow {
                len: event.len,
                seq: event.seq,
                time: event.time,
                type_id: types.id(event.type_name.as_deref()),
                generation: event.generation,
                flags: bits,
            },
            totals_after,
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
    unsaved: Vec<(u32, String)>,
}

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
            map.ids.insert(name.value().to_owned(), id.value());
        }
        Ok(map)
    }

    /// The id of a type name, assigning one if new.
    pub(crate) fn id(&mut self, name: Option<&str>) -> u32 {
        let Some(name) = name else {
            return OTHER_TYPE;
        };
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let next = u32::try_from(self.ids.len()).unwrap_or(MAX_TYPES);
        if next >= MAX_TYPES {
            return OTHER_TYPE;
        }
        self.ids.insert(name.to_owned(), next);
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

/// The tables of one write transaction.
pub(crate) struct RowSink<'t> {
    events: Table<'t, u64, &'static [u8]>,
    seqs: Table<'t, u64, u64>,
    boundaries: Table<'t, u64, &'static [u8]>,
    prefix: Table<'t, u64, &'static [u8]>,
    types: Table<'t, u32, &'static str>,
    type_events: Table<'t, (u32, u64), ()>,
    invalid: Table<'t, u64, u8>,
    meta: Table<'t, &'static str, &'static [u8]>,
    /// The largest seq stored so far: a larger one cannot be a duplicate.
    max_seq: Option<u64>,
    buf: Vec<u8>,
}

impl<'t> RowSink<'t> {
    pub(crate) fn open(txn: &'t WriteTransaction) -> Result<RowSink<'t>, redb::Error> {
        let seqs = txn.open_table(SEQS)?;
        let max_seq = seqs.last()?.map(|(k, _)| k.value());
        Ok(RowSink {
            events: txn.open_table(EVENTS)?,
            seqs,
            boundaries: txn.open_table(BOUNDARIES)?,
            prefix: txn.open_table(PREFIX)?,
            types: txn.open_table(TYPES)?,
            type_events: txn.open_table(TYPE_EVENTS)?,
            invalid: txn.open_table(INVALID)?,
            meta: txn.open_table(META)?,
            max_seq,
            buf: Vec::with_capacity(64),
        })
    }

    /// Writes one row; `duplicate_seqs` counts explicit seqs already taken.
    pub(crate) fn write(&mut self, row: &Row, duplicate_seqs: &mut u64) -> Result<(), redb::Error> {
        match row {
            Row::Invalid { offset, problem } => {
                self.invalid.insert(offset, problem_code(*problem))?;
            }
            Row::Event {
                offset,
                row,
                totals_after,
                boundary,
            } => {
                schema::encode(row, &mut self.buf);
                self.events.insert(offset, self.buf.as_slice())?;
                let taken = match self.max_seq {
                    Some(max) if row.seq <= max => self.seqs.get(row.seq)?.is_some(),
                    _ => false,
                };
                if taken {
                    *duplicate_seqs += 1;
                } else {
                    self.seqs.insert(row.seq, offset)?;
                    self.max_seq = Some(self.max_seq.map_or(row.seq, |m| m.max(row.seq)));
                }
                if row.type_id != OTHER_TYPE {
                    self.type_events.insert((row.type_id, *offset), ())?;
                }
                if let Some(totals) = totals_after {
                    schema::encode(totals, &mut self.buf);
                    self.prefix.insert(offset, self.buf.as_slice())?;
                }
                if let Some(start) = boundary {
                    schema::encode(start, &mut self.buf);
                    self.boundaries.insert(start.ordinal, self.buf.as_slice())?;
                }
            }
        }
        Ok(())
    }

    /// Stores new type names and the meta record: the last step before a commit.
    pub(crate) fn finish(&mut self, types: &mut TypeMap, meta: &Meta) -> Result<(), redb::Error> {
        for (id, name) in types.unsaved.drain(..) {
            self.types.insert(id, name.as_str())?;
        }
        self.meta.insert(
            schema::FORMAT_KEY,
            schema::FORMAT_VERSION.to_le_bytes().as_slice(),
        )?;
        schema::encode(meta, &mut self.buf);
        self.meta.insert(META_KEY, self.buf.as_slice())?;
        Ok(())
    }
}
