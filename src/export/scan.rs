//! Reading a log from where its export stopped: every new complete line is folded by the
//! index's own fold (so `seq`, `generation` and token counts are the index's), and each event
//! becomes a row in the part file of its UTC date.

use std::fs::File;

use super::commit::{Place, Steps, create_dir};
use super::error::ExportError;
use super::layout::{Table, utc_date};
use super::part::{PartWriter, ROW_GROUP_BYTES, Row as _};
use super::rows::{EventRow, ExportedGeneration, SessionRow};
use super::source::{Source, SourceKind};
use super::state::{Part, take_serial};
use crate::event::{EventKind, FoldState, Folded, Folder, Timestamp};
use crate::index::IndexOptions;
use crate::log::{Coverage, DEFAULT_MAX_LINE, Line, LineScanner, bytes_unchanged};
use crate::query::{SessionHeader, session_log_options};

/// At most this many part files are open at once (one per date met recently); a log whose
/// dates go back and forth gets another part for a date met again.
const OPEN_PARTS: usize = 4;

/// Progress is reported about every this many bytes.
const PROGRESS_EVERY: u64 = 4 << 20;

/// Where a scan starts: the state at the end of what is already exported.
#[derive(Clone, Debug, Default)]
pub struct Resume {
    /// The fold state there.
    pub fold: FoldState,
    /// The running crc of the bytes before it.
    pub crc: u32,
    /// The generation rows so far.
    pub generations: Vec<ExportedGeneration>,
    /// The session row, once the header was read.
    pub session: Option<SessionRow>,
}

/// What a scan read and wrote.
#[derive(Debug)]
pub struct Scanned {
    /// Where the export now ends, with the fold state there.
    pub coverage: Coverage,
    /// The fold state at `coverage.end`.
    pub fold: FoldState,
    /// The generation rows (agents and transcripts).
    pub generations: Vec<ExportedGeneration>,
    /// The session row (sessions and transcripts).
    pub session: Option<SessionRow>,
    /// The event parts written, still under their temporary names.
    pub parts: Vec<Part>,
    /// Where a session's committed region ended before the end of the file (a line that
    /// breaks the session's rules), if it did.
    pub stopped_at: Option<u64>,
}

/// The event parts of one scan, one open file per recent date, and the scan's progress.
pub struct Batch<'p> {
    place: &'p Place<'p>,
    open: Vec<(Option<String>, PartWriter, u64)>,
    done: Vec<Part>,
    next_serial: &'p mut u64,
    steps: &'p mut Steps,
    /// Told the bytes read, about every [`PROGRESS_EVERY`].
    progress: &'p mut dyn FnMut(u64),
    /// Where the bytes told to `progress` end.
    reported: u64,
}

impl<'p> Batch<'p> {
    /// No parts yet, for a scan from offset `from`; serials are taken from `next_serial`.
    pub fn new(
        place: &'p Place<'p>,
        next_serial: &'p mut u64,
        steps: &'p mut Steps,
        progress: &'p mut dyn FnMut(u64),
        from: u64,
    ) -> Batch<'p> {
        Batch {
            place,
            open: Vec::new(),
            done: Vec::new(),
            next_serial,
            steps,
            progress,
            reported: from,
        }
    }

    /// Adds a row, of the line at `offset`, to the part of its date.
    pub(super) fn push(
        &mut self,
        date: Option<&String>,
        row: &EventRow<'_>,
        offset: u64,
    ) -> Result<(), ExportError> {
        self.write(date, row)?;
        // A database's rows carry no byte offset (0): nothing to tell.
        if offset.saturating_sub(self.reported) >= PROGRESS_EVERY {
            (self.progress)(offset - self.reported);
            self.reported = offset;
        }
        Ok(())
    }

    fn write(&mut self, date: Option<&String>, row: &EventRow<'_>) -> Result<(), ExportError> {
        let at = if let Some(at) = self.open.iter().position(|(d, _, _)| d.as_ref() == date) {
            at
        } else {
            if self.open.len() >= OPEN_PARTS {
                let (date, writer, serial) = self.open.remove(0);
                self.finish(date, writer, serial)?;
            }
            let serial =
                take_serial(self.next_serial).ok_or_else(|| ExportError::TooManyParts {
                    key: self.place.key.to_owned(),
                })?;
            let probe = Part {
                table: Table::Events,
                date: date.cloned(),
                serial,
                rows: 0,
                bytes: 0,
            };
            create_dir(&self.place.dir(Table::Events, date.map(String::as_str)))?;
            let writer = PartWriter::create(&self.place.temp_path(&probe), EventRow::COLUMNS)?;
            self.open.push((date.cloned(), writer, serial));
            self.open.len() - 1
        };
        // Most recently used last, so the first is the one to close.
        let used = self.open.remove(at);
        self.open.push(used);
        let Some(((_, writer, _), others)) = self.open.split_last_mut() else {
            return Ok(());
        };
        writer.push(row)?;
        // Memory is one row group, not one per open part: when the parts together hold that
        // much, the others (dates left behind, in a log whose dates only go forward) write
        // theirs now.
        let buffered: usize = others.iter().map(|(_, w, _)| w.buffered_text()).sum();
        if buffered > 0 && buffered + writer.buffered_text() >= ROW_GROUP_BYTES {
            for (_, other, _) in others {
                other.flush_and_release()?;
            }
        }
        Ok(())
    }

    fn finish(
        &mut self,
        date: Option<String>,
        writer: PartWriter,
        serial: u64,
    ) -> Result<(), ExportError> {
        let written = writer.finish()?;
        self.steps.step()?;
        self.done.push(Part {
            table: Table::Events,
            date,
            serial,
            rows: written.rows,
            bytes: written.bytes,
        });
        Ok(())
    }

    /// Finishes every open part of a scan that read up to `end`; the parts written, by serial.
    pub(super) fn close(mut self, end: u64) -> Result<Vec<Part>, ExportError> {
        (self.progress)(end.saturating_sub(self.reported));
        for (date, writer, serial) in std::mem::take(&mut self.open) {
            self.finish(date, writer, serial)?;
        }
        self.done.sort_by_key(|p| p.serial);
        Ok(self.done)
    }
}

/// Options of one scan.
pub struct ScanOptions<'a> {
    /// The host name for the `host` column.
    pub host: &'a str,
    /// Whether rows carry the line's JSON text.
    pub json_text: bool,
}

/// Folds the complete lines of `log` after `resume` and writes their events as part files
/// under temporary names. Fails with [`ExportError::Changed`] if the bytes read are not the
/// file's bytes once done (the log was rewritten while read).
pub fn scan(
    source: &Source,
    log: &File,
    resume: Resume,
    options: &ScanOptions<'_>,
    mut batch: Batch<'_>,
) -> Result<Scanned, ExportError> {
    let index_options = match source.kind {
        SourceKind::Agent => IndexOptions::default(),
        SourceKind::Session => session_log_options(),
        SourceKind::Transcript => {
            // Transcripts have their own scan (transcript.rs); this one reads our logs.
            return Err(ExportError::Unsupported {
                path: source.log.clone(),
                what: "a transcript read as a log".to_owned(),
            });
        }
    };
    let io = |e| ExportError::io("read", &source.log, e);
    let sessions = source.kind == SourceKind::Session;
    let start = resume.fold.end;
    let limit = log.metadata().map_err(io)?.len();
    let mut scanner = LineScanner::new(log, start, limit, DEFAULT_MAX_LINE, resume.crc);
    let mut folder = Folder::new(index_options.extractor(), resume.fold);
    let mut generations = resume.generations;
    if source.kind != SourceKind::Session && generations.is_empty() {
        generations.push(ExportedGeneration {
            molt_count: Some(0),
            boundary_initiator: "boot".to_owned(),
            ..ExportedGeneration::default()
        });
    }
    let mut session = resume.session;
    let mut day_cache: Option<(i64, Option<String>)> = None;
    let mut stopped = None;
    loop {
        // Sessions end their committed region at the first line that breaks their rules: keep
        // the state before each line to stop there.
        let before = sessions.then(|| (folder.state().clone(), scanner.crc()));
        let Some(line) = scanner.next_line().map_err(io)? else {
            break;
        };
        let (offset, bytes) = match line {
            Line::TooLong { offset, len } => {
                folder.fold_too_long(offset, len);
                if let Some(before) = before {
                    stopped = Some((offset, before));
                    break;
                }
                continue;
            }
            Line::Complete { offset, bytes } => (offset, bytes),
        };
        let line = folder.fold_line(offset, bytes);
        if let Some(before) = before
            && folder.state().first_break.is_some()
        {
            stopped = Some((offset, before));
            break;
        }
        let event = match line {
            Folded::Skipped(_) => continue,
            Folded::Header => {
                if source.kind != SourceKind::Agent {
                    session = Some(session_row(bytes));
                }
                continue;
            }
            Folded::Event(event) => event,
        };
        let state = folder.state();
        let molt_count = if sessions {
            state
                .latest
                .as_ref()
                .map_or(Some(0), |l| l.boundary.molt_count.value())
        } else {
            if event.kind == EventKind::Boundary
                && let Some(latest) = &state.latest
            {
                let b = &latest.boundary;
                generations.push(ExportedGeneration {
                    generation: event.generation,
                    molt_count: b.molt_count.value(),
                    boundary_offset: Some(b.offset),
                    boundary_initiator: b.initiator.clone(),
                    boundary_ts: b.time.map(Timestamp::micros),
                    before_tokens: Some(b.before_tokens),
                    after_tokens: Some(b.after_tokens),
                    ..ExportedGeneration::default()
                });
            }
            generations.last_mut().and_then(|g| {
                g.events = g.events.saturating_add(1);
                if g.first_ts.is_none() {
                    g.first_ts = event.time.map(Timestamp::micros);
                }
                if event.kind == EventKind::Token {
                    g.api_calls = g.api_calls.saturating_add(1);
                    for (sum, v) in g.tokens.iter_mut().zip(event.tokens) {
                        *sum = sum.saturating_add(u128::from(v));
                    }
                }
                g.molt_count
            })
        };
        let micros = event.time.map(Timestamp::micros);
        let day = micros.map(|m| m.div_euclid(86_400_000_000));
        let date = match &day_cache {
            Some((cached, date)) if Some(*cached) == day => date.clone(),
            _ => {
                let date = micros.and_then(utc_date);
                if let Some(day) = day {
                    day_cache = Some((day, date.clone()));
                }
                date
            }
        };
        let row = EventRow {
            source_id: &source.id,
            host: options.host,
            offset,
            line: state.lines,
            seq: event.seq,
            type_name: event.type_name.as_deref(),
            ts: micros,
            generation: event.generation,
            molt_count,
            tokens: if event.kind == EventKind::Token {
                let [input, output, cached, thinking] = event.tokens;
                [
                    Some(input),
                    Some(output),
                    Some(cached),
                    Some(thinking),
                    None,
                    None,
                ]
            } else {
                [None; 6]
            },
            cost: None,
            message_id: None,
            request_id: None,
            json: options.json_text.then_some(bytes),
        };
        batch.push(date.as_ref(), &row, offset)?;
    }
    let (end, crc, fold, stopped_at) = match stopped {
        Some((offset, (fold, crc))) => (offset, crc, fold, Some(offset)),
        None => (scanner.end(), scanner.crc(), folder.into_state(), None),
    };
    let parts = batch.close(end)?;
    let changed = || ExportError::Changed {
        path: source.log.clone(),
    };
    // The rows are only as good as the bytes they came from: read them again.
    if !bytes_unchanged(log, (start, resume.crc), end, crc).map_err(io)? {
        return Err(changed());
    }
    let coverage = Coverage::measure(log, end, crc)
        .map_err(io)?
        .ok_or_else(changed)?;
    Ok(Scanned {
        coverage,
        fold,
        generations,
        session,
        parts,
        stopped_at,
    })
}

/// The sessions-table row of a header line: its fields when it is a valid dsh header, else
/// the whole line as `extra`.
fn session_row(line: &[u8]) -> SessionRow {
    let Ok(header) = serde_json::from_slice::<SessionHeader>(line) else {
        return SessionRow {
            extra: Some(String::from_utf8_lossy(line).into_owned()),
            ..SessionRow::default()
        };
    };
    SessionRow {
        version: Some(header.version),
        created_at: i64::try_from(header.created_at)
            .ok()
            .and_then(|ms| ms.checked_mul(1000))
            .and_then(Timestamp::from_micros)
            .map(Timestamp::micros),
        cwd: header.cwd,
        parent_session: header.parent_session,
        seed_length: header.seed_length,
        origin: header.origin,
        delegation_depth: header.delegation_depth,
        agent_preset: header.agent_preset,
        extra: (!header.extra.is_empty())
            .then(|| serde_json::Value::Object(header.extra).to_string()),
        ..SessionRow::default()
    }
}
