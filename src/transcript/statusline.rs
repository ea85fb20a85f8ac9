//! What a Claude Code status line shows: the JSON Claude Code passes to a `statusLine`
//! command, the current context size read from the transcript's tail, and the figures of the
//! session and of the day. The decisions: docs/TRANSCRIPTS.md, "The status line".

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::json::{Count, Flag, Obj, Text, parse_line};

/// The most stdin a status line reads (Claude Code sends well under a kilobyte).
pub const MAX_STATUS_INPUT: usize = 1 << 20;

/// How far back from the end the latest main-chain message is looked for.
const CONTEXT_SCAN_BYTES: u64 = 8 << 20;
/// The piece read at a time when scanning back.
const CONTEXT_CHUNK: u64 = 64 << 10;

/// The fields of Claude Code's status line input this command uses; others are ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusInput {
    /// `session_id`.
    pub session_id: Option<String>,
    /// `transcript_path`: the session's transcript.
    pub transcript_path: PathBuf,
    /// `model.id`.
    pub model_id: Option<String>,
    /// `model.display_name`.
    pub model_name: Option<String>,
    /// `cwd` (or `workspace.current_dir`).
    pub cwd: Option<String>,
}

/// Why the status line input was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StatusInputError {
    /// Nothing, or only whitespace, on stdin.
    #[error("no status line input on stdin (Claude Code passes a JSON object)")]
    Empty,
    /// More than [`MAX_STATUS_INPUT`] bytes.
    #[error("the status line input is longer than {MAX_STATUS_INPUT} bytes")]
    TooLong,
    /// Not one JSON object.
    #[error("the status line input is not a JSON object: {0}")]
    NotJson(String),
    /// No `transcript_path` string.
    #[error("the status line input has no transcript_path string")]
    NoTranscript,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Raw<'a> {
    #[serde(borrow)]
    session_id: Text<'a>,
    #[serde(borrow)]
    transcript_path: Text<'a>,
    #[serde(borrow)]
    cwd: Text<'a>,
    #[serde(borrow)]
    model: Obj<RawModel<'a>>,
    #[serde(borrow)]
    workspace: Obj<RawWorkspace<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawModel<'a> {
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow)]
    display_name: Text<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawWorkspace<'a> {
    #[serde(borrow)]
    current_dir: Text<'a>,
}

/// Reads Claude Code's status line input: one JSON object with at least a `transcript_path`
/// string; fields of another type are taken as absent, unknown fields are ignored.
pub fn parse_status_input(bytes: &[u8]) -> Result<StatusInput, StatusInputError> {
    if bytes.len() > MAX_STATUS_INPUT {
        return Err(StatusInputError::TooLong);
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(StatusInputError::Empty);
    }
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| StatusInputError::NotJson(e.to_string()))?;
    if !value.is_object() {
        return Err(StatusInputError::NotJson("another JSON value".to_owned()));
    }
    let raw: Raw<'_> =
        serde_json::from_slice(bytes).map_err(|e| StatusInputError::NotJson(e.to_string()))?;
    let text = |t: &Text<'_>| t.non_empty().map(str::to_owned);
    let model = raw.model.get();
    let path = text(&raw.transcript_path).ok_or(StatusInputError::NoTranscript)?;
    Ok(StatusInput {
        session_id: text(&raw.session_id),
        transcript_path: PathBuf::from(path),
        model_id: model.and_then(|m| text(&m.id)),
        model_name: model.and_then(|m| text(&m.display_name)),
        cwd: text(&raw.cwd).or_else(|| raw.workspace.get().and_then(|w| text(&w.current_dir))),
    })
}

/// The context window of a Claude model, in tokens: 1,000,000 for the 1M-context variants
/// (an id or name with `[1m]` or `1M`), 200,000 for every other model.
pub fn context_window(model_id: Option<&str>, model_name: Option<&str>) -> u64 {
    let long = [model_id, model_name].into_iter().flatten().any(|m| {
        let m = m.to_ascii_lowercase();
        m.contains("[1m]") || m.contains("1m context") || m.contains("(1m")
    });
    if long { 1_000_000 } else { 200_000 }
}

static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\""));
static BOUNDARY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"compact_boundary\""));

#[derive(Deserialize, Default)]
#[serde(default)]
struct TailLine<'a> {
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow)]
    subtype: Text<'a>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Flag,
    message: Obj<TailMessage>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TailMessage {
    usage: Obj<TailUsage>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
#[allow(clippy::struct_field_names)] // Claude Code's own field names.
struct TailUsage {
    input_tokens: Count,
    cache_creation_input_tokens: Count,
    cache_read_input_tokens: Count,
}

/// What one line says about the context, scanning back.
enum Seen {
    /// The context of a main-chain assistant message.
    Context(u64),
    /// A compaction boundary: no message since it.
    Boundary,
    Nothing,
}

fn look(line: &[u8]) -> Seen {
    let usage = USAGE.find(line).is_some();
    if !usage && BOUNDARY.find(line).is_none() {
        return Seen::Nothing;
    }
    let Some(parsed) = parse_line::<TailLine<'_>>(line) else {
        return Seen::Nothing;
    };
    if parsed.kind.is("system") && parsed.subtype.is("compact_boundary") {
        return Seen::Boundary;
    }
    if !parsed.kind.is("assistant") || parsed.is_sidechain.0 {
        return Seen::Nothing;
    }
    let Some(u) = parsed.message.get().and_then(|m| m.usage.get()) else {
        return Seen::Nothing;
    };
    let n = |c: Count| c.known().unwrap_or(0);
    Seen::Context(
        n(u.input_tokens)
            .saturating_add(n(u.cache_creation_input_tokens))
            .saturating_add(n(u.cache_read_input_tokens)),
    )
}

/// The current context of a Claude Code transcript: the input, cache creation and cache read
/// tokens of the latest main-chain assistant line before `end` (the end of its complete
/// lines). `Some(0)` when a compaction boundary comes after the latest such line; `None` when
/// none is found in the last 8 MiB.
pub fn context_tokens(path: &Path, end: u64) -> std::io::Result<Option<u64>> {
    let mut file = File::open(path)?;
    let floor = end.saturating_sub(CONTEXT_SCAN_BYTES);
    let mut pos = end;
    // Bytes from `pos` up to the first line break after it: an incomplete first line.
    let mut carry: Vec<u8> = Vec::new();
    while pos > floor {
        let start = pos.saturating_sub(CONTEXT_CHUNK).max(floor);
        let len = usize::try_from(pos - start).unwrap_or(0);
        let mut buf = vec![0u8; len];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        buf.extend_from_slice(&carry);
        // Every line but the first is complete (the first may begin before `start`).
        let mut lines = buf.rsplit(|&b| b == b'\n');
        let mut first: &[u8] = &[];
        let all: Vec<&[u8]> = lines.by_ref().collect();
        for (i, line) in all.iter().enumerate() {
            if i + 1 == all.len() && start > 0 {
                first = line;
                break;
            }
            match look(line) {
                Seen::Context(n) => return Ok(Some(n)),
                Seen::Boundary => return Ok(Some(0)),
                Seen::Nothing => {}
            }
        }
        carry = first.to_vec();
        pos = start;
    }
    Ok(None)
}
