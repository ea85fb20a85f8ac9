//! The agent log index's open-time checks, run by the core in its order
//! (`derived/validate.rs`): versions and profile, the tables against the meta record, the
//! log's length and windows, then the type names. Each costs O(1) in the log's size: two
//! 64 KiB windows, a handful of table lookups.

use std::fs::File;
use std::io;

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata};

use super::blocks;
use super::derived::validate::{Checks, SourceCheck, check_lines};
use super::rows::TypeMap;
use super::schema::{
    self, BLOCK_EVENTS, BLOCK_STARTS, BLOCKS, BOUNDARIES, FORMAT_VERSION, Meta, PARSER_VERSION,
};
use super::{IndexOptions, StaleReason};
use crate::event::{GenerationStart, Totals};

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

/// The agent log index's checks, bound to its log.
pub(crate) struct LogChecks<'a> {
    pub(crate) expected: Expected,
    pub(crate) log: &'a File,
}

impl<'a> LogChecks<'a> {
    /// The checks `options` require, against `log`.
    pub(crate) fn new(options: &IndexOptions, log: &'a File) -> LogChecks<'a> {
        LogChecks {
            expected: Expected::of(options),
            log,
        }
    }
}

impl Checks for LogChecks<'_> {
    type Meta = Meta;
    type Loaded = TypeMap;
    const FORMAT_VERSION: u32 = FORMAT_VERSION;

    fn check_meta(&self, meta: &Meta) -> Option<StaleReason> {
        check_versions(meta, &self.expected)
    }

    fn check_tables(
        &self,
        txn: &ReadTransaction,
        meta: &Meta,
    ) -> Result<Option<StaleReason>, redb::Error> {
        check_structure(txn, meta)
    }

    fn check_source(&self, meta: &Meta) -> io::Result<SourceCheck> {
        check_lines(&meta.coverage(), self.log)
    }

    /// The type names, checked against their sum in the meta record.
    fn load(
        &self,
        txn: &ReadTransaction,
        meta: &Meta,
    ) -> Result<Result<TypeMap, StaleReason>, redb::Error> {
        let types = TypeMap::load(txn)?;
        if types.sum() != meta.types {
            return Ok(Err(StaleReason::Inconsistent {
                detail: format!(
                    "the types table ({} names) does not match the meta record's sum ({} names)",
                    types.sum().count,
                    meta.types.count
                ),
            }));
        }
        Ok(Ok(types))
    }
}

/// The parser version, profile and line limit the index was built with.
fn check_versions(meta: &Meta, expected: &Expected) -> Option<StaleReason> {
    if meta.parser != PARSER_VERSION {
        return Some(StaleReason::ParserChanged {
            found: meta.parser,
            expected: PARSER_VERSION,
        });
    }
    (meta.profile != expected.profile || meta.max_line != expected.max_line)
        .then_some(StaleReason::ProfileChanged)
}

/// A meta record read without its tables (the status file's, or one validated again)
/// against the log: versions, length, head and tail windows.
pub(crate) fn check(meta: &Meta, expected: &Expected, log: &File) -> io::Result<SourceCheck> {
    match check_versions(meta, expected) {
        Some(reason) => Ok(SourceCheck::Changed(reason)),
        None => check_lines(&meta.coverage(), log),
    }
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
