//! A transcript index's open-time checks, run by the core in its order
//! (`index/derived/validate.rs`): versions, the transcript it is of, the format, row counts,
//! then the coverage (length, head and tail windows), then the rows the options ask for.
//! O(1) in the transcript's size, but for those rows.

use std::io;

use redb::ReadTransaction;

use super::OpenOptions;
use super::recall::{load_buckets_from, load_messages_of, load_rows, row_counts};
use super::schema::{FORMAT_VERSION, Meta, PARSER_VERSION};
use super::source::Source;
use crate::index::StaleReason;
use crate::index::derived::validate::{Checks, SourceCheck, check_lines};
use crate::transcript::fold::{Dedup, keys_messages};

pub(super) fn unreadable(detail: String) -> StaleReason {
    StaleReason::Unreadable { detail }
}

/// A transcript index's checks, bound to the transcript and the options of this open.
pub(super) struct SourceChecks<'a> {
    pub(super) source: &'a Source,
    pub(super) options: &'a OpenOptions,
}

impl Checks for SourceChecks<'_> {
    type Meta = Meta;
    /// Every row, read and checked, when the options ask for them.
    type Loaded = Option<Dedup>;
    const FORMAT_VERSION: u32 = FORMAT_VERSION;

    fn check_meta(&self, meta: &Meta) -> Option<StaleReason> {
        let inconsistent = |detail: String| Some(StaleReason::Inconsistent { detail });
        if meta.parser != PARSER_VERSION {
            return Some(StaleReason::ParserChanged {
                found: meta.parser,
                expected: PARSER_VERSION,
            });
        }
        if meta.transcript != self.source.path_bytes() {
            return inconsistent(format!(
                "the index is of another transcript ({})",
                String::from_utf8_lossy(&meta.transcript)
            ));
        }
        if meta.format != self.source.format || meta.max_line != self.options.max_line as u64 {
            return Some(StaleReason::ProfileChanged);
        }
        if !meta.summary.is_well_formed()
            || !meta.coverage.is_well_formed()
            || meta.summary.format != meta.format
        {
            return inconsistent("the meta record does not hold together".to_owned());
        }
        None
    }

    fn check_tables(
        &self,
        txn: &ReadTransaction,
        meta: &Meta,
    ) -> Result<Option<StaleReason>, redb::Error> {
        let s = &meta.summary;
        let (keys, buckets, marks) = row_counts(txn)?;
        Ok(((keys, buckets, marks) != (s.keys, s.buckets, s.marks)).then(|| {
            StaleReason::Inconsistent {
                detail: format!(
                    "{keys} key, {buckets} bucket and {marks} mark rows, the meta record says {}, {} and {}",
                    s.keys, s.buckets, s.marks
                ),
            }
        }))
    }

    fn check_source(&self, meta: &Meta) -> io::Result<SourceCheck> {
        check_lines(&meta.coverage, &self.source.file)
    }

    fn load(
        &self,
        txn: &ReadTransaction,
        meta: &Meta,
    ) -> Result<Result<Option<Dedup>, StaleReason>, redb::Error> {
        let options = self.options;
        let rows = if options.load_dedup || options.load_ids {
            let claude = keys_messages(self.source.format);
            let counts = (meta.summary.keys, meta.summary.buckets);
            load_rows(txn, claude, counts, !options.load_dedup)
        } else if !options.load_messages.is_empty() {
            load_messages_of(txn, &options.load_messages)
        } else if let Some(from) = options.buckets_from {
            load_buckets_from(txn, from)
        } else {
            return Ok(Ok(None));
        };
        Ok(rows
            .map(Some)
            .map_err(|e| StaleReason::Inconsistent { detail: e.0 }))
    }
}
