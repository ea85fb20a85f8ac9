//! Reading back what earlier lines left in the index, as a catch-up's new lines need it.

use redb::{
    Key, ReadOnlyTable, ReadTransaction, ReadableTable, ReadableTableMetadata, Table,
    TableDefinition, WriteTransaction,
};

use super::schema::{BUCKETS, KEYS, MARKS, SPANS, decode};
use crate::index::derived::contain::Leak;
use crate::transcript::fold::{
    BucketKey, Dedup, Entry, Message, Recall, RecallError, Span, widen_span,
};
use crate::transcript::tally::Tally;

/// The index's key, bucket and mark tables, read through any transaction.
pub(crate) struct Tables<K, B, M> {
    pub(crate) keys: K,
    pub(crate) buckets: B,
    pub(crate) marks: M,
}

/// The tables as a read transaction sees them.
type ReadTables = Tables<
    ReadOnlyTable<&'static str, &'static [u8]>,
    ReadOnlyTable<(i64, u32), &'static [u8]>,
    ReadOnlyTable<&'static str, &'static [u8]>,
>;

/// The tables as a write transaction sees them (a catch-up's lookups and its writes).
pub(crate) type WriteTables<'t> = Tables<
    Table<'t, &'static str, &'static [u8]>,
    Table<'t, (i64, u32), &'static [u8]>,
    Table<'t, &'static str, &'static [u8]>,
>;

impl ReadTables {
    /// Opens the three tables for reading.
    pub(crate) fn read(txn: &ReadTransaction) -> Result<ReadTables, redb::Error> {
        Ok(Tables {
            keys: txn.open_table(KEYS)?,
            buckets: txn.open_table(BUCKETS)?,
            marks: txn.open_table(MARKS)?,
        })
    }
}

impl<'t> WriteTables<'t> {
    /// Opens the three tables for writing.
    pub(crate) fn write(txn: &'t WriteTransaction) -> Result<WriteTables<'t>, redb::Error> {
        Ok(Tables {
            keys: txn.open_table(KEYS)?,
            buckets: txn.open_table(BUCKETS)?,
            marks: txn.open_table(MARKS)?,
        })
    }
}

fn damaged(what: &str) -> RecallError {
    RecallError(format!("a {what} row fails its checksum"))
}

fn storage(e: impl std::fmt::Display) -> RecallError {
    RecallError(e.to_string())
}

impl<K, B, M> Recall for Tables<K, B, M>
where
    K: ReadableTable<&'static str, &'static [u8]>,
    B: ReadableTable<(i64, u32), &'static [u8]>,
    M: ReadableTable<&'static str, &'static [u8]>,
{
    fn messages(&mut self, id: &str) -> Result<Option<Vec<Message>>, RecallError> {
        match self.keys.get(id).map_err(storage)? {
            None => Ok(None),
            Some(row) => decode::<Vec<Message>>(row.value())
                .map(Some)
                .ok_or_else(|| damaged("message")),
        }
    }

    fn seen(&mut self, id: &str) -> Result<bool, RecallError> {
        Ok(self.keys.get(id).map_err(storage)?.is_some())
    }

    fn bucket(&mut self, key: BucketKey) -> Result<Option<Tally>, RecallError> {
        match self.buckets.get(key).map_err(storage)? {
            None => Ok(None),
            Some(row) => decode::<Tally>(row.value())
                .map(Some)
                .ok_or_else(|| damaged("bucket")),
        }
    }

    fn marked(&mut self, uuid: &str) -> Result<bool, RecallError> {
        Ok(self.marks.get(uuid).map_err(storage)?.is_some())
    }
}

/// The number of rows of the key, bucket and mark tables (0 for a table that does not exist).
pub(crate) fn row_counts(txn: &ReadTransaction) -> Result<(u64, u64, u64), redb::Error> {
    Ok((count(txn, KEYS)?, count(txn, BUCKETS)?, count(txn, MARKS)?))
}

fn count<K: Key + 'static>(
    txn: &ReadTransaction,
    table: TableDefinition<K, &'static [u8]>,
) -> Result<u64, redb::Error> {
    match txn.open_table(table) {
        Ok(t) => Ok(Leak::new(t).get()?.len()?),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

/// Every key, bucket and mark the index holds, for a comparison with a fold. `expected` is
/// the (keys, buckets, marks) row counts of the meta record: a damaged tree can make an
/// iteration go round in circles, so rows out of order or beyond the count are damage.
pub(crate) fn load_all(
    txn: &ReadTransaction,
    claude: bool,
    expected: (u64, u64, u64),
) -> Result<Dedup, RecallError> {
    let mut dedup = load_rows(txn, claude, (expected.0, expected.1), false)?;
    let Some(marks) = open(txn, MARKS)? else {
        return Ok(dedup);
    };
    let mut last: Option<String> = None;
    for row in marks.get().map_err(storage)?.iter().map_err(storage)? {
        let (uuid, value) = row.map_err(storage)?;
        let uuid = uuid.value().to_owned();
        if dedup.marks.len() as u64 >= expected.2 || last.as_ref().is_some_and(|l| *l >= uuid) {
            return Err(damaged("mark (out of order)"));
        }
        decode::<()>(value.value()).ok_or_else(|| damaged("mark"))?;
        dedup.marks.insert(uuid.clone());
        last = Some(uuid);
    }
    Ok(dedup)
}

/// A table of encoded rows, for reading.
type RowTable<K> = ReadOnlyTable<K, &'static [u8]>;

/// A table for reading, `None` if nothing was ever written to it.
fn open<K: Key + 'static>(
    txn: &ReadTransaction,
    table: TableDefinition<K, &'static [u8]>,
) -> Result<Option<Leak<RowTable<K>>>, RecallError> {
    match txn.open_table(table) {
        Ok(t) => Ok(Some(Leak::new(t))),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(storage(e)),
    }
}

/// [`load_all`], or with `ids_only` every Claude Code message id without its messages (pi
/// entries are loaded whole either way).
pub(crate) fn load_rows(
    txn: &ReadTransaction,
    claude: bool,
    expected: (u64, u64),
    ids_only: bool,
) -> Result<Dedup, RecallError> {
    let mut dedup = Dedup::default();
    if let Some(keys) = open(txn, KEYS)? {
        let mut last: Option<String> = None;
        let mut seen = 0u64;
        for row in keys.get().map_err(storage)?.iter().map_err(storage)? {
            let (id, value) = row.map_err(storage)?;
            let id = id.value().to_owned();
            seen += 1;
            if seen > expected.0 || last.as_ref().is_some_and(|l| *l >= id) {
                return Err(damaged("key (out of order)"));
            }
            if claude && !ids_only {
                let messages =
                    decode::<Vec<Message>>(value.value()).ok_or_else(|| damaged("message"))?;
                dedup.messages.insert(id.clone(), messages);
            } else if claude {
                // The id alone (a merge looks up the few ids other files hold too).
                dedup.messages.insert(id.clone(), Vec::new());
                dedup.ids_only = true;
            } else {
                // A pi entry is small: loaded whole either way.
                let entry = decode::<Entry>(value.value()).ok_or_else(|| damaged("entry"))?;
                dedup.entries.insert(id.clone(), entry);
            }
            last = Some(id);
        }
    }
    if let Some(buckets) = open(txn, BUCKETS)? {
        let mut last = None;
        let mut seen = 0u64;
        for row in buckets.get().map_err(storage)?.iter().map_err(storage)? {
            let (key, value) = row.map_err(storage)?;
            let key = key.value();
            seen += 1;
            if seen > expected.1 || last.is_some_and(|l| l >= key) {
                return Err(damaged("bucket (out of order)"));
            }
            let tally = decode::<Tally>(value.value()).ok_or_else(|| damaged("bucket"))?;
            dedup.buckets.insert(key, tally);
            last = Some(key);
        }
    }
    load_spans(txn, i64::MIN, &mut dedup)?;
    Ok(dedup)
}

/// The spans from quarter-hour `from` on, in order (a row out of order is damage: a damaged
/// tree could otherwise go round in circles); a span outside its quarter-hour is damage too.
fn load_spans(txn: &ReadTransaction, from: i64, dedup: &mut Dedup) -> Result<(), RecallError> {
    let Some(spans) = open(txn, SPANS)? else {
        return Ok(());
    };
    let mut last = None;
    for row in spans
        .get()
        .map_err(storage)?
        .range(from..)
        .map_err(storage)?
    {
        let (key, value) = row.map_err(storage)?;
        let quarter = key.value();
        if last.is_some_and(|l| l >= quarter) {
            return Err(damaged("span (out of order)"));
        }
        let span = decode::<Span>(value.value())
            .filter(|s| s.is_in(quarter))
            .ok_or_else(|| damaged("span"))?;
        widen_span(&mut dedup.spans, quarter, span);
        last = Some(quarter);
    }
    Ok(())
}

/// The Claude Code messages filed under `ids` (an id the index does not hold is left out).
pub(crate) fn load_messages_of(
    txn: &ReadTransaction,
    ids: &[String],
) -> Result<Dedup, RecallError> {
    let mut dedup = Dedup::default();
    let Some(keys) = open(txn, KEYS)? else {
        return Ok(dedup);
    };
    let keys = keys.get().map_err(storage)?;
    for id in ids {
        if let Some(value) = keys.get(id.as_str()).map_err(storage)? {
            let messages =
                decode::<Vec<Message>>(value.value()).ok_or_else(|| damaged("message"))?;
            dedup.messages.insert(id.clone(), messages);
        }
    }
    Ok(dedup)
}

/// The buckets from quarter-hour `from` on (a day's total reads only these).
pub(crate) fn load_buckets_from(txn: &ReadTransaction, from: i64) -> Result<Dedup, RecallError> {
    let mut dedup = Dedup::default();
    if let Some(buckets) = open(txn, BUCKETS)? {
        let rows = buckets.get().map_err(storage)?;
        for row in rows.range((from, 0)..).map_err(storage)? {
            let (key, value) = row.map_err(storage)?;
            let tally = decode::<Tally>(value.value()).ok_or_else(|| damaged("bucket"))?;
            dedup.buckets.insert(key.value(), tally);
        }
    }
    load_spans(txn, from, &mut dedup)?;
    Ok(dedup)
}
