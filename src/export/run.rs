//! One source's export: recover its last commit, compare its log with what was exported,
//! write the new rows, commit.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::commit::{Applied, Place, Steps, apply, create_dir, sweep, write_state};
use super::error::ExportError;
use super::layout::{Found, Table, utc_date};
use super::opencode;
use super::part::write_all;
use super::rows::{SessionRow, Sourced, SourcedRow};
use super::scan::{Batch, Resume, ScanOptions, scan};
use super::source::{Source, SourceKind};
use super::state::{MAX_STATE_BYTES, Part, SourceState, take_serial};
use super::transcript;
use crate::log::{CoverageCheck, open_for_read};
use crate::transcript::Conversation;

/// What an export did with one source.
#[derive(Clone, Debug, Serialize)]
pub struct SourceReport {
    /// The source's kind (`agent`, `session`, `transcript`).
    pub kind: &'static str,
    /// Its `source_id`.
    pub source_id: String,
    /// Its log.
    pub log: PathBuf,
    /// `first` (nothing exported before), `incremental`, `unchanged`, or `reexported` (the log
    /// was rewritten or truncated, or its export state was unusable: see `reason`).
    pub action: &'static str,
    /// Why a source was exported whole again.
    pub reason: Option<String>,
    /// The byte range of the log read.
    pub from: u64,
    /// See `from`.
    pub to: u64,
    /// Event rows written.
    pub rows: u64,
    /// Files written (committed), with their rows and bytes.
    pub files: Vec<FileReport>,
    /// Files deleted: replaced parts and leftovers of interrupted exports.
    pub removed: usize,
    /// For a session whose log has a line breaking its rules: where its committed region ends.
    pub stopped_at: Option<u64>,
}

/// One file an export wrote.
#[derive(Clone, Debug, Serialize)]
pub struct FileReport {
    /// Its table.
    pub table: Table,
    /// Its path.
    pub path: PathBuf,
    /// Rows in it.
    pub rows: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// A source ready to export: its last commit recovered, its log compared with it.
pub struct Prepared {
    source: Source,
    key: String,
    log: File,
    previous: Option<SourceState>,
    check: Option<CoverageCheck>,
    reason: Option<String>,
    removed: usize,
}

/// Settings shared by every source of a run.
pub struct Context<'a> {
    /// The dataset directory.
    pub out: &'a Path,
    /// The host name.
    pub host: &'a str,
    /// Where states live.
    pub state_dir: &'a Path,
    /// Whether event rows carry their JSON text.
    pub json_text: bool,
    /// Where transcripts' indexes are kept (`None`: the default cache directory).
    pub transcript_index_dir: Option<&'a PathBuf>,
    /// Files of ours found in the dataset when the run started.
    pub found: &'a [Found],
    /// The `OpenCode` database read last (its sessions are exported one after the other).
    pub opencode: RefCell<Option<(PathBuf, Arc<Conversation>)>>,
}

impl Context<'_> {
    /// The messages of the `OpenCode` database `db`, read once for all its sessions.
    fn opencode(&self, db: &Path) -> Result<Arc<Conversation>, ExportError> {
        if let Some((path, read)) = &*self.opencode.borrow()
            && path == db
        {
            return Ok(Arc::clone(read));
        }
        let read = opencode::read(db, self.transcript_index_dir)?;
        *self.opencode.borrow_mut() = Some((db.to_path_buf(), Arc::clone(&read)));
        Ok(read)
    }

    fn place<'k>(&'k self, source: &Source, key: &'k str) -> Place<'k> {
        Place {
            out: self.out,
            host: self.host,
            key,
            kind: source.kind,
        }
    }
}

/// Recovers `source`'s last commit (finishing it, or starting over if its state is unusable)
/// and compares its log with what was exported.
pub fn prepare(
    ctx: &Context<'_>,
    source: Source,
    steps: &mut Steps,
) -> Result<Prepared, ExportError> {
    let key = source.key();
    let place = ctx.place(&source, &key);
    let (mut previous, mut reason) = load_state(ctx.state_dir, &key);
    if let Some(state) = &previous
        && (state.kind != source.kind || state.log != source.log || state.source_id != source.id)
    {
        reason = Some("the export state belongs to another log".to_owned());
        previous = None;
    }
    if let Some(state) = &previous
        && let Applied::Missing(path) = apply(&place, state, steps)?
    {
        reason = Some(format!("part {} is missing", path.display()));
        previous = None;
    }
    let removed = sweep(&place, ctx.found, previous.as_ref(), steps)?;
    let log = open_for_read(&source.log)?;
    let check = match &previous {
        Some(state) => Some(
            state
                .coverage
                .check(&log)
                .map_err(|e| ExportError::io("read", &source.log, e))?,
        ),
        None => None,
    };
    match check {
        Some(CoverageCheck::Truncated { .. }) => {
            reason = Some("the log was truncated".to_owned());
        }
        Some(
            CoverageCheck::HeadChanged { .. }
            | CoverageCheck::TailChanged { .. }
            | CoverageCheck::BodyChanged { .. },
        ) => reason = Some("the log was rewritten".to_owned()),
        _ => {}
    }
    Ok(Prepared {
        source,
        key,
        log,
        previous,
        check,
        reason,
        removed,
    })
}

/// Reads a state; `(None, reason)` when it is absent or unusable.
fn load_state(dir: &Path, key: &str) -> (Option<SourceState>, Option<String>) {
    let path = dir.join(format!("{key}.state"));
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    if size > MAX_STATE_BYTES as u64 {
        return (
            None,
            Some(format!("its export state is too large ({size} bytes)")),
        );
    }
    match std::fs::read(&path) {
        Ok(bytes) => match SourceState::decode(&bytes) {
            Ok(state) => (Some(state), None),
            Err(e) => {
                tracing::warn!(state = %path.display(), error = %e, "unusable export state; exporting the source whole");
                (None, Some(format!("its export state is unusable: {e}")))
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, None),
        Err(e) => (None, Some(format!("its export state cannot be read: {e}"))),
    }
}

/// Exports what `prepared` found new, and commits.
pub fn run(
    ctx: &Context<'_>,
    prepared: Prepared,
    progress: &mut dyn FnMut(u64),
    steps: &mut Steps,
) -> Result<SourceReport, ExportError> {
    let Prepared {
        source,
        key,
        log,
        previous,
        check,
        mut reason,
        removed,
        ..
    } = prepared;
    let place = ctx.place(&source, &key);
    let mut incremental = check.is_some_and(|c| c.is_intact());
    // An OpenCode session is read whole: unchanged (its checksum and message count as
    // exported), or exported whole again.
    let conversation = if source.is_opencode() {
        let read = ctx.opencode(&source.log)?;
        let same = previous.as_ref().is_some_and(|p| {
            (p.coverage.crc, p.fold.lines) == opencode::fingerprint(&read, &source.id)
        });
        if incremental && same {
            return Ok(SourceReport {
                kind: source.kind.as_str(),
                source_id: source.id,
                log: source.log,
                action: "unchanged",
                reason,
                from: 0,
                to: 0,
                rows: 0,
                files: Vec::new(),
                removed,
                stopped_at: None,
            });
        }
        if previous.is_some() && reason.is_none() {
            reason = Some("the database changed".to_owned());
        }
        incremental = false;
        Some(read)
    } else {
        None
    };
    // A transcript's generations come from its own index, caught up now; the event rows
    // exported before must agree with its boundaries to be continued.
    let answer = match source.kind {
        SourceKind::Transcript if conversation.is_none() => {
            transcript::open(&source.log, ctx.transcript_index_dir)?
        }
        _ => None,
    };
    if source.kind == SourceKind::Transcript
        && incremental
        && let Some(state) = &previous
        && let Some(why) =
            transcript::resume_mismatch(&state.generations, state.coverage.end, answer.as_ref())
    {
        incremental = false;
        reason = Some(why);
    }
    let action = match (&previous, incremental) {
        (_, true) => "incremental",
        (None, _) if reason.is_none() => "first",
        _ => "reexported",
    };
    let (resume, kept, retired, mut next_serial) = match previous {
        Some(state) if incremental => (
            Resume {
                crc: state.coverage.crc,
                fold: state.fold,
                generations: state.generations,
                session: state.session,
            },
            state.parts,
            Vec::new(),
            state.next_serial,
        ),
        Some(state) => (
            Resume::default(),
            Vec::new(),
            state.parts,
            state.next_serial,
        ),
        None => (Resume::default(), Vec::new(), Vec::new(), 0),
    };
    let from = resume.fold.end;
    let (old_generations, old_session) = (resume.generations.clone(), resume.session.clone());
    let options = ScanOptions {
        host: ctx.host,
        json_text: ctx.json_text,
    };
    let batch = Batch::new(&place, &mut next_serial, steps, progress, from);
    let scanned = if let Some(read) = &conversation {
        opencode::scan(&source, read, &options, batch)?
    } else if source.kind == SourceKind::Transcript {
        transcript::scan(&source, &log, resume, answer.as_ref(), &options, batch)?
    } else {
        scan(&source, &log, resume, &options, batch)?
    };
    let mut report = SourceReport {
        kind: source.kind.as_str(),
        source_id: source.id.clone(),
        log: source.log.clone(),
        action,
        reason,
        from,
        to: scanned.coverage.end,
        rows: scanned.parts.iter().map(|p| p.rows).sum(),
        files: Vec::new(),
        removed,
        stopped_at: scanned.stopped_at,
    };
    let mut parts = Parts {
        kept,
        retired,
        written: scanned.parts.clone(),
        next_serial,
    };
    let sourced = (source.id.as_str(), ctx.host);
    parts.rewrite_changed(
        &place,
        sourced,
        Table::Generations,
        (&old_generations, &scanned.generations),
        |g| g.first_ts,
        steps,
    )?;
    let old_session: Vec<SessionRow> = old_session.into_iter().collect();
    let new_session: Vec<SessionRow> = scanned.session.iter().cloned().collect();
    parts.rewrite_changed(
        &place,
        sourced,
        Table::Sessions,
        (&old_session, &new_session),
        |s| s.created_at,
        steps,
    )?;
    let Parts {
        mut kept,
        retired,
        written,
        next_serial,
    } = parts;
    if written.is_empty() && retired.is_empty() && incremental && scanned.coverage.end == from {
        report.action = "unchanged";
        return Ok(report);
    }
    kept.extend(written.iter().cloned());
    let state = SourceState {
        kind: source.kind,
        source_id: source.id.clone(),
        log: source.log.clone(),
        coverage: scanned.coverage,
        fold: scanned.fold,
        generations: scanned.generations,
        session: scanned.session,
        parts: kept,
        retired,
        next_serial,
    };
    create_dir(ctx.state_dir)?;
    write_state(ctx.state_dir, &key, &state, steps)?;
    if let Applied::Missing(path) = apply(&place, &state, steps)? {
        return Err(ExportError::io(
            "reveal",
            &path,
            std::io::ErrorKind::NotFound.into(),
        ));
    }
    report.removed += state.retired.len();
    report.files = written
        .iter()
        .map(|part| FileReport {
            table: part.table,
            path: place.final_path(part),
            rows: part.rows,
            bytes: part.bytes,
        })
        .collect();
    Ok(report)
}

/// Rows grouped by the UTC date of their time.
fn by_date<T: Clone>(
    rows: &[T],
    time: impl Fn(&T) -> Option<i64>,
) -> BTreeMap<Option<String>, Vec<T>> {
    let mut out: BTreeMap<Option<String>, Vec<T>> = BTreeMap::new();
    for row in rows {
        out.entry(time(row).and_then(utc_date))
            .or_default()
            .push(row.clone());
    }
    out
}

/// The dates whose rows differ, with their new rows (empty when none are left).
fn changed<T: PartialEq>(
    old: BTreeMap<Option<String>, Vec<T>>,
    mut new: BTreeMap<Option<String>, Vec<T>>,
) -> Vec<(Option<String>, Vec<T>)> {
    let mut out = Vec::new();
    for (date, rows) in old {
        match new.remove(&date) {
            Some(now) if now == rows => {}
            Some(now) => out.push((date, now)),
            None => out.push((date, Vec::new())),
        }
    }
    out.extend(new);
    out
}

/// A source's parts as an export changes them.
struct Parts {
    /// Committed before and still current.
    kept: Vec<Part>,
    /// Committed before, to be removed.
    retired: Vec<Part>,
    /// Written by this export (under temporary names until committed).
    written: Vec<Part>,
    /// The serial of the next part.
    next_serial: u64,
}

impl Parts {
    /// Moves the kept parts of `table` at `date` to the retired list.
    fn retire(&mut self, table: Table, date: Option<&String>) {
        let (gone, stay): (Vec<Part>, Vec<Part>) = std::mem::take(&mut self.kept)
            .into_iter()
            .partition(|p| p.table == table && p.date.as_ref() == date);
        self.kept = stay;
        self.retired.extend(gone);
    }

    /// Rewrites the dates (by `time`) of a small table whose rows differ between `old` and
    /// `new` (in that pair): their parts are retired and the new rows of each, if any,
    /// written as one part, each row with `sourced`'s source id and host.
    fn rewrite_changed<T: Clone + PartialEq + SourcedRow>(
        &mut self,
        place: &Place<'_>,
        (source_id, host): (&str, &str),
        table: Table,
        (old, new): (&[T], &[T]),
        time: impl Fn(&T) -> Option<i64>,
        steps: &mut Steps,
    ) -> Result<(), ExportError> {
        for (date, rows) in changed(by_date(old, &time), by_date(new, &time)) {
            self.retire(table, date.as_ref());
            if !rows.is_empty() {
                let rows: Vec<_> = rows
                    .iter()
                    .map(|row| Sourced {
                        source_id,
                        host,
                        row,
                    })
                    .collect();
                let part = write_small(place, table, date, &rows, &mut self.next_serial, steps)?;
                self.written.push(part);
            }
        }
        Ok(())
    }
}

/// Writes a small table's rows of one date as one part under its temporary name.
fn write_small<R: super::part::Row>(
    place: &Place<'_>,
    table: Table,
    date: Option<String>,
    rows: &[R],
    next_serial: &mut u64,
    steps: &mut Steps,
) -> Result<Part, ExportError> {
    let serial = take_serial(next_serial).ok_or_else(|| ExportError::TooManyParts {
        key: place.key.to_owned(),
    })?;
    let mut part = Part {
        table,
        date,
        serial,
        rows: 0,
        bytes: 0,
    };
    create_dir(&place.dir(table, part.date.as_deref()))?;
    let written = write_all(&place.temp_path(&part), rows)?;
    steps.step()?;
    part.rows = written.rows;
    part.bytes = written.bytes;
    Ok(part)
}
