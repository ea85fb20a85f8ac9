//! Reading an exported dataset back with the `parquet` crate's own reader, the way an engine
//! globs it (final names only; partition keys from the path), and the expectations an export
//! must meet, from the naive oracle.
#![allow(dead_code)]
// Test figures (offsets, row counts, nanosecond stamps) are far below 2^53, and Parquet and
// SQLite keep integers as i64, so the numeric casts are deliberate; a failing helper fails its test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

use crate::common::oracle::Oracle;

/// One row read back, columns by name, plus the partition keys.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub file: PathBuf,
    pub source_kind: String,
    pub date: String,
    pub values: BTreeMap<String, Field>,
}

impl Row {
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.values.get(name) {
            Some(Field::Long(v) | Field::TimestampMicros(v)) => Some(*v),
            Some(Field::Null) | None => None,
            other => panic!("{name} is not an integer: {other:?}"),
        }
    }

    pub fn text(&self, name: &str) -> Option<String> {
        match self.values.get(name) {
            Some(Field::Str(s)) => Some(s.clone()),
            Some(Field::Null) | None => None,
            other => panic!("{name} is not text: {other:?}"),
        }
    }
}

/// The files an engine's glob `TABLE/**/*.parquet` that skips hidden files would read.
pub fn visible_files(out: &Path, table: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![out.join(table)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".parquet") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every row of a table, as engines would see it now.
pub fn read_table(out: &Path, table: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    for file in visible_files(out, table) {
        let relative = file.strip_prefix(out.join(table)).expect("under the table");
        let mut parts = relative.iter().map(|p| p.to_string_lossy().into_owned());
        let kind = parts.next().expect("kind dir");
        let date = parts.next().expect("date dir");
        let source_kind = kind
            .strip_prefix("source_kind=")
            .expect("kind key")
            .to_owned();
        let date = date.strip_prefix("date=").expect("date key").to_owned();
        let reader = SerializedFileReader::new(std::fs::File::open(&file).expect("open part"))
            .expect("a readable Parquet file");
        for row in reader.get_row_iter(None).expect("rows") {
            let row = row.expect("a row");
            rows.push(Row {
                file: file.clone(),
                source_kind: source_kind.clone(),
                date: date.clone(),
                values: row.into_columns().into_iter().collect(),
            });
        }
    }
    rows
}

/// Event rows per source id, sorted by offset.
pub fn events_by_source(out: &Path) -> BTreeMap<String, Vec<Row>> {
    let mut by: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for row in read_table(out, "events") {
        by.entry(row.text("source_id").expect("source_id"))
            .or_default()
            .push(row);
    }
    for rows in by.values_mut() {
        rows.sort_by_key(|r| r.int("offset"));
    }
    by
}

/// The UTC date of a time in microseconds, or Hive's null partition.
pub fn date_of(micros: Option<i64>) -> String {
    micros
        .and_then(|m| jiff::Timestamp::from_microsecond(m).ok())
        .map_or("__HIVE_DEFAULT_PARTITION__".to_owned(), |t| {
            jiff::tz::TimeZone::UTC.to_datetime(t).date().to_string()
        })
}

/// Asserts that the event rows of `source_id` are the oracle's events of `log`, each exactly
/// once, with the oracle's offsets, seqs, types, generations and tokens.
pub fn assert_events_match(out: &Path, source_id: &str, log: &[u8]) {
    let oracle = Oracle::of(log);
    let by = events_by_source(out);
    let empty = Vec::new();
    let rows = by.get(source_id).unwrap_or(&empty);
    assert_eq!(
        rows.len() as u64,
        oracle.events,
        "{source_id}: rows exported vs events in the log"
    );
    let mut generation = 0u64;
    let mut boundaries = oracle.boundaries.iter().peekable();
    for (row, event) in rows.iter().zip(&oracle.event_lines) {
        if boundaries.peek().is_some_and(|b| b.offset == event.offset) {
            boundaries.next();
            generation += 1;
        }
        assert_eq!(row.int("offset"), Some(event.offset as i64), "{source_id}");
        assert_eq!(
            row.int("seq"),
            Some(event.seq as i64),
            "{source_id} at {}",
            event.offset
        );
        assert_eq!(
            row.text("type"),
            event.kind,
            "{source_id} at {}",
            event.offset
        );
        assert_eq!(
            row.int("generation"),
            Some(generation as i64),
            "{source_id} at {}",
            event.offset
        );
        let line = &log[event.offset as usize..(event.offset + event.len) as usize];
        if let Some(json) = row.text("json") {
            assert_eq!(
                json.as_bytes(),
                line,
                "{source_id}: the row's JSON is its line"
            );
        }
        assert_eq!(row.source_kind, "agent");
        assert_eq!(
            row.date,
            date_of(row.int("ts")),
            "partition date is the ts's UTC date"
        );
    }
}

/// Asserts that per-generation input token sums over the event rows, and the generations
/// table, equal the oracle's generations.
pub fn assert_generations_match(out: &Path, source_id: &str, log: &[u8]) {
    let oracle = Oracle::of(log);
    let mut sums: BTreeMap<i64, (i128, i64)> = BTreeMap::new();
    for row in events_by_source(out).get(source_id).into_iter().flatten() {
        let entry = sums
            .entry(row.int("generation").expect("generation"))
            .or_default();
        entry.0 += i128::from(row.int("input_tokens").unwrap_or(0));
        entry.1 += i64::from(row.int("input_tokens").is_some());
    }
    let mut table: Vec<Row> = read_table(out, "generations")
        .into_iter()
        .filter(|r| r.text("source_id").as_deref() == Some(source_id))
        .collect();
    table.sort_by_key(|r| r.int("generation"));
    assert_eq!(
        table.len(),
        oracle.generations.len(),
        "{source_id}: one row per generation"
    );
    for (k, expected) in oracle.generations.iter().enumerate() {
        let (input, calls) = sums.get(&(k as i64)).copied().unwrap_or_default();
        assert_eq!(
            input as u128, expected.input,
            "{source_id} generation {k}: sum over events"
        );
        assert_eq!(
            calls as u64, expected.calls,
            "{source_id} generation {k}: token events"
        );
        let row = &table[k];
        assert_eq!(row.int("generation"), Some(k as i64));
        assert_eq!(
            row.int("input_tokens").map(|v| v as u128),
            Some(expected.input)
        );
        assert_eq!(
            row.int("output_tokens").map(|v| v as u128),
            Some(expected.output)
        );
        assert_eq!(
            row.int("cached_tokens").map(|v| v as u128),
            Some(expected.cached)
        );
        assert_eq!(
            row.int("thinking_tokens").map(|v| v as u128),
            Some(expected.thinking)
        );
        assert_eq!(row.int("api_calls").map(|v| v as u64), Some(expected.calls));
        if k > 0 {
            let b = &oracle.boundaries[k - 1];
            assert_eq!(row.int("boundary_offset"), Some(b.offset as i64));
            assert_eq!(row.int("molt_count"), b.molt_count.map(|m| m as i64));
            assert_eq!(
                row.text("boundary_initiator").as_deref(),
                Some(b.initiator.as_str())
            );
        } else {
            assert_eq!(row.text("boundary_initiator").as_deref(), Some("boot"));
        }
    }
}

/// No hidden, temporary or foreign file is left among the parts once an export finished.
pub fn assert_no_leftovers(out: &Path) {
    for table in ["events", "generations", "sessions"] {
        let mut stack = vec![out.join(table)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    assert!(!name.starts_with('.'), "leftover {}", path.display());
                }
            }
        }
    }
}
