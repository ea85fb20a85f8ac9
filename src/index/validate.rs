//! The open-time checks. Each costs O(1) in the log's size: two 64 KiB windows, a handful of
//! table lookups.

use std::fs::File;
use std::io;

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata};

use super::blocks;
use super::rows::TypeMap;
use super::schema::{
    self, BLOCK_EVENTS, BLOCK_STARTS, BLOCKS, BOUNDARIES, FORMAT_KEY, FORMAT_VERSION, META,
    META_KEY, Meta, PARSER_VERSION,
};
use super::{IndexOptions, StaleReason};
use crate::event::{GenerationStart, Totals};

/// What reading the meta record found.
pub(crate) enum MetaRead {
    /// A new, empty index.
    Empty,
    /// A meta record of this format.
    Found(Box<Meta>),
    /// Something that cannot be used as is.
    Stale(StaleReason),
}

/// What the index's last commit holds, read from the index alone.
pub(crate) enum Loaded {
    /// A new index without any commit.
    Empty,
    /// A commit that cannot be used as is.
    Stale(StaleReason),
    /// A commit whose tables agree with its meta record, and its type names.
    Found(Box<Meta>, TypeMap),
}

/// Reads the meta record, checks the tables against it and loads the type names (checked
/// against their sum in the meta record). Touches only the index (the log is checked by
/// [`validate`]), so its errors are the index's.
pub(crate) fn load(txn: &ReadTransaction) -> Result<Loaded, redb::Error> {
    let meta = match read_meta(txn)? {
        MetaRead::Empty => return Ok(Loaded::Empty),
        MetaRead::Stale(reason) => return Ok(Loaded::Stale(reason)),
        MetaRead::Found(meta) => meta,
    };
    if let Some(reason) = check_structure(txn, &meta)? {
        return Ok(Loaded::Stale(reason));
    }
    let types = TypeMap::load(txn)?;
    if types.sum() != meta.types {
        return Ok(Loaded::Stale(StaleReason::Inconsistent {
            detail: format!(
                "the types table ({} names) does not match the meta record's sum ({} names)",
                types.sum().count,
                meta.types.count
            ),
        }));
    }
    Ok(Loaded::Found(meta, types))
}

/// How an index relates to its log.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Validity {
    /// It covers exactly the log's complete lines (or there may be a torn tail after W).
    Current,
    /// The log has bytes after the watermark.
    Behind,
    /// It must not be used.
    Stale(StaleReason),
}

/// What the index must have been built with to be usable.
pub(crate) struct Expected {
    pub(crate) profile: u32,
    pub(crate) max_line: u64,
}

impl Expected {
    /// What `options` require of an index.
    pub(crate) fn of(options: &IndexOptions) -> Expected {
        Expected {
            profile: options.fingerprint(),
            max_line: options.max_line as u64,
        }
    }
}

fn read_meta(txn: &ReadTransaction) -> Result<MetaRead, redb::Error> {
    let unreadable = |detail: &str| {
        MetaRead::Stale(StaleReason::Unreadable {
            detail: detail.to_owned(),
        })
    };
    let table = match txn.open_table(META) {
        Ok(table) => table,
        // A new file has no tables at all. Rows without a meta record are what is left of a
        // damaged file: building on top of them would keep the rows a new build does not
        // overwrite (and count every seq it writes again as a duplicate).
        Err(redb::TableError::TableDoesNotExist(_)) => {
            return Ok(match txn.list_tables()?.next() {
                None => MetaRead::Empty,
                Some(_) => unreadable("tables without a meta record"),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let Some(format) = table.get(FORMAT_KEY)? else {
        return Ok(unreadable("no format record"));
    };
    let Ok(format) = <[u8; 4]>::try_from(format.value()) else {
        return Ok(unreadable("malformed format record"));
    };
    let format = u32::from_le_bytes(format);
    if format != FORMAT_VERSION {
        return Ok(MetaRead::Stale(StaleReason::FormatChanged {
            found: format,
            expected: FORMAT_VERSION,
        }));
    }
    let Some(meta) = table.get(META_KEY)? else {
        return Ok(unreadable("no meta record"));
    };
    Ok(match schema::decode::<Meta>(meta.value()) {
        Some(meta) => MetaRead::Found(Box::new(meta)),
        None => unreadable("meta record fails its checksum"),
    })
}

/// Compares the meta record with the log: versions, length, head and tail windows.
pub(crate) fn validate(
    meta: &Meta,
    expected: &Expected,
    log: &File,
    log_len: u64,
) -> io::Result<Validity> {
    if meta.parser != PARSER_VERSION {
        return Ok(Validity::Stale(StaleReason::ParserChanged {
            found: meta.parser,
            expected: PARSER_VERSION,
        }));
    }
    if meta.profile != expected.profile || meta.max_line != expected.max_line {
        return Ok(Validity::Stale(StaleReason::ProfileChanged));
    }
    let watermark = meta.watermark();
    if log_len < watermark {
        return Ok(Validity::Stale(StaleReason::LogTruncated {
            indexed: watermark,
            len: log_len,
        }));
    }
    if !meta.head.matches(log)? {
        return Ok(Validity::Stale(StaleReason::HeadChanged));
    }
    if !meta.tail.matches(log)? {
        return Ok(Validity::Stale(StaleReason::TailChanged));
    }
    Ok(if log_len > watermark {
        Validity::Behind
    } else {
        Validity::Current
    })
}

/// Cheap self-consistency checks of the tables against the meta record (in the spirit of
/// Kafka's index sanity check): counts, the last block (its events, where it ends, the totals
/// after it), the latest boundary.
fn check_structure(txn: &ReadTransaction, meta: &Meta) -> Result<Option<StaleReason>, redb::Error> {
    let inconsistent = |detail: String| Ok(Some(StaleReason::Inconsistent { detail }));
    let fold = &meta.fold;
    let expected_blocks = fold.events.div_ceil(BLOCK_EVENTS);
    let blocks = txn.open_table(BLOCKS)?;
    let starts = txn.open_table(BLOCK_STARTS)?;
    if blocks.len()? != expected_blocks || starts.len()? != expected_blocks {
        return inconsistent(format!(
            "{} blocks and {} block starts, meta says {} events ({expected_blocks} blocks)",
            blocks.len()?,
            starts.len()?,
            fold.events
        ));
    }
    let (totals, boundaries) = match blocks.last()? {
        None => (Totals::default(), 0),
        Some((number, value)) => {
            let number = number.value();
            if number.checked_add(1) != Some(expected_blocks) {
                return inconsistent(format!(
                    "the last block is block {number}, meta says {expected_blocks} blocks"
                ));
            }
            let Some(last) = blocks::decode(number, value.value()) else {
                return inconsistent("the last block is damaged".to_owned());
            };
            let events = last.entries.len() as u64;
            let held = number
                .checked_mul(BLOCK_EVENTS)
                .and_then(|before| before.checked_add(events));
            if held != Some(fold.events) {
                return inconsistent(format!(
                    "the last block holds {events} events, meta says {} in all",
                    fold.events
                ));
            }
            if last.end() > meta.watermark() {
                return inconsistent("an event lies beyond the watermark".to_owned());
            }
            (last.totals_after(), last.boundaries_after())
        }
    };
    if totals != fold.totals {
        return inconsistent("the totals after the last block differ from meta".to_owned());
    }
    if boundaries != fold.boundaries {
        return inconsistent(format!(
            "the blocks hold {boundaries} boundaries, meta says {}",
            fold.boundaries
        ));
    }
    let boundaries = txn.open_table(BOUNDARIES)?;
    if boundaries.len()? != fold.boundaries {
        return inconsistent(format!(
            "{} boundary rows, meta says {}",
            boundaries.len()?,
            fold.boundaries
        ));
    }
    let last_boundary = match boundaries.last()? {
        Some((_, row)) => match schema::decode::<GenerationStart>(row.value()) {
            Some(start) => Some(start),
            None => return inconsistent("latest boundary row fails its checksum".to_owned()),
        },
        None => None,
    };
    if last_boundary != fold.latest {
        return inconsistent("latest boundary row differs from meta".to_owned());
    }
    Ok(None)
}
