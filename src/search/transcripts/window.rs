//! A window of one transcript's lines around a line: the lines a search hit sits among, as
//! search reads them ([`transcript_line_text`]), each cut to a stated length.
//!
//! Only complete lines count (a final line without its `\n` is a write in progress). The scan
//! reads outward from the anchor, so a window costs the bytes it shows plus the lines it
//! passes over (at most [`MAX_SCAN_BYTES`] each side), and a count of the newlines before the
//! anchor for its line number.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::text::transcript_line_text;
use crate::transcript::{Format, TranscriptError, detect_format, session_of, subagent_files};

/// The most lines a window shows on each side of its anchor.
pub const MAX_WINDOW_SIDE: u64 = 50;
/// Lines shown on each side when none are asked for.
pub const DEFAULT_WINDOW_SIDE: u64 = 10;
/// Characters of each line's text shown when no length is asked for.
pub const DEFAULT_LINE_CHARS: usize = 1000;
/// The most characters of a line's text a window shows.
pub const MAX_LINE_CHARS: usize = 8000;
/// The most bytes a window reads on each side of its anchor looking for lines to show.
pub const MAX_SCAN_BYTES: u64 = 64 << 20;
/// How much is read at a time.
const CHUNK: usize = 256 << 10;

/// Where a window is anchored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineAnchor {
    /// The line holding this byte offset (a search hit's `offset`).
    Offset(u64),
    /// This 1-based line number (a search hit's `line`).
    Line(u64),
}

/// What a window shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineWindowRequest {
    /// The anchor; the first shown line at or after it is the window's centre.
    pub at: LineAnchor,
    /// Lines shown before the centre (at most [`MAX_WINDOW_SIDE`]).
    pub before: u64,
    /// Lines shown after the centre (at most [`MAX_WINDOW_SIDE`]).
    pub after: u64,
    /// Each line's text is cut to this many characters (at most [`MAX_LINE_CHARS`]).
    pub max_chars: usize,
    /// Show every line as its raw JSON instead of only the lines with message text.
    pub raw: bool,
}

impl Default for LineWindowRequest {
    fn default() -> LineWindowRequest {
        LineWindowRequest {
            at: LineAnchor::Offset(0),
            before: DEFAULT_WINDOW_SIDE,
            after: DEFAULT_WINDOW_SIDE,
            max_chars: DEFAULT_LINE_CHARS,
            raw: false,
        }
    }
}

/// One line of a window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WindowedLine {
    /// Its byte offset.
    pub offset: u64,
    /// Its 1-based line number.
    pub line: u64,
    /// The line's type as its format names it (`null` for a raw line that is not a message).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The message's role, when the line is a message.
    pub role: Option<String>,
    /// The line's time, epoch ms, when it has one.
    pub time: Option<i64>,
    /// Its message text (raw: the line itself), cut to `max_chars` characters.
    pub text: String,
    /// Whether `text` was cut.
    pub truncated: bool,
}

/// A window of a transcript's lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TranscriptWindow {
    /// The transcript.
    #[serde(serialize_with = "lossy_path")]
    pub file: PathBuf,
    /// Its format.
    pub format: Format,
    /// Its session, as `usage` names it.
    pub session: String,
    /// The lines shown, in file order.
    pub lines: Vec<WindowedLine>,
    /// The offset of the window's centre line, if any line is shown after the anchor.
    pub anchor_offset: Option<u64>,
    /// Where the lines after this window start (ask again with `offset` there and no
    /// `before`); absent at the end of the complete lines.
    pub next_offset: Option<u64>,
    /// The first shown line, when lines precede it (ask again with `offset` there and no
    /// `after`: that line is shown again, last).
    pub previous_offset: Option<u64>,
    /// The end of the complete lines when read.
    pub covered_bytes: u64,
    /// The session's subagent transcripts (Claude Code), each readable as a window of its own.
    #[serde(serialize_with = "lossy_paths")]
    pub subagents: Vec<PathBuf>,
}

fn lossy_paths<S: serde::Serializer>(paths: &[PathBuf], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(paths.iter().map(|p| p.to_string_lossy()))
}

fn lossy_path<S: serde::Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

/// Why a window cannot be shown.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LineWindowError {
    /// The transcript cannot be opened or read, or is not a transcript.
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    /// A bound of the request is out of range.
    #[error("{0}")]
    Request(String),
    /// The anchor is past the complete lines.
    #[error("{what} is past the end of {} ({covered} bytes, {lines} complete lines)", file.display())]
    PastEnd {
        /// The transcript.
        file: PathBuf,
        /// The anchor as asked.
        what: String,
        /// The end of its complete lines.
        covered: u64,
        /// Its complete lines.
        lines: u64,
    },
}

impl LineWindowError {
    /// Whether the request (not the file) is at fault.
    pub fn is_bad_request(&self) -> bool {
        !matches!(self, LineWindowError::Transcript(_))
    }
}

/// The window of `path`'s lines that `request` asks for.
pub fn transcript_window(
    path: &Path,
    request: &LineWindowRequest,
) -> Result<TranscriptWindow, LineWindowError> {
    check(request)?;
    let io = |op: &'static str| move |e| TranscriptError::io(op, path, e);
    let file = crate::log::open_for_read(path)
        .map_err(|e| TranscriptError::io("open", path, std::io::Error::other(e.to_string())))?;
    let len = file.metadata().map_err(io("inspect"))?.len();
    let head = read_at(&file, 0, len.min(1 << 20)).map_err(io("read"))?;
    let format = detect_format(complete_lines(&head)).ok_or_else(|| {
        if memchr::memchr(b'\n', &head).is_none() {
            TranscriptError::Empty {
                path: path.to_path_buf(),
            }
        } else {
            TranscriptError::UnknownFormat {
                path: path.to_path_buf(),
            }
        }
    })?;
    let covered = line_start(&file, len).map_err(io("read"))?;
    let (anchor, anchor_line) = match request.at {
        LineAnchor::Offset(offset) if offset < covered => {
            let start = line_start(&file, offset).map_err(io("read"))?;
            (start, count_newlines(&file, start).map_err(io("read"))? + 1)
        }
        LineAnchor::Line(n) if n >= 1 => match nth_line(&file, n, covered).map_err(io("read"))? {
            Some(start) => (start, n),
            None => return Err(past_end(path, &file, covered, format!("line {n}"))?),
        },
        LineAnchor::Offset(offset) => {
            return Err(past_end(path, &file, covered, format!("offset {offset}"))?);
        }
        LineAnchor::Line(_) => {
            return Err(LineWindowError::Request("line numbers start at 1".into()));
        }
    };
    let show = |offset: u64, line: u64, bytes: &[u8]| shown(format, request, offset, line, bytes);
    let (after, next_offset) =
        forward(&file, anchor, anchor_line, covered, request, &show).map_err(io("read"))?;
    let (mut lines, previous_offset) =
        backward(&file, anchor, anchor_line, request, &show).map_err(io("read"))?;
    let anchor_offset = after.first().map(|l| l.offset);
    lines.extend(after);
    let previous_offset = previous_offset.and(lines.first().map(|l| l.offset));
    let (session, _) = session_of(path, format);
    let subagents = match format {
        Format::ClaudeCode => subagent_files(path).map_err(io("list subagents of"))?,
        _ => Vec::new(),
    };
    Ok(TranscriptWindow {
        file: path.to_path_buf(),
        format,
        session,
        lines,
        anchor_offset,
        next_offset,
        previous_offset,
        covered_bytes: covered,
        subagents,
    })
}

fn check(request: &LineWindowRequest) -> Result<(), LineWindowError> {
    for (name, value) in [("before", request.before), ("after", request.after)] {
        if value > MAX_WINDOW_SIDE {
            return Err(LineWindowError::Request(format!(
                "{name} must be at most {MAX_WINDOW_SIDE}, not {value}"
            )));
        }
    }
    if !(1..=MAX_LINE_CHARS).contains(&request.max_chars) {
        return Err(LineWindowError::Request(format!(
            "max_chars must be between 1 and {MAX_LINE_CHARS}, not {}",
            request.max_chars
        )));
    }
    Ok(())
}

fn past_end(
    path: &Path,
    file: &File,
    covered: u64,
    what: String,
) -> Result<LineWindowError, TranscriptError> {
    let lines = count_newlines(file, covered).map_err(|e| TranscriptError::io("read", path, e))?;
    Ok(LineWindowError::PastEnd {
        file: path.to_path_buf(),
        what,
        covered,
        lines,
    })
}

/// A line as the window shows it, or `None` when it has no text to show.
fn shown(
    format: Format,
    request: &LineWindowRequest,
    offset: u64,
    line: u64,
    bytes: &[u8],
) -> Option<WindowedLine> {
    let text = transcript_line_text(format, bytes);
    let (kind, role, time, body) = match (text, request.raw) {
        (Some(t), false) => (Some(t.kind), t.role, t.time, t.text),
        (None, false) => return None,
        (t, true) => {
            let raw = String::from_utf8_lossy(bytes).into_owned();
            match t {
                Some(t) => (Some(t.kind), t.role, t.time, raw),
                None => (None, None, None, raw),
            }
        }
    };
    let (text, truncated) = cut(body, request.max_chars);
    Some(WindowedLine {
        offset,
        line,
        kind,
        role,
        time,
        text,
        truncated,
    })
}

/// `text` cut to `max` characters.
fn cut(mut text: String, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => {
            text.truncate(at);
            (text, true)
        }
        None => (text, false),
    }
}

type Show<'a> = dyn Fn(u64, u64, &[u8]) -> Option<WindowedLine> + 'a;

/// The centre and the lines after it (`after + 1` shown lines at most), and where the next
/// lines start.
fn forward(
    file: &File,
    anchor: u64,
    anchor_line: u64,
    covered: u64,
    request: &LineWindowRequest,
    show: &Show<'_>,
) -> std::io::Result<(Vec<WindowedLine>, Option<u64>)> {
    let want = request.after + 1;
    let mut lines = Vec::new();
    let (mut at, mut number) = (anchor, anchor_line);
    let mut pending: Vec<u8> = Vec::new();
    let mut pos = anchor;
    let limit = covered.min(anchor.saturating_add(MAX_SCAN_BYTES));
    while pos < limit && (lines.len() as u64) < want {
        let chunk = read_at(file, pos, (limit - pos).min(CHUNK as u64))?;
        if chunk.is_empty() {
            break;
        }
        pos += chunk.len() as u64;
        pending.extend_from_slice(&chunk);
        let mut used = 0;
        while let Some(nl) = memchr::memchr(b'\n', pending.get(used..).unwrap_or_default()) {
            let bytes = pending.get(used..used + nl).unwrap_or_default();
            if let Some(line) = show(at, number, bytes) {
                lines.push(line);
            }
            used += nl + 1;
            at += nl as u64 + 1;
            number += 1;
            if lines.len() as u64 >= want {
                break;
            }
        }
        pending.drain(..used);
    }
    Ok((lines, (at < covered).then_some(at)))
}

/// The `before` shown lines before the anchor, in file order, and whether any line (shown or
/// not) precedes the first of them.
fn backward(
    file: &File,
    anchor: u64,
    anchor_line: u64,
    request: &LineWindowRequest,
    show: &Show<'_>,
) -> std::io::Result<(Vec<WindowedLine>, Option<()>)> {
    let mut lines = Vec::new();
    // `tail` holds the bytes from `start` to the end of the line being assembled.
    let (mut start, mut end_line) = (anchor, anchor);
    let mut number = anchor_line;
    let floor = anchor.saturating_sub(MAX_SCAN_BYTES);
    let mut tail: Vec<u8> = Vec::new();
    while (lines.len() as u64) < request.before && start > floor {
        let from = start.saturating_sub(CHUNK as u64).max(floor);
        let mut chunk = read_at(file, from, start - from)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        start = from;
        // Every line ending before `end_line` whose start is known.
        let mut line_end = usize::try_from(end_line - start).unwrap_or(0);
        while line_end > 0 {
            let body_end = line_end - 1; // the '\n' of the line before `end_line`
            let line_start = match memchr::memrchr(b'\n', tail.get(..body_end).unwrap_or_default())
            {
                Some(nl) => nl + 1,
                None if start == 0 => 0,
                None => break,
            };
            number -= 1;
            let offset = start + line_start as u64;
            if let Some(line) = show(
                offset,
                number,
                tail.get(line_start..body_end).unwrap_or_default(),
            ) {
                lines.push(line);
            }
            line_end = line_start;
            end_line = offset;
            if lines.len() as u64 >= request.before {
                break;
            }
        }
        tail.truncate(usize::try_from(end_line - start).unwrap_or(0));
    }
    lines.reverse();
    Ok((lines, (end_line > 0).then_some(())))
}

/// The complete lines of a buffer.
fn complete_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .filter_map(|line| line.strip_suffix(b"\n"))
}

fn read_at(file: &File, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; usize::try_from(len).unwrap_or(usize::MAX)];
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(
            buf.get_mut(filled..).unwrap_or_default(),
            offset + filled as u64,
        ) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// The start of the line holding `offset`; at the file's length, the end of its complete
/// lines.
fn line_start(file: &File, offset: u64) -> std::io::Result<u64> {
    let mut end = offset;
    while end > 0 {
        let from = end.saturating_sub(CHUNK as u64);
        let chunk = read_at(file, from, end - from)?;
        if let Some(nl) = memchr::memrchr(b'\n', &chunk) {
            return Ok(from + nl as u64 + 1);
        }
        end = from;
    }
    Ok(0)
}

/// How many `\n` the first `end` bytes hold.
fn count_newlines(file: &File, end: u64) -> std::io::Result<u64> {
    let (mut pos, mut count) = (0, 0);
    while pos < end {
        let chunk = read_at(file, pos, (end - pos).min(CHUNK as u64))?;
        if chunk.is_empty() {
            break;
        }
        count += memchr::memchr_iter(b'\n', &chunk).count() as u64;
        pos += chunk.len() as u64;
    }
    Ok(count)
}

/// The offset of the `n`th (1-based) complete line, if there is one before `covered`.
fn nth_line(file: &File, n: u64, covered: u64) -> std::io::Result<Option<u64>> {
    let (mut pos, mut seen) = (0, 1);
    if n == 1 {
        return Ok((covered > 0).then_some(0));
    }
    while pos < covered {
        let chunk = read_at(file, pos, (covered - pos).min(CHUNK as u64))?;
        if chunk.is_empty() {
            break;
        }
        for nl in memchr::memchr_iter(b'\n', &chunk) {
            seen += 1;
            let start = pos + nl as u64 + 1;
            if seen == n {
                return Ok((start < covered).then_some(start));
            }
        }
        pos += chunk.len() as u64;
    }
    Ok(None)
}
