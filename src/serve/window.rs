//! Windows of a transcript's lines, read from a byte offset forward or backward: the cost of a
//! window is its own bytes, whatever the transcript's size. Only complete lines (ending in
//! `\n`) are read; a torn last line waits for its end.
//!
//! Each line is sent as its parsed JSON (the page renders its parts as text) with the type,
//! role and time read from it. A line too long to send whole is sent as its searchable text,
//! cut, and marked `truncated`.

use std::fs::File;
use std::io;

use serde::Serialize;
use serde_json::Value;

use crate::log::read_at_retrying;
use crate::search::transcript_line_text;
use crate::transcript::Format;

/// Lines up to this many bytes are sent as JSON; longer ones as cut text.
pub const MAX_JSON_LINE: usize = 256 << 10;
/// The cut of a long line's text, in bytes (at a character boundary at or below it).
pub const MAX_TEXT: usize = 16 << 10;
/// At most this many lines in a window.
pub const MAX_LINES: usize = 500;
/// A window stops after the line that takes it past this many bytes.
pub const MAX_WINDOW_BYTES: u64 = 4 << 20;
/// How far back a backward read looks for the start of a line before giving up.
const MAX_BACKWARD_SCAN: u64 = 64 << 20;
/// The read size.
const CHUNK: usize = 64 << 10;

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineView {
    /// Its byte offset in the transcript.
    pub offset: u64,
    /// Its length in bytes, without the `\n`.
    pub bytes: u64,
    /// Its `type`, when it is a JSON object with one.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The message role (`message.role`, Codex's `payload.role`), when it has one.
    pub role: Option<String>,
    /// Its `timestamp`, as written.
    pub time: Option<String>,
    /// The line parsed, when it is JSON of at most [`MAX_JSON_LINE`] bytes.
    pub json: Option<Value>,
    /// Otherwise its text: the searchable text of a long line, or the bytes of a line that is
    /// not JSON, cut at [`MAX_TEXT`] bytes.
    pub text: Option<String>,
    /// Whether `text` was cut.
    pub truncated: bool,
}

/// A window of lines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineWindow {
    /// The lines, in file order.
    pub lines: Vec<LineView>,
    /// The offset just past the last line: the next window forward starts there.
    pub next_offset: u64,
    /// The offset of the first line (for the window before it; 0 at the start).
    pub first_offset: u64,
    /// The end of the transcript's complete lines when the window was read.
    pub end: u64,
}

/// Why a window cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    /// The offset is not where a line starts (or is past the end).
    #[error("offset {0} is not the start of a line")]
    NotLineStart(u64),
    /// No line start within the backward scan's reach.
    #[error("no line starts within {MAX_BACKWARD_SCAN} bytes before offset {0}")]
    LineTooLong(u64),
    /// Reading failed.
    #[error("reading the transcript failed: {0}")]
    Io(#[from] io::Error),
}

/// The end of the complete lines of a file of `len` bytes: just past its last `\n`.
pub fn complete_end(file: &File, len: u64) -> io::Result<u64> {
    let mut at = len;
    let mut buf = vec![0u8; CHUNK];
    while at > 0 {
        let start = at.saturating_sub(CHUNK as u64);
        let got = read_range(file, &mut buf, start, at)?;
        if let Some(i) = memchr::memrchr(b'\n', got) {
            return Ok(start + i as u64 + 1);
        }
        at = start;
    }
    Ok(0)
}

/// Reads `[start, end)` into `buf` (at most its length), returning the bytes read.
fn read_range<'b>(file: &File, buf: &'b mut [u8], start: u64, end: u64) -> io::Result<&'b [u8]> {
    let want = usize::try_from(end - start)
        .unwrap_or(usize::MAX)
        .min(buf.len());
    let mut got = 0;
    while got < want {
        let n = read_at_retrying(file, &mut buf[got..want], start + got as u64)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok(&buf[..got])
}

/// Whether `offset` starts a line of a file whose complete lines end at `end`.
fn is_line_start(file: &File, offset: u64, end: u64) -> io::Result<bool> {
    if offset == 0 || offset == end {
        return Ok(true);
    }
    if offset > end {
        return Ok(false);
    }
    let mut byte = [0u8; 1];
    Ok(read_range(file, &mut byte, offset - 1, offset)? == b"\n")
}

/// Up to `limit` lines from `offset` (a line start) up to `end` (a line end).
pub fn read_forward(
    file: &File,
    format: Option<Format>,
    offset: u64,
    limit: usize,
    end: u64,
) -> Result<LineWindow, WindowError> {
    if !is_line_start(file, offset, end)? {
        return Err(WindowError::NotLineStart(offset));
    }
    let limit = limit.clamp(1, MAX_LINES);
    let mut lines = Vec::new();
    let mut at = offset;
    let mut sent = 0u64;
    let mut buf = vec![0u8; CHUNK];
    while at < end && lines.len() < limit && sent < MAX_WINDOW_BYTES {
        let (line, next) = read_line(file, &mut buf, at, end, format)?;
        sent += line.bytes;
        lines.push(line);
        at = next;
    }
    Ok(LineWindow {
        lines,
        next_offset: at,
        first_offset: offset,
        end,
    })
}

/// Up to `limit` lines ending at `before` (a line start, or `end`).
pub fn read_backward(
    file: &File,
    format: Option<Format>,
    before: u64,
    limit: usize,
    end: u64,
) -> Result<LineWindow, WindowError> {
    if !is_line_start(file, before, end)? {
        return Err(WindowError::NotLineStart(before));
    }
    let limit = limit.clamp(1, MAX_LINES);
    // Line starts found walking back from `before`; the window is then read forward. The
    // `\n` at `before - 1` ends the line before `before`: the search starts below it.
    let mut start = before;
    let mut found = 0;
    let mut buf = vec![0u8; CHUNK];
    let mut at = before.saturating_sub(1);
    let full = |found: usize, start: u64| found >= limit || before - start >= MAX_WINDOW_BYTES;
    while !full(found, start) {
        if at == 0 {
            // The first line of the file starts at 0.
            start = 0;
            break;
        }
        let from = at.saturating_sub(CHUNK as u64);
        let mut rest = read_range(file, &mut buf, from, at)?;
        while let Some(i) = memchr::memrchr(b'\n', rest) {
            start = from + i as u64 + 1;
            found += 1;
            rest = &rest[..i];
            if full(found, start) {
                break;
            }
        }
        if start - from > MAX_BACKWARD_SCAN {
            return Err(WindowError::LineTooLong(before));
        }
        at = from;
    }
    let mut window = read_forward(file, format, start, limit, before)?;
    window.end = end;
    Ok(window)
}

/// The line at `at` and the offset after it.
fn read_line(
    file: &File,
    buf: &mut [u8],
    at: u64,
    end: u64,
    format: Option<Format>,
) -> io::Result<(LineView, u64)> {
    let mut line: Vec<u8> = Vec::new();
    let mut pos = at;
    let mut length = None;
    while pos < end {
        let got = read_range(file, buf, pos, end)?;
        if got.is_empty() {
            break;
        }
        let (part, done) = match memchr::memchr(b'\n', got) {
            Some(i) => (&got[..i], true),
            None => (got, false),
        };
        // Keep what a view can use; skip the rest of a very long line.
        let room = (MAX_JSON_LINE + 1).saturating_sub(line.len());
        line.extend_from_slice(&part[..part.len().min(room)]);
        pos += part.len() as u64;
        if done {
            length = Some(pos - at);
            pos += 1;
            break;
        }
    }
    let bytes = length.unwrap_or(pos - at);
    Ok((view(at, bytes, &line, format), pos))
}

/// The view of a line of `bytes` bytes at `offset`, of which `kept` are held.
fn view(offset: u64, bytes: u64, kept: &[u8], format: Option<Format>) -> LineView {
    let whole = usize::try_from(bytes).is_ok_and(|b| b == kept.len());
    let mut view = LineView {
        offset,
        bytes,
        kind: None,
        role: None,
        time: None,
        json: None,
        text: None,
        truncated: false,
    };
    if whole && let Ok(value) = serde_json::from_slice::<Value>(kept) {
        let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        view.kind = field(&value, "type");
        view.time = field(&value, "timestamp");
        view.role = value
            .get("message")
            .and_then(|m| field(m, "role"))
            .or_else(|| value.get("payload").and_then(|p| field(p, "role")));
        view.json = Some(value);
        return view;
    }
    let text = match (whole, format) {
        // A long line was kept only in part: its own text can no longer be parsed out.
        (false, _) | (true, None) => String::from_utf8_lossy(kept).into_owned(),
        (true, Some(f)) => transcript_line_text(f, kept)
            .map_or_else(|| String::from_utf8_lossy(kept).into_owned(), |t| t.text),
    };
    view.truncated = !whole || text.len() > MAX_TEXT;
    view.text = Some(cut(text, MAX_TEXT));
    view
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut at = max;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    /// The naive oracle: every complete line with its offset.
    fn lines_of(bytes: &[u8]) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut at = 0;
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            if piece.ends_with(b"\n") {
                out.push((at, piece[..piece.len() - 1].to_vec()));
            }
            at += piece.len() as u64;
        }
        out
    }

    fn sample(n: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        for i in 0..n {
            let pad = "x".repeat(i * 37 % 300);
            bytes.extend_from_slice(
                format!("{{\"type\":\"user\",\"i\":{i},\"p\":\"{pad}\"}}\n").as_bytes(),
            );
        }
        bytes.extend_from_slice(b"{\"torn");
        bytes
    }

    #[test]
    fn forward_and_backward_windows_match_the_oracle() {
        let bytes = sample(900);
        let file = file_of(&bytes);
        let end = complete_end(&file, bytes.len() as u64).unwrap();
        let oracle = lines_of(&bytes);
        assert_eq!(
            end,
            oracle.last().map(|(o, l)| o + l.len() as u64 + 1).unwrap()
        );
        for (start, limit) in [(0, 1), (0, 10), (5, 500), (899, 7), (450, 3)] {
            let w = read_forward(&file, None, oracle[start].0, limit, end).unwrap();
            let want: Vec<u64> = oracle.iter().skip(start).take(limit).map(|l| l.0).collect();
            let got: Vec<u64> = w.lines.iter().map(|l| l.offset).collect();
            assert_eq!(got, want);
            for l in &w.lines {
                assert_eq!(l.json.as_ref().unwrap()["type"], "user");
            }
            let back = read_backward(&file, None, w.next_offset, limit, end).unwrap();
            let before: Vec<u64> = oracle
                .iter()
                .map(|l| l.0)
                .filter(|&o| o < w.next_offset)
                .collect();
            let want = &before[before.len().saturating_sub(limit)..];
            let got: Vec<u64> = back.lines.iter().map(|l| l.offset).collect();
            assert_eq!(got, want, "backward from {}", w.next_offset);
        }
        // From the end: the last lines.
        let tail = read_backward(&file, None, end, 4, end).unwrap();
        let want: Vec<u64> = oracle[896..].iter().map(|l| l.0).collect();
        assert_eq!(
            tail.lines.iter().map(|l| l.offset).collect::<Vec<_>>(),
            want
        );
        assert!(matches!(
            read_forward(&file, None, 3, 1, end),
            Err(WindowError::NotLineStart(3))
        ));
    }

    #[test]
    fn long_and_broken_lines_are_cut_text() {
        let long = format!(
            "{{\"type\":\"user\",\"t\":\"{}\"}}\n",
            "é".repeat(MAX_JSON_LINE)
        );
        let bytes = [b"not json <script>\n".as_slice(), long.as_bytes(), b"{}\n"].concat();
        let file = file_of(&bytes);
        let w = read_forward(&file, None, 0, 10, bytes.len() as u64).unwrap();
        assert_eq!(w.lines.len(), 3);
        assert_eq!(w.lines[0].text.as_deref(), Some("not json <script>"));
        assert!(w.lines[1].truncated && w.lines[1].json.is_none());
        assert!(w.lines[1].text.as_ref().unwrap().len() <= MAX_TEXT);
        assert_eq!(w.lines[1].bytes, long.len() as u64 - 1);
        assert_eq!(w.lines[2].offset, 18 + long.len() as u64);
        assert_eq!(w.next_offset, bytes.len() as u64);
    }
}
