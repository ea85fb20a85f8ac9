//! What a session row shows beside its usage, read cheaply: a line transcript's format, title
//! (its first user prompt), start (its first time) and end (its last) from a window at its
//! head and one at its tail; an `OpenCode` source's root sessions from its rows. Remembered by
//! the file's (length, mtime) in a [`FactsCache`], so a catalog built again re-reads only the
//! files that changed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::log::read_at_retrying;
use crate::transcript::format::Format;
use crate::transcript::opencode::{OpenCodeFacts, opencode_facts};
use crate::transcript::readers::detect_format;

/// Bytes read at a file's head for its format, title and start.
pub const HEAD_BYTES: usize = 64 << 10;
/// Bytes read at a file's tail for its end.
pub const TAIL_BYTES: usize = 16 << 10;
/// A title is cut to this many characters.
pub const TITLE_CHARS: usize = 200;
/// Prompts the agents write themselves (command echoes, environment blocks): not a title.
const BOOKKEEPING: &[&str] = &[
    "Caveat:",
    "<command-",
    "<local-command",
    "<environment_context",
    "<user_instructions",
    "<permissions",
    "# AGENTS.md",
];

/// The text a person typed on a line of `format` (without its `\n`), if the line is a user's
/// message with text: how a title is found. The search's per-format text extraction answers
/// it (`agentlog::search::user_prompt`); the catalog takes it as an argument because the
/// transcript layer sits below the search.
pub type PromptText = fn(Format, &[u8]) -> Option<String>;

/// What a line transcript's head and tail say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LineFacts {
    pub(crate) format: Option<Format>,
    pub(crate) title: Option<String>,
    pub(crate) start: Option<String>,
    pub(crate) end: Option<String>,
}

/// What a found file says, by kind.
#[derive(Clone, Debug)]
pub(crate) enum Facts {
    Lines(LineFacts),
    /// An `OpenCode` source's root sessions (or why it could not be read).
    OpenCode(Result<Vec<OpenCodeFacts>, String>),
}

/// A file's identity: its length and mtime (and those of an `OpenCode` database's `-wal`).
type Stamp = [(u64, Option<SystemTime>); 2];

/// The facts read so far, by file, with the identity they were read at.
#[derive(Clone, Debug, Default)]
pub struct FactsCache {
    known: HashMap<PathBuf, (Stamp, Facts)>,
}

fn stamp_of(path: &Path) -> Option<Stamp> {
    let one = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    Some([one(path)?, one(Path::new(&wal)).unwrap_or((0, None))])
}

impl FactsCache {
    /// The facts of the files `paths` (each a line transcript, or an `OpenCode` source when
    /// `opencode` says so), from the cache when a file is unchanged; the cache then holds
    /// these files alone. A file that cannot be stat'ed is left out.
    pub(crate) fn refresh(
        &mut self,
        paths: &[(PathBuf, bool)],
        prompt: Option<PromptText>,
        index_dir: Option<&Path>,
    ) -> HashMap<PathBuf, (u64, Facts)> {
        let mut known = std::mem::take(&mut self.known);
        let mut out = HashMap::with_capacity(paths.len());
        for (path, opencode) in paths {
            let Some(stamp) = stamp_of(path) else {
                continue;
            };
            let facts = match known.remove(path) {
                Some((s, f)) if s == stamp => f,
                _ if *opencode => {
                    Facts::OpenCode(opencode_facts(path, index_dir).map_err(|e| e.to_string()))
                }
                _ => Facts::Lines(read_facts(path, stamp[0].0, prompt)),
            };
            self.known.insert(path.clone(), (stamp, facts.clone()));
            out.insert(path.clone(), (stamp[0].0, facts));
        }
        out
    }
}

/// Reads up to `max` bytes at `offset`.
fn read_at(file: &std::fs::File, offset: u64, max: usize) -> Vec<u8> {
    let mut buf = vec![0u8; max];
    let mut got = 0;
    while got < max {
        match read_at_retrying(file, &mut buf[got..], offset + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    buf.truncate(got);
    buf
}

/// A line's time as RFC 3339 in UTC: its `timestamp` (ISO 8601, or epoch milliseconds), else
/// Kimi Code's `time` (epoch milliseconds).
pub(crate) fn time_of(value: &Value) -> Option<String> {
    match value.get("timestamp").or_else(|| value.get("time"))? {
        Value::String(s) => {
            let s = s.trim();
            Some(
                s.parse::<jiff::Timestamp>()
                    .map_or_else(|_| s.to_owned(), |t| t.to_string()),
            )
        }
        Value::Number(n) => {
            let ms = n.as_i64()?;
            jiff::Timestamp::from_millisecond(ms)
                .ok()
                .map(|t| t.to_string())
        }
        _ => None,
    }
}

/// The complete lines of `bytes`, without their `\n`: a cut last line is not read.
fn complete(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .filter_map(|l| l.strip_suffix(b"\n"))
}

/// The format, title and start from a file's head, and its end from its tail.
fn read_facts(path: &Path, len: u64, prompt: Option<PromptText>) -> LineFacts {
    let Ok(file) = std::fs::File::open(path) else {
        return LineFacts::default();
    };
    let head = read_at(&file, 0, HEAD_BYTES);
    let format = detect_format(complete(&head)).or_else(|| {
        // An older Gemini CLI session is one JSON document, not lines.
        crate::transcript::gemini::is_session_document(path).then_some(Format::Gemini)
    });
    let mut facts = LineFacts {
        format,
        ..LineFacts::default()
    };
    for line in complete(&head) {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if facts.start.is_none() {
            facts.start = time_of(&value);
        }
        if facts.title.is_none() && is_prompt(&value) {
            facts.title = format
                .zip(prompt)
                .and_then(|(f, prompt)| prompt(f, line))
                .filter(|t| !BOOKKEEPING.iter().any(|p| t.starts_with(p)))
                .map(|t| t.chars().take(TITLE_CHARS).collect());
        }
        if facts.start.is_some() && facts.title.is_some() {
            break;
        }
    }
    let tail_from = len.saturating_sub(TAIL_BYTES as u64);
    let tail = if tail_from == 0 {
        head
    } else {
        let mut t = read_at(&file, tail_from, TAIL_BYTES);
        // The first piece may be the end of a line cut by the window.
        let skip = memchr::memchr(b'\n', &t).map_or(t.len(), |i| i + 1);
        t.drain(..skip);
        t
    };
    let lines: Vec<&[u8]> = complete(&tail).collect();
    facts.end = lines
        .iter()
        .rev()
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .find_map(|v| time_of(&v));
    facts
}

/// Whether a line is a prompt a person typed: not a tool's result, a compaction summary or
/// bookkeeping.
fn is_prompt(value: &Value) -> bool {
    let flag = |k: &str| value.get(k).and_then(Value::as_bool) == Some(true);
    if flag("isMeta") || flag("isCompactSummary") || flag("isSidechain") {
        return false;
    }
    let content = value
        .get("message")
        .or_else(|| value.get("payload"))
        .and_then(|m| m.get("content"));
    let tool_result = content.and_then(Value::as_array).is_some_and(|parts| {
        parts
            .iter()
            .any(|p| p.get("type").and_then(Value::as_str) == Some("tool_result"))
    });
    !tool_result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_rfc3339_from_either_spelling() {
        let t = |s: &str| time_of(&serde_json::from_str(s).unwrap());
        assert_eq!(
            t(r#"{"timestamp":"2026-01-02T03:04:05+01:00"}"#).as_deref(),
            Some("2026-01-02T02:04:05Z")
        );
        assert_eq!(
            t(r#"{"time":1767236645000}"#).as_deref(),
            Some("2026-01-01T03:04:05Z")
        );
        assert_eq!(t(r#"{"type":"x"}"#), None);
    }

    #[test]
    fn a_prompt_is_not_a_tool_result_or_bookkeeping() {
        let v = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert!(is_prompt(&v(r#"{"message":{"content":"hi"}}"#)));
        assert!(!is_prompt(&v(
            r#"{"message":{"content":[{"type":"tool_result"}]}}"#
        )));
        assert!(!is_prompt(&v(r#"{"isMeta":true,"message":{}}"#)));
    }
}
