//! Writing one Parquet part file: rows are buffered column by column and written as a row
//! group when the buffer reaches [`ROW_GROUP_ROWS`] rows or [`ROW_GROUP_BYTES`] bytes, so memory
//! stays flat however long the log is.
//!
//! We use the `parquet` crate's column writers directly, without Arrow arrays: the tables are
//! flat, so definition levels are all the structure there is.

use std::fs::File;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use parquet::column::writer::ColumnWriterImpl;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::writer::SerializedFileWriter;

use super::error::ExportError;
use super::schema::{ColumnKind, ColumnSpec, message_type, writer_properties};

/// A row group is written once this many rows are buffered.
pub const ROW_GROUP_ROWS: usize = 128 << 10;

/// ... or once the buffered text reaches this many bytes.
pub const ROW_GROUP_BYTES: usize = 32 << 20;

/// One column's buffered values.
#[derive(Debug)]
struct ColumnBuffer {
    spec: ColumnSpec,
    ints: Vec<i64>,
    floats: Vec<f64>,
    /// Text values back to back; `ends[i]` is where value `i` ends.
    text: Vec<u8>,
    ends: Vec<usize>,
    /// Definition levels (1 = a value, 0 = null), for nullable columns.
    defs: Vec<i16>,
}

impl ColumnBuffer {
    fn new(spec: ColumnSpec) -> ColumnBuffer {
        ColumnBuffer {
            spec,
            ints: Vec::new(),
            floats: Vec::new(),
            text: Vec::new(),
            ends: Vec::new(),
            defs: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.ints.clear();
        self.floats.clear();
        self.text.clear();
        self.ends.clear();
        self.defs.clear();
    }
}

/// Receives one row's values, column by column, in schema order.
pub struct RowSink<'a> {
    columns: &'a mut [ColumnBuffer],
    at: usize,
    /// Bytes of text pushed.
    text: usize,
}

impl RowSink<'_> {
    /// The next column's value: an integer or timestamp (microseconds), or null.
    pub fn int(&mut self, value: Option<i64>) {
        self.next(value, |column, v| column.ints.push(v.unwrap_or(0)));
    }

    /// The next column's value: a float, or null.
    pub fn float(&mut self, value: Option<f64>) {
        self.next(value, |column, v| column.floats.push(v.unwrap_or(0.0)));
    }

    /// The next column's value: text, or null.
    pub fn text(&mut self, value: Option<&[u8]>) {
        let len = value.map_or(0, <[u8]>::len);
        let stored = self.next(value, |column, v| {
            column.text.extend_from_slice(v.unwrap_or_default());
            column.ends.push(column.text.len());
        });
        if stored {
            self.text += len;
        }
    }

    /// Gives the next column its value through `add`, with its definition level (1 for a
    /// value, 0 for null) if it is nullable. A required column never receives None from our
    /// row types; `add` stores a placeholder (`None`) then, which keeps the levels aligned if
    /// it ever did. Whether there was such a column.
    fn next<T>(
        &mut self,
        value: Option<T>,
        add: impl FnOnce(&mut ColumnBuffer, Option<T>),
    ) -> bool {
        let at = self.at;
        self.at += 1;
        let Some(column) = self.columns.get_mut(at) else {
            return false;
        };
        match value {
            Some(v) => {
                add(column, Some(v));
                column.defs.push(1);
            }
            None if !column.spec.nullable => add(column, None),
            None => column.defs.push(0),
        }
        true
    }
}

/// Text values go to the column writer this many rows at a time.
const TEXT_BATCH_ROWS: usize = 1024;

/// Writes a text column's buffered values, a batch of rows at a time, each batch copied into
/// one shared buffer that its values slice. The column's own buffer is kept for the next row
/// group: handing it over whole would free and allocate a row group's worth of memory each
/// time, which glibc's heap does not give back: peak RSS would grow with the log.
fn write_text(
    writer: &mut ColumnWriterImpl<'_, ByteArrayType>,
    buffer: &ColumnBuffer,
    rows: usize,
) -> Result<(), ParquetError> {
    let inconsistent = || ParquetError::General("buffered text columns disagree".into());
    let mut values: Vec<ByteArray> = Vec::with_capacity(TEXT_BATCH_ROWS);
    let (mut row, mut value, mut start) = (0, 0, 0);
    while row < rows {
        let next_row = (row + TEXT_BATCH_ROWS).min(rows);
        let defs = if buffer.spec.nullable {
            Some(buffer.defs.get(row..next_row).ok_or_else(inconsistent)?)
        } else {
            None
        };
        let count = defs.map_or(next_row - row, |d| d.iter().filter(|&&l| l == 1).count());
        let ends = buffer
            .ends
            .get(value..value + count)
            .ok_or_else(inconsistent)?;
        let end = ends.last().copied().unwrap_or(start);
        let batch = Bytes::copy_from_slice(buffer.text.get(start..end).ok_or_else(inconsistent)?);
        values.clear();
        let mut at = 0;
        for &value_end in ends {
            let len = value_end.checked_sub(start + at).ok_or_else(inconsistent)?;
            values.push(ByteArray::from(batch.slice(at..at + len)));
            at += len;
        }
        writer.write_batch(&values, defs, None)?;
        (row, value, start) = (next_row, value + count, end);
    }
    Ok(())
}

/// A row of one of the tables.
pub trait Row {
    /// The table's columns.
    const COLUMNS: &'static [ColumnSpec];
    /// Pushes the row's values in the order of [`Row::COLUMNS`].
    fn push(&self, sink: &mut RowSink<'_>);
}

/// An open part file being written.
pub struct PartWriter {
    path: PathBuf,
    writer: SerializedFileWriter<File>,
    columns: Vec<ColumnBuffer>,
    buffered_rows: usize,
    /// Bytes of text buffered.
    buffered_text: usize,
    rows: u64,
}

/// A finished part file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// Rows in the file.
    pub rows: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

impl PartWriter {
    /// Creates `path` (which must not exist) for rows with these columns.
    pub fn create(path: &Path, columns: &'static [ColumnSpec]) -> Result<PartWriter, ExportError> {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| ExportError::io("create", path, e))?;
        let schema = message_type(columns).map_err(|e| ExportError::parquet(path, e))?;
        let writer = SerializedFileWriter::new(file, schema, writer_properties(columns))
            .map_err(|e| ExportError::parquet(path, e))?;
        Ok(PartWriter {
            path: path.to_path_buf(),
            writer,
            columns: columns.iter().copied().map(ColumnBuffer::new).collect(),
            buffered_rows: 0,
            buffered_text: 0,
            rows: 0,
        })
    }

    /// Buffers one row, writing a row group when the buffer is full.
    pub fn push<R: Row>(&mut self, row: &R) -> Result<(), ExportError> {
        let mut sink = RowSink {
            columns: &mut self.columns,
            at: 0,
            text: 0,
        };
        row.push(&mut sink);
        self.buffered_text += sink.text;
        self.buffered_rows += 1;
        if self.buffered_rows >= ROW_GROUP_ROWS || self.buffered_text >= ROW_GROUP_BYTES {
            self.flush_row_group()?;
        }
        Ok(())
    }

    /// Bytes of text buffered for the next row group.
    pub fn buffered_text(&self) -> usize {
        self.buffered_text
    }

    /// Writes the buffered rows as a row group now and gives their buffers' memory back (for a
    /// part that is likely to get no more rows for a while).
    pub fn flush_and_release(&mut self) -> Result<(), ExportError> {
        self.flush_row_group()?;
        for column in &mut self.columns {
            *column = ColumnBuffer::new(column.spec);
        }
        Ok(())
    }

    /// Writes the buffered rows as a row group now.
    fn flush_row_group(&mut self) -> Result<(), ExportError> {
        if self.buffered_rows == 0 {
            return Ok(());
        }
        let path = &self.path;
        let wrap = |e: ParquetError| ExportError::parquet(path, e);
        let mut group = self.writer.next_row_group().map_err(wrap)?;
        for buffer in &mut self.columns {
            let Some(mut column) = group.next_column().map_err(wrap)? else {
                return Err(wrap(ParquetError::General(
                    "the schema has fewer columns than the rows".into(),
                )));
            };
            let defs = buffer.spec.nullable.then_some(buffer.defs.as_slice());
            match buffer.spec.kind {
                ColumnKind::Int64 | ColumnKind::Timestamp => {
                    column
                        .typed::<Int64Type>()
                        .write_batch(&buffer.ints, defs, None)
                        .map_err(wrap)?;
                }
                ColumnKind::Double => {
                    column
                        .typed::<DoubleType>()
                        .write_batch(&buffer.floats, defs, None)
                        .map_err(wrap)?;
                }
                ColumnKind::Text => {
                    write_text(column.typed::<ByteArrayType>(), buffer, self.buffered_rows)
                        .map_err(wrap)?;
                }
            }
            column.close().map_err(wrap)?;
            buffer.clear();
        }
        group.close().map_err(wrap)?;
        self.rows += self.buffered_rows as u64;
        self.buffered_rows = 0;
        self.buffered_text = 0;
        Ok(())
    }

    /// Writes the last row group and the footer and fsyncs the file.
    pub fn finish(mut self) -> Result<Written, ExportError> {
        self.flush_row_group()?;
        self.writer
            .finish()
            .map_err(|e| ExportError::parquet(&self.path, e))?;
        let file = self.writer.inner();
        file.sync_all()
            .map_err(|e| ExportError::io("fsync", &self.path, e))?;
        let bytes = file
            .metadata()
            .map_err(|e| ExportError::io("inspect", &self.path, e))?
            .len();
        Ok(Written {
            rows: self.rows,
            bytes,
        })
    }
}

/// Writes `rows` as one part file at `path` (which must not exist).
pub fn write_all<R: Row>(path: &Path, rows: &[R]) -> Result<Written, ExportError> {
    let mut writer = PartWriter::create(path, R::COLUMNS)?;
    for row in rows {
        writer.push(row)?;
    }
    writer.finish()
}
