//! `agentlog archive`: each transcript's complete lines not archived yet, appended to the
//! archive; a transcript rewritten since (shorter, or its head or archived tail changed) starts
//! a new version from its first byte. Cost: one stat per unchanged file, O(new bytes) otherwise.

use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::error::ArchiveError;
use super::files::default_archive_dir;
use super::frame::{self, MAX_FRAME_RAW};
use super::record::{Record, Seen, Window};
use super::writer::Writer;
use crate::log::{Faults, read_exact_at};
use crate::transcript::{detect_format, discover, roots_or_default, session_of};

/// Raw bytes per frame (a longer line gets a frame of its own).
pub(crate) const FRAME_BYTES: usize = 4 << 20;
/// What a read asks for beyond the bytes the file's stat says are left: room for what was
/// appended since.
const READ_AHEAD: usize = 64 << 10;
/// How close to its archiving a file's modification time makes its stat untrusted.
const RACY_MS: i64 = 2000;
/// The head and tail windows' size.
pub(crate) const WINDOW: usize = 4096;

/// What an archive run reads and where it writes.
#[derive(Clone, Debug, Default)]
pub struct ArchiveOptions {
    /// The archive directory (default: [`default_archive_dir`]).
    pub dir: Option<PathBuf>,
    /// Injected I/O failures (tests only).
    #[cfg(feature = "testing")]
    pub faults: Option<Arc<Faults>>,
}

impl ArchiveOptions {
    /// The archive directory these options name.
    pub fn archive_dir(&self) -> Result<PathBuf, ArchiveError> {
        self.dir.clone().map_or_else(default_archive_dir, Ok)
    }

    #[cfg_attr(
        not(feature = "testing"),
        expect(clippy::unused_self, reason = "only the testing build stores faults")
    )]
    fn faults(&self) -> Option<Arc<Faults>> {
        #[cfg(feature = "testing")]
        return self.faults.clone();
        #[cfg(not(feature = "testing"))]
        return None;
    }
}

/// A transcript an archive run could not read, and why; the run goes on without it.
#[derive(Debug, Serialize)]
pub struct ArchiveSkipped {
    /// The file or directory.
    pub path: PathBuf,
    /// Why, as a message.
    pub error: String,
}

/// What an archive run did: `agentlog archive --json` prints it.
#[derive(Debug, Default, Serialize)]
pub struct ArchiveReport {
    /// The archive directory.
    pub archive: PathBuf,
    /// Transcripts looked at.
    pub files: u64,
    /// Transcripts with nothing new (most answered by their stat alone).
    pub unchanged: u64,
    /// Transcripts archived for the first time.
    pub new_sources: u64,
    /// Transcripts rewritten since they were archived: a new version was started.
    pub new_versions: u64,
    /// Transcripts that had lines appended.
    pub appended: u64,
    /// Complete lines archived by this run.
    pub lines: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The frames' bytes on disk.
    pub compressed_bytes: u64,
    /// Bytes an interrupted earlier run had left (a torn record, unnamed frames), removed.
    pub healed_bytes: u64,
    /// Transcripts and directories that could not be read.
    pub skipped: Vec<ArchiveSkipped>,
}

/// Archives the transcripts under `paths` (the places the agents keep theirs when empty, as
/// `usage` finds them). `progress(done, total)` is called as files are looked at. A file that
/// cannot be read is listed in [`ArchiveReport::skipped`]; a failure of the archive itself (its
/// lock, a write) ends the run with an error, and the next run heals what it left.
pub fn archive(
    paths: &[PathBuf],
    options: &ArchiveOptions,
    progress: &dyn Fn(usize, usize),
) -> Result<ArchiveReport, ArchiveError> {
    let dir = options.archive_dir()?;
    let roots = roots_or_default(paths);
    let (files, skipped) = discover(&roots);
    let mut writer = Writer::open(&dir, options.faults())?;
    let mut report = ArchiveReport {
        archive: dir,
        healed_bytes: writer.healed_bytes,
        skipped: skipped
            .into_iter()
            .map(|s| ArchiveSkipped {
                path: s.path,
                error: s.error.to_string(),
            })
            .collect(),
        ..ArchiveReport::default()
    };
    // One read buffer for the run: a fresh one a file would be faulted in again each time.
    let mut buf = Vec::new();
    for (i, path) in files.iter().enumerate() {
        progress(i, files.len());
        report.files += 1;
        match archive_file(&mut writer, path, &mut buf, &mut report) {
            Ok(()) => {}
            Err(Failed::Archive(e)) => return Err(e),
            Err(Failed::Source(e)) => report.skipped.push(ArchiveSkipped {
                path: path.clone(),
                error: e.to_string(),
            }),
        }
    }
    progress(files.len(), files.len());
    writer.commit()?;
    Ok(report)
}

/// Why a file was not archived: its own problem (it is skipped) or the archive's (the run
/// ends).
enum Failed {
    Source(ArchiveError),
    Archive(ArchiveError),
}

/// Where archiving a file starts, and with which version.
struct Plan {
    version: u32,
    start: u64,
    /// The version's head, once known; `None` for a new version.
    head: Option<Window>,
    /// The version's agent, session and project; `None` for a new version.
    names: Option<(String, String, String)>,
}

fn archive_file(
    writer: &mut Writer,
    path: &Path,
    buf: &mut Vec<u8>,
    report: &mut ArchiveReport,
) -> Result<(), Failed> {
    let source = |op, e| Failed::Source(ArchiveError::io(op, path, e));
    let meta = std::fs::metadata(path).map_err(|e| source("stat", e))?;
    let seen = Seen {
        size: meta.len(),
        mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        dev: meta.dev(),
        ino: meta.ino(),
    };
    let key = path.as_os_str().as_bytes();
    let latest = writer.catalog.latest(key).map(|(_, r)| r.clone());
    // A file changed within the same clock tick as its stat can keep its size and time: a
    // stat taken that close to the archiving is not trusted (git's "racy clean" rule).
    let settled = |r: &Record| r.seen.mtime_ns / 1_000_000 + RACY_MS < r.archived_at_ms;
    if latest
        .as_ref()
        .is_some_and(|r| r.seen == seen && settled(r))
    {
        report.unchanged += 1;
        return Ok(());
    }
    // The log layer's open: a FIFO, socket or device given as a path is refused, not opened.
    let (file, opened) = crate::log::open_for_read_inspected(path)
        .map_err(|e| Failed::Source(open_error(path, e)))?;
    let plan = match &latest {
        None => Plan {
            version: 1,
            start: 0,
            head: None,
            names: None,
        },
        Some(r) if continues(&file, opened.len(), r).map_err(|e| source("read", e))? => Plan {
            version: r.version,
            start: r.end,
            head: Some(r.head),
            names: Some((r.agent.clone(), r.session.clone(), r.project.clone())),
        },
        Some(r) => Plan {
            version: r.version + 1,
            start: 0,
            head: None,
            names: None,
        },
    };
    let new_version = plan.start == 0;
    let lines_before = report.lines;
    append_lines(writer, &file, path, plan, seen, buf, report)?;
    if report.lines == lines_before {
        report.unchanged += 1;
    } else if latest.is_none() {
        report.new_sources += 1;
    } else if new_version {
        report.new_versions += 1;
    } else {
        report.appended += 1;
    }
    Ok(())
}

/// The archive's error for a transcript the log layer would not open.
fn open_error(path: &Path, e: crate::log::LogError) -> ArchiveError {
    use crate::log::LogError;
    match e {
        LogError::NotAFile { path, kind } => ArchiveError::NotAFile { path, kind },
        LogError::Io { op, path, source } => ArchiveError::Io { op, path, source },
        LogError::NotFound { path } => {
            ArchiveError::io("open", path, std::io::ErrorKind::NotFound.into())
        }
        other => ArchiveError::io("open", path, std::io::Error::other(other.to_string())),
    }
}

/// Whether the file (`size` bytes when opened) still holds what `last` archived: long enough,
/// the same head and the same bytes before the archived end.
fn continues(file: &File, size: u64, last: &Record) -> std::io::Result<bool> {
    let window = |offset: u64, w: Window| -> std::io::Result<bool> {
        let mut buf = vec![0u8; w.len as usize];
        Ok(read_exact_at(file, &mut buf, offset)? && crc32fast::hash(&buf) == w.crc)
    };
    Ok(size >= last.end
        && window(0, last.head)?
        && window(last.end - u64::from(last.tail.len), last.tail)?)
}

/// Reads the file from `plan.start` into `buf` and appends its complete lines, a frame at a
/// time.
fn append_lines(
    writer: &mut Writer,
    file: &File,
    path: &Path,
    mut plan: Plan,
    seen: Seen,
    buf: &mut Vec<u8>,
    report: &mut ArchiveReport,
) -> Result<(), Failed> {
    let mut at = plan.start;
    // The buffer is zeroed before each read, so a read asks for what the stat says is left and a
    // little more (the file may still grow), not a whole frame: most transcripts are smaller.
    // Past the stat's size it asks for a frame's worth, as with no stat.
    let cap = |at: u64, filled: usize| {
        let unread = seen.size.saturating_sub(at + filled as u64);
        usize::try_from(unread)
            .ok()
            .filter(|&n| n > 0)
            .map_or(usize::MAX, |n| {
                filled.saturating_add(n).saturating_add(READ_AHEAD)
            })
    };
    buf.clear();
    // What a line longer than a frame grew it to is not kept for the files after it.
    buf.shrink_to(2 * FRAME_BYTES);
    let mut eof = false;
    loop {
        // A frame's worth, or more while a line longer than that has no end yet.
        let target = if buf.len() >= FRAME_BYTES && memchr::memchr(b'\n', buf).is_none() {
            buf.len() + FRAME_BYTES
        } else {
            FRAME_BYTES
        };
        let target = target.min(cap(at, buf.len()));
        while !eof && buf.len() < target {
            let old = buf.len();
            buf.resize(target, 0);
            let n = read_some(file, &mut buf[old..], at + old as u64)
                .map_err(|e| Failed::Source(ArchiveError::io("read", path, e)))?;
            buf.truncate(old + n);
            eof = n == 0;
        }
        let Some(last_nl) = memchr::memrchr(b'\n', buf) else {
            if eof {
                return Ok(());
            }
            if buf.len() > MAX_FRAME_RAW as usize {
                return Err(Failed::Source(ArchiveError::LineTooLong {
                    path: path.to_path_buf(),
                    offset: at,
                }));
            }
            continue;
        };
        let chunk_len = last_nl + 1;
        let chunk = buf.get(..chunk_len).unwrap_or_default();
        let record = frame_record(&mut plan, path, at, chunk, seen);
        let frame = frame::encode(chunk)
            .map_err(|e| Failed::Source(ArchiveError::io("compress", path, e)))?;
        report.lines += record.lines;
        writer.append(&frame, record).map_err(Failed::Archive)?;
        report.bytes += chunk_len as u64;
        report.compressed_bytes += frame.len() as u64;
        at += chunk_len as u64;
        buf.drain(..chunk_len);
    }
}

/// Reads as much as fits at `offset` (less only at the end of the file).
fn read_some(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let n = crate::log::read_at_retrying(file, &mut buf[done..], offset + done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// The record of a frame holding `chunk` (whole lines) at `start` of the plan's version.
fn frame_record(plan: &mut Plan, path: &Path, start: u64, chunk: &[u8], seen: Seen) -> Record {
    let window = |bytes: &[u8]| Window {
        len: u32::try_from(bytes.len()).unwrap_or(0),
        crc: crc32fast::hash(bytes),
    };
    let head = *plan
        .head
        .get_or_insert_with(|| window(chunk.get(..chunk.len().min(WINDOW)).unwrap_or_default()));
    let (agent, session, project) = plan
        .names
        .get_or_insert_with(|| names_of(path, chunk))
        .clone();
    let tail_from = chunk.len().saturating_sub(WINDOW);
    let (first_time, last_time) = timestamps(chunk);
    Record {
        path: path.as_os_str().as_bytes().to_vec(),
        agent,
        session,
        project,
        version: plan.version,
        head,
        start,
        end: start + chunk.len() as u64,
        tail: window(chunk.get(tail_from..).unwrap_or_default()),
        frame_offset: 0,
        frame_len: 0,
        raw: window(chunk),
        lines: memchr::memchr_iter(b'\n', chunk).count() as u64,
        first_time,
        last_time,
        seen,
        archived_at_ms: now_ms(),
    }
}

/// The agent, session and project of a transcript from its first lines and its path.
fn names_of(path: &Path, chunk: &[u8]) -> (String, String, String) {
    let format = detect_format(chunk.split(|&b| b == b'\n').take(16));
    let (session, project) = match format {
        Some(f) => session_of(path, f),
        None => crate::transcript::reader::session_in_project(path),
    };
    let agent = format.map_or("unknown", crate::transcript::Format::name);
    (agent.to_owned(), session, project)
}

/// The first and last `"timestamp":"…"` among a chunk's first and last 16 lines.
fn timestamps(chunk: &[u8]) -> (Option<String>, Option<String>) {
    fn stamp(line: &[u8]) -> Option<String> {
        const KEY: &[u8] = b"\"timestamp\":\"";
        let at = memchr::memmem::find(line, KEY)? + KEY.len();
        let rest = line.get(at..)?;
        let end = memchr::memchr(b'"', rest)?;
        let text = std::str::from_utf8(rest.get(..end)?).ok()?;
        (text.len() <= 64).then(|| text.to_owned())
    }
    let first = chunk.split(|&b| b == b'\n').take(16).find_map(stamp);
    let last = chunk.rsplit(|&b| b == b'\n').take(17).find_map(stamp);
    (first, last)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read sized by the stat still reaches the file's end when the file grew after the stat,
    /// and never archives the torn line at its end.
    #[test]
    fn a_file_grown_since_its_stat_is_archived_to_its_last_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let whole = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(1000)).repeat(5000);
        std::fs::write(&path, format!("{whole}{{\"torn\"")).unwrap();
        let file = File::open(&path).unwrap();
        let size = whole.len() as u64;
        for stat_size in [0, 1, 100_000, size - 1, size, size + 7] {
            let mut writer = Writer::open(&dir.path().join(format!("a{stat_size}")), None).unwrap();
            let mut report = ArchiveReport::default();
            let plan = Plan {
                version: 1,
                start: 0,
                head: None,
                names: None,
            };
            let seen = Seen {
                size: stat_size,
                ..Seen::default()
            };
            let mut buf = b"left by another file".to_vec();
            let done = append_lines(&mut writer, &file, &path, plan, seen, &mut buf, &mut report);
            assert!(done.is_ok(), "stat size {stat_size}");
            assert_eq!(report.lines, 5000, "stat size {stat_size}");
            assert_eq!(report.bytes, size, "stat size {stat_size}");
        }
    }
}
