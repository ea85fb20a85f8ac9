//! The open-time checks of a transcript's index: versions, the transcript it is of, the
//! format, row counts, then the coverage (length, head and tail windows). O(1) in the
//! transcript's size.

use redb::ReadableDatabase;

use super::OpenOptions;
use super::db::{Close, Held, Leak};
use super::recall::{load_buckets_from, load_rows, row_counts};
use super::schema::{FORMAT_KEY, FORMAT_VERSION, META, META_KEY, Meta, PARSER_VERSION, decode};
use super::source::Source;
use crate::index::StaleReason;
use crate::log::CoverageCheck;
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::Dedup;
use crate::transcript::format::Format;

/// What reading an index's meta record and checking it against the transcript found.
pub(super) enum Validity {
    /// No commit yet.
    Empty,
    /// It must not be used.
    Stale(StaleReason),
    /// It covers the transcript's first bytes: all of its complete lines (`Current`), or
    /// fewer (`Grew`). With every row, read and checked, when the options ask for them.
    Usable(Box<Meta>, CoverageCheck, Option<Dedup>),
}

pub(super) fn unreadable(detail: String) -> StaleReason {
    StaleReason::Unreadable { detail }
}

/// Reads the meta record and checks it against `source`.
pub(super) fn validate<D: ReadableDatabase + Close>(
    db: &Held<D>,
    source: &Source,
    options: &OpenOptions,
) -> Result<Validity, TranscriptError> {
    let meta = match db.run("reading the index", read_meta) {
        Err(detail) | Ok(Err(detail)) => return Ok(Validity::Stale(unreadable(detail))),
        Ok(Ok(None)) => return Ok(Validity::Empty),
        Ok(Ok(Some(Err(reason)))) => return Ok(Validity::Stale(reason)),
        Ok(Ok(Some(Ok(meta)))) => meta,
    };
    let inconsistent = |detail: String| Ok(Validity::Stale(StaleReason::Inconsistent { detail }));
    if meta.parser != PARSER_VERSION {
        return Ok(Validity::Stale(StaleReason::ParserChanged {
            found: meta.parser,
            expected: PARSER_VERSION,
        }));
    }
    if meta.transcript != source.path_bytes() {
        return inconsistent(format!(
            "the index is of another transcript ({})",
            String::from_utf8_lossy(&meta.transcript)
        ));
    }
    if meta.format != source.format || meta.max_line != options.max_line as u64 {
        return Ok(Validity::Stale(StaleReason::ProfileChanged));
    }
    if !meta.summary.is_well_formed()
        || !meta.coverage.is_well_formed()
        || meta.summary.format != meta.format
    {
        return inconsistent("the meta record does not hold together".to_owned());
    }
    let s = &meta.summary;
    match db.run("counting the index's rows", row_counts) {
        Ok(Ok(counts)) if counts == (s.keys, s.buckets, s.marks) => {}
        Ok(Ok((keys, buckets, marks))) => {
            return inconsistent(format!(
                "{keys} key, {buckets} bucket and {marks} mark rows, the meta record says {}, {} and {}",
                s.keys, s.buckets, s.marks
            ));
        }
        Ok(Err(e)) => return Ok(Validity::Stale(unreadable(e.0))),
        Err(detail) => return Ok(Validity::Stale(unreadable(detail))),
    }
    let check = meta
        .coverage
        .check(&source.file)
        .map_err(|e| TranscriptError::io("read", &source.path, e))?;
    Ok(match check {
        CoverageCheck::Current { .. } | CoverageCheck::Grew { .. } => {
            let rows = if options.load_dedup || options.load_ids {
                let claude = source.format == Format::ClaudeCode;
                let counts = (meta.summary.keys, meta.summary.buckets);
                let ids_only = !options.load_dedup;
                match db.run("reading the index", |db| {
                    load_rows(db, claude, counts, ids_only)
                }) {
                    Ok(Ok(rows)) => Some(rows),
                    Ok(Err(e)) => return inconsistent(e.0),
                    Err(detail) => return Ok(Validity::Stale(unreadable(detail))),
                }
            } else if let Some(from) = options.buckets_from {
                match db.run("reading the index", |db| load_buckets_from(db, from)) {
                    Ok(Ok(rows)) => Some(rows),
                    Ok(Err(e)) => return inconsistent(e.0),
                    Err(detail) => return Ok(Validity::Stale(unreadable(detail))),
                }
            } else {
                None
            };
            Validity::Usable(Box::new(meta), check, rows)
        }
        CoverageCheck::Truncated { len } => Validity::Stale(StaleReason::LogTruncated {
            indexed: meta.coverage.end,
            len,
        }),
        CoverageCheck::HeadChanged { .. } => Validity::Stale(StaleReason::HeadChanged),
        CoverageCheck::TailChanged { .. } | CoverageCheck::BodyChanged { .. } => {
            Validity::Stale(StaleReason::TailChanged)
        }
    })
}

type MetaRead = Option<Result<Meta, StaleReason>>;

fn read_meta(db: &impl ReadableDatabase) -> Result<MetaRead, String> {
    let txn = Leak::new(db.begin_read().map_err(|e| e.to_string())?);
    let txn = txn.get().map_err(|e| e.to_string())?;
    let table = match txn.open_table(META) {
        Ok(table) => Leak::new(table),
        Err(redb::TableError::TableDoesNotExist(_)) => {
            let any = txn.list_tables().map_err(|e| e.to_string())?.next();
            return match any {
                None => Ok(None),
                Some(_) => Err("tables without a meta record".to_owned()),
            };
        }
        Err(e) => return Err(e.to_string()),
    };
    let table = table.get().map_err(|e| e.to_string())?;
    let Some(format) = table.get(FORMAT_KEY).map_err(|e| e.to_string())? else {
        return Err("no format record".to_owned());
    };
    let Ok(format) = <[u8; 4]>::try_from(format.value()) else {
        return Err("malformed format record".to_owned());
    };
    let format = u32::from_le_bytes(format);
    if format != FORMAT_VERSION {
        return Ok(Some(Err(StaleReason::FormatChanged {
            found: format,
            expected: FORMAT_VERSION,
        })));
    }
    let Some(meta) = table.get(META_KEY).map_err(|e| e.to_string())? else {
        return Err("no meta record".to_owned());
    };
    match decode::<Meta>(meta.value()) {
        Some(meta) => Ok(Some(Ok(meta))),
        None => Err("the meta record fails its checksum".to_owned()),
    }
}
