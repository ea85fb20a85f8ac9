//! `--compact`: each source's small event parts of one date are merged into one file, their
//! row groups copied as they are (no decoding), and swapped in by the same commit as an
//! export: the state names the merged part and retires the small ones.

use std::fs::File;
use std::path::PathBuf;

use parquet::column::writer::ColumnCloseResult;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use serde::Serialize;

use super::commit::{Applied, Place, apply, create_dir, write_state};
use super::error::ExportError;
use super::layout::{Table, state_dir};
use super::part::Written;
use super::schema::{EVENT_COLUMNS, message_type, writer_properties};
use super::source::resolve;
use super::state::{Part, SourceState, take_serial};
use super::{ExportOptions, lock};

/// Parts at least this large are left as they are.
pub const SMALL_PART_BYTES: u64 = 128 << 20;

/// What a compaction did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompactReport {
    /// Merged files written.
    pub files: usize,
    /// Small parts they replace.
    pub merged: usize,
    /// Bytes of the merged files.
    pub bytes: u64,
    /// File-system steps taken.
    pub steps: u64,
}

/// Merges the small event parts of the sources `sources` name, per date.
///
/// # Errors
///
/// As [`export`](super::export); a source that was never exported is skipped.
pub fn compact(sources: &[PathBuf], options: &ExportOptions) -> Result<CompactReport, ExportError> {
    let out = options.out.as_path();
    let host = options.host.as_str();
    let states = state_dir(out, host);
    create_dir(&states)?;
    let _lock = lock(&states, host)?;
    let mut steps = options.steps();
    let mut report = CompactReport::default();
    for path in sources {
        let index_dir = options.transcript_index_dir.as_ref();
        for source in super::opencode::expand(resolve(path)?, index_dir)? {
            let key = source.key();
            let state_path = states.join(format!("{key}.state"));
            let Ok(bytes) = std::fs::read(&state_path) else {
                continue;
            };
            let Ok(mut state) = SourceState::decode(&bytes) else {
                continue;
            };
            let place = Place {
                out,
                host,
                key: &key,
                kind: source.kind,
            };
            // Finish the last commit first: the parts to merge must have their final names.
            if apply(&place, &state, &mut steps)? != Applied::Complete {
                continue;
            }
            let mut dates: Vec<Option<String>> = Vec::new();
            for part in &state.parts {
                if part.table == Table::Events && !dates.contains(&part.date) {
                    dates.push(part.date.clone());
                }
            }
            let mut retired = Vec::new();
            for date in dates {
                let small: Vec<Part> = state
                    .parts
                    .iter()
                    .filter(|p| {
                        p.table == Table::Events && p.date == date && p.bytes < SMALL_PART_BYTES
                    })
                    .cloned()
                    .collect();
                if small.len() < 2 {
                    continue;
                }
                let serial = take_serial(&mut state.next_serial)
                    .ok_or_else(|| ExportError::TooManyParts { key: key.clone() })?;
                let mut merged = Part {
                    table: Table::Events,
                    date: date.clone(),
                    serial,
                    rows: 0,
                    bytes: 0,
                };
                let inputs: Vec<PathBuf> = small.iter().map(|p| place.final_path(p)).collect();
                let written = concat(&inputs, &place.temp_path(&merged))?;
                steps.step()?;
                merged.rows = written.rows;
                merged.bytes = written.bytes;
                report.files += 1;
                report.merged += small.len();
                report.bytes += written.bytes;
                // The merged part takes the place of the first part it replaces.
                let first = state.parts.iter().position(|p| small.contains(p));
                state.parts.retain(|p| !small.contains(p));
                let at = first.unwrap_or(state.parts.len()).min(state.parts.len());
                state.parts.insert(at, merged);
                retired.extend(small);
            }
            if retired.is_empty() {
                continue;
            }
            state.retired = retired;
            write_state(&states, &key, &state, &mut steps)?;
            if let Applied::Missing(path) = apply(&place, &state, &mut steps)? {
                return Err(ExportError::io(
                    "reveal",
                    &path,
                    std::io::ErrorKind::NotFound.into(),
                ));
            }
        }
    }
    report.steps = steps.done();
    Ok(report)
}

/// Writes the row groups of `inputs`, in order, into a new file `output`, copying their
/// encoded column chunks.
fn concat(inputs: &[PathBuf], output: &std::path::Path) -> Result<Written, ExportError> {
    let wrap = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |e| ExportError::parquet(&path, e)
    };
    let file = File::options()
        .write(true)
        // A temp file at a serial the state has not used yet is a stopped export's leftover
        // (we hold the lock): it is overwritten, as the export's sweep would remove it.
        .create(true)
        .truncate(true)
        .open(output)
        .map_err(|e| ExportError::io("create", output, e))?;
    let schema = message_type(EVENT_COLUMNS).map_err(wrap(output))?;
    let mut writer =
        SerializedFileWriter::new(file, schema.clone(), writer_properties(EVENT_COLUMNS))
            .map_err(wrap(output))?;
    let mut rows = 0u64;
    for input in inputs {
        let file = File::open(input).map_err(|e| ExportError::io("open", input, e))?;
        let reader = SerializedFileReader::new(
            file.try_clone()
                .map_err(|e| ExportError::io("open", input, e))?,
        )
        .map_err(wrap(input))?;
        let metadata = reader.metadata();
        if metadata.file_metadata().schema() != schema.as_ref() {
            return Err(ExportError::parquet(
                input,
                parquet::errors::ParquetError::General(
                    "a part has another schema than this build writes".into(),
                ),
            ));
        }
        for group in metadata.row_groups() {
            let mut out_group = writer.next_row_group().map_err(wrap(output))?;
            for column in group.columns() {
                let close = ColumnCloseResult {
                    bytes_written: u64::try_from(column.compressed_size()).unwrap_or(0),
                    rows_written: u64::try_from(group.num_rows()).unwrap_or(0),
                    metadata: column.clone(),
                    bloom_filter: None,
                    column_index: None,
                    offset_index: None,
                };
                out_group
                    .append_column(&file, close)
                    .map_err(wrap(output))?;
            }
            out_group.close().map_err(wrap(output))?;
            rows += u64::try_from(group.num_rows()).unwrap_or(0);
        }
    }
    writer.finish().map_err(wrap(output))?;
    let file = writer.inner();
    file.sync_all()
        .map_err(|e| ExportError::io("fsync", output, e))?;
    let bytes = file
        .metadata()
        .map_err(|e| ExportError::io("inspect", output, e))?
        .len();
    Ok(Written { rows, bytes })
}
