//! The columns of the three tables, as data: the Parquet schema and the writer's per-column
//! settings are both built from these lists, and `docs/EXPORT.md` shows them as a table.
//!
//! `source_kind` and `date` are not columns of the files: they are the Hive partition keys
//! (`source_kind=.../date=.../`), which engines add from the path, as Spark and DuckDB write
//! partitioned datasets themselves.

use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit, Type as Physical, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::{ColumnPath, Type};

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// A signed 64-bit integer.
    Int64,
    /// Microseconds since the Unix epoch, UTC (a Parquet `TIMESTAMP(MICROS, true)`).
    Timestamp,
    /// UTF-8 text.
    Text,
    /// A 64-bit float (pi's costs).
    Double,
}

/// One column of a table.
#[derive(Clone, Copy, Debug)]
pub struct ColumnSpec {
    /// The column name.
    pub name: &'static str,
    /// What it holds.
    pub kind: ColumnKind,
    /// Whether a row may hold no value.
    pub nullable: bool,
    /// Few distinct values (names, ids): dictionary-encoded. Off for per-row values, where a
    /// dictionary only costs time before the writer falls back to plain encoding.
    pub dictionary: bool,
    /// Whether min/max statistics are kept (off for long text, whose comparisons cost time and
    /// whose bounds prune nothing).
    pub statistics: bool,
}

const fn column(name: &'static str, kind: ColumnKind, nullable: bool) -> ColumnSpec {
    ColumnSpec {
        name,
        kind,
        nullable,
        dictionary: false,
        statistics: true,
    }
}

const fn dictionary(spec: ColumnSpec) -> ColumnSpec {
    ColumnSpec {
        dictionary: true,
        ..spec
    }
}

use ColumnKind::{Double, Int64, Text, Timestamp};

/// The usage columns, the same in `events/` and `generations/`: input, output, cached,
/// thinking, cache-write and total tokens, then the cost.
const USAGE_COLUMNS: [ColumnSpec; 7] = [
    column("input_tokens", Int64, true),
    column("output_tokens", Int64, true),
    column("cached_tokens", Int64, true),
    column("thinking_tokens", Int64, true),
    column("cache_write_tokens", Int64, true),
    column("total_tokens", Int64, true),
    column("cost", Double, true),
];

/// `events/`: one row per event, in log order within a file.
pub const EVENT_COLUMNS: &[ColumnSpec] = &concat::<19>(&[
    &[
        dictionary(column("source_id", Text, false)),
        dictionary(column("host", Text, false)),
        column("offset", Int64, false),
        column("line", Int64, false),
        column("seq", Int64, false),
        dictionary(column("type", Text, true)),
        column("ts", Timestamp, true),
        dictionary(column("generation", Int64, false)),
        dictionary(column("molt_count", Int64, true)),
    ],
    &USAGE_COLUMNS,
    &[
        column("message_id", Text, true),
        column("request_id", Text, true),
        ColumnSpec {
            statistics: false,
            ..column("json", Text, true)
        },
    ],
]);

/// `generations/`: one row per generation of an agent or transcript.
pub const GENERATION_COLUMNS: &[ColumnSpec] = &concat::<20>(&[
    &[
        column("source_id", Text, false),
        column("host", Text, false),
        column("generation", Int64, false),
        column("molt_count", Int64, true),
        column("boundary_offset", Int64, true),
        column("boundary_initiator", Text, false),
        column("boundary_ts", Timestamp, true),
        column("before_tokens", Int64, true),
        column("after_tokens", Int64, true),
        column("first_ts", Timestamp, true),
        column("boundary_kind", Text, true),
        column("events", Int64, false),
        column("api_calls", Int64, false),
    ],
    &USAGE_COLUMNS,
]);

/// The column lists `parts` one after another; `N`, their total length, is checked when
/// the tables are compiled.
const fn concat<const N: usize>(parts: &[&[ColumnSpec]]) -> [ColumnSpec; N] {
    let mut out = [column("", Int64, false); N];
    let mut at = 0;
    let mut part = 0;
    while part < parts.len() {
        let mut i = 0;
        while i < parts[part].len() {
            out[at] = parts[part][i];
            at += 1;
            i += 1;
        }
        part += 1;
    }
    assert!(
        at == N,
        "a table's column count is not the sum of its parts"
    );
    out
}

/// `sessions/`: one row per session (its header fields) or transcript.
pub const SESSION_COLUMNS: &[ColumnSpec] = &[
    column("source_id", Text, false),
    column("host", Text, false),
    column("version", Int64, true),
    column("created_at", Timestamp, true),
    column("cwd", Text, true),
    column("parent_session", Text, true),
    column("seed_length", Int64, true),
    column("origin", Text, true),
    column("delegation_depth", Int64, true),
    column("agent_preset", Text, true),
    column("extra", Text, true),
    column("format", Text, true),
    column("project", Text, true),
    column("path", Text, true),
    column("last_ts", Timestamp, true),
];

/// The Parquet schema of a table.
pub fn message_type(columns: &[ColumnSpec]) -> Result<Arc<Type>, ParquetError> {
    let fields = columns
        .iter()
        .map(|spec| {
            let (physical, logical) = match spec.kind {
                Int64 => (Physical::INT64, None),
                Timestamp => (
                    Physical::INT64,
                    Some(LogicalType::timestamp(true, TimeUnit::MICROS)),
                ),
                Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
                Double => (Physical::DOUBLE, None),
            };
            let repetition = if spec.nullable {
                Repetition::OPTIONAL
            } else {
                Repetition::REQUIRED
            };
            Type::primitive_type_builder(spec.name, physical)
                .with_repetition(repetition)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Type::group_type_builder("agentlog")
        .with_fields(fields)
        .build()
        .map(Arc::new)
}

/// Writer settings: zstd, Parquet 1.0 data pages (which every engine reads), and the
/// per-column dictionary and statistics choices above.
pub fn writer_properties(columns: &[ColumnSpec]) -> Arc<WriterProperties> {
    let mut builder = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_created_by(format!("agentlog {}", env!("CARGO_PKG_VERSION")))
        // We size row groups ourselves (part.rs); the writer must not split them again.
        .set_max_row_group_row_count(None);
    for spec in columns {
        let path = ColumnPath::from(spec.name);
        builder = builder.set_column_dictionary_enabled(path.clone(), spec.dictionary);
        if !spec.statistics {
            builder = builder.set_column_statistics_enabled(path, EnabledStatistics::None);
        }
    }
    Arc::new(builder.build())
}
