//! The deepest check of an index: every table compared, row by row and byte for byte, with a
//! fresh build of the same prefix of the log.
//!
//! The checks on open (versions, the log's windows, table lengths) and the checksum in every
//! row's value cannot see a damaged key: redb checksums its pages but verifies them only
//! while repairing, and some values (seq runs, type masks, block starts) are plain integers.
//! A key or such a value that changed is a row under the wrong offset, seq or type, and a
//! query near it might believe it. Comparing with a rebuild finds any such difference.

use redb::{Key, ReadTransaction, ReadableTable, TableDefinition, TableError, Value};

use super::schema::{
    self, BLOCK_STARTS, BLOCKS, BOUNDARIES, INVALID, META, META_KEY, Meta, SEQ_RUNS, TYPE_BLOCKS,
    TYPES,
};

/// How one table of the index compares with a fresh build of the same prefix of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableComparison {
    /// The table's name (see `docs/FORMAT.md`).
    pub table: &'static str,
    /// Rows in the index.
    pub rows: u64,
    /// Rows in the fresh build.
    pub expected_rows: u64,
    /// The first difference in key order, described; `None` if the tables are identical.
    pub first_difference: Option<String>,
}

impl TableComparison {
    /// Whether the index's table is identical to the fresh build's.
    pub fn matches(&self) -> bool {
        self.first_difference.is_none()
    }
}

/// The watermark the committed meta record of `txn` claims, if it can be read.
pub(crate) fn committed_watermark(txn: &ReadTransaction) -> Result<Option<u64>, redb::Error> {
    let table = match txn.open_table(META) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let meta = table.get(META_KEY)?;
    Ok(meta
        .and_then(|m| schema::decode::<Meta>(m.value()))
        .map(|m| m.watermark()))
}

/// Which side of a comparison failed to read.
pub(crate) enum CompareError {
    /// The index being verified.
    Stored(redb::Error),
    /// The fresh build.
    Fresh(redb::Error),
}

/// Compares every table of `stored` with the same table of `fresh`.
pub(crate) fn compare_tables(
    stored: &ReadTransaction,
    fresh: &ReadTransaction,
) -> Result<Vec<TableComparison>, CompareError> {
    Ok(vec![
        compare(stored, fresh, "meta", META)?,
        compare(stored, fresh, "blocks", BLOCKS)?,
        compare(stored, fresh, "block_starts", BLOCK_STARTS)?,
        compare(stored, fresh, "seq_runs", SEQ_RUNS)?,
        compare(stored, fresh, "boundaries", BOUNDARIES)?,
        compare(stored, fresh, "types", TYPES)?,
        compare(stored, fresh, "type_blocks", TYPE_BLOCKS)?,
        compare(stored, fresh, "invalid", INVALID)?,
    ])
}

/// Walks both tables in key order; every row is read (the counts are of all rows) and the
/// first pair of rows whose keys or values differ is described.
fn compare<K: Key + 'static, V: Value + 'static>(
    stored: &ReadTransaction,
    fresh: &ReadTransaction,
    name: &'static str,
    definition: TableDefinition<K, V>,
) -> Result<TableComparison, CompareError> {
    use CompareError::{Fresh, Stored};
    let ours = open(stored, definition).map_err(Stored)?;
    let theirs = open(fresh, definition).map_err(Fresh)?;
    let ours = ours.as_ref().map(ReadableTable::iter).transpose();
    let mut ours = ours.map_err(|e| Stored(e.into()))?;
    let theirs = theirs.as_ref().map(ReadableTable::iter).transpose();
    let mut theirs = theirs.map_err(|e| Fresh(e.into()))?;
    let mut comparison = TableComparison {
        table: name,
        rows: 0,
        expected_rows: 0,
        first_difference: None,
    };
    let shown = |key: &K::SelfType<'_>| format!("{key:?}");
    loop {
        let a = ours.as_mut().and_then(Iterator::next).transpose();
        let a = a.map_err(|e| Stored(e.into()))?;
        let b = theirs.as_mut().and_then(Iterator::next).transpose();
        let b = b.map_err(|e| Fresh(e.into()))?;
        comparison.rows += u64::from(a.is_some());
        comparison.expected_rows += u64::from(b.is_some());
        let difference = match (a, b) {
            (None, None) => break,
            (Some((key, _)), None) => {
                format!("the index has an extra row at key {}", shown(&key.value()))
            }
            (None, Some((key, _))) => {
                format!("the index lacks the row at key {}", shown(&key.value()))
            }
            (Some((ka, va)), Some((kb, vb))) => {
                let (ka, kb) = (ka.value(), kb.value());
                if K::as_bytes(&ka).as_ref() != K::as_bytes(&kb).as_ref() {
                    format!(
                        "the index has a row at key {} where a rebuild has one at {}",
                        shown(&ka),
                        shown(&kb)
                    )
                } else if V::as_bytes(&va.value()).as_ref() != V::as_bytes(&vb.value()).as_ref() {
                    format!("the row at key {} holds a different value", shown(&ka))
                } else {
                    continue;
                }
            }
        };
        comparison.first_difference.get_or_insert(difference);
    }
    Ok(comparison)
}

fn open<K: Key + 'static, V: Value + 'static>(
    txn: &ReadTransaction,
    definition: TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>, redb::Error> {
    match txn.open_table(definition) {
        Ok(table) => Ok(Some(table)),
        // A table nothing was ever written to does not exist: it holds no rows.
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
